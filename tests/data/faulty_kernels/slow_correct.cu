// Correct but slow: one thread per query row, per-key online softmax in fp32, K and V of one kv block
// in shared memory as bf16 (64 KB of dynamic smem, so the opt-in limit path is exercised). ABI.md.
// The known-good kernel of the worker tests: every faulty kernel beside it is followed by this one.
#include <cuda_bf16.h>

constexpr int kRows = 128;  // BLOCK_M = block size = head dim
constexpr int kSmem = 2 * kRows * kRows * 2;

extern "C" __device__ int attn_launch_info[4] = {kRows, kSmem, kRows, 0};

extern "C" __global__ void __launch_bounds__(kRows, 1)
block_sparse_attn_fwd(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                      const int* row_ptr, const int* col_idx, const int* seq_lens, __nv_bfloat16* o,
                      float* lse, int batch_size, int num_heads, int t_max, int col_width) {
  extern __shared__ __nv_bfloat16 kv_smem[];
  __nv_bfloat16* ks = kv_smem;
  __nv_bfloat16* vs = kv_smem + kRows * kRows;
  const int q_block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int q_blocks = t_max / kRows;
  const int seq_len = seq_lens[b];
  const int valid_blocks = (seq_len + kRows - 1) / kRows;
  const size_t bh = size_t(b) * num_heads + h;
  const int qpos = q_block * kRows + threadIdx.x;
  const bool query_valid = qpos < seq_len;

  float qr[kRows], acc[kRows];
  for (int d = 0; d < kRows; ++d) {
    qr[d] = __bfloat162float(q[(bh * t_max + qpos) * kRows + d]);
    acc[d] = 0.f;
  }
  const float neg_inf = __int_as_float(0xff800000);
  const float scale = 0.088388347648318440550f;
  float m = neg_inf, l = 0.f;
  const int* rp = row_ptr + bh * (q_blocks + 1);
  for (int e = rp[q_block]; e < rp[q_block + 1]; ++e) {
    const int kv = col_idx[bh * col_width + e];
    if (kv < 0 || kv > q_block || kv >= valid_blocks) continue;
    __syncthreads();
    const size_t base = (bh * t_max + size_t(kv) * kRows) * kRows;
    for (int i = threadIdx.x; i < kRows * kRows; i += kRows) {
      ks[i] = k[base + i];
      vs[i] = v[base + i];
    }
    __syncthreads();
    if (!query_valid) continue;
    for (int j = 0; j < kRows; ++j) {
      const int kpos = kv * kRows + j;
      if (kpos >= seq_len || (kv == q_block && kpos > qpos)) continue;
      float s = 0.f;
      for (int d = 0; d < kRows; ++d) s += qr[d] * __bfloat162float(ks[j * kRows + d]);
      s *= scale;
      const float m_new = fmaxf(m, s);
      const float c = (m == neg_inf) ? 0.f : expf(m - m_new);
      const float p = expf(s - m_new);
      l = l * c + p;
      for (int d = 0; d < kRows; ++d) acc[d] = acc[d] * c + p * __bfloat162float(vs[j * kRows + d]);
      m = m_new;
    }
  }
  const size_t row = bh * t_max + qpos;
  const bool any = l > 0.f;
  for (int d = 0; d < kRows; ++d) o[row * kRows + d] = __float2bfloat16_rn(any ? acc[d] / l : 0.f);
  lse[row] = any ? m + logf(l) : neg_inf;
}
