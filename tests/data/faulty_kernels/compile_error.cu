// Faulty on purpose: a syntax error -> NVRTC fails -> FailureKind::compile, with the error in the log.
#include <cuda_bf16.h>

extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};

extern "C" __global__ void block_sparse_attn_fwd(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                 const __nv_bfloat16* v, const int* row_ptr, const int* col_idx,
                                                 const int* seq_lens, __nv_bfloat16* o, float* lse, int batch_size,
                                                 int num_heads, int t_max, int col_width) {
  lse[0] = 1.0f +;  // syntax error
}
