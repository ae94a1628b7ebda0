// Red team (f): an attempt to time fast by leaving the work running past the end event: the kernel only
// launches the honest work from the device on CUDA's fire-and-forget stream and returns. A device-side
// launch needs relocatable device code (-rdc) and the device runtime (cudadevrt) linked in; the daemon
// compiles every template with NVRTC's fixed options (no -rdc, nothing linked: gpu/compiler.cpp), and a
// template's JSON cannot add options, so this does not compile: it ends as `compile`. (Even linked,
// CUDA counts a parent grid complete only once the grids it launched are: docs/verification.md.)
#include <cuda_device_runtime_api.h>  // the device runtime's declarations (NVRTC has none by default)

#include "redteam.cuh"

__global__ void __launch_bounds__(kThreads, MIN_BLOCKS) finish_later(ATTN_ABI_PARAMS) { REDTEAM_HONEST(); }

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && threadIdx.x == 0)
    finish_later<<<dim3(t_max / BLOCK_M, num_heads, batch_size), kThreads, kSmemBytes, cudaStreamFireAndForget>>>(
        q, k, v, row_ptr, col_idx, seq_lens, o, lse, batch_size, num_heads, t_max, col_width);
}
