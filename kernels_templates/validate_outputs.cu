// Output validation on the device: the rules of workload/validation.cpp (the harness's validation.py),
// element for element, so that a variant's o and lse never leave the GPU. Each kernel adds to three
// counters: [0] elements outside the tolerance, [1] the max |a - b| over pairs where both are finite
// (fp32 bits: non-negative floats order as unsigned ints), [2] 1 when a pair has exactly one finite
// member (the harness's max abs diff is then inf). Arithmetic in fp32 with explicit rounding (no FMA
// contraction), as torch.isclose and the CPU path compute it. See gpu/device_validation.hpp.

__device__ __forceinline__ float bf16_bits_to_float(unsigned short h) { return __uint_as_float(unsigned(h) << 16); }

/// torch.isclose(a, b, rtol, atol, equal_nan=False): equal values, or a finite |a - b| <= atol + |rtol * b|.
__device__ __forceinline__ bool isclose(float a, float b, float atol, float rtol) {
  if (a == b) return true;
  const float err = fabsf(__fsub_rn(a, b));
  return isfinite(err) && err <= __fadd_rn(atol, fabsf(__fmul_rn(rtol, b)));
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

/// o: bf16 [n] against the reference's bf16 [n]; torch.allclose on the fp32 values. The reference's element
/// of head_dim column c (its index mod 128) is negated where bit c of the 128-bit mask (flip_lo: columns 0-63,
/// flip_hi: 64-127) is set: the reference of inputs whose v columns were flipped (fill_normal.cu's
/// flip_columns_bf16); a mask of 0 compares with the reference as it is.
extern "C" __global__ void validate_o_bf16(const unsigned short* o, const unsigned short* ref, unsigned long long n,
                                           float atol, float rtol, unsigned* counters, unsigned long long flip_lo,
                                           unsigned long long flip_hi) {
  unsigned bad = 0, one_finite = 0;
  float max_diff = 0.0f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const unsigned c = unsigned(i % 128);
    const unsigned flip = unsigned(((c < 64 ? flip_lo : flip_hi) >> (c % 64)) & 1u) << 15;
    const float a = bf16_bits_to_float(o[i]), b = bf16_bits_to_float((unsigned short)(ref[i] ^ flip));
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
    bool ok;
    if (isnan(a) || isnan(b)) ok = false;
    else if (isinf(a) || isinf(b)) ok = isinf(a) && isinf(b) && signbit(a) == signbit(b);
    else ok = isclose(a, b, atol, rtol);
    bad += !ok;
    track_diff(a, b, max_diff, one_finite);
  }
  flush_counts(bad, max_diff, one_finite, counters);
}
