// N(0,1) bf16 inputs on the device: the formula of workload/inputs.cpp normal_sample, line for line, so a
// case's q/k/v are the same tensors whether made on the host or here. See kernels_templates/ABI.md.
#include <cuda_bf16.h>

__device__ __forceinline__ unsigned long long splitmix64(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

extern "C" __global__ void fill_normal_bf16(__nv_bfloat16* out, unsigned long long seed, unsigned tensor,
                                            unsigned long long n) {
  const unsigned long long stream = splitmix64(seed ^ ((unsigned long long)tensor << 60));
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const unsigned long long h = splitmix64(stream + i * 0xD1B54A32D192ED03ull);
    const double u1 = double((h >> 40) + 1) * 0x1p-24;
    const double u2 = double((h >> 16) & 0xFFFFFFull) * 0x1p-24;
    out[i] = __float2bfloat16_rn(float(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)));
  }
}

// The check set of a case (gpu/case_data.hpp, docs/verification.md): every element of a bf16 tensor XORed with
// a keyed mask, a random sign bit and a random non-zero value in the low 4 mantissa bits, so that every element
// changes (its sign half of the time, its magnitude by up to 15/128 always), keeps its binade (no inf or NaN
// appears) and the tensor stays N(0,1) (mean 0, second moment 1: uniform bits over the whole 7-bit mantissa
// would raise it to 1.26). XOR is its own inverse: a second call with the same seed puts the tensor back bit
// for bit. One splitmix64 per 8 elements (8 bits each); launch with 256 threads, any grid (grid-stride loop
// over 16-byte groups; n % 8 elements at the end are left as they are).
extern "C" __global__ void mask_check_bf16(unsigned short* x, unsigned long long seed, unsigned tensor,
                                           unsigned long long n) {
  const unsigned long long stream = splitmix64(seed ^ ((unsigned long long)tensor << 60) ^ 0xC3A5C85C97CB3127ull);
  uint4* v = reinterpret_cast<uint4*>(x);
  for (unsigned long long g = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; g < n / 8;
       g += (unsigned long long)gridDim.x * blockDim.x) {
    const unsigned long long h = splitmix64(stream + g * 0xD1B54A32D192ED03ull);
    unsigned m[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      unsigned pair = 0;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const unsigned b = unsigned(h >> (16 * p + 8 * e)) & 0xFFu;
        const unsigned mant = (b & 0x0Fu) ? (b & 0x0Fu) : 1u;  // never 0: every element changes
        pair |= (((b & 0x80u) << 8) | mant) << (16 * e);       // sign bit 15, mantissa bits 0..3
      }
      m[p] = pair;
    }
    uint4 w = v[g];
    w.x ^= m[0];
    w.y ^= m[1];
    w.z ^= m[2];
    w.w ^= m[3];
    v[g] = w;
  }
}

// Fresh inputs for every timed sample (gpu/fresh_samples.hpp, docs/verification.md): the sign bit of every
// element whose head_dim column c (its index mod 128) has bit c set in the 128-bit mask (lo: columns 0-63,
// hi: 64-127) is flipped. Applied with one mask to q and k, the scores q.k^T are bit-identical (each product
// q_c k_c keeps its value); applied to v, o's column c changes sign exactly and lse does not change: the
// reference of the flipped inputs is the tuning reference with o's flipped columns negated. XOR is its own
// inverse. n % 8 == 0; launch with 256 threads, any grid (grid-stride loop over 16-byte groups of 8 columns).
extern "C" __global__ void flip_columns_bf16(unsigned short* x, unsigned long long n, unsigned long long lo,
                                             unsigned long long hi) {
  uint4* v = reinterpret_cast<uint4*>(x);
  for (unsigned long long g = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; g < n / 8;
       g += (unsigned long long)gridDim.x * blockDim.x) {
    const unsigned c0 = unsigned(g % 16) * 8;  // the group's first column (128 columns = 16 groups)
    const unsigned bits = unsigned(((c0 < 64 ? lo : hi) >> (c0 % 64)) & 0xFFu);
    unsigned m[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) m[p] = (((bits >> (2 * p)) & 1u) << 15) | (((bits >> (2 * p + 1)) & 1u) << 31);
    uint4 w = v[g];
    w.x ^= m[0];
    w.y ^= m[1];
    w.z ^= m[2];
    w.w ^= m[3];
    v[g] = w;
  }
}
