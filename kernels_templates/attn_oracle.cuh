// The fp32 oracle's arithmetic (the semantics of the harness's reference.py: CSR order, causal diagonal block,
// seq_len masks, invalid col_idx entries dropped, o = 0 / lse = -inf for rows with no allowed key), every
// rounding explicit (no FMA contraction left to the compiler), so that every kernel built on it gives a row the
// same bits: reference_fp32.cu's reference_attn_fwd_fp32 (every row, a case's reference) and
// reference_rows_fp32, validate_outputs.cu's validate_sample (the rows a timed sample's check draws,
// kernels_templates/sample_rules.h). Device code only; include after <cuda_bf16.h>.
#pragma once
#include <cuda_bf16.h>

#include "sample_rules.h"

namespace attn_oracle {

constexpr int kBlock = 128;                         // block size and head dim of the challenge
constexpr float kScale = 0.088388347648318440550f;  // 1/sqrt(128), spec.py SCORE_SCALE

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

/// reference.py's dropped col_idx entries: < 0, past the diagonal block or at / past the valid blocks.
__device__ __forceinline__ bool kv_block_kept(int kv, int q_block, int valid_blocks) {
  return !(kv < 0 || kv > q_block || kv >= valid_blocks);
}
/// A key of a kept block is allowed when it is inside the sequence and not after the query (causal diagonal).
__device__ __forceinline__ bool key_allowed(int kpos, int qpos, int kv, int q_block, int seq_len) {
  return !(kpos >= seq_len || (kv == q_block && kpos > qpos));
}
/// One step of the score's dot product, d = 0..127 in order from 0, then the scale.
__device__ __forceinline__ float dot_step(float s, float q, float k) { return __fmaf_rn(q, k, s); }
__device__ __forceinline__ float scaled(float s) { return __fmul_rn(s, kScale); }
/// The online softmax's factors for a key of score s, given the running max before it (m) and with it
/// (m_new = fmaxf(m, s)): alpha rescales what was summed, p weighs the key.
__device__ __forceinline__ float rescale(float m, float m_new) { return m == neg_inf() ? 0.f : expf(__fsub_rn(m, m_new)); }
__device__ __forceinline__ float weight(float s, float m_new) { return expf(__fsub_rn(s, m_new)); }
/// The sums: l = l * alpha + p, acc_d = acc_d * alpha + p * v_d.
__device__ __forceinline__ float sum_step(float l, float alpha, float p) { return __fmaf_rn(l, alpha, p); }
__device__ __forceinline__ float acc_step(float acc, float alpha, float p, float v) {
  return __fmaf_rn(p, v, __fmul_rn(acc, alpha));
}
/// The outputs: o_d rounded to bf16, lse natural log; a row without keys gets 0 and -inf.
__device__ __forceinline__ __nv_bfloat16 out_o(float acc, float l, bool has_keys) {
  return __float2bfloat16_rn(has_keys ? __fdiv_rn(acc, l) : 0.f);
}
__device__ __forceinline__ float out_lse(float m, float l, bool has_keys) {
  return has_keys ? __fadd_rn(m, logf(l)) : neg_inf();
}

/// The shared memory of oracle_row (static: 34.8 KB).
struct RowSmem {
  float qs[kBlock];                          // the query row
  float alphas[kBlock], weights[kBlock];     // per key of the block: alpha, p
  int allowed[kBlock];
  float warp_max[kBlock / 32];
  __align__(16) __nv_bfloat16 vs[kBlock * kBlock];  // the block's V rows (bf16, as loaded)
};

/// One row of the oracle in one CTA of 128 threads: the flat row index `row` of o's [batch * heads * t_max]
/// rows. Per kept kv block: thread j computes key j's score (its dot product in order), the running max before
/// and with each key is a prefix max over the block's allowed scores (max is exact in any order), thread j
/// computes its key's alpha and p from them, then thread d runs the sums over the keys in order: the same
/// operations in the same order as reference_attn_fwd_fp32's thread for that row. Returns thread d's o_d (bf16);
/// every thread gets the row's lse in `lse`.
__device__ __forceinline__ __nv_bfloat16 oracle_row(const __nv_bfloat16* __restrict__ q,
                                                    const __nv_bfloat16* __restrict__ k,
                                                    const __nv_bfloat16* __restrict__ v, const int* __restrict__ row_ptr,
                                                    const int* __restrict__ col_idx, const int* __restrict__ seq_lens,
                                                    int num_heads, int t_max, int col_width, unsigned long long row,
                                                    RowSmem& sm, float& lse) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int qpos = int(row % (unsigned long long)t_max);
  const size_t bh = size_t(row / (unsigned long long)t_max);
  const int b = int(bh / num_heads);
  const int q_blocks = t_max / kBlock, q_block = qpos / kBlock;
  const int seq_len = seq_lens[b];
  const int valid_blocks = (seq_len + kBlock - 1) / kBlock;
  const bool query_valid = qpos < seq_len;

  sm.qs[tid] = __bfloat162float(q[row * kBlock + tid]);
  float m = neg_inf(), l = 0.f, acc = 0.f;  // acc: thread tid's column of o
  const int* rp = row_ptr + bh * (q_blocks + 1);
  const int begin = rp[q_block], end = rp[q_block + 1];
  const int* cols = col_idx + bh * col_width;
  // The kept blocks in CSR order; the next one's K row (thread tid's key) and V tile (its 16 chunks of 16 bytes)
  // are loaded into registers while this one's sums run, so a block waits for no global load.
  auto next_kept = [&](int e) {
    while (query_valid && e < end && !kv_block_kept(cols[e], q_block, valid_blocks)) ++e;
    return query_valid ? e : end;
  };
  uint4 k_next[kBlock / 8], v_next[kBlock * kBlock / 8 / kBlock];
  auto load_block = [&](int kv) {
    const size_t base = (bh * t_max + size_t(kv) * kBlock) * kBlock;
    const uint4* krow = reinterpret_cast<const uint4*>(k + base + size_t(tid) * kBlock);
    const uint4* vsrc = reinterpret_cast<const uint4*>(v + base);
#pragma unroll
    for (int c = 0; c < kBlock / 8; ++c) k_next[c] = krow[c];
#pragma unroll
    for (int i = 0; i < kBlock * kBlock / 8 / kBlock; ++i) v_next[i] = vsrc[tid + i * kBlock];
  };
  int e = next_kept(begin);
  if (e < end) load_block(cols[e]);
  for (; e < end;) {
    const int kv = cols[e];
    __syncthreads();  // the previous block's sums are done with the shared arrays; qs is written
    uint4* vdst = reinterpret_cast<uint4*>(sm.vs);
#pragma unroll
    for (int i = 0; i < kBlock * kBlock / 8 / kBlock; ++i) vdst[tid + i * kBlock] = v_next[i];
    // Key tid's score.
    const int kpos = kv * kBlock + tid;
    const bool ok = key_allowed(kpos, qpos, kv, q_block, seq_len);
    float s = neg_inf();
    if (ok) {
      s = 0.f;
#pragma unroll
      for (int c = 0; c < kBlock / 8; ++c) {
        const uint4 w = k_next[c];
        const unsigned words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          s = dot_step(s, sm.qs[8 * c + 2 * p], __uint_as_float(words[p] << 16));
          s = dot_step(s, sm.qs[8 * c + 2 * p + 1], __uint_as_float(words[p] & 0xFFFF0000u));
        }
      }
      s = scaled(s);
    }
    // The running max with key tid (inclusive prefix max; disallowed keys count as -inf) and before it.
    float incl = s;
    for (int off = 1; off < 32; off *= 2) {
      const float x = __shfl_up_sync(0xffffffffu, incl, off);
      if (lane >= off) incl = fmaxf(incl, x);
    }
    if (lane == 31) sm.warp_max[warp] = incl;
    __syncthreads();
    for (int w = 0; w < warp; ++w) incl = fmaxf(incl, sm.warp_max[w]);
    incl = fmaxf(incl, m);
    float excl = __shfl_up_sync(0xffffffffu, incl, 1);
    if (lane == 0) {
      excl = m;
      for (int w = 0; w < warp; ++w) excl = fmaxf(excl, sm.warp_max[w]);
    }
    sm.allowed[tid] = ok;
    if (ok) {
      sm.alphas[tid] = rescale(excl, incl);
      sm.weights[tid] = weight(s, incl);
    }
    float block_max = m;
    for (int w = 0; w < kBlock / 32; ++w) block_max = fmaxf(block_max, sm.warp_max[w]);
    e = next_kept(e + 1);
    if (e < end) load_block(cols[e]);  // in flight during the sums
    __syncthreads();
    // The sums over the keys in order: l (every thread, the same), o's column tid.
    for (int j = 0; j < kBlock; ++j) {
      if (!sm.allowed[j]) continue;
      const float alpha = sm.alphas[j], p = sm.weights[j];
      l = sum_step(l, alpha, p);
      acc = acc_step(acc, alpha, p, __bfloat162float(sm.vs[j * kBlock + tid]));
    }
    m = block_max;
  }
  const bool has_keys = query_valid && l > 0.f;
  lse = out_lse(m, l, has_keys);
  return out_o(acc, l, has_keys);
}

}  // namespace attn_oracle
