// Faulty on purpose: attn_launch_info asks for 1 MiB of dynamic smem, more than any GPU allows per block
// (227 KB on sm_90) -> cuFuncSetAttribute fails with CUDA_ERROR_INVALID_VALUE -> device_limit.
#include <cuda_bf16.h>

extern "C" __device__ int attn_launch_info[4] = {128, 1 << 20, 128, 0};

extern "C" __global__ void block_sparse_attn_fwd(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                 const __nv_bfloat16* v, const int* row_ptr, const int* col_idx,
                                                 const int* seq_lens, __nv_bfloat16* o, float* lse, int batch_size,
                                                 int num_heads, int t_max, int col_width) {
  extern __shared__ float smem[];
  smem[threadIdx.x] = 0.f;
  __syncthreads();
  lse[0] = smem[0];
}
