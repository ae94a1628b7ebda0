// fp32 oracle for block-sparse causal attention forward on the GPU: the semantics of the harness's
// reference.py (CSR order, causal diagonal block, seq_len masks, invalid col_idx entries dropped,
// o = 0 / lse = -inf for rows with no allowed key), exact expf/logf, every rounding explicit (no FMA
// contraction left to the compiler). Two kernels share the arithmetic below, step for step, so that they
// give the same bits for a row:
// - reference_attn_fwd_fp32: every row, one thread per query row (a case's reference, once per case);
// - reference_rows_fp32: the rows a timed sample's check draws (kernels_templates/sample_rules.h), one CTA per
//   row, the keys' scores in parallel and the running max as a prefix max (exact), only the sums in order.
// Same ABI as the attention templates (kernels_templates/ABI.md). Not tuned.
#include <cuda_bf16.h>

#include "sample_rules.h"

namespace {
constexpr int kBlock = 128;  // block size and head dim of the challenge
constexpr int kSmemBytes = 2 * kBlock * kBlock * 4;  // one kv block of K and V as fp32
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
}  // namespace

extern "C" __device__ int attn_launch_info[4] = {kBlock, kSmemBytes, kBlock, 0};

extern "C" __global__ void __launch_bounds__(kBlock, 1)
reference_attn_fwd_fp32(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                        const __nv_bfloat16* __restrict__ v, const int* __restrict__ row_ptr,
                        const int* __restrict__ col_idx, const int* __restrict__ seq_lens,
                        __nv_bfloat16* __restrict__ o, float* __restrict__ lse, int batch_size, int num_heads,
                        int t_max, int col_width) {
  extern __shared__ float smem[];
  float* ks = smem;                    // [128 keys][128 dims]
  float* vs = smem + kBlock * kBlock;  // [128 keys][128 dims]
  const int q_blocks = t_max / kBlock;
  const int q_block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int seq_len = seq_lens[b];
  const int valid_blocks = (seq_len + kBlock - 1) / kBlock;
  const size_t bh = size_t(b) * num_heads + h;
  const int qpos = q_block * kBlock + threadIdx.x;
  const bool query_valid = qpos < seq_len;

  float qr[kBlock], acc[kBlock];
  const __nv_bfloat16* qrow = q + (bh * t_max + qpos) * kBlock;
  for (int d = 0; d < kBlock; ++d) {
    qr[d] = __bfloat162float(qrow[d]);
    acc[d] = 0.f;
  }
  float m = neg_inf(), l = 0.f;

  const int* rp = row_ptr + bh * (q_blocks + 1);
  const int begin = rp[q_block], end = rp[q_block + 1];
  for (int e = begin; e < end; ++e) {
    const int kv = col_idx[bh * col_width + e];
    if (!kv_block_kept(kv, q_block, valid_blocks)) continue;  // dropped, as reference.py
    __syncthreads();
    const size_t base = (bh * t_max + size_t(kv) * kBlock) * kBlock;
    for (int i = threadIdx.x; i < kBlock * kBlock; i += kBlock) {
      ks[i] = __bfloat162float(k[base + i]);
      vs[i] = __bfloat162float(v[base + i]);
    }
    __syncthreads();
    if (!query_valid) continue;
    for (int j = 0; j < kBlock; ++j) {
      if (!key_allowed(kv * kBlock + j, qpos, kv, q_block, seq_len)) continue;
      float s = 0.f;
      for (int d = 0; d < kBlock; ++d) s = dot_step(s, qr[d], ks[j * kBlock + d]);
      s = scaled(s);
      const float m_new = fmaxf(m, s);
      const float alpha = rescale(m, m_new);
      const float p = weight(s, m_new);
      l = sum_step(l, alpha, p);
      for (int d = 0; d < kBlock; ++d) acc[d] = acc_step(acc[d], alpha, p, vs[j * kBlock + d]);
      m = m_new;
    }
  }
  const bool has_keys = query_valid && l > 0.f;
  __nv_bfloat16* orow = o + (bh * t_max + qpos) * kBlock;
  for (int d = 0; d < kBlock; ++d) orow[d] = out_o(acc[d], l, has_keys);
  lse[bh * t_max + qpos] = out_lse(m, l, has_keys);
}

// The reference of the rows a sample check draws with `seed` (attn_sample::sampled_row): CTA i computes row i
// and writes its flat row index to rows[i], its o to ref_o[i * 128 ..] (bf16) and its lse to ref_lse[i], the
// same bits as reference_attn_fwd_fp32 gives that row. Per kept kv block: thread j computes key j's score (its
// dot product in order, as above), the running max before and with each key is a prefix max over the block's
// allowed scores (max is exact in any order), thread j computes its key's alpha and p from them, then thread d
// runs the sums over the keys in order. Launch with grid = the number of rows, 128 threads, no dynamic smem.
extern "C" __global__ void __launch_bounds__(kBlock)
reference_rows_fp32(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                    const __nv_bfloat16* __restrict__ v, const int* __restrict__ row_ptr,
                    const int* __restrict__ col_idx, const int* __restrict__ seq_lens, int batch_size, int num_heads,
                    int t_max, int col_width, unsigned long long seed, int* __restrict__ rows,
                    __nv_bfloat16* __restrict__ ref_o, float* __restrict__ ref_lse) {
  __shared__ float qs[kBlock];                     // the query row
  __shared__ float alphas[kBlock], weights[kBlock];  // per key of the block: alpha, p
  __shared__ int allowed[kBlock];
  __shared__ float warp_max[kBlock / 32];
  __shared__ __align__(16) __nv_bfloat16 vs[kBlock * kBlock];  // the block's V rows (bf16, as loaded)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned long long row =
      attn_sample::sampled_row(seed, blockIdx.x, seq_lens, batch_size, num_heads, t_max);
  const int qpos = int(row % (unsigned long long)t_max);
  const size_t bh = size_t(row / (unsigned long long)t_max);
  const int b = int(bh / num_heads);
  const int q_blocks = t_max / kBlock, q_block = qpos / kBlock;
  const int seq_len = seq_lens[b];
  const int valid_blocks = (seq_len + kBlock - 1) / kBlock;
  const bool query_valid = qpos < seq_len;  // always, for a drawn row; kept as the rule

  qs[tid] = __bfloat162float(q[row * kBlock + tid]);
  float m = neg_inf(), l = 0.f, acc = 0.f;  // acc: thread tid's column of o
  const int* rp = row_ptr + bh * (q_blocks + 1);
  const int begin = rp[q_block], end = rp[q_block + 1];
  for (int e = begin; e < end; ++e) {
    const int kv = col_idx[bh * col_width + e];
    if (!kv_block_kept(kv, q_block, valid_blocks) || !query_valid) continue;
    __syncthreads();  // the previous block's sums are done with the shared arrays; qs is written
    const size_t base = (bh * t_max + size_t(kv) * kBlock) * kBlock;
    const uint4* vsrc = reinterpret_cast<const uint4*>(v + base);
    uint4* vdst = reinterpret_cast<uint4*>(vs);
    for (int i = tid; i < kBlock * kBlock / 8; i += kBlock) vdst[i] = vsrc[i];
    // Key tid's score.
    const int kpos = kv * kBlock + tid;
    const bool ok = key_allowed(kpos, qpos, kv, q_block, seq_len);
    float s = neg_inf();
    if (ok) {
      const uint4* krow = reinterpret_cast<const uint4*>(k + base + size_t(tid) * kBlock);
      s = 0.f;
#pragma unroll
      for (int c = 0; c < kBlock / 8; ++c) {
        const uint4 w = krow[c];
        const unsigned words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          s = dot_step(s, qs[8 * c + 2 * p], __uint_as_float(words[p] << 16));
          s = dot_step(s, qs[8 * c + 2 * p + 1], __uint_as_float(words[p] & 0xFFFF0000u));
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
    if (lane == 31) warp_max[warp] = incl;
    __syncthreads();
    for (int w = 0; w < warp; ++w) incl = fmaxf(incl, warp_max[w]);
    incl = fmaxf(incl, m);
    float excl = __shfl_up_sync(0xffffffffu, incl, 1);
    if (lane == 0) {
      excl = m;
      for (int w = 0; w < warp; ++w) excl = fmaxf(excl, warp_max[w]);
    }
    allowed[tid] = ok;
    if (ok) {
      alphas[tid] = rescale(excl, incl);
      weights[tid] = weight(s, incl);
    }
    float block_max = m;
    for (int w = 0; w < kBlock / 32; ++w) block_max = fmaxf(block_max, warp_max[w]);
    __syncthreads();
    // The sums over the keys in order: l (every thread, the same), o's column tid.
    for (int j = 0; j < kBlock; ++j) {
      if (!allowed[j]) continue;
      const float alpha = alphas[j], p = weights[j];
      l = sum_step(l, alpha, p);
      acc = acc_step(acc, alpha, p, __bfloat162float(vs[j * kBlock + tid]));
    }
    m = block_max;
  }
  const bool has_keys = query_valid && l > 0.f;
  ref_o[size_t(blockIdx.x) * kBlock + tid] = out_o(acc, l, has_keys);
  if (tid == 0) {
    ref_lse[blockIdx.x] = out_lse(m, l, has_keys);
    rows[blockIdx.x] = int(row);
  }
}
