// GPU kill-campaign template (scripts/device/step_kill_campaign.sh), kept out of kernels_templates/: with
// SPIN = 0 it is the fp32 reference kernel (kernels_templates/reference_fp32.cu: a real, valid, slow
// attention kernel with the ABI), with SPIN = 1 a kernel of the same ABI whose every CTA spins forever: a
// hung variant that keeps the SMs busy until its worker process dies. COPY changes nothing but the
// config (and so the cubin's cache hash), to give the search a space of equal healthy variants.
#ifndef SPIN
#error "SPIN not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef COPY
#error "COPY not given: a parameter of the space (its default is in the .json)"
#endif

#if SPIN
#include <cuda_bf16.h>

extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};

extern "C" __global__ void reference_attn_fwd_fp32(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                   const __nv_bfloat16* v, const int* row_ptr, const int* col_idx,
                                                   const int* seq_lens, __nv_bfloat16* o, float* lse,
                                                   int batch_size, int num_heads, int t_max, int col_width) {
  // clock64() never goes negative, but the compiler cannot know: the loop stays, and never ends.
  for (;;)
    if (clock64() < 0) lse[threadIdx.x] = 0.f;
}
#else
#include "../../../kernels_templates/reference_fp32.cu"
#endif
