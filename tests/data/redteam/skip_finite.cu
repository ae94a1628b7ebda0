// Red team (c): fa2_mma that skips its tile when the tile's o already holds a finite value, so it computes
// only after the outputs were poisoned with NaN. Every timed sample is poisoned first, so it computes them
// all; caught by the check set's launch, whose o is left as the last sample wrote it (it returns at once).
// With the samples unchecked (the evaluation before issue 37), by the floor where the work is large enough.
#include "redteam.cuh"

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  const redteam::Tile t = redteam::tile(num_heads, t_max);
  // Only this CTA writes its tile: every thread reads the value the previous launch left.
  if (isfinite(__bfloat162float(o[t.row0 * 128]))) return;
  REDTEAM_HONEST();
}
