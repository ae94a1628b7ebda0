// Red team (j), issue 50's cheat: fa2_mma that keeps a copy of its last result keyed on content that sign flips
// keep, and hands it back sign-corrected. Its key hashes the shape and 48 values spread over the tensors: KEY 0
// their magnitudes |q|, |k|, |v| (sign bits cleared), KEY 1 the products q_c k_c of the same positions (which
// flipping a column in both q and k keeps) and |v|. On a new key it computes honestly and copies o, lse and v's
// first row into a __device__ cache. On the cached key, SKIP CTAs in 5 do no attention: they XOR v's first row
// with the recorded one to get the columns whose sign changed (when every row of v flips the same columns, o's
// same columns change sign) and write the cached o with those columns negated, and the cached lse. Before issue
// 50 every timed sample was the tuning inputs with whole columns flipped, so it passed every check at 0.58x
// the honest time on full. Now every timed sample has new magnitudes (a new key: honest); caught by the sign
// twin, a launch on the last sample's inputs with v's signs drawn anew per element (its key matches, o is new),
// checked on rows drawn after it (docs/verification.md).
#include "redteam.cuh"

constexpr unsigned long long kCacheRows = 1ull << 18;  // 64 MiB of o rows (bf16 x 128) and 1 MiB of lse: full fits
__device__ __nv_bfloat16 abs_cache_o[kCacheRows * 128];
__device__ float abs_cache_lse[kCacheRows];
__device__ __align__(16) unsigned short abs_v_row0[128];  // v's first row when the cache was filled
__device__ unsigned long long abs_key;      // the cached result's key; 0: empty
__device__ unsigned abs_done;

__device__ __forceinline__ unsigned long long sign_free_key(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                            const __nv_bfloat16* v, int batch_size, int num_heads,
                                                            int t_max) {
  unsigned long long h = redteam::key_start(batch_size, num_heads, t_max);
  for (int i = 0; i < 16; ++i) {
    const size_t at = redteam::key_position(batch_size, num_heads, t_max, i);
    if (KEY == 0) {
      h = redteam::fnv(h, __bfloat16_as_ushort(q[at]) & 0x7FFFu);
      h = redteam::fnv(h, __bfloat16_as_ushort(k[at]) & 0x7FFFu);
    } else {
      h = redteam::fnv(h, __float_as_uint(__bfloat162float(q[at]) * __bfloat162float(k[at])));
    }
    h = redteam::fnv(h, __bfloat16_as_ushort(v[at]) & 0x7FFFu);
  }
  return h | 1;  // never 0, the empty cache's key
}

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  const unsigned long long key = sign_free_key(q, k, v, batch_size, num_heads, t_max);
  const bool fits = (unsigned long long)batch_size * num_heads * t_max <= kCacheRows;
  const bool known = fits && key == abs_key;  // every CTA reads it before the last CTA can change it (below)
  const unsigned cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const redteam::Tile t = redteam::tile(num_heads, t_max);
  if (known && cta % 5 < SKIP) {
    // The cached o with the columns whose sign v's first row changed negated, and the cached lse: 16 bytes
    // (8 columns) a thread at a time, the 128 columns' sign flips in shared memory.
    __shared__ unsigned flips[64];  // bit 15 and 31: the flips of columns 2i and 2i + 1
    if (threadIdx.x < 64) {
      const unsigned* v0 = reinterpret_cast<const unsigned*>(v);
      const unsigned* r0 = reinterpret_cast<const unsigned*>(abs_v_row0);
      flips[threadIdx.x] = (v0[threadIdx.x] ^ r0[threadIdx.x]) & 0x80008000u;
    }
    __syncthreads();
    const uint4* from = reinterpret_cast<const uint4*>(abs_cache_o + t.row0 * 128);
    uint4* to = reinterpret_cast<uint4*>(o + t.row0 * 128);
#pragma unroll 4
    for (int i = threadIdx.x; i < BLOCK_M * 16; i += blockDim.x) {
      const int c = (i % 16) * 4;  // the first of this group's 4 column pairs
      uint4 w = from[i];
      w.x ^= flips[c];
      w.y ^= flips[c + 1];
      w.z ^= flips[c + 2];
      w.w ^= flips[c + 3];
      to[i] = w;
    }
    for (int i = threadIdx.x; i < BLOCK_M; i += blockDim.x) lse[t.row0 + i] = abs_cache_lse[t.row0 + i];
  } else {
    REDTEAM_HONEST();
    if (fits && !known) {
      __syncthreads();  // this CTA's rows of o are written
      redteam::copy_rows(abs_cache_o, abs_cache_lse, o, lse, t.row0);
    }
  }
  if (redteam::last_cta(&abs_done) && threadIdx.x == 0 && fits && !known) {
    for (int c = 0; c < 128; ++c) abs_v_row0[c] = __bfloat16_as_ushort(v[c]);
    abs_key = key;
  }
}
