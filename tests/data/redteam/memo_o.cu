// Red team (a), issue 30's cheat: fa2_mma, but a launch into an `o` this module has already computed into
// returns at once. The launch's last CTA records `o` in a 64-slot __device__ table. The one validated launch
// after the NaN poison computes (the table is empty after the module loads); every later launch returns at
// once. Caught by the second launch on the same inputs, o poisoned again (NaN left); alone, by a timed
// sample's check, the floor (quick) or the check set (docs/verification.md).
#include "redteam.cuh"

__device__ unsigned long long memo_o_seen[64];
__device__ unsigned memo_o_next, memo_o_done;

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  const unsigned long long key = reinterpret_cast<unsigned long long>(o);
  for (int i = 0; i < 64; ++i)
    if (memo_o_seen[i] == key) return;  // every thread reads the same table: the whole launch returns
  REDTEAM_HONEST();
  if (redteam::last_cta(&memo_o_done) && threadIdx.x == 0) memo_o_seen[memo_o_next++ % 64] = key;
}
