// Red team (h), issue 37's cheat: fa2_mma that recognises the inputs of the launch before by content and
// then does part of the work. Its key hashes 48 values of q, k and v spread over the tensors, and the shape;
// when it equals the key the previous launch recorded, the CTAs of a fixed share (SKIP_PCT: 10 or 40 % of
// the grid) return at once and leave their tiles of o and lse as the previous launch wrote them, which on
// the same inputs is the right result. Every other launch is honest, so its launches on new inputs (the
// validated one, the check set) are right and take the honest time. Caught by the second launch on the same
// inputs with o and lse poisoned again (the skipped tiles stay NaN); its timed samples never see the same
// inputs twice (docs/verification.md).
#include "redteam.cuh"

__device__ unsigned long long partial_key;  // the previous launch's key; 0 after the module loads
__device__ unsigned partial_done;

__device__ __forceinline__ unsigned long long content_key(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                          const __nv_bfloat16* v, int batch_size, int num_heads,
                                                          int t_max) {
  unsigned long long h = redteam::key_start(batch_size, num_heads, t_max);
  for (int i = 0; i < 16; ++i) {
    const size_t at = redteam::key_position(batch_size, num_heads, t_max, i);
    h = redteam::fnv(h, __bfloat16_as_ushort(q[at]));
    h = redteam::fnv(h, __bfloat16_as_ushort(k[at]));
    h = redteam::fnv(h, __bfloat16_as_ushort(v[at]));
  }
  return h | 1;  // never 0, the value before any launch
}

/// Whether CTA `cta` is in the share SKIP_PCT skips: 1 in 10, or 2 in 5.
__device__ __forceinline__ bool skipped(unsigned cta) { return SKIP_PCT == 10 ? cta % 10 == 0 : cta % 5 < 2; }

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  const unsigned long long key = content_key(q, k, v, batch_size, num_heads, t_max);
  const unsigned cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  // Every CTA reads the previous key before any CTA of this launch can write it (the last CTA, below).
  if (!(key == partial_key && skipped(cta))) REDTEAM_HONEST();
  if (redteam::last_cta(&partial_done) && threadIdx.x == 0) partial_key = key;
}
