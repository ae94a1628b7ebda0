// Output validation on the device: the rules of workload/validation.cpp (the harness's validation.py),
// element for element, so that a variant's o and lse never leave the GPU. Each kernel adds to three
// counters: [0] elements outside the tolerance, [1] the max |a - b| over pairs where both are finite
// (fp32 bits: non-negative floats order as unsigned ints), [2] 1 when a pair has exactly one finite
// member (the harness's max abs diff is then inf). Arithmetic in fp32 with explicit rounding (no FMA
// contraction), as torch.isclose and the CPU path compute it. See gpu/device_validation.hpp.
#include <cuda_bf16.h>

#include "attn_oracle.cuh"

__device__ __forceinline__ float bf16_bits_to_float(unsigned short h) { return __uint_as_float(unsigned(h) << 16); }

/// torch.isclose(a, b, rtol, atol, equal_nan=False): equal values, or a finite |a - b| <= atol + |rtol * b|.
__device__ __forceinline__ bool isclose(float a, float b, float atol, float rtol) {
  if (a == b) return true;
  const float err = fabsf(__fsub_rn(a, b));
  return isfinite(err) && err <= __fadd_rn(atol, fabsf(__fmul_rn(rtol, b)));
}

/// The lse rule: NaN fails, infinities must match in place and sign, finite pairs allclose.
__device__ __forceinline__ bool lse_ok(float a, float b, float atol, float rtol) {
  if (isnan(a) || isnan(b)) return false;
  if (isinf(a) || isinf(b)) return isinf(a) && isinf(b) && signbit(a) == signbit(b);
  return isclose(a, b, atol, rtol);
}

/// Block-reduces the thread's counts and adds them to `counters` (one atomic of each kind per block).
__device__ __forceinline__ void flush_counts(unsigned bad, float max_diff, unsigned one_finite, unsigned* counters) {
  for (int off = 16; off > 0; off /= 2) {
    bad += __shfl_xor_sync(0xffffffffu, bad, off);
    max_diff = fmaxf(max_diff, __shfl_xor_sync(0xffffffffu, max_diff, off));
    one_finite |= __shfl_xor_sync(0xffffffffu, one_finite, off);
  }
  if ((threadIdx.x & 31) == 0) {
    if (bad) atomicAdd(&counters[0], bad);
    if (max_diff > 0.0f) atomicMax(&counters[1], __float_as_uint(max_diff));
    if (one_finite) atomicOr(&counters[2], 1u);
  }
}

/// Adds a finite/finite pair's |a - b| to the running max, or flags a pair with one finite member.
__device__ __forceinline__ void track_diff(float a, float b, float& max_diff, unsigned& one_finite) {
  const bool fa = isfinite(a), fb = isfinite(b);
  if (fa != fb) one_finite = 1;
  else if (fa) max_diff = fmaxf(max_diff, fabsf(__fsub_rn(a, b)));
}

/// o: bf16 [n] against the reference's bf16 [n]; torch.allclose on the fp32 values.
extern "C" __global__ void validate_o_bf16(const unsigned short* o, const unsigned short* ref, unsigned long long n,
                                           float atol, float rtol, unsigned* counters) {
  unsigned bad = 0, one_finite = 0;
  float max_diff = 0.0f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const float a = bf16_bits_to_float(o[i]), b = bf16_bits_to_float(ref[i]);
    bad += !isclose(a, b, atol, rtol);
    track_diff(a, b, max_diff, one_finite);
  }
  flush_counts(bad, max_diff, one_finite, counters);
}

/// lse: fp32 [n]; NaN fails, infinities must match in place and sign, finite pairs allclose.
extern "C" __global__ void validate_lse_fp32(const float* lse, const float* ref, unsigned long long n, float atol,
                                             float rtol, unsigned* counters) {
  unsigned bad = 0, one_finite = 0;
  float max_diff = 0.0f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const float a = lse[i], b = ref[i];
    bad += !lse_ok(a, b, atol, rtol);
    track_diff(a, b, max_diff, one_finite);
  }
  flush_counts(bad, max_diff, one_finite, counters);
}

// A timed sample's check (gpu/sample_checks.hpp, docs/verification.md), one launch behind the sample on its
// stream. Blocks 0 .. n_rows - 1 each draw one row with `seed` (attn_sample::sampled_row: the seed exists only
// from this launch on), compute its fp32 reference (attn_oracle::oracle_row, the bits of reference_fp32.cu) and
// compare o's and lse's row with it; the other blocks meanwhile scan every row of o and lse [batch * heads *
// t_max rows]: a valid row (position < seq_lens[b]) must be finite in o and have an lse that is neither NaN nor
// +inf (the poison before the sample is NaN: an element the kernel did not write fails here), a padding row must
// match its known reference (o = 0, lse = -inf) by the rules above. counters[0..2] and [3..5] as
// validate_o_bf16 / validate_lse_fp32 over what is compared; [6]: drawn rows with an element outside the
// tolerances (a row drawn twice counts twice); [7]: elements that fail the scan. Launch with 128 threads and
// more than n_rows blocks (n_rows may be 0: the scan alone).
extern "C" __global__ void __launch_bounds__(attn_oracle::kBlock, 1)  // (128) alone spills 4 bytes
validate_sample(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                const __nv_bfloat16* __restrict__ v, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                const int* __restrict__ seq_lens, int batch, int heads, int t_max, int col_width,
                unsigned long long seed, int n_rows, const unsigned short* __restrict__ o,
                const float* __restrict__ lse, float o_atol, float o_rtol, float lse_atol, float lse_rtol,
                unsigned* counters) {
  unsigned o_bad = 0, o_one_finite = 0, lse_bad = 0, lse_one_finite = 0, scan_bad = 0;
  float o_max = 0.0f, lse_max = 0.0f;
  const unsigned long long total_rows = (unsigned long long)batch * heads * t_max;
  if (int(blockIdx.x) < n_rows) {
    __shared__ attn_oracle::RowSmem sm;
    __shared__ unsigned row_bad;
    if (threadIdx.x == 0) row_bad = 0;
    const unsigned long long row = attn_sample::sampled_row(seed, blockIdx.x, seq_lens, batch, heads, t_max);
    float ref_lse = 0.0f;
    const float b = __bfloat162float(
        attn_oracle::oracle_row(q, k, v, row_ptr, col_idx, seq_lens, heads, t_max, col_width, row, sm, ref_lse));
    const float a = bf16_bits_to_float(o[row * 128 + threadIdx.x]);
    unsigned bad = !isclose(a, b, o_atol, o_rtol);
    o_bad += bad;
    track_diff(a, b, o_max, o_one_finite);
    if (threadIdx.x == 0) {
      const unsigned out = !lse_ok(lse[row], ref_lse, lse_atol, lse_rtol);
      lse_bad += out;
      bad += out;
      track_diff(lse[row], ref_lse, lse_max, lse_one_finite);
    }
    __syncthreads();  // row_bad is zeroed (oracle_row synchronizes only when the row has a kept block)
    if (bad) atomicOr(&row_bad, 1u);
    __syncthreads();
    if (threadIdx.x == 0 && row_bad) atomicAdd(&counters[6], 1u);
  } else {
    const unsigned long long stride = (unsigned long long)(gridDim.x - n_rows) * blockDim.x;
    const unsigned long long first = (unsigned long long)(blockIdx.x - n_rows) * blockDim.x + threadIdx.x;
    const float neg_inf = __int_as_float(0xff800000);
    const uint4* o16 = reinterpret_cast<const uint4*>(o);  // 8 elements of one row per 16 bytes
    // kScanLoads 16-byte loads in flight per thread before any is used: the drawn rows' blocks hold most of the
    // registers (the next kv block's K row and V tile), so few scan blocks fit on an SM and each needs the loads.
    constexpr int kScanLoads = 8;
    const unsigned long long groups = total_rows * 16;
    for (unsigned long long g0 = first; g0 < groups; g0 += stride * kScanLoads) {
      uint4 w[kScanLoads];
#pragma unroll
      for (int u = 0; u < kScanLoads; ++u)
        if (g0 + u * stride < groups) w[u] = o16[g0 + u * stride];
#pragma unroll
      for (int u = 0; u < kScanLoads; ++u) {
        const unsigned long long g = g0 + u * stride;
        if (g >= groups) break;
        const unsigned r = unsigned(g / 16);
        const bool valid = int(r % unsigned(t_max)) < seq_lens[r / (unsigned(heads) * unsigned(t_max))];
        const unsigned words[4] = {w[u].x, w[u].y, w[u].z, w[u].w};
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float a = bf16_bits_to_float((unsigned short)(words[e / 2] >> (16 * (e % 2))));
          if (valid) {
            const unsigned out = !isfinite(a);
            o_bad += out;
            o_one_finite |= out;
            scan_bad += out;
          } else {
            const unsigned out = !isclose(a, 0.0f, o_atol, o_rtol);
            o_bad += out;
            scan_bad += out;
            track_diff(a, 0.0f, o_max, o_one_finite);
          }
        }
      }
    }
    for (unsigned long long r = first; r < total_rows; r += stride) {
      const bool valid = int(unsigned(r) % unsigned(t_max)) < seq_lens[unsigned(r) / (unsigned(heads) * unsigned(t_max))];
      const float a = lse[r];
      if (valid) {
        const unsigned out = isnan(a) || (isinf(a) && !signbit(a));
        lse_bad += out;
        lse_one_finite |= out;
        scan_bad += out;
      } else {
        const unsigned out = !lse_ok(a, neg_inf, lse_atol, lse_rtol);
        lse_bad += out;
        scan_bad += out;
        track_diff(a, neg_inf, lse_max, lse_one_finite);
      }
    }
  }
  flush_counts(o_bad, o_max, o_one_finite, counters);
  flush_counts(lse_bad, lse_max, lse_one_finite, counters + 3);
  for (int off = 16; off > 0; off /= 2) scan_bad += __shfl_xor_sync(0xffffffffu, scan_bad, off);
  if ((threadIdx.x & 31) == 0 && scan_bad) atomicAdd(&counters[7], scan_bad);
}
