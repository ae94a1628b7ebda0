// Device helpers shared by the Hopper templates (wgmma_fa.cu, wgmma_ws.cu): the 128-byte swizzled tile
// layout that wgmma descriptors describe, cp.async / wgmma / proxy-fence wrappers, and the masked online
// softmax on a wgmma S accumulator. Layout: a [rows x 128] bf16 tile is two [rows x 64] halves (dims 0-63,
// 64-127), each row 128 B, 16-byte chunk c of row r stored at chunk c ^ (r % 8); every half starts
// 1024-byte aligned. Sources: PTX ISA "Asynchronous Warpgroup Level Matrix Shared Memory Layout" (matrix
// descriptor, canonical K-major / MN-major 128B-swizzle layouts) and the wgmma register fragment figures.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "wgmma_ops.cuh"

#define ATTN_NEG_INF __int_as_float(0xff800000)  // -inf (INFINITY is not defined under NVRTC)

namespace hopper {

constexpr float kScaleLog2 = 0.088388347648318440550f * 1.4426950408889634074f;  // 1/sqrt(128)*log2(e)
constexpr float kLn2 = 0.69314718055994530942f;

// Byte offset of 16-byte chunk `chunk` (0..15 over the 256-byte row) of row `row` in a swizzled tile of
// `rows` rows (see the header comment).
__device__ __forceinline__ unsigned swz128(int rows, int row, int chunk) {
  return unsigned((chunk >> 3) * rows * 128 + row * 128 + (((chunk & 7) ^ (row & 7)) << 4));
}

// wgmma shared-memory matrix descriptor: start address, leading / stride byte offsets (all >> 4),
// swizzle mode 1 = 128-byte (bits 62-63). PTX ISA, matrix descriptor format.
__device__ __forceinline__ unsigned long long make_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
// The descriptor of `desc`'s matrix moved by `bytes` (a multiple of 16): one 64-bit add instead of a
// new descriptor, exact while the start address stays inside the 14-bit field (shared memory < 256 KB).
__device__ __forceinline__ unsigned long long desc_add(unsigned long long desc, unsigned bytes) {
  return desc + (bytes >> 4);
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
// Generic-proxy writes (cp.async, st.shared) must be fenced before the async proxy (wgmma) reads them.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Pins accumulator registers after a wgmma wait so that no use is scheduled before it (CUTLASS's
// warpgroup_fence_operand).
template <int N>
__device__ __forceinline__ void fence_operands(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_operands(unsigned (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(r[i][e])::"memory");
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
// 2^x on the FMA pipe (measurement switch ATTN_EXP2_POLY, below): x = n + f with n = round(x) (the
// 1.5 * 2^23 add leaves n in the low mantissa bits of t), 2^f for f in [-1/2, 1/2] by a degree-4 polynomial,
// and n added to the exponent field. Coefficients: relative-error fit (Lawson iterations) of 2^f on
// [-1/2, 1/2], max relative error 2.7e-6 in fp32 Horner evaluation (docs/gen2-results.md, 2026-11-24 fourth
// session). x below -125 gives 2^-125 (not 0: a normal number keeps the exponent add from wrapping);
// fp16 P rounds it to 0, and a row sum of such terms is below 1e-35 where the epilogue needs l > 0 only
// for rows that have a key of their own (exp2 = 1 at the row maximum).
__device__ __forceinline__ float exp2_poly(float x) {
  x = fmaxf(x, -125.f);
  const float t = __fadd_rn(x, 12582912.f);
  const float f = __fsub_rn(x, __fsub_rn(t, 12582912.f));
  float p = fmaf(0.009569888934493065f, f, 0.055917542427778244f);
  p = fmaf(p, f, 0.2402474731206894f);
  p = fmaf(p, f, 0.6931218504905701f);
  p = fmaf(p, f, 0.9999992847442627f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// ATTN_EXP2_POLY: of every 8 softmax elements of a thread, how many take exp2_poly (FMA pipe) instead of
// ex2.approx (MUFU, 16 per SM per cycle): FlashAttention-4's split of the exponentials between the two
// pipes, as a measurement switch (bench --define ATTN_EXP2_POLY=n). 0 (all MUFU) is the default.
#ifndef ATTN_EXP2_POLY
#define ATTN_EXP2_POLY 0
#endif

__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<unsigned*>(&h);
}
__device__ __forceinline__ unsigned pack_bf162(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<unsigned*>(&h);
}

// Copies ROWS x 128 bf16 (global row stride 128) into a swizzled tile, 16 bytes per cp.async.
// THREADS threads (tid in [0, THREADS)) share the copy.
template <int ROWS, int THREADS>
__device__ __forceinline__ void load_tile(unsigned dst, const __nv_bfloat16* src, int tid) {
  static_assert((ROWS * 16) % THREADS == 0, "whole cp.async rounds");
#pragma unroll
  for (int it = 0; it < ROWS * 16 / THREADS; ++it) {
    const int i = it * THREADS + tid, row = i >> 4, chunk = i & 15;
    cp_async16(dst + swz128(ROWS, row, chunk), src + row * 128 + chunk * 8);
  }
}

// Converts, in place, the V chunks this thread copied with load_tile<ROWS, THREADS> from bf16 to fp16.
template <int ROWS, int THREADS>
__device__ __forceinline__ void convert_own_v_chunks(unsigned char* tile, int tid) {
#pragma unroll
  for (int it = 0; it < ROWS * 16 / THREADS; ++it) {
    const int i = it * THREADS + tid;
    uint4* p = reinterpret_cast<uint4*>(tile + swz128(ROWS, i >> 4, i & 15));
    uint4 x = *p;
    unsigned* w = reinterpret_cast<unsigned*>(&x);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 f = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&w[j]));
      w[j] = pack_half2(f.x, f.y);
    }
    *p = x;
  }
}


// ATTN_ROWSUM_CHAINS: partial sums per row in softmax_tile (1, 2 or 4; measurement switch, bench --define).
// Four chains measured slower than one on the H100 (fa3_tma champion, full 221.3 vs 218.1 us, broad 236.4
// vs 229.6 us: docs/gen2-results.md, 2026-11-23), so one chain is the default.
#ifndef ATTN_ROWSUM_CHAINS
#define ATTN_ROWSUM_CHAINS 1
#endif

// KEYS: keys per tile (the S accumulator width). Mask (diagonal kv block only: causal and keys at or
// past seq_len), online softmax in the exp2 domain, and P packed as fp16 wgmma A fragments. s: the S accumulator of one warpgroup tile (row qpos and
// qpos + 8 of this thread, key columns key0 + 8j + 2(lane%4) + {0,1}). Updates row_max (log2 domain,
// scaled) and row_sum (per-thread partial); alpha: the factor by which O must be rescaled.
// FOLD: the 1/sqrt(128)*log2(e) scale folded into the exponent's FMA (one instruction per element); false
// scales S first (a multiply, then a subtract), kept to measure the difference.
template <int KEYS, bool FOLD = true>
__device__ __forceinline__ void softmax_tile(float (&s)[KEYS / 2], unsigned (&pa)[KEYS / 16][4],
                                             float (&alpha)[2], float (&row_max)[2], float (&row_sum)[2],
                                             bool diagonal, int qpos, int key0, int seq_len, int lane) {
  constexpr int kNTiles = KEYS / 8;
  if (diagonal) {
#pragma unroll
    for (int j = 0; j < kNTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int kpos = key0 + j * 8 + (lane & 3) * 2 + (e & 1);
        if (kpos > qpos + (e >> 1) * 8 || kpos >= seq_len) s[j * 4 + e] = ATTN_NEG_INF;
      }
  }
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float mx = ATTN_NEG_INF;
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) mx = fmaxf(mx, fmaxf(s[j * 4 + 2 * hr], s[j * 4 + 2 * hr + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(row_max[hr], mx * kScaleLog2);
    const float base = (m_new == ATTN_NEG_INF) ? 0.f : m_new;  // no -inf - -inf
    alpha[hr] = fast_exp2(row_max[hr] - base);
    row_max[hr] = m_new;
    float part[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < kNTiles; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float x = s[j * 4 + 2 * hr + e];
        const float arg = FOLD ? fmaf(x, kScaleLog2, -base) : __fsub_rn(__fmul_rn(x, kScaleLog2), base);
        const float p = (2 * j + e) % 8 < ATTN_EXP2_POLY ? exp2_poly(arg) : fast_exp2(arg);
        s[j * 4 + 2 * hr + e] = p;
        part[(2 * j + e) % ATTN_ROWSUM_CHAINS] += p;
      }
    row_sum[hr] = row_sum[hr] * alpha[hr] + ((part[0] + part[1]) + (part[2] + part[3]));
  }
#pragma unroll
  for (int kk = 0; kk < KEYS / 16; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) pa[kk][e] = pack_half2(s[8 * kk + 2 * e], s[8 * kk + 2 * e + 1]);
}


// mbarrier wrappers (PTX ISA "mbarrier"): init by one thread, arrive by each counted thread, wait on the
// phase parity (0 for the first completion, then alternating).
__device__ __forceinline__ void mbar_init(unsigned addr, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(addr), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned addr) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(addr) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned addr, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(addr),
      "r"(parity)
      : "memory");
}

}  // namespace hopper
