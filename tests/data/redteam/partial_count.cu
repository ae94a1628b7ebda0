// Red team (i): fa2_mma keyed by its launch count. The module's first HONEST_LAUNCHES launches are honest;
// every launch after them skips 40 % of the CTAs (2 in 5), which leave their tiles of o and lse as the
// launch before wrote them: right while the inputs and the outputs stay the same, as they did for the timed
// samples before issue 37. Caught by the timed samples' checks: each runs on fresh inputs with o and lse
// poisoned before it and is validated after it (docs/verification.md).
#include "redteam.cuh"

__device__ unsigned count_launches;  // launches completed by this module
__device__ unsigned count_done;

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  const unsigned launch = count_launches;  // incremented by the last CTA of the launch, after every CTA read it
  const unsigned cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (!(launch >= HONEST_LAUNCHES && cta % 5 < 2)) REDTEAM_HONEST();
  if (redteam::last_cta(&count_done) && threadIdx.x == 0) count_launches = launch + 1;
}
