// Block-sparse causal flash-attention forward on Hopper, warp-specialised (FlashAttention-3's structure,
// Shah et al. 2024, with cp.async instead of TMA), for the challenge contract (kernels_templates/ABI.md).
// sm_90a only.
//
// Warpgroup 0 is the producer: it copies Q and the K/V tiles of the q_block's CSR row into a STAGES-deep
// ring of 128B-swizzled shared-memory slots (hopper_common.cuh), converts V to fp16 in place once a tile
// has landed, and publishes the slot on its `full` mbarrier. Warpgroups 1..CONSUMERS each own 64 query
// rows: they wait on `full`, run S = Q K^T (wgmma, bf16), the masked online softmax, O += P V (wgmma,
// fp16 P from registers, V MN-major), and release the slot on its `empty` mbarrier. No CTA-wide barrier
// per tile: consumers drift apart, so one's softmax overlaps the other's GEMMs. setmaxnreg moves
// registers from the producer to the consumers.
//
// Parameters (-D macros; space and constraints in wgmma_ws.json):
//   CTA_ORDER   which work each CTA of the grid takes (cta_order.cuh): q tiles first, heads first, reversed
//   CONSUMERS      consumer warpgroups (1 | 2): BLOCK_M = 64 * CONSUMERS query rows per CTA
//   BLOCK_N        keys per pipeline tile (64 | 128)
//   STAGES         ring slots
//   OVERLAP_PV     1: S of tile i and its softmax overlap P V of tile i-1 (FA3 intra-warpgroup overlap)
//   PRODUCER_REGS  registers per producer thread after setmaxnreg (consumers get the rest)
#include "cta_order.cuh"
#include "hopper_common.cuh"

#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef CTA_ORDER
#define CTA_ORDER 0
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef OVERLAP_PV
#define OVERLAP_PV 0
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40
#endif

namespace {
using namespace hopper;

constexpr int kBlock = 128;  // q_block / kv block size and head dim (spec.py)
constexpr int BLOCK_M = 64 * CONSUMERS;
constexpr int kThreads = (CONSUMERS + 1) * 128;
constexpr int kSubTiles = kBlock / BLOCK_N;
constexpr int kQHalf = BLOCK_M * 128;
constexpr int kQBytes = 2 * kQHalf;
constexpr int kTHalf = BLOCK_N * 128;
constexpr int kTileBytes = 2 * kTHalf;
constexpr int kStageBytes = 2 * kTileBytes;  // K then V
constexpr int kSmemBytes = 1024 + kQBytes + STAGES * kStageBytes + (2 * STAGES + 1) * 8;
// Registers per consumer thread after setmaxnreg: what the producer gives up, in multiples of 8, at most
// 240 (FA3 uses 24 / 240 for one producer and two consumer warpgroups).
constexpr int kConsumerRegs0 = ((65536 / 128 - PRODUCER_REGS) / CONSUMERS) / 8 * 8;
constexpr int kConsumerRegs = kConsumerRegs0 > 240 ? 240 : kConsumerRegs0;

static_assert(CONSUMERS == 1 || CONSUMERS == 2, "64 or 128 rows per CTA");
static_assert(BLOCK_N == 64 || BLOCK_N == 128, "wgmma n64 or n128 for S");
static_assert(STAGES >= 2, "the producer runs at least one tile ahead");
static_assert(PRODUCER_REGS % 8 == 0 && PRODUCER_REGS >= 24, "setmaxnreg takes multiples of 8, >= 24");

}  // namespace

extern "C" __device__ int attn_launch_info[4] = {kThreads, kSmemBytes, BLOCK_M, 0};

extern "C" __global__ void __launch_bounds__(kThreads, 1)
block_sparse_attn_fwd(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                      const __nv_bfloat16* __restrict__ v, const int* __restrict__ row_ptr,
                      const int* __restrict__ col_idx, const int* __restrict__ seq_lens,
                      __nv_bfloat16* __restrict__ o, float* __restrict__ lse, int batch_size, int num_heads,
                      int t_max, int col_width) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned raw_base = unsigned(__cvta_generic_to_shared(smem_raw));
  const unsigned pad = ((raw_base + 1023) & ~1023u) - raw_base;
  unsigned char* smem = smem_raw + pad;
  const unsigned q_smem = raw_base + pad;
  const unsigned ring = q_smem + kQBytes;
  const unsigned full_bar = ring + STAGES * kStageBytes;  // STAGES mbarriers: slot loaded and converted
  const unsigned empty_bar = full_bar + STAGES * 8;       // STAGES mbarriers: slot released by consumers
  const unsigned q_full_bar = empty_bar + STAGES * 8;     // Q landed (the epilogue reuses its space)

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  const int q_blocks = t_max / kBlock;
  int q_tile, h, b;
  cta_work<CTA_ORDER>(q_tile, h, b);
  const int q_block = q_tile / (kBlock / BLOCK_M);
  const int row0 = (q_tile % (kBlock / BLOCK_M)) * BLOCK_M;  // first row of this CTA in the q_block
  const size_t bh = size_t(b) * num_heads + h;
  const int seq_len = __ldg(seq_lens + b);
  const int valid_blocks = (seq_len + kBlock - 1) / kBlock;
  const size_t head_base = bh * size_t(t_max) * kBlock;
  const int q_pos0 = q_block * kBlock + row0;
  const int* row_cols = col_idx + bh * size_t(col_width);
  const int row_begin = __ldg(row_ptr + bh * (q_blocks + 1) + q_block);
  const int n_tiles =
      (q_block < valid_blocks) ? (__ldg(row_ptr + bh * (q_blocks + 1) + q_block + 1) - row_begin) * kSubTiles : 0;

  // kv block of pipeline tile t, or -1 when it contributes nothing to this CTA (an entry reference.py
  // drops, keys all at or past seq_len, or keys all above this CTA's rows on the diagonal). Producer and
  // consumers walk the same sequence of active tiles; the i-th lives in slot i % STAGES.
  auto tile_kv = [&](int t) -> int {
    const int kv = __ldg(row_cols + row_begin + t / kSubTiles);
    const int key0 = (t % kSubTiles) * BLOCK_N;
    if (kv < 0 || kv > q_block || kv >= valid_blocks) return -1;
    if (kv * kBlock + key0 >= seq_len) return -1;
    if (kv == q_block && key0 > row0 + BLOCK_M - 1) return -1;
    return kv;
  };
  auto next_active = [&](int t) {
    while (t < n_tiles && tile_kv(t) < 0) ++t;
    return t;
  };
  auto slot_k = [&](int i) { return ring + unsigned(i % STAGES) * kStageBytes; };

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar + 8 * s, 128);
      mbar_init(empty_bar + 8 * s, CONSUMERS * 128);
    }
    mbar_init(q_full_bar, 128);
  }
  __syncthreads();

  // The two roles are the two branches of one if/else that never merge again: registers are
  // re-partitioned by setmaxnreg, so nothing may be live across the split (HOPPER.md).
  if (wg == 0) {
    // ---- producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
    load_tile<BLOCK_M, 128>(q_smem, q + head_base + size_t(q_pos0) * kBlock, tid);
    cp_async_commit();
    auto publish = [&](int i) {  // tile i (and Q before it) landed: convert V, fence, release to consumers
      convert_own_v_chunks<BLOCK_N, 128>(smem + (slot_k(i) + kTileBytes - q_smem), tid);
      fence_proxy_async();
      mbar_arrive(full_bar + 8 * (i % STAGES));
      if (i == 0) mbar_arrive(q_full_bar);
    };
    int i = 0;
    for (int t = next_active(0); t < n_tiles; t = next_active(t + 1), ++i) {
      if (i >= STAGES) mbar_wait(empty_bar + 8 * (i % STAGES), ((i / STAGES) - 1) & 1);
      const size_t src = head_base + (size_t(tile_kv(t)) * kBlock + (t % kSubTiles) * BLOCK_N) * kBlock;
      load_tile<BLOCK_N, 128>(slot_k(i), k + src, tid);
      load_tile<BLOCK_N, 128>(slot_k(i) + kTileBytes, v + src, tid);
      cp_async_commit();
      if (i >= 1) {
        cp_async_wait<1>();
        publish(i - 1);
      }
    }
    cp_async_wait<0>();
    if (i >= 1) publish(i - 1);
    else mbar_arrive(q_full_bar);  // no tile: Q still must land before the consumers reuse its space
  } else {
    // ---- consumers ----
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    const int cwg = wg - 1;                                         // consumer warpgroup index
    const int wg_row0 = cwg * 64;                                   // its first row in the CTA tile
    const int my_row0 = wg_row0 + (warp & 3) * 16 + (lane >> 2);  // this thread's rows: my_row0, + 8
    float acc[64];
#pragma unroll
    for (int j = 0; j < 64; ++j) acc[j] = 0.f;
    float row_max[2] = {ATTN_NEG_INF, ATTN_NEG_INF}, row_sum[2] = {0.f, 0.f};
    const unsigned long long q_desc = make_desc(q_smem + wg_row0 * 128, 16, 1024);  // this warpgroup's rows
    auto issue_qk = [&](float (&s)[BLOCK_N / 2], unsigned k_tile) {
      const unsigned long long k_desc = make_desc(k_tile, 16, 1024);
#pragma unroll
      for (int j = 0; j < BLOCK_N / 2; ++j) s[j] = 0.f;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < 8; ++kk)
        wgmma_qk(s, desc_add(q_desc, (kk >> 2) * kQHalf + (kk & 3) * 32),
                 desc_add(k_desc, (kk >> 2) * kTHalf + (kk & 3) * 32));
      wgmma_commit();
    };
    auto issue_pv = [&](const unsigned (&pa)[BLOCK_N / 16][4], unsigned v_tile) {
      const unsigned long long v_desc = make_desc(v_tile, kTHalf, 1024);
#pragma unroll
      for (int kk = 0; kk < BLOCK_N / 16; ++kk)
        wgmma_rs_n128_tb(acc, pa[kk], desc_add(v_desc, kk * 2048));
      wgmma_commit();
    };
    auto rescale = [&](const float (&alpha)[2]) {
#pragma unroll
      for (int j = 0; j < 16; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j * 4 + e] *= alpha[e >> 1];
    };
    auto softmax = [&](float (&s)[BLOCK_N / 2], unsigned (&pa)[BLOCK_N / 16][4], float (&alpha)[2], int t) {
      const int kv = tile_kv(t);
      softmax_tile<BLOCK_N>(s, pa, alpha, row_max, row_sum, kv == q_block, q_pos0 + my_row0,
                            kv * kBlock + (t % kSubTiles) * BLOCK_N, seq_len, lane);
    };
#if OVERLAP_PV
    unsigned pa_prev[BLOCK_N / 16][4];
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 16; ++kk)
#pragma unroll
      for (int e = 0; e < 4; ++e) pa_prev[kk][e] = 0u;  // first P V adds 0 * V(tile 0)
    int i = 0;
    for (int t = next_active(0); t < n_tiles; t = next_active(t + 1), ++i) {
      mbar_wait(full_bar + 8 * (i % STAGES), (i / STAGES) & 1);
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
      fence_operands(pa_prev);
      if (i > 0) mbar_arrive(empty_bar + 8 * ((i - 1) % STAGES));  // P V of tile i-1 is done with its slot
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
      mbar_arrive(empty_bar + 8 * ((i - 1) % STAGES));
    }
#else
    int i = 0;
    for (int t = next_active(0); t < n_tiles; t = next_active(t + 1), ++i) {
      mbar_wait(full_bar + 8 * (i % STAGES), (i / STAGES) & 1);
      // Warpgroup-uniform skip: every key of the tile lies above every row of this warpgroup.
      if (!(tile_kv(t) == q_block && (t % kSubTiles) * BLOCK_N > row0 + wg_row0 + 63)) {
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
      mbar_arrive(empty_bar + 8 * (i % STAGES));
    }
#endif

    // Epilogue: normalise, stage bf16 rows in this warpgroup's own rows of the Q tile once Q has surely
    // landed, then store 16 bytes per thread (named barrier 1 + cwg: this warpgroup only).
    mbar_wait(q_full_bar, 0);
    const size_t lse_base = bh * size_t(t_max) + q_pos0;
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float l = row_sum[hr];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const int row = my_row0 + hr * 8;
      const bool has_keys = (q_pos0 + row < seq_len) && l > 0.f;
      const float inv = has_keys ? 1.f / l : 0.f;
#pragma unroll
      for (int j = 0; j < 16; ++j)
        *reinterpret_cast<unsigned*>(smem + swz128(BLOCK_M, row, j) + (lane & 3) * 4) =
            pack_bf162(acc[j * 4 + 2 * hr] * inv, acc[j * 4 + 2 * hr + 1] * inv);
      if ((lane & 3) == 0) lse[lse_base + row] = has_keys ? (row_max[hr] + log2f(l)) * kLn2 : ATTN_NEG_INF;
    }
    if (cwg == 0) asm volatile("bar.sync 1, 128;\n" ::: "memory");
    else asm volatile("bar.sync 2, 128;\n" ::: "memory");
    __nv_bfloat16* o_rows = o + head_base + size_t(q_pos0) * kBlock;
    const int wtid = tid & 127;
#pragma unroll
    for (int it = 0; it < 8; ++it) {  // 64 rows x 16 chunks over 128 threads
      const int idx = it * 128 + wtid, row = wg_row0 + (idx >> 4), chunk = idx & 15;
      *reinterpret_cast<uint4*>(o_rows + row * kBlock + chunk * 8) =
          *reinterpret_cast<const uint4*>(smem + swz128(BLOCK_M, row, chunk));
    }
  }
}
