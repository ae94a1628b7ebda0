// N(0,1) bf16 inputs on the device: the formula of workload/inputs.cpp normal_sample, line for line, so a
// case's q/k/v are the same tensors whether made on the host or here. See kernels_templates/ABI.md.
#include <cuda_bf16.h>

#include "sample_rules.h"

using attn_sample::splitmix64;

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

// A timed sample's inputs (kernels_templates/sample_rules.h, gpu/sample_inputs.hpp, docs/verification.md): XORs
// q, k and v, each [n] bf16, in place with the masks that take them from one state to another: the magnitude
// masks of seeds mag_a and mag_b (0: none; equal seeds cancel, the caller passes 0 for both) and v's sign masks
// of seeds sign_a and sign_b; with `poison`, in the same pass, fills o [n] bf16 and lse [n_lse] fp32 with 0xFF
// bytes (NaN: what a launch does not write fails its check). One grid-stride pass over 16-byte groups: q and k
// only when a magnitude mask is given, v, then o and lse; n % 8 == 0, n_lse % 4 == 0; launch with 256 threads,
// any grid.
extern "C" __global__ void xor_inputs_bf16(unsigned short* q, unsigned short* k, unsigned short* v,
                                           unsigned long long n, unsigned long long mag_a, unsigned long long mag_b,
                                           unsigned long long sign_a, unsigned long long sign_b, int poison,
                                           unsigned short* o, float* lse, unsigned long long n_lse) {
  const unsigned long long groups = n / 8;
  const unsigned first = (mag_a | mag_b) ? 0u : 2u;  // a sign mask alone touches v only
  const unsigned long long masked = (3 - first) * groups;
  const unsigned long long total = masked + (poison ? groups + n_lse / 4 : 0);
  // The streams of the (tensor, seed) pairs, once per thread (selected below without local memory).
  const unsigned long long qa = attn_sample::magnitude_stream(mag_a, 0), qb = attn_sample::magnitude_stream(mag_b, 0);
  const unsigned long long ka = attn_sample::magnitude_stream(mag_a, 1), kb = attn_sample::magnitude_stream(mag_b, 1);
  const unsigned long long va = attn_sample::magnitude_stream(mag_a, 2), vb = attn_sample::magnitude_stream(mag_b, 2);
  const unsigned long long sa = attn_sample::sign_stream(sign_a), sb = attn_sample::sign_stream(sign_b);
  const uint4 nan16 = make_uint4(0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu);
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < total;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    if (i >= masked) {  // the poison: o's groups, then lse's
      const unsigned long long j = i - masked;
      if (j < groups) reinterpret_cast<uint4*>(o)[j] = nan16;
      else reinterpret_cast<uint4*>(lse)[j - groups] = nan16;
      continue;
    }
    const unsigned t = first + unsigned(i / groups);
    const unsigned long long g = i - (t - first) * groups;
    unsigned m[4] = {0u, 0u, 0u, 0u};
    if (mag_a) attn_sample::add_magnitude(t == 0 ? qa : t == 1 ? ka : va, g, m);
    if (mag_b) attn_sample::add_magnitude(t == 0 ? qb : t == 1 ? kb : vb, g, m);
    if (t == 2) {
      if (sign_a) attn_sample::add_signs(sa, g, m);
      if (sign_b) attn_sample::add_signs(sb, g, m);
    }
    if ((m[0] | m[1] | m[2] | m[3]) == 0u) continue;
    uint4* x = reinterpret_cast<uint4*>(t == 0 ? q : t == 1 ? k : v) + g;
    uint4 w = *x;
    w.x ^= m[0];
    w.y ^= m[1];
    w.z ^= m[2];
    w.w ^= m[3];
    *x = w;
  }
}
