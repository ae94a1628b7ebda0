// Red team (b): fa2_mma with a result cache keyed by the input pointers. The first launch on a (q, k, v)
// computes and copies o and lse into a __device__ cache; every later launch on the same pointers copies the
// cached result into o and lse without computing, so it survives outputs poisoned before every launch, and
// is right as long as the buffers hold the same data. Caught by the first timed sample (its fresh inputs get
// the old result); alone, by the check set (new data in the same buffers) or, on large cases, the floor.
#include "redteam.cuh"

constexpr unsigned long long kCacheRows = 1ull << 18;  // 64 MiB of o rows (bf16 x 128) and 1 MiB of lse
constexpr int kSlots = 16;
struct MemoSlot {
  const void *q, *k, *v;
  unsigned long long row0;  // first cache row
  int valid;
};
__device__ __nv_bfloat16 memo_cache_o[kCacheRows * 128];
__device__ float memo_cache_lse[kCacheRows];
__device__ MemoSlot memo_slots[kSlots];
__device__ unsigned long long memo_rows_used;
__device__ unsigned memo_slots_used, memo_done;

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  const redteam::Tile t = redteam::tile(num_heads, t_max);
  for (int i = 0; i < kSlots; ++i) {
    const MemoSlot& s = memo_slots[i];
    if (s.valid && s.q == q && s.k == k && s.v == v) {  // seen these buffers: the cached result
      redteam::copy_rows(o, lse, memo_cache_o + s.row0 * 128, memo_cache_lse + s.row0, t.row0);
      return;
    }
  }
  REDTEAM_HONEST();
  // Every CTA reads the same counters (only the last CTA of a launch changes them): one decision per launch.
  const unsigned long long rows = (unsigned long long)batch_size * num_heads * t_max, first = memo_rows_used;
  if (memo_slots_used >= kSlots || first + rows > kCacheRows) return;  // no room: stays honest
  __syncthreads();  // this CTA's o rows are written
  redteam::copy_rows(memo_cache_o + first * 128, memo_cache_lse + first, o, lse, t.row0);
  if (redteam::last_cta(&memo_done) && threadIdx.x == 0) {
    memo_slots[memo_slots_used] = {q, k, v, first, 1};
    memo_slots_used += 1;
    memo_rows_used = first + rows;
  }
}
