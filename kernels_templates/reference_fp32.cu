// fp32 oracle for block-sparse causal attention forward on the GPU: the semantics of the harness's
// reference.py, exact expf/logf, every rounding explicit (kernels_templates/attn_oracle.cuh). Two kernels give a
// row the same bits:
// - reference_attn_fwd_fp32: every row, one thread per query row (a case's reference, once per case);
// - reference_rows_fp32: the rows a timed sample's check draws (kernels_templates/sample_rules.h), one CTA per
//   row (attn_oracle::oracle_row), for the host path of the check and the tests; the device path computes them
//   inside validate_outputs.cu's validate_sample.
// Same ABI as the attention templates (kernels_templates/ABI.md). Not tuned.
#include <cuda_bf16.h>

#include "attn_oracle.cuh"

using namespace attn_oracle;

namespace {
constexpr int kSmemBytes = 2 * kBlock * kBlock * 4;  // one kv block of K and V as fp32
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
// (attn_oracle::oracle_row) and writes its flat row index to rows[i], its o to ref_o[i * 128 ..] (bf16) and its
// lse to ref_lse[i], the same bits as reference_attn_fwd_fp32 gives that row. Launch with grid = the number of
// rows, 128 threads, no dynamic smem.
extern "C" __global__ void __launch_bounds__(kBlock)
reference_rows_fp32(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                    const __nv_bfloat16* __restrict__ v, const int* __restrict__ row_ptr,
                    const int* __restrict__ col_idx, const int* __restrict__ seq_lens, int batch_size, int num_heads,
                    int t_max, int col_width, unsigned long long seed, int* __restrict__ rows,
                    __nv_bfloat16* __restrict__ ref_o, float* __restrict__ ref_lse) {
  __shared__ RowSmem sm;
  const unsigned long long row = attn_sample::sampled_row(seed, blockIdx.x, seq_lens, batch_size, num_heads, t_max);
  float lse = 0.f;
  ref_o[size_t(blockIdx.x) * kBlock + threadIdx.x] =
      oracle_row(q, k, v, row_ptr, col_idx, seq_lens, num_heads, t_max, col_width, row, sm, lse);
  if (threadIdx.x == 0) {
    ref_lse[blockIdx.x] = lse;
    rows[blockIdx.x] = int(row);
  }
}
