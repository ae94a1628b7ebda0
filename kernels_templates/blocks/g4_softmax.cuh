// The softmax of generation 4: SOFTMAX 2 (stale base checked by the row sum, blocks/softmax.cuh) with
// FlashAttention-4's split of the exponentials between the two pipes (Zadouri et al. 2025, flash-attention
// repository, flash_attn/cute): of every 8 values, kExpPoly take exp2_poly (degree-4 polynomial on the FMA pipe,
// max relative error 2.7e-6, hopper_common.cuh) and the rest ex2.approx (MUFU, 16 per SM per cycle). The exact
// path that follows a failed check is softmax_tile, which splits by ATTN_EXP2_POLY (fa4_g4.cu sets it to
// EXP2_POLY). With kExpPoly 0 this is blocks/softmax.cuh's softmax unchanged.
#pragma once
#include "blocks/softmax.cuh"

namespace hopper {

/// 2^x for value pair q (0, 1, ...) of a thread's tile: on the FMA pipe for kExpPoly of every 8 pairs.
template <int kExpPoly>
__device__ __forceinline__ float g4_exp2(float x, int q) {
  return q % 8 < kExpPoly ? exp2_poly(x) : fast_exp2(x);
}

/// softmax_stale_base (blocks/softmax.cuh) with the exponentials split as g4_exp2 does.
template <int KEYS, bool FOLD, int kExpPoly>
__device__ __forceinline__ bool g4_stale_base(const float (&s)[KEYS / 2], unsigned (&pa)[KEYS / 16][4],
                                              const float (&row_max)[2], float (&row_sum)[2]) {
  float part[2] = {0.f, 0.f};
#pragma unroll
  for (int kk = 0; kk < KEYS / 16; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) {  // pa[kk][e]: row half e & 1, keys 8 (2 kk + e / 2) + 2 (lane % 4) + {0, 1}
      const int hr = e & 1;
      const float p0 = g4_exp2<kExpPoly>(exp2_arg<FOLD>(s[8 * kk + 2 * e], row_max[hr]), 4 * kk + e);
      const float p1 = g4_exp2<kExpPoly>(exp2_arg<FOLD>(s[8 * kk + 2 * e + 1], row_max[hr]), 4 * kk + e);
      part[hr] += p0;
      part[hr] += p1;
      pa[kk][e] = pack_half2(p0, p1);
    }
  if (!__all_sync(0xffffffffu, part[0] <= kStaleSumMax && part[1] <= kStaleSumMax)) return false;
  row_sum[0] += part[0];
  row_sum[1] += part[1];
  return true;
}

/// One kv tile's softmax (SOFTMAX 2): the stale-base fast path after the work tile's first tile, else the exact
/// path with FlashAttention-4's conditional rescale (kLazyLog2). Returns whether O must be rescaled by alpha.
template <class T, bool Fold, int kN = T::kBlockN>
__device__ __forceinline__ bool g4_softmax(float (&s)[kN / 2], unsigned (&pa)[kN / 16][4], float (&alpha)[2],
                                           float (&row_max)[2], float (&row_sum)[2], bool diagonal, bool first,
                                           int qpos, int key0, int seq_len, int lane) {
  if constexpr (T::kExpPoly == 0 || T::kNoSoftmax) {
    return softmax<T, Fold, false, kN>(s, pa, alpha, row_max, row_sum, diagonal, first, qpos, key0, seq_len, lane);
  } else {
    if (!first) {
      if (diagonal) mask_diagonal<kN>(s, qpos, key0, seq_len, lane);
      if (g4_stale_base<kN, Fold, T::kExpPoly>(s, pa, row_max, row_sum)) return false;
    }
    softmax_tile<kN, Fold, kLazyLog2>(s, pa, alpha, row_max, row_sum, diagonal, qpos, key0, seq_len, lane);
    return __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f);
  }
}

}  // namespace hopper
