// Trace build of the generation-2 templates (ATTN_TRACE=1, a measurement switch outside the space:
// `attn-tuner trace`). One thread per role stamps its SM's cycle counter (clock64) after each step of its
// loop, so that the time between two stamps is the time the role spent in the step the later stamp names
// (gpu/trace.hpp decodes and sums them). Without ATTN_TRACE every call below is empty and the kernel is
// the same code as before.
//
// Buffer: attn_trace[cta][role][kTraceStride] 64-bit words, zeroed by the host before the traced launch.
//   word 0  number of events recorded       word 1  %smid
//   word 2  %globaltimer at the role's start word 3  clock64 at the start
//   word 4  %globaltimer at the role's end   word 5  clock64 at the end
//   word 6  kTraceMagic (the row was written) word 7  events dropped (the row was full)
//   word 8 + i  event i: code << 56 | (clock64 & 2^56 - 1)
// Roles: 0 the producer's TMA thread, 1 the first converter warp's lane 0, 2 + c consumer warpgroup c's
// thread 0. CTAs (linear id x + X (y + Y z)) at or past kTraceCtas are not traced (the one-CTA-per-tile
// schedule has more).
// attn_trace_info = {kTraceCtas, kTraceRoles, kTraceStride, kTraceHeader} tells the host the layout.
#pragma once

namespace hopper {

/// Event codes (gpu/trace.cpp names them; keep the two lists in step).
enum TraceEvent : unsigned {
  kTrWork = 1,      // consumer: the work tile's first K/V slot is full (its meta read)
  kTrQ = 2,         // consumer: the work tile's Q is in shared memory
  kTrKv = 3,        // consumer: this kv tile's K is in shared memory
  kTrIssue = 4,     // consumer: GEMMs may be issued (V of the pending P V converted, ping-pong turn taken)
  kTrQkDone = 5,    // consumer: S = Q K^T is in registers
  kTrSoftmax = 6,   // consumer: softmax done, P packed (and O rescaled)
  kTrPvIssue = 7,   // consumer: a P V without a Q K^T may be issued (V converted, turn taken)
  kTrPvDone = 8,    // consumer: the pending P V has completed
  kTrEpilogue = 9,  // consumer: o and lse of the work tile stored
  kTrEmpty = 10,    // consumer: a work tile without kv blocks written as zeros
  kTrSlot = 11,     // producer: a K/V slot was free and its loads are issued
  kTrVFull = 12,    // converter: a V tile arrived
  kTrVReady = 13,   // converter: the V tile is fp16 and released to the consumers
};

#ifdef ATTN_TRACE
constexpr int kTraceCtas = 264, kTraceRoles = 4, kTraceStride = 4096, kTraceHeader = 8;
constexpr unsigned long long kTraceMagic = 0xA77E7ACEull;
extern "C" {
__device__ unsigned long long attn_trace[kTraceCtas * kTraceRoles * kTraceStride];
__device__ int attn_trace_info[4] = {kTraceCtas, kTraceRoles, kTraceStride, kTraceHeader};
}

/// One role's recorder. Every thread of the role's warp runs the same straight-line code and only the
/// recording thread (`on`) stores, through predicated PTX stores: a branch here would leave the warp
/// diverged before the next warpgroup-aligned instruction (wgmma, bar.sync), which the PTX ISA forbids.
struct Tracer {
  unsigned long long* row = attn_trace;
  unsigned on = 0;
  int n = 0;  // events seen; those past the row's capacity are counted as dropped
  __device__ static unsigned long long now() {
    unsigned long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
    return c;
  }
  __device__ static unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
  }
  /// row[i] = v where `pred` is non-zero (a predicated st.global, no branch).
  __device__ void put(int i, unsigned long long v, unsigned pred) const {
    asm volatile("{\n.reg .pred p;\nsetp.ne.u32 p, %2, 0;\n@p st.global.u64 [%0], %1;\n}\n" ::"l"(row + i), "l"(v),
                 "r"(pred)
                 : "memory");
  }
  __device__ void start(int role, bool rec) {
    const unsigned cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    on = rec && cta < kTraceCtas;
    row = attn_trace + (size_t(cta < kTraceCtas ? cta : 0) * kTraceRoles + role) * kTraceStride;
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    put(1, sm, on);
    put(2, global_ns(), on);
    put(3, now(), on);
  }
  __device__ void mark(TraceEvent e) {
    constexpr int kCap = kTraceStride - kTraceHeader;
    const unsigned fits = n < kCap;
    put(kTraceHeader + (fits ? n : 0), (static_cast<unsigned long long>(e) << 56) | (now() & ((1ull << 56) - 1)),
        on & fits);
    ++n;
  }
  __device__ void stop() {
    constexpr int kCap = kTraceStride - kTraceHeader;
    put(4, global_ns(), on);
    put(5, now(), on);
    put(0, n < kCap ? n : kCap, on);
    put(7, n < kCap ? 0 : n - kCap, on);
    put(6, kTraceMagic, on);
  }
};
#else
struct Tracer {
  __device__ void start(int, bool) {}
  __device__ void mark(TraceEvent) {}
  __device__ void stop() {}
};
#endif

}  // namespace hopper
