// Producer side of generation 4: the TMA producer thread is generation 2's (blocks/producer.cuh `produce`, unchanged),
// with one more schedule, and the V converters widen bf16 with one integer op per half.
//   SCHEDULE 3  the dynamic schedule (SCHEDULE 2) without the atomic before a CTA's first work tile: CTA c starts on
//               work tile c (the persistent grid is at most the number of tiles, ABI.md), and the global counter
//               hands out the tiles from gridDim.x on. The first CSR reads and TMA loads of every CTA then wait on
//               no atomic round trip (quick pays ~3,200 cycles before a producer's first TMA: lab/notebook-gen2.md).
//   convert_v_lean  as convert_v, each bf16 pair widened to fp32 by a shift (low half) and a mask (high half)
//               before the one cvt.rn.f16x2.f32: 3 instructions a word instead of 4 (the research DB's V_UNPACK win,
//               lab/ideas/campaign/agent_b_v_unpack_lean.idea, -1.6 % on full), exact as cvt is.
#pragma once
#include "blocks/producer.cuh"

namespace hopper {

/// SCHEDULE 3: the first work tile static, the later ones from attn_sched_counters (reset as SCHEDULE 2 does).
template <>
struct TileScheduler<3> {
  int n_tiles;
  __device__ __forceinline__ int first() const { return int(blockIdx.x); }
  __device__ __forceinline__ int next(int) const { return int(gridDim.x + atomicAdd(&attn_sched_counters[0], 1u)); }
  __device__ __forceinline__ void finish() const { TileScheduler<2>{n_tiles}.finish(); }
};

/// bf16x2 -> f16x2: the two halves widened to fp32 exactly (x << 16, x & 0xFFFF0000), one cvt.rn.f16x2.f32.
__device__ __forceinline__ unsigned g4_bf16x2_to_f16x2(unsigned w) {
  unsigned r;
  asm("{\n.reg .b32 lo, hi;\n"
      "shl.b32 lo, %1, 16;\n"
      "and.b32 hi, %1, 0xFFFF0000;\n"
      "cvt.rn.f16x2.f32 %0, hi, lo;\n}\n"  // upper half from hi, lower from lo
      : "=r"(r)
      : "r"(w));
  return r;
}

/// A converter thread (c in 0 .. kConverterThreads - 1), as convert_v (blocks/producer.cuh) with the lean widening.
template <class T>
__device__ __forceinline__ void convert_v_lean(const Pipeline<T>& pl, unsigned char* smem, int c) {
  constexpr int kThreads = T::kConverterThreads;
  constexpr int kChunks = T::kBlockN * 16;  // 16-byte chunks per V tile
  Tracer tr;  // ATTN_TRACE builds only (trace.cuh)
  tr.start(1, c == 0);
  for (int i = 0;; ++i) {
    const int s = vslot_of<T>(i);
    mbar_wait(pl.v_full(s), vparity_of<T>(i));
    tr.mark(kTrVFull);
    const int2 m = pl.vmeta(s);
    if (m.x == kMetaExit) {
      tr.stop();
      return;
    }
    if (!(m.y & kInfoEmpty) && !T::kNoConvert) {
      unsigned char* tile = smem + (pl.v(s) - pl.base);
#pragma unroll ATTN_CONVERT_UNROLL
      for (int idx = c; idx < kChunks; idx += kThreads) {
        uint4* p = reinterpret_cast<uint4*>(tile + idx * 16);  // chunk order is irrelevant in place
        uint4 x = *p;
        x.x = g4_bf16x2_to_f16x2(x.x);
        x.y = g4_bf16x2_to_f16x2(x.y);
        x.z = g4_bf16x2_to_f16x2(x.z);
        x.w = g4_bf16x2_to_f16x2(x.w);
        *p = x;
      }
      fence_proxy_async();
    }
    mbar_arrive(pl.v_ready(s));
    tr.mark(kTrVReady);
  }
}

}  // namespace hopper
