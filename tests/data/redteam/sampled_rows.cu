// Red team (d): fa2_mma that writes only some rows, as if validation sampled them.
//   MODE 0: only the even q_blocks, always: the NaN poison before the validated launch leaves the odd
//           ones NaN (wrong_result at once: validation compares every element).
//   MODE 1: the whole output on the first launch into an `o` (a 64-slot table, as memo_o), then only the
//           even q_blocks: the validated launch is complete, the timed samples do half the work and the
//           odd q_blocks keep what the first launch wrote. Caught by the second launch on the same inputs
//           with o poisoned again (the odd q_blocks stay NaN); not by the floor (half the work is above it).
#include "redteam.cuh"

#ifndef MODE
#error "MODE not given: a parameter of the space (its default is in the .json)"
#endif

__device__ unsigned long long sampled_seen[64];
__device__ unsigned sampled_next, sampled_done;

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  const redteam::Tile t = redteam::tile(num_heads, t_max);
  bool sample = MODE == 0;
  if (MODE == 1) {
    const unsigned long long key = reinterpret_cast<unsigned long long>(o);
    for (int i = 0; i < 64; ++i) sample = sample || sampled_seen[i] == key;
  }
  if (!(sample && t.q_block % 2 == 1)) REDTEAM_HONEST();
  if (MODE == 1 && !sample && redteam::last_cta(&sampled_done) && threadIdx.x == 0)
    sampled_seen[sampled_next++ % 64] = reinterpret_cast<unsigned long long>(o);
}
