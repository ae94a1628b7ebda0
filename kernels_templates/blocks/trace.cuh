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

/// One role's recorder; `on` only in the thread that records for the role.
struct Tracer {
  unsigned long long* row = nullptr;
  int n = 0;
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
  __device__ void start(int role, bool on) {
    const unsigned cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    if (!on || cta >= kTraceCtas) return;
    row = attn_trace + (size_t(cta) * kTraceRoles + role) * kTraceStride;
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    row[1] = sm;
    row[2] = global_ns();
    row[3] = now();
  }
  __device__ void mark(TraceEvent e) {
    if (!row) return;
    if (n < kTraceStride - kTraceHeader)
      row[kTraceHeader + n++] = (static_cast<unsigned long long>(e) << 56) | (now() & ((1ull << 56) - 1));
    else
      ++row[7];
  }
  __device__ void stop() {
    if (!row) return;
    row[4] = global_ns();
    row[5] = now();
    row[0] = n;
    row[6] = kTraceMagic;
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
