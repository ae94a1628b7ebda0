// Red team (k), written against issue 50's design: fa2_mma that recognises a timed sample and skips part of it.
// Every timed sample runs on the tuning inputs under a mask that changes each value's sign and low 4 mantissa
// bits, with o and lse poisoned before it (docs/verification.md). So it keys each launch twice on 48 values
// spread over q, k and v: exactly, and on their high bits (exponent and top 3 mantissa bits, sign cleared), which
// the mask keeps. A launch whose high-bit key it recorded on a launch before, whose exact key differs from the
// one recorded with it, and whose outputs are poisoned (the first element of its tile is the poison) is a timed
// sample: SKIP_PCT % of the CTAs (5: 1 in 20, 40: 2 in 5) then do no attention and write plausible values that
// pass the scan for unwritten elements (o = 0 and lse = 0 in valid rows; 0 and -inf in padding rows, as the
// reference). Every other launch is honest: the validated one (new high bits: recorded), the second on the same
// inputs, the warm-ups, the sign twin (outputs not poisoned). Caught by the drawn rows of a timed sample: a
// kernel wrong on a share f of the valid rows passes one sample's 128 draws with probability (1 - f)^128 (5 %:
// 0.14 %; 40 %: 1e-28).
#include "redteam.cuh"

constexpr int kSlots = 64;
__device__ unsigned long long masked_high[kSlots], masked_exact[kSlots];  // per input set seen: its two keys
__device__ unsigned masked_used, masked_done;

/// The launch's keys over 48 values and the shape: exact bits (high = false) or bits 4..14 (high = true).
__device__ __forceinline__ unsigned long long input_key(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                        const __nv_bfloat16* v, int batch_size, int num_heads,
                                                        int t_max, bool high) {
  const unsigned keep = high ? 0x7FF0u : 0xFFFFu;
  unsigned long long h = redteam::key_start(batch_size, num_heads, t_max);
  for (int i = 0; i < 16; ++i) {
    const size_t at = redteam::key_position(batch_size, num_heads, t_max, i);
    h = redteam::fnv(h, __bfloat16_as_ushort(q[at]) & keep);
    h = redteam::fnv(h, __bfloat16_as_ushort(k[at]) & keep);
    h = redteam::fnv(h, __bfloat16_as_ushort(v[at]) & keep);
  }
  return h | 1;
}

/// Whether CTA `cta` is in the share SKIP_PCT skips: 1 in 20, or 2 in 5.
__device__ __forceinline__ bool skipped(unsigned cta) { return SKIP_PCT == 5 ? cta % 20 == 0 : cta % 5 < 2; }

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  const unsigned long long high = input_key(q, k, v, batch_size, num_heads, t_max, true);
  const unsigned long long exact = input_key(q, k, v, batch_size, num_heads, t_max, false);
  const unsigned used = masked_used < kSlots ? masked_used : kSlots;
  int slot = -1;
  for (int s = 0; s < int(used); ++s)
    if (masked_high[s] == high) slot = s;
  const redteam::Tile t = redteam::tile(num_heads, t_max);
  const unsigned cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const bool poisoned = __bfloat16_as_ushort(o[t.row0 * 128]) == 0xFFFFu;  // read before anything is written
  __syncthreads();
  const bool sample = slot >= 0 && masked_exact[slot] != exact && poisoned;
  if (sample && skipped(cta)) {
    int q_tile, h, b;
    cta_work<CTA_ORDER>(q_tile, h, b);
    const int seq_len = seq_lens[b];
    uint4* o16 = reinterpret_cast<uint4*>(o + t.row0 * 128);
    for (int i = threadIdx.x; i < BLOCK_M * 16; i += blockDim.x) o16[i] = make_uint4(0u, 0u, 0u, 0u);
    for (int i = threadIdx.x; i < BLOCK_M; i += blockDim.x)
      lse[t.row0 + i] = q_tile * BLOCK_M + i < seq_len ? 0.0f : __int_as_float(0xff800000);
  } else {
    REDTEAM_HONEST();
  }
  if (redteam::last_cta(&masked_done) && threadIdx.x == 0 && slot < 0 && masked_used < kSlots) {
    masked_high[masked_used] = high;
    masked_exact[masked_used] = exact;
    masked_used += 1;
  }
}
