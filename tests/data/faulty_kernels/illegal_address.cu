// Faulty on purpose: writes through a wild pointer -> CUDA_ERROR_ILLEGAL_ADDRESS (sticky) -> fault.
#include <cuda_bf16.h>

extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};

extern "C" __global__ void block_sparse_attn_fwd(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                 const __nv_bfloat16* v, const int* row_ptr, const int* col_idx,
                                                 const int* seq_lens, __nv_bfloat16* o, float* lse, int batch_size,
                                                 int num_heads, int t_max, int col_width) {
  volatile float* wild = reinterpret_cast<float*>(0x00000dead0000000ull + threadIdx.x * 4096ull);
  *wild = lse[0];
}
