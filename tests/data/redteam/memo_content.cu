// Red team (g): fa2_mma that recognises inputs it has seen, by content. The launch's last CTA records, per
// `o`, a fingerprint of q and k (their first elements); a launch whose `o` and fingerprint match a record
// returns at once: o still holds the right result for those inputs. New data is computed honestly, so the
// result is right on every launch whose outputs were not poisoned. Caught by the second launch on the same
// inputs with o and lse poisoned again (it returns at once: NaN left); alone, by the floor (quick).
#include "redteam.cuh"

constexpr int kFingerprint = 8;  // q[0..3], k[0..3]
__device__ unsigned long long content_o[64];
__device__ unsigned short content_fp[64][kFingerprint];
__device__ unsigned content_next, content_done;

__device__ __forceinline__ unsigned short fingerprint(const __nv_bfloat16* q, const __nv_bfloat16* k, int i) {
  return __bfloat16_as_ushort(i < 4 ? q[i] : k[i - 4]);
}

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  const unsigned long long key = reinterpret_cast<unsigned long long>(o);
  for (int s = 0; s < 64; ++s) {
    if (content_o[s] != key) continue;
    bool same = true;
    for (int i = 0; i < kFingerprint; ++i) same = same && content_fp[s][i] == fingerprint(q, k, i);
    if (same) return;  // seen: o holds the result already
  }
  REDTEAM_HONEST();
  if (redteam::last_cta(&content_done) && threadIdx.x == 0) {
    unsigned s = 0;
    while (s < 64 && content_o[s] != key) ++s;  // this o's record, or a new one
    if (s == 64) s = content_next++ % 64;
    content_o[s] = key;
    for (int i = 0; i < kFingerprint; ++i) content_fp[s][i] = fingerprint(q, k, i);
  }
}
