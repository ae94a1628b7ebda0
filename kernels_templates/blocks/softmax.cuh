// The online softmax of the generation-2 and -4 consumers, one kv tile of one warpgroup at a time, in the mode
// SOFTMAX names (a structural parameter of the space):
//   0  exact: each tile's row maximum becomes the exponent base (hopper_common.cuh softmax_tile) and O is
//      rescaled by alpha (with RESCALE_SKIP only where some row of the warp moved).
//   1  FlashAttention-4's conditional rescaling: the maximum is computed, but the base moves only when it
//      exceeds the base by more than kLazyLog2 (P <= 2^8), so O is rarely rescaled (softmax_tile LAZY).
//   2  stale base, checked by the row sum: after a work tile's first kv tile, P = 2^(S scale - base) with the
//      base as it stands, no maximum computed; if a thread's partial row sum of the tile exceeds 2^8 (so a P
//      might), or is inf or NaN (no base yet: -inf), the warp redoes the tile as mode 1. This takes the
//      row-maximum tree, its two shuffles and the rescale off the chain Q K^T -> exp2 -> P V.
// Poly (generation 4's EXP2_POLY, G4Traits::kExpPoly; 0 in generation 2) puts that many of every 8 exponentials of
// mode 2's fast path on the FMA pipe (hopper_common.cuh exp2_split; the exact path splits by ATTN_EXP2_POLY).
// Every mode computes the same function: o = sum P V / sum P and lse = base + log2(sum P) hold for any base
// as long as no P overflows (Milakov and Gimelshein 2018), and fp16 P up to 2^8 keeps its full relative
// precision.
#pragma once
#include "hopper_common.cuh"

namespace hopper {

constexpr int kLazyLog2 = 8;                        // SOFTMAX 1 and 2: P <= 2^8 (FlashAttention-4 uses 8)
constexpr float kStaleSumMax = float(1 << kLazyLog2);  // SOFTMAX 2: a partial row sum above this fails the check

/// SOFTMAX 2's fast path over one tile. s: masked already where diagonal. On success (the same answer in
/// every lane of the warp): P packed into pa and each row's partial sum added to row_sum; the base and O
/// stay. On failure pa holds garbage and the caller runs the exact path from s, which is left intact.
/// POLY: of every 8 value pairs, this many exponentials on the FMA pipe (exp2_split).
template <int KEYS, bool FOLD, int POLY = 0>
__device__ __forceinline__ bool softmax_stale_base(const float (&s)[KEYS / 2], unsigned (&pa)[KEYS / 16][4],
                                                   const float (&row_max)[2], float (&row_sum)[2]) {
  float part[2] = {0.f, 0.f};
#pragma unroll
  for (int kk = 0; kk < KEYS / 16; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) {  // pa[kk][e]: row half e & 1, keys 8 (2 kk + e / 2) + 2 (lane % 4) + {0, 1}
      const int hr = e & 1;
      const float p0 = exp2_split<POLY>(exp2_arg<FOLD>(s[8 * kk + 2 * e], row_max[hr]), 4 * kk + e);
      const float p1 = exp2_split<POLY>(exp2_arg<FOLD>(s[8 * kk + 2 * e + 1], row_max[hr]), 4 * kk + e);
      part[hr] += p0;
      part[hr] += p1;
      pa[kk][e] = pack_half2(p0, p1);
    }
  // NaN (base -inf against a masked -inf) and inf (base -inf) fail both comparisons.
  if (!__all_sync(0xffffffffu, part[0] <= kStaleSumMax && part[1] <= kStaleSumMax)) return false;
  row_sum[0] += part[0];
  row_sum[1] += part[1];
  return true;
}

/// One tile's softmax in mode T::kSoftmax, or under ABLATE bit 2 only P = fp16(S). `first`: the work tile's
/// first kv tile (no base yet, so SOFTMAX 2 goes straight to the exact path). Returns whether O must be
/// rescaled by alpha (the same in every lane of the warp); alpha is set only when it returns true.
/// Poly: of every 8 exponentials of SOFTMAX 2's fast path, this many on the FMA pipe (softmax_stale_base).
template <class T, bool Fold, bool RescaleSkip, int kN = T::kBlockN, int Poly = 0>
__device__ __forceinline__ bool softmax(float (&s)[kN / 2], unsigned (&pa)[kN / 16][4], float (&alpha)[2],
                                        float (&row_max)[2], float (&row_sum)[2], bool diagonal, bool first,
                                        int qpos, int key0, int seq_len, int lane) {
  if constexpr (T::kNoSoftmax) {
    row_max[0] = row_max[1] = 0.f;
    row_sum[0] = row_sum[1] = 1.f;
#pragma unroll
    for (int kk = 0; kk < kN / 16; ++kk)
#pragma unroll
      for (int e = 0; e < 4; ++e) pa[kk][e] = pack_half2(s[8 * kk + 2 * e], s[8 * kk + 2 * e + 1]);
    return false;
  } else {
    constexpr int kLazy = T::kSoftmax == 0 ? 0 : kLazyLog2;
    if constexpr (T::kSoftmax == 2) {
      if (!first) {
        if (diagonal) mask_diagonal<kN>(s, qpos, key0, seq_len, lane);
        if (softmax_stale_base<kN, Fold, Poly>(s, pa, row_max, row_sum)) {
          if constexpr (T::kNoRowSum) row_sum[0] = row_sum[1] = 1.f;
          return false;
        }
      }
    }
    softmax_tile<kN, Fold, kLazy>(s, pa, alpha, row_max, row_sum, diagonal, qpos, key0, seq_len, lane);
    if constexpr (T::kNoRowSum) row_sum[0] = row_sum[1] = 1.f;
    if (T::kSoftmax == 0 && !RescaleSkip) return true;
    return __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f);
  }
}

}  // namespace hopper
