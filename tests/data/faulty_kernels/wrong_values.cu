// Faulty on purpose: writes o = 0 and lse = 0 everywhere (valid launch, wrong numbers -> wrong_result).
#include <cuda_bf16.h>

extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};

extern "C" __global__ void block_sparse_attn_fwd(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                 const __nv_bfloat16* v, const int* row_ptr, const int* col_idx,
                                                 const int* seq_lens, __nv_bfloat16* o, float* lse, int batch_size,
                                                 int num_heads, int t_max, int col_width) {
  const size_t row = (size_t(blockIdx.z) * num_heads + blockIdx.y) * t_max + blockIdx.x * 128 + threadIdx.x;
  for (int d = 0; d < 128; ++d) o[row * 128 + d] = __float2bfloat16_rn(0.f);
  lse[row] = 0.f;
}
