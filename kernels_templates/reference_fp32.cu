// fp32 oracle for block-sparse causal attention forward on the GPU: the semantics of the harness's
// reference.py (CSR order, causal diagonal block, seq_len masks, invalid col_idx entries dropped,
// o = 0 / lse = -inf for rows with no allowed key), one thread per query row, exact expf/logf.
// Same ABI as the attention templates (kernels_templates/ABI.md). Not tuned: it runs once per case.
#include <cuda_bf16.h>

namespace {
constexpr int kBlock = 128;  // block size and head dim of the challenge
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
  const float neg_inf = __int_as_float(0xff800000);
  const float scale = 0.088388347648318440550f;  // 1/sqrt(128), spec.py SCORE_SCALE
  float m = neg_inf, l = 0.f;

  const int* rp = row_ptr + bh * (q_blocks + 1);
  const int begin = rp[q_block], end = rp[q_block + 1];
  for (int e = begin; e < end; ++e) {
    const int kv = col_idx[bh * col_width + e];
    if (kv < 0 || kv > q_block || kv >= valid_blocks) continue;  // dropped, as reference.py
    __syncthreads();
    const size_t base = (bh * t_max + size_t(kv) * kBlock) * kBlock;
    for (int i = threadIdx.x; i < kBlock * kBlock; i += kBlock) {
      ks[i] = __bfloat162float(k[base + i]);
      vs[i] = __bfloat162float(v[base + i]);
    }
    __syncthreads();
    if (!query_valid) continue;
    for (int j = 0; j < kBlock; ++j) {
      const int kpos = kv * kBlock + j;
      if (kpos >= seq_len || (kv == q_block && kpos > qpos)) continue;
      float s = 0.f;
      for (int d = 0; d < kBlock; ++d) s = fmaf(qr[d], ks[j * kBlock + d], s);
      s *= scale;
      const float m_new = fmaxf(m, s);
      const float alpha = (m == neg_inf) ? 0.f : expf(m - m_new);
      const float p = expf(s - m_new);
      l = l * alpha + p;
      for (int d = 0; d < kBlock; ++d) acc[d] = fmaf(p, vs[j * kBlock + d], acc[d] * alpha);
      m = m_new;
    }
  }
  const bool has_keys = query_valid && l > 0.f;
  __nv_bfloat16* orow = o + (bh * t_max + qpos) * kBlock;
  for (int d = 0; d < kBlock; ++d) orow[d] = __float2bfloat16_rn(has_keys ? acc[d] / l : 0.f);
  lse[bh * t_max + qpos] = has_keys ? m + logf(l) : neg_inf;
}
