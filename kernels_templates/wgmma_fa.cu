// Block-sparse causal flash-attention forward on Hopper tensor cores (wgmma), for the challenge contract
// (kernels_templates/ABI.md): q/k/v bf16 [B, H, t_max, 128], CSR over 128-token kv blocks. sm_90a only.
//
// One CTA owns BLOCK_M = 64 * WARPGROUPS query rows of one q_block; each warpgroup (4 warps) owns 64 rows.
// The CTA walks the q_block's CSR row in order, each kv block as 128 / BLOCK_N tiles of BLOCK_N keys,
// streamed through a STAGES-deep cp.async ring. Shared memory tiles use the 128-byte swizzle that wgmma
// descriptors describe: a [rows x 128] tile is two [rows x 64] halves (dims 0-63, 64-127), each row 128 B,
// 16-byte chunk c of row r stored at chunk c ^ (r % 8); every half starts 1024-byte aligned.
//   S = Q K^T       wgmma m64nBLOCK_Nk16, A = Q and B = K from shared memory (K-major), bf16 -> fp32
//   online softmax  on the accumulator registers, exp2 with 1/sqrt(128)*log2(e) folded into one FMA
//   O += P V        wgmma m64n128k16, A = P from registers as fp16, B = V from shared memory, MN-major
//                   (V [keys][dims] used transposed), converted bf16 -> fp16 in place by the thread that
//                   copied it (bf16 P fails the harness tolerance: DESIGN.md)
// Only the diagonal kv block is masked (causal + seq_len); tiles above a warpgroup's rows are skipped.
// Rows at or past seq_len, and rows with no key, get o = 0 and lse = -inf.
// Sources for the layouts: PTX ISA "Asynchronous Warpgroup Level Matrix Shared Memory Layout" (matrix
// descriptor, canonical K-major / MN-major 128B-swizzle layouts) and the wgmma register fragment figures.
//
// Parameters (-D macros; space and constraints in wgmma_fa.json):
//   CTA_ORDER   which work each CTA of the grid takes (cta_order.cuh): q tiles first, heads first, reversed
//   WARPGROUPS  warpgroups per CTA (1 | 2): BLOCK_M = 64 or 128 query rows
//   BLOCK_N     keys per pipeline tile (64 | 128)
//   STAGES      K/V tiles in flight (1 = no overlap)
//   MIN_BLOCKS  __launch_bounds__ minimum CTAs per SM (caps registers)
//   OVERLAP_PV  1: issue S = Q K^T of tile t before P V of tile t-1 and run the softmax of t while P V
//               runs (FlashAttention-3's intra-warpgroup pipelining; needs STAGES >= 3); 0: serial
#include "blocks/cta_tile.cuh"
#include "hopper_common.cuh"

#ifndef WARPGROUPS
#error "WARPGROUPS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef STAGES
#error "STAGES not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef BLOCK_N
#error "BLOCK_N not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef CTA_ORDER
#error "CTA_ORDER not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef MIN_BLOCKS
#error "MIN_BLOCKS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef OVERLAP_PV
#error "OVERLAP_PV not given: a parameter of the space (its default is in the .json)"
#endif
// Measurement only (never in the space; results are wrong): 1 no softmax math, 2 no K/V loads after the
// first ring fill, 3 no P V wgmma, 4 no Q K^T wgmma. Timing the difference places the time (METHOD.md).
#ifndef ABLATE
#define ABLATE 0
#endif

namespace {
using namespace hopper;

constexpr int kBlock = 128;  // q_block / kv block size and head dim (spec.py)
constexpr int BLOCK_M = 64 * WARPGROUPS;
constexpr int kThreads = WARPGROUPS * 128;
constexpr int kNTiles = BLOCK_N / 8;         // n8 column groups of the S accumulator
constexpr int kSubTiles = kBlock / BLOCK_N;  // pipeline tiles per kv block
constexpr int kQHalf = BLOCK_M * 128;        // bytes of one dims-half of the Q tile
constexpr int kQBytes = 2 * kQHalf;
constexpr int kTHalf = BLOCK_N * 128;        // bytes of one dims-half of a K or V tile
constexpr int kTileBytes = 2 * kTHalf;
constexpr int kStageBytes = 2 * kTileBytes;  // K then V
constexpr int kSmemBytes = 1024 + kQBytes + STAGES * kStageBytes;  // 1024: room to align the base
// Tiles fetched ahead and the cp.async groups a wait may leave pending (see the main loops).
constexpr int kPrefetch = OVERLAP_PV ? STAGES - 2 : STAGES - 1;
constexpr int kWaitGroups = OVERLAP_PV ? STAGES - 3 : (STAGES >= 2 ? STAGES - 2 : 0);

static_assert(WARPGROUPS == 1 || WARPGROUPS == 2, "64 or 128 rows per CTA");
static_assert(BLOCK_N == 64 || BLOCK_N == 128, "wgmma n64 or n128 for S");
static_assert(STAGES >= 1, "at least one stage");
static_assert(!OVERLAP_PV || STAGES >= 3, "overlapping P V with the next S keeps two tiles resident: STAGES >= 3");

}  // namespace

extern "C" __device__ int attn_launch_info[4] = {kThreads, kSmemBytes, BLOCK_M, 0};

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
block_sparse_attn_fwd(ATTN_ABI_PARAMS) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned raw_base = unsigned(__cvta_generic_to_shared(smem_raw));
  const unsigned pad = ((raw_base + 1023) & ~1023u) - raw_base;
  unsigned char* smem = smem_raw + pad;       // 1024-byte aligned, generic pointer
  const unsigned q_smem = raw_base + pad;     // same, shared-window address
  const unsigned ring = q_smem + kQBytes;     // stage s: K at s * kStageBytes, V at + kTileBytes

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  const hopper::CtaTile<CTA_ORDER, BLOCK_M, BLOCK_N> tile(row_ptr, col_idx, seq_lens, num_heads, t_max, col_width);
  auto next_active = [&](int t) {
    while (t < tile.n && tile.kv(t) < 0) ++t;
    return t;
  };
  auto slot_k = [&](int i) { return ring + unsigned(i % STAGES) * kStageBytes; };
  int load_t = next_active(0), load_i = 0;  // producer cursor: next active tile to fetch, its ordinal
  auto issue_next_load = [&]() {
    if (load_t < tile.n && !(ABLATE == 2 && load_i >= STAGES)) {
      const size_t src = tile.head_base + (size_t(tile.kv(load_t)) * kBlock + (load_t % kSubTiles) * BLOCK_N) * kBlock;
      load_tile<BLOCK_N, kThreads>(slot_k(load_i), k + src, tid);
      load_tile<BLOCK_N, kThreads>(slot_k(load_i) + kTileBytes, v + src, tid);
      load_t = next_active(load_t + 1);
      ++load_i;
    }
    cp_async_commit();  // one group per step, empty or not, keeps wait_group counts exact
  };

  load_tile<BLOCK_M, kThreads>(q_smem, q + tile.head_base + size_t(tile.q_pos0) * kBlock, tid);
  cp_async_commit();
#pragma unroll
  for (int p = 0; p < kPrefetch; ++p) issue_next_load();

  const int wg_row0 = wg * 64;                                  // first row of this warpgroup in the CTA
  const int my_row0 = wg_row0 + (warp & 3) * 16 + (lane >> 2);  // this thread's rows: my_row0, my_row0 + 8
  float acc[64];                                                // O: 16 n8 groups over the 128 dims
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.f;
  float row_max[2] = {ATTN_NEG_INF, ATTN_NEG_INF}, row_sum[2] = {0.f, 0.f};
  const unsigned long long q_desc = make_desc(q_smem + wg_row0 * 128, 16, 1024);  // this warpgroup's 64 rows

  auto wait_and_publish = [&](int i) {  // active tile i landed, V converted, visible to the async proxy
    cp_async_wait<kWaitGroups>();
    convert_own_v_chunks<BLOCK_N, kThreads>(smem + (slot_k(i) + kTileBytes - q_smem), tid);
    fence_proxy_async();
    __syncthreads();
  };
  auto issue_qk = [&](float (&s)[BLOCK_N / 2], unsigned k_tile) {
    const unsigned long long k_desc = make_desc(k_tile, 16, 1024);
#pragma unroll
    for (int j = 0; j < BLOCK_N / 2; ++j) s[j] = 0.f;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 8; ++kk)
      if (ABLATE != 4) wgmma_qk(s, desc_add(q_desc, (kk >> 2) * kQHalf + (kk & 3) * 32),
               desc_add(k_desc, (kk >> 2) * kTHalf + (kk & 3) * 32));
    wgmma_commit();
  };
  auto issue_pv = [&](const unsigned (&pa)[BLOCK_N / 16][4], unsigned v_tile) {
    const unsigned long long v_desc = make_desc(v_tile, kTHalf, 1024);
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 16; ++kk)
      if (ABLATE != 3) wgmma_rs_n128_tb(acc, pa[kk], desc_add(v_desc, kk * 2048));
    wgmma_commit();
  };
  auto rescale = [&](const float (&alpha)[2]) {
#pragma unroll
    for (int j = 0; j < 16; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[j * 4 + e] *= alpha[e >> 1];
  };
  auto softmax = [&](float (&s)[BLOCK_N / 2], unsigned (&pa)[BLOCK_N / 16][4], float (&alpha)[2], int t) {
    const int kv = tile.kv(t);
    if (ABLATE == 1) {
#pragma unroll
      for (int kk = 0; kk < BLOCK_N / 16; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) pa[kk][e] = pack_half2(s[8 * kk + 2 * e], s[8 * kk + 2 * e + 1]);
      alpha[0] = alpha[1] = 1.f;
      row_sum[0] = row_sum[1] = 1.f;
      return;
    }
    softmax_tile<BLOCK_N>(s, pa, alpha, row_max, row_sum, kv == tile.q_block, tile.q_pos0 + my_row0,
                 kv * kBlock + (t % kSubTiles) * BLOCK_N, tile.seq_len, lane);
  };

#if OVERLAP_PV
  // S of tile i is computed, and its softmax run, while P V of tile i-1 runs on the tensor cores
  // (FlashAttention-3's intra-warpgroup overlap, Shah et al. 2024). Every active tile goes through the
  // same wgmma sequence in every warpgroup (a tile above a warpgroup's rows is masked to P = 0 rather
  // than skipped): branch-free issue keeps ptxas from serialising the wgmmas. Slot i-1 is read until
  // every warpgroup has passed barrier i+1, so tiles are fetched STAGES - 2 ahead.
  unsigned pa_prev[BLOCK_N / 16][4];
#pragma unroll
  for (int kk = 0; kk < BLOCK_N / 16; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) pa_prev[kk][e] = 0u;  // first P V adds 0 * V(tile 0)
  int i = 0;
  for (int t = next_active(0); t < tile.n; t = next_active(t + 1), ++i) {
    wait_and_publish(i);
    issue_next_load();
    float s[BLOCK_N / 2];
    issue_qk(s, slot_k(i));
    issue_pv(pa_prev, slot_k(i > 0 ? i - 1 : 0) + kTileBytes);
    wgmma_wait<1>();
    fence_operands(s);
    float alpha[2];
    unsigned pa[BLOCK_N / 16][4];
    softmax(s, pa, alpha, t);
    wgmma_wait<0>();
    fence_operands(acc);
    fence_operands(pa_prev);  // P of tile i-1 stays in its registers until its wgmma is done
    rescale(alpha);
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 16; ++kk)
#pragma unroll
      for (int e = 0; e < 4; ++e) pa_prev[kk][e] = pa[kk][e];
  }
  if (i > 0) {
    wgmma_fence();
    issue_pv(pa_prev, slot_k(i - 1) + kTileBytes);
    wgmma_wait<0>();
    fence_operands(acc);
    fence_operands(pa_prev);
  }
#else
  int i = 0;
  for (int t = next_active(0); t < tile.n; t = next_active(t + 1), ++i) {
    if (STAGES == 1) issue_next_load();
    wait_and_publish(i);
    if (STAGES >= 2) issue_next_load();
    // Warpgroup-uniform skip: every key of the tile lies above every row of this warpgroup.
    if (!(tile.kv(t) == tile.q_block && (t % kSubTiles) * BLOCK_N > tile.row0 + wg_row0 + 63)) {
      float s[BLOCK_N / 2];
      issue_qk(s, slot_k(i));
      wgmma_wait<0>();
      fence_operands(s);
      float alpha[2];
      unsigned pa[BLOCK_N / 16][4];
      softmax(s, pa, alpha, t);
      rescale(alpha);
      wgmma_fence();
      issue_pv(pa, slot_k(i) + kTileBytes);
      wgmma_wait<0>();
      fence_operands(acc);
      fence_operands(pa);
    }
    if (STAGES == 1) __syncthreads();  // the single slot is refilled next iteration
  }
#endif

  // Epilogue: normalise, stage bf16 rows in this warpgroup's own rows of the Q tile, 16-byte stores.
  cp_async_wait<0>();
  __syncthreads();
  const size_t lse_base = tile.bh * size_t(t_max) + tile.q_pos0;
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float l = row_sum[hr];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int row = my_row0 + hr * 8;
    const bool has_keys = (tile.q_pos0 + row < tile.seq_len) && l > 0.f;
    const float inv = has_keys ? 1.f / l : 0.f;
#pragma unroll
    for (int j = 0; j < 16; ++j)
      *reinterpret_cast<unsigned*>(smem + swz128(BLOCK_M, row, j) + (lane & 3) * 4) =
          pack_bf162(acc[j * 4 + 2 * hr] * inv, acc[j * 4 + 2 * hr + 1] * inv);
    if ((lane & 3) == 0) lse[lse_base + row] = has_keys ? (row_max[hr] + log2f(l)) * kLn2 : ATTN_NEG_INF;
  }
  __syncthreads();
  __nv_bfloat16* o_rows = o + tile.head_base + size_t(tile.q_pos0) * kBlock;
#pragma unroll
  for (int it = 0; it < BLOCK_M * 16 / kThreads; ++it) {
    const int i = it * kThreads + tid, row = i >> 4, chunk = i & 15;
    *reinterpret_cast<uint4*>(o_rows + row * kBlock + chunk * 8) =
        *reinterpret_cast<const uint4*>(smem + swz128(BLOCK_M, row, chunk));
  }
}
