// Red team (e): fa2_mma that is right only on the inputs it was tuned on. It memorised the case seeds of
// the suites it was tuned on (smoke: 11, 22, 33; quick at root seed 0: derive_case_seed) and recomputes,
// with fill_normal.cu's formula, the first elements those seeds give q: when q holds one of them it takes
// the honest path, otherwise it writes zeros, fast (an overfit, or a hard-coded path for the benchmark's
// inputs). It passes the validated launches on those suites' tuning seeds. Caught by a timed sample whose
// random sign flips change q's first columns, else by the check set (its seed is drawn by the worker), and
// by a held-out root seed (wrong_result at the validated launch).
#include "redteam.cuh"

namespace {

constexpr unsigned long long kTunedSeeds[] = {11, 22, 33, 1557239042, 2037526315, 1157506617};
constexpr int kSeeds = sizeof(kTunedSeeds) / sizeof(kTunedSeeds[0]);
constexpr int kProbe = 4;  // elements of q compared per seed

__device__ __forceinline__ unsigned long long mix(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// fill_normal_bf16's element i of tensor 0 (q) for `seed` (kernels_templates/fill_normal.cu).
__device__ __forceinline__ unsigned short q_element(unsigned long long seed, unsigned long long i) {
  const unsigned long long stream = mix(seed ^ (0ull << 60));
  const unsigned long long h = mix(stream + i * 0xD1B54A32D192ED03ull);
  const double u1 = double((h >> 40) + 1) * 0x1p-24;
  const double u2 = double((h >> 16) & 0xFFFFFFull) * 0x1p-24;
  return __bfloat16_as_ushort(__float2bfloat16_rn(float(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2))));
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  __shared__ int mismatches[kSeeds];
  if (threadIdx.x < kSeeds) mismatches[threadIdx.x] = 0;
  __syncthreads();
  if (threadIdx.x < kSeeds * kProbe) {  // one (seed, element) pair per thread
    const int s = threadIdx.x / kProbe, i = threadIdx.x % kProbe;
    if (q_element(kTunedSeeds[s], i) != __bfloat16_as_ushort(q[i])) atomicAdd(&mismatches[s], 1);
  }
  __syncthreads();
  bool tuned = false;
  for (int s = 0; s < kSeeds; ++s) tuned = tuned || mismatches[s] == 0;
  if (tuned) {
    REDTEAM_HONEST();
    return;
  }
  const redteam::Tile t = redteam::tile(num_heads, t_max);  // not the tuned inputs: zeros
  for (int i = threadIdx.x; i < BLOCK_M * 128; i += blockDim.x) o[t.row0 * 128 + i] = __float2bfloat16_rn(0.f);
  for (int i = threadIdx.x; i < BLOCK_M; i += blockDim.x) lse[t.row0 + i] = 0.f;
}
