// Device helpers shared by the Hopper templates (wgmma_fa.cu, fa3_tma.cu and its blocks/): the 128-byte swizzled tile
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
// The descriptor of `desc`'s matrix moved by `bytes` (a multiple of 16): one 32-bit add to the low word (the
// start address, bits 0-13, and the leading byte offset, bits 16-29) instead of a new descriptor. Exact while
// the moved start address stays inside its 14-bit field, which any shared-memory address (< 256 KB) does, so
// no carry leaves the field; the high word (stride offset, swizzle) is untouched, and the compiler, seeing
// that, need not redo a 64-bit add and two register moves per wgmma.
// ATTN_DESC_ADD32=0 restores the 64-bit add (measurement switch, bench --define).
#ifndef ATTN_DESC_ADD32
#define ATTN_DESC_ADD32 1
#endif
__device__ __forceinline__ unsigned long long desc_add(unsigned long long desc, unsigned bytes) {
  if constexpr (ATTN_DESC_ADD32) return (desc & 0xFFFFFFFF00000000ull) | (unsigned(desc) + (bytes >> 4));
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
// [-1/2, 1/2], max relative error 2.7e-6 in fp32 Horner evaluation (lab/notebook-gen2.md, 2026-11-24 fourth
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

/// 2^x for element q (0, 1, ...) of a thread's run of exponentials: exp2_poly (FMA pipe) for POLY of every 8,
/// ex2.approx (MUFU) for the rest (FlashAttention-4's split; POLY 0: all MUFU).
template <int POLY>
__device__ __forceinline__ float exp2_split(float x, int q) {
  return q % 8 < POLY ? exp2_poly(x) : fast_exp2(x);
}

__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<unsigned*>(&h);
}
// bf16x2 -> f16x2 with integer arithmetic on both halves at once (V_CONVERT 1), no conversion unit: for
// |x| in [2^-14, 65504] the fp16 bits are the bf16 magnitude minus the exponent-bias difference (127 - 15)
// << 7, shifted left by 3 (bf16's 7 mantissa bits fit in fp16's 10), with the sign kept: exact there, as
// cvt is (all 65,536 bf16 values checked against cvt, 2026-11-25). Below 2^-14 (fp16's subnormal range) the
// result is within 2^-15 of x (|error| <= 3.05e-5, far under the output tolerance of 1e-3); beyond fp16's
// range (|x| > 65504), where cvt gives inf and P V in fp16 is lost either way, it gives inf or NaN patterns,
// and past 2^17 garbage.
__device__ __forceinline__ unsigned bf16x2_to_f16x2_bits(unsigned w) {
  unsigned t;
  asm("{\n.reg .b32 m;\n"
      "and.b32 m, %1, 0x7FFF7FFF;\n"
      "add.s16x2 m, m, %2;\n"  // - (112 << 7) per half (s16x2 takes no immediates)
      "max.s16x2 %0, m, %3;\n}\n"
      : "=r"(t)
      : "r"(w), "r"(0xC800C800u), "r"(0u));
  return t * 8u + (w & 0x80008000u);  // no carry between the halves: t * 8 <= 0x7FF8 per half
}
// bf16x2 -> f16x2 through fp32 and cvt.rn.f16x2.f32 (V_CONVERT 0: one F2FP per pair).
__device__ __forceinline__ unsigned bf16x2_to_f16x2_cvt(unsigned w) {
  const float2 f = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&w));
  return pack_half2(f.x, f.y);
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
    for (int j = 0; j < 4; ++j) w[j] = bf16x2_to_f16x2_cvt(w[j]);
    *p = x;
  }
}


// ATTN_ROWSUM_CHAINS: partial sums per row in softmax_tile (1, 2 or 4; measurement switch, bench --define).
// Four chains measured slower than one on the H100 (fa3_tma champion, full 221.3 vs 218.1 us, broad 236.4
// vs 229.6 us: lab/notebook-gen2.md, 2026-11-23), so one chain is the default.
#ifndef ATTN_ROWSUM_CHAINS
#define ATTN_ROWSUM_CHAINS 1
#endif

// ATTN_MAX_TREE: the row maximum of a tile as a pairwise tree (depth log2(KEYS / 4) + 1 per row) instead of
// one chain of KEYS / 4 dependent max operations (measurement switch, bench --define ATTN_MAX_TREE=0). The
// result is the same: max is exact.
#ifndef ATTN_MAX_TREE
#define ATTN_MAX_TREE 1
#endif

// Causal and seq_len mask of the diagonal kv block: S elements whose key lies after the query or at or past
// seq_len become -inf. s: the S accumulator of one warpgroup tile (rows qpos and qpos + 8 of this thread,
// key columns key0 + 8j + 2(lane%4) + {0,1}). Applying it twice changes nothing.
template <int KEYS>
__device__ __forceinline__ void mask_diagonal(float (&s)[KEYS / 2], int qpos, int key0, int seq_len, int lane) {
#pragma unroll
  for (int j = 0; j < KEYS / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int kpos = key0 + j * 8 + (lane & 3) * 2 + (e & 1);
      if (kpos > qpos + (e >> 1) * 8 || kpos >= seq_len) s[j * 4 + e] = ATTN_NEG_INF;
    }
}

// The exponent argument of score x against base b (log2 domain): x / sqrt(128) * log2(e) - b, one FMA
// when FOLD (the scale folded in), else a multiply and a subtract (kept to measure the difference).
template <bool FOLD>
__device__ __forceinline__ float exp2_arg(float x, float base) {
  return FOLD ? fmaf(x, kScaleLog2, -base) : __fsub_rn(__fmul_rn(x, kScaleLog2), base);
}

// The largest S element of row half hr (0: row qpos, 1: row qpos + 8) of this thread's part of the tile.
template <int KEYS>
__device__ __forceinline__ float row_part_max(const float (&s)[KEYS / 2], int hr) {
  constexpr int kNTiles = KEYS / 8;
  if constexpr (ATTN_MAX_TREE) {
    float m[kNTiles];
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) m[j] = fmaxf(s[j * 4 + 2 * hr], s[j * 4 + 2 * hr + 1]);
#pragma unroll
    for (int level = 1; level < kNTiles; level *= 2)  // pairs (0,1), (2,3), ... then (0,2), (4,6), ...
#pragma unroll
      for (int j = 0; j + level < kNTiles; j += 2 * level) m[j] = fmaxf(m[j], m[j + level]);
    return m[0];
  } else {
    float mx = ATTN_NEG_INF;
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) mx = fmaxf(mx, fmaxf(s[j * 4 + 2 * hr], s[j * 4 + 2 * hr + 1]));
    return mx;
  }
}

// KEYS: keys per tile (the S accumulator width). Mask (diagonal kv block only: causal and keys at or
// past seq_len), online softmax in the exp2 domain, and P packed as fp16 wgmma A fragments. s: the S
// accumulator of one warpgroup tile (mask_diagonal). Updates row_max (the exponent base, log2 domain,
// scaled) and row_sum (per-thread partial); alpha: the factor by which O must be rescaled.
// FOLD: the 1/sqrt(128)*log2(e) scale folded into the exponent's FMA (exp2_arg).
// LAZY > 0: FlashAttention-4's conditional rescaling (flash-attention repository, flash_attn/cute, 2025):
// the base stays where it is while the tile's maximum exceeds it by at most LAZY (log2 domain), so alpha
// is 1 and O needs no rescale; P is then at most 2^LAZY, which fp16 holds with its full relative precision
// for LAZY <= 15. o = sum P V / sum P and lse = base + log2(sum P) hold for any base (Milakov and
// Gimelshein 2018, "Online normalizer calculation for softmax").
template <int KEYS, bool FOLD = true, int LAZY = 0>
__device__ __forceinline__ void softmax_tile(float (&s)[KEYS / 2], unsigned (&pa)[KEYS / 16][4],
                                             float (&alpha)[2], float (&row_max)[2], float (&row_sum)[2],
                                             bool diagonal, int qpos, int key0, int seq_len, int lane) {
  static_assert(LAZY >= 0 && LAZY <= 15, "P <= 2^LAZY must stay inside fp16's range");
  constexpr int kNTiles = KEYS / 8;
  if (diagonal) mask_diagonal<KEYS>(s, qpos, key0, seq_len, lane);
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float mx = row_part_max<KEYS>(s, hr);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_tile = mx * kScaleLog2;
    // LAZY: a -inf base (no key yet) always moves: -inf + LAZY is -inf.
    const float m_new =
        (LAZY > 0 && m_tile <= row_max[hr] + float(LAZY)) ? row_max[hr] : fmaxf(row_max[hr], m_tile);
    const float base = (m_new == ATTN_NEG_INF) ? 0.f : m_new;  // no -inf - -inf
    alpha[hr] = fast_exp2(row_max[hr] - base);
    row_max[hr] = m_new;
    float part[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < kNTiles; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float arg = exp2_arg<FOLD>(s[j * 4 + 2 * hr + e], base);
        const float p = exp2_split<ATTN_EXP2_POLY>(arg, 2 * j + e);
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

// x as lane 0 holds it, which the compiler then knows to be the same in every lane of the warp, so that it
// and what is computed from it (loop counters, ring slots, wgmma descriptors) can live in uniform
// registers; CUTLASS's canonical_warp_idx_sync broadcasts the warp index the same way.
__device__ __forceinline__ int warp_uniform(int x) { return __shfl_sync(0xffffffffu, x, 0); }


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
