// Block-sparse causal flash-attention forward, FlashAttention-2 style, for the challenge contract
// (kernels_templates/ABI.md): q/k/v bf16 [B, H, t_max, 128], CSR over 128-token kv blocks.
//
// One CTA owns BLOCK_M query rows of one q_block of one (batch, head); each warp owns BLOCK_M / WARPS
// rows (a multiple of 16: one mma.sync m16n8k16 row tile each). The CTA walks the q_block's CSR row in
// order; every kv block is processed as 128 / BLOCK_N tiles of BLOCK_N keys, streamed through a
// STAGES-deep cp.async ring of K and V tiles in XOR-swizzled shared memory (conflict-free ldmatrix).
//   S = Q K^T       mma.sync bf16 x bf16 -> fp32
//   online softmax  exp2 with 1/sqrt(128)*log2(e) folded into one FMA; row max across the quad
//   O += P V        P rounded to fp16 and V converted bf16 -> fp16 in shared memory by the thread
//                   that copied it (bf16 P fails the harness tolerance: DESIGN.md)
// Only the diagonal kv block is masked (causal + seq_len); tiles wholly above the diagonal are skipped
// per CTA (no load) and per warp (no math). Rows at or past seq_len, and rows with no key, get o = 0
// and lse = -inf. The output is staged through the Q tile for 16-byte coalesced stores.
//
// Parameters (-D macros; space and constraints in fa2_mma.json):
//   CTA_ORDER   which work each CTA of the grid takes (cta_order.cuh): q tiles first, heads first, reversed
//   BLOCK_M     query rows per CTA (64 | 128)
//   BLOCK_N     keys per pipeline tile (32 | 64 | 128)
//   WARPS       warps per CTA; rows per warp = BLOCK_M / WARPS in {16, 32}
//   STAGES      K/V tiles in flight (1 = no overlap)
//   Q_IN_REGS   1: Q fragments loaded once into registers; 0: re-read from shared memory every tile
//   MIN_BLOCKS  __launch_bounds__ min CTAs per SM (register cap)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "blocks/cta_tile.cuh"
#include "hopper_common.cuh"

#ifndef BLOCK_M
#error "BLOCK_M not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef BLOCK_N
#error "BLOCK_N not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef WARPS
#error "WARPS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef CTA_ORDER
#error "CTA_ORDER not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef STAGES
#error "STAGES not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef Q_IN_REGS
#error "Q_IN_REGS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef MIN_BLOCKS
#error "MIN_BLOCKS not given: a parameter of the space (its default is in the .json)"
#endif

namespace {

constexpr int kBlock = 128;                     // q_block / kv block size and head dim (spec.py)
constexpr int kThreads = WARPS * 32;
constexpr int kRowsPerWarp = BLOCK_M / WARPS;
constexpr int kMTiles = kRowsPerWarp / 16;      // m16 row tiles per warp
constexpr int kNTiles = BLOCK_N / 8;            // n8 key tiles of S per pipeline tile
constexpr int kSubTiles = kBlock / BLOCK_N;     // pipeline tiles per kv block
constexpr int kRowBytes = kBlock * 2;           // one row of 128 bf16
constexpr int kQBytes = BLOCK_M * kRowBytes;
constexpr int kTileBytes = BLOCK_N * kRowBytes;
constexpr int kSmemBytes = kQBytes + STAGES * 2 * kTileBytes;
// kScaleLog2 = 1/sqrt(128) * log2(e): scores go straight to the exp2 domain (FlashAttention-2, Dao 2023).
// It, kLn2 and the cp.async and packing helpers come from hopper_common.cuh.
using hopper::cp_async16;
using hopper::cp_async_commit;
using hopper::cp_async_wait;
using hopper::kLn2;
using hopper::kScaleLog2;
using hopper::pack_bf162;
using hopper::pack_half2;

static_assert(kBlock % BLOCK_M == 0, "BLOCK_M must divide the 128-row q_block");
static_assert(BLOCK_M % (16 * WARPS) == 0, "each warp owns a multiple of 16 query rows");
static_assert(kBlock % BLOCK_N == 0 && BLOCK_N % 16 == 0, "BLOCK_N must divide 128, multiple of 16");
static_assert((BLOCK_N * 16) % kThreads == 0 && (BLOCK_M * 16) % kThreads == 0, "whole cp.async rounds");
static_assert(STAGES >= 1, "at least one stage");

// Byte offset of 16-byte chunk `chunk` (0..15) of row `row` in a [rows x 128] bf16 tile: the chunk
// index is XORed with row % 8 so that 8 rows read by one ldmatrix phase hit 8 different bank groups.
__device__ __forceinline__ unsigned swz(int row, int chunk) {
  return unsigned(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// 2^x on the MUFU unit (ex2.approx); here rather than hopper_common.cuh's so that proposers edit it in this file.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// D += A(16x16, row) * B(16x8, col), fp32 accumulate: NAME for 16-bit operands of PTX type TYPE.
#define ATTN_MMA_M16N8K16(NAME, TYPE)                                                                       \
  __device__ __forceinline__ void NAME(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) { \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 {%0,%1,%2,%3}, "             \
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                                                \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                          \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));                           \
  }
ATTN_MMA_M16N8K16(mma_bf16, "bf16")  // Q K^T
ATTN_MMA_M16N8K16(mma_f16, "f16")    // P V (P and V in fp16: bf16 P fails the tolerance)
#undef ATTN_MMA_M16N8K16

// Copies `rows` x 128 bf16 from global (row stride 128) into a swizzled tile, 16 bytes per cp.async.
template <int ROWS>
__device__ __forceinline__ void load_tile(unsigned dst, const __nv_bfloat16* src, int tid) {
#pragma unroll
  for (int it = 0; it < ROWS * 16 / kThreads; ++it) {
    const int i = it * kThreads + tid, row = i >> 4, chunk = i & 15;
    cp_async16(dst + swz(row, chunk), src + row * kBlock + chunk * 8);
  }
}

// Converts, in place, the V chunks this thread copied with load_tile<BLOCK_N> from bf16 to fp16.
__device__ __forceinline__ void convert_own_v_chunks(unsigned char* tile, int tid) {
#pragma unroll
  for (int it = 0; it < BLOCK_N * 16 / kThreads; ++it) {
    const int i = it * kThreads + tid;
    uint4* p = reinterpret_cast<uint4*>(tile + swz(i >> 4, i & 15));
    uint4 x = *p;
    unsigned* w = reinterpret_cast<unsigned*>(&x);
#pragma unroll
    for (int j = 0; j < 4; ++j) w[j] = hopper::bf16x2_to_f16x2_cvt(w[j]);
    *p = x;
  }
}

}  // namespace

extern "C" __device__ int attn_launch_info[4] = {kThreads, kSmemBytes, BLOCK_M, 0};

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  extern __shared__ unsigned char __align__(128) smem[];
  const unsigned smem_base = unsigned(__cvta_generic_to_shared(smem));
  const unsigned q_smem = smem_base;
  const unsigned kv_smem = smem_base + kQBytes;  // stage s: K at s*2*kTileBytes, V after it

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const hopper::CtaTile<CTA_ORDER, BLOCK_M, BLOCK_N> tile(row_ptr, col_idx, seq_lens, num_heads, t_max, col_width);
  auto issue_tile = [&](int t) {
    if (t < tile.n) {
      const int kv = tile.kv(t);
      if (kv >= 0) {
        const size_t src = tile.head_base + (size_t(kv) * kBlock + (t % kSubTiles) * BLOCK_N) * kBlock;
        const unsigned dst = kv_smem + (t % STAGES) * 2 * kTileBytes;
        load_tile<BLOCK_N>(dst, k + src, tid);
        load_tile<BLOCK_N>(dst + kTileBytes, v + src, tid);
      }
    }
    cp_async_commit();  // one group per tile, empty or not, keeps wait_group counts exact
  };

  load_tile<BLOCK_M>(q_smem, q + tile.head_base + size_t(tile.q_pos0) * kBlock, tid);
  cp_async_commit();
#pragma unroll
  for (int p = 0; p < STAGES - 1; ++p) issue_tile(p);

  const float neg_inf = __int_as_float(0xff800000);
  const int warp_row0 = warp * kRowsPerWarp;  // first row of this warp inside the CTA tile
  float acc[kMTiles][16][4];                  // O accumulator: 16 n8 tiles over the 128 dims
  float row_max[kMTiles][2], row_sum[kMTiles][2];  // per thread: rows lane/4 and lane/4 + 8 of each m-tile
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int nt = 0; nt < 16; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.f;
    row_max[mt][0] = row_max[mt][1] = neg_inf;
    row_sum[mt][0] = row_sum[mt][1] = 0.f;
  }
#if Q_IN_REGS
  unsigned qf[kMTiles][8][4];
#endif

  for (int t = 0; t < tile.n; ++t) {
    if (STAGES == 1) issue_tile(t);
    cp_async_wait<(STAGES >= 2 ? STAGES - 2 : 0)>();
    const int kv = tile.kv(t);
    unsigned char* stage_ptr = smem + kQBytes + (t % STAGES) * 2 * kTileBytes;
    if (kv >= 0) convert_own_v_chunks(stage_ptr + kTileBytes, tid);
    __syncthreads();
    if (STAGES >= 2) issue_tile(t + STAGES - 1);
#if Q_IN_REGS
    if (t == 0) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int kk = 0; kk < 8; ++kk)
          ldmatrix_x4(qf[mt][kk], q_smem + swz(warp_row0 + mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                               kk * 2 + (lane >> 4)));
    }
#endif
    const int key0 = (t % kSubTiles) * BLOCK_N;
    const bool diagonal = kv == tile.q_block;
    // Warp-level causal skip: every key of the tile lies above every row of this warp.
    const bool warp_active = kv >= 0 && !(diagonal && key0 > tile.row0 + warp_row0 + kRowsPerWarp - 1);
    if (warp_active) {
      const unsigned k_tile = kv_smem + (t % STAGES) * 2 * kTileBytes;
      const unsigned v_tile = k_tile + kTileBytes;
      float s[kMTiles][kNTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;

      // S = Q K^T over the 128 dims in 8 k16 steps.
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) {
        unsigned a[kMTiles][4];
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
#if Q_IN_REGS
#pragma unroll
          for (int e = 0; e < 4; ++e) a[mt][e] = qf[mt][kk][e];
#else
          ldmatrix_x4(a[mt], q_smem + swz(warp_row0 + mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                          kk * 2 + (lane >> 4)));
#endif
        }
#pragma unroll
        for (int nt2 = 0; nt2 < kNTiles / 2; ++nt2) {
          unsigned bk[4];
          ldmatrix_x4(bk, k_tile + swz(nt2 * 16 + (lane & 7) + ((lane >> 4) & 1) * 8, kk * 2 + ((lane >> 3) & 1)));
#pragma unroll
          for (int mt = 0; mt < kMTiles; ++mt) {
            mma_bf16(s[mt][2 * nt2], a[mt], bk[0], bk[1]);
            mma_bf16(s[mt][2 * nt2 + 1], a[mt], bk[2], bk[3]);
          }
        }
      }

      // Mask (diagonal kv block only): causal, and keys at or past seq_len.
      if (diagonal) {
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int qpos = tile.q_pos0 + warp_row0 + mt * 16 + (lane >> 2) + (e >> 1) * 8;
              const int kpos = kv * kBlock + key0 + nt * 8 + (lane & 3) * 2 + (e & 1);
              if (kpos > qpos || kpos >= tile.seq_len) s[mt][nt][e] = neg_inf;
            }
      }

      // Online softmax in the exp2 domain; P packed to fp16 A fragments for P V.
      unsigned pa[kMTiles][kNTiles / 2][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          float mx = neg_inf;
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hr], s[mt][nt][2 * hr + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float m_new = fmaxf(row_max[mt][hr], mx * kScaleLog2);
          const float base = (m_new == neg_inf) ? 0.f : m_new;  // no -inf - -inf
          const float alpha = fast_exp2(row_max[mt][hr] - base);
          row_max[mt][hr] = m_new;
          float sum = 0.f;
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float p = fast_exp2(fmaf(s[mt][nt][2 * hr + e], kScaleLog2, -base));
              s[mt][nt][2 * hr + e] = p;
              sum += p;
            }
          row_sum[mt][hr] = row_sum[mt][hr] * alpha + sum;  // per-thread partial; quad-reduced at the end
#pragma unroll
          for (int nt = 0; nt < 16; ++nt) {
            acc[mt][nt][2 * hr] *= alpha;
            acc[mt][nt][2 * hr + 1] *= alpha;
          }
        }
#pragma unroll
        for (int kk2 = 0; kk2 < kNTiles / 2; ++kk2) {
          pa[mt][kk2][0] = pack_half2(s[mt][2 * kk2][0], s[mt][2 * kk2][1]);
          pa[mt][kk2][1] = pack_half2(s[mt][2 * kk2][2], s[mt][2 * kk2][3]);
          pa[mt][kk2][2] = pack_half2(s[mt][2 * kk2 + 1][0], s[mt][2 * kk2 + 1][1]);
          pa[mt][kk2][3] = pack_half2(s[mt][2 * kk2 + 1][2], s[mt][2 * kk2 + 1][3]);
        }
      }

      // O += P V: V (fp16 now) read transposed, 16 keys x 16 dims per ldmatrix.x4.trans.
#pragma unroll
      for (int kk2 = 0; kk2 < kNTiles / 2; ++kk2) {
#pragma unroll
        for (int dt2 = 0; dt2 < 8; ++dt2) {
          unsigned bv[4];
          ldmatrix_x4_trans(bv, v_tile + swz(kk2 * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, dt2 * 2 + (lane >> 4)));
#pragma unroll
          for (int mt = 0; mt < kMTiles; ++mt) {
            mma_f16(acc[mt][2 * dt2], pa[mt][kk2], bv[0], bv[1]);
            mma_f16(acc[mt][2 * dt2 + 1], pa[mt][kk2], bv[2], bv[3]);
          }
        }
      }
    }
    if (STAGES == 1) __syncthreads();  // the single buffer is refilled next iteration
  }

  // Epilogue: normalise, stage bf16 rows in this warp's own rows of the Q tile, store 16 B per lane.
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with Q and the ring; the Q copy has landed
  const size_t lse_base = tile.bh * size_t(t_max) + tile.q_pos0;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float l = row_sum[mt][hr];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const int row = warp_row0 + mt * 16 + (lane >> 2) + hr * 8;
      const bool has_keys = (tile.q_pos0 + row < tile.seq_len) && l > 0.f;
      const float inv = has_keys ? 1.f / l : 0.f;
#pragma unroll
      for (int nt = 0; nt < 16; ++nt) {
        const unsigned val = pack_bf162(acc[mt][nt][2 * hr] * inv, acc[mt][nt][2 * hr + 1] * inv);
        *reinterpret_cast<unsigned*>(smem + swz(row, nt) + (lane & 3) * 4) = val;
      }
      if ((lane & 3) == 0) lse[lse_base + row] = has_keys ? (row_max[mt][hr] + log2f(l)) * kLn2 : neg_inf;
    }
  }
  __syncwarp();
  __nv_bfloat16* o_rows = o + tile.head_base + size_t(tile.q_pos0) * kBlock;
#pragma unroll
  for (int it = 0; it < kRowsPerWarp * 16 / 32; ++it) {
    const int i = it * 32 + lane, row = warp_row0 + (i >> 4), chunk = i & 15;
    *reinterpret_cast<uint4*>(o_rows + row * kBlock + chunk * 8) = *reinterpret_cast<const uint4*>(smem + swz(row, chunk));
  }
}
