// Consumers of the generation-2 templates: warpgroup 1 + cwg owns query rows [64 cwg, 64 cwg + 64) of every
// work tile. Per tile of the stream (pipeline.cuh): S = Q K^T (wgmma m64nBLOCK_Nk16, Q and K from swizzled
// shared memory, bf16 -> fp32), the online softmax in the exp2 domain with the diagonal kv block masked
// (blocks/softmax.cuh, in the SOFTMAX mode), O += P V (wgmma m64n128k16, P fp16 from registers, V fp16 MN-major).
//   OVERLAP 1   FlashAttention-3's intra-warpgroup pipelining: S of tile i is issued before P V of tile
//               i-1, and the softmax of tile i runs while P V of tile i-1 is on the tensor cores.
//   OVERLAP 2   as 1, and carried across work tiles: the last P V of a work tile is issued with the first
//               Q K^T of the next one, whose softmax runs under it; the epilogue follows (rows of the
//               challenge's window families have only 2-10 kv tiles, so the drain at every work tile
//               boundary is a large share of the time: lab/notebook-gen2.md, ablation).
//   PINGPONG 1  FlashAttention-3's inter-warpgroup ping-pong: the two consumer warpgroups take turns to
//               issue their GEMMs (named barriers 3 and 4), so one's softmax hides under the other's GEMMs.
//   RESCALE_SKIP 1  O is rescaled only when some row maximum of the warp moved (alpha != 1); SOFTMAX 1 and 2
//               always skip it so (blocks/softmax.cuh).
// A work tile's frame (Turns, WorkRows and work_rows, pass_empty, wait_q, start_rows, rescale_o, finish_consumer) is
// shared with generation 4's consumer loop (g4_consumer.cuh consume_g4).
// Sources: Shah et al., "FlashAttention-3" (2024), sections 3.1-3.2; PTX ISA, wgmma register fragments.
#pragma once
#include "blocks/epilogue.cuh"
#include "blocks/softmax.cuh"
#include "blocks/tile_scheduler.cuh"
#include "blocks/trace.cuh"

// ATTN_UNIFORM_META: the slot descriptors and the warpgroup index the consumers branch on are broadcast
// from lane 0 (warp_uniform), so that the compiler knows the loop control, the ring slots and the wgmma
// descriptors to be warp-uniform (measurement switch, bench --define ATTN_UNIFORM_META=0 for the plain reads).
#ifndef ATTN_UNIFORM_META
#define ATTN_UNIFORM_META 1
#endif

namespace hopper {

/// x, as warp_uniform gives it under ATTN_UNIFORM_META (the value is the same in every lane either way).
__device__ __forceinline__ int uniform_meta(int x) { return ATTN_UNIFORM_META ? warp_uniform(x) : x; }

/// Ping-pong turn-taking between the two consumer warpgroups (no-ops unless T::kPingpong).
template <class T>
struct Turns {
  int cwg;
  __device__ __forceinline__ void start() const {  // warpgroup 0 goes first
    if constexpr (T::kPingpong) if (cwg == 1) named_arrive(3, 256);
  }
  __device__ __forceinline__ void wait() const {
    if constexpr (T::kPingpong) named_sync(3 + cwg, 256);
  }
  __device__ __forceinline__ void pass() const {
    if constexpr (T::kPingpong) named_arrive(4 - cwg, 256);
  }
  __device__ __forceinline__ void finish() const {  // takes warpgroup 1's last pass
    if constexpr (T::kPingpong) if (cwg == 0) named_sync(3, 256);
  }
};

/// A work tile as the consumers see it: the one a slot's meta names (w, decoded in ConsumerOrder<T>), its first
/// query position and q_block, its sequence length, and its first rows of o and lse.
struct WorkRows {
  int bh, q_pos0, q_block, seq_len;
  __nv_bfloat16* o_rows;
  float* lse_rows;
};

template <class T>
__device__ __forceinline__ WorkRows work_rows(const KernelArgs& a, int w, int q_tiles, int batch_heads) {
  const WorkTile wt = decode_work<ConsumerOrder<T>>(w, q_tiles, batch_heads, a.num_heads);
  WorkRows r;
  r.bh = wt.b * a.num_heads + wt.h;
  r.q_pos0 = wt.q_tile * T::kBlockM;
  r.q_block = r.q_pos0 / T::kBlock;
  r.seq_len = __ldg(a.seq_lens + wt.b);
  r.o_rows = a.o + (T::kSameO ? 0 : (size_t(r.bh) * a.t_max + r.q_pos0) * T::kBlock);
  r.lse_rows = a.lse + size_t(r.bh) * a.t_max + r.q_pos0;
  return r;
}

/// A work tile without kv blocks (its one data-less use i, flagged kInfoEmpty): once the converters have read the
/// use's vmeta, both halves of the slot go back to the producer and this warpgroup's rows get o = 0, lse = -inf.
template <class T>
__device__ __forceinline__ void pass_empty(const Pipeline<T>& pl, int& i, const WorkRows& w, const WgRows& r,
                                           Tracer& tr) {
  mbar_wait(pl.v_ready(vslot_of<T>(i)), vparity_of<T>(i));
  if constexpr (T::kKvSplit) mbar_arrive(pl.k_empty(slot_of<T>(i)));
  mbar_arrive(pl.v_empty(vslot_of<T>(i)));
  ++i;
  store_empty_rows(w.o_rows, w.lse_rows, r);
  tr.mark(kTrEmpty);
}

/// Waits for the work tile's Q (load q_uses, then counted) and returns its buffer.
template <class T>
__device__ __forceinline__ int wait_q(const Pipeline<T>& pl, int& q_uses, Tracer& tr) {
  const int qb = q_buffer_of<T>(q_uses);
  mbar_wait(pl.q_full(qb), q_parity_of<T>(q_uses));
  tr.mark(kTrQ);
  ++q_uses;
  return qb;
}

/// A work tile's online-softmax state at its start: no row maximum yet (-inf), row sums 0.
__device__ __forceinline__ void start_rows(float (&row_max)[2], float (&row_sum)[2]) {
  row_max[0] = row_max[1] = ATTN_NEG_INF;
  row_sum[0] = row_sum[1] = 0.f;
}

/// O *= alpha, row half e >> 1 of each accumulator quad (wgmma accumulator layout).
__device__ __forceinline__ void rescale_o(float (&acc)[64], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[j * 4 + e] *= alpha[e >> 1];
}

/// A consumer warpgroup's last steps: its ping-pong turn given back, its TMA stores drained, its trace closed.
template <class T>
__device__ __forceinline__ void finish_consumer(const Turns<T>& turns, const WgRows& r, Tracer& tr) {
  turns.finish();
  drain_stores<T>(r);
  tr.stop();
}

template <class T, bool Fold, bool RescaleSkip>
__device__ __forceinline__ void consume(const Pipeline<T>& pl, unsigned char* smem, const AttnTmaps& maps,
                                        const KernelArgs& a, int cwg, int tid) {
  constexpr int kN = T::kBlockN;
  const WgRows r{cwg, cwg * 64, cwg * 64 + (tid >> 5) * 16 + ((tid & 31) >> 2), tid};
  const int lane = tid & 31;
  const int q_tiles = a.t_max / T::kBlockM, batch_heads = a.batch_size * a.num_heads;
  const Turns<T> turns{cwg};
  Tracer tr;  // ATTN_TRACE builds only (trace.cuh)
  tr.start(2 + cwg, tid == 0);
  float acc[64];
  float row_max[2], row_sum[2];
  unsigned pa[kN / 16][4];  // P of the tile whose P V is pending (OVERLAP)
  unsigned long long q_desc = 0;

  auto issue_qk = [&](float (&sc)[kN / 2], int slot) {
    const unsigned long long k_desc = make_desc(pl.k(slot), 16, 1024);
#pragma unroll
    for (int j = 0; j < kN / 2; ++j) sc[j] = 0.f;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < (T::kNoQk ? 0 : 8); ++kk)
      wgmma_qk(sc, desc_add(q_desc, (kk >> 2) * T::kQHalf + (kk & 3) * 32),
               desc_add(k_desc, (kk >> 2) * T::kKvHalf + (kk & 3) * 32));
    wgmma_commit();
  };
  auto issue_pv = [&](int vslot) {
    const unsigned long long v_desc = make_desc(pl.v(vslot), T::kKvHalf, 1024);
#pragma unroll
    for (int kk = 0; kk < (T::kNoPv ? 0 : kN / 16); ++kk) wgmma_rs_n128_tb(acc, pa[kk], desc_add(v_desc, kk * 2048));
    wgmma_commit();
  };
  auto rescale = [&](const float (&alpha)[2], bool moved) {  // moved: softmax() said O needs alpha
    if (moved) rescale_o(acc, alpha);
  };
  auto finish_pv = [&]() {  // waits for the pending P V and makes its accumulators usable
    wgmma_wait<0>();
    fence_operands(acc);
    fence_operands(pa);
  };
  // The slot goes back to the producer: with KV_SPLIT its K half once this use's Q K^T is done (release_k)
  // and its V half after the P V (release); without, the whole slot after the P V.
  auto release = [&](int vslot) { mbar_arrive(pl.v_empty(vslot)); };
  auto release_k = [&](int slot) {
    if constexpr (T::kKvSplit) mbar_arrive(pl.k_empty(slot));
  };

  // OVERLAP 2: the work tile whose last P V is pending (carried into the next work tile).
  struct Pending {
    __nv_bfloat16* o_rows;
    float* lse_rows;
    int q_pos0, seq_len, row_out;
    float row_max[2], row_sum[2];
  } held{};
  bool pending = false;
  int prev_vs = 0;  // OVERLAP: the V slot whose P V is pending, and its phase
  unsigned prev_vph = 0;
  auto store_held = [&]() {
    store_tile<T>(pl, smem, maps, acc, held.row_max, held.row_sum, held.o_rows, held.lse_rows, held.q_pos0,
                  held.seq_len, held.row_out, r);
    pending = false;
  };
  auto flush = [&]() {  // the pending P V alone, then the held work tile's epilogue
    mbar_wait(pl.v_ready(prev_vs), prev_vph);
    turns.wait();
    tr.mark(kTrPvIssue);
    wgmma_fence();
    issue_pv(prev_vs);
    turns.pass();
    finish_pv();
    tr.mark(kTrPvDone);
    release(prev_vs);
  };

  turns.start();
  int i = 0;       // slot uses consumed
  int q_uses = 0;  // Q loads consumed
  for (;;) {
    const int s0 = slot_of<T>(i);
    const unsigned ph0 = parity_of<T>(i);
    mbar_wait(pl.k_full(s0), ph0);
    const int2 m0 = make_int2(uniform_meta(pl.meta[s0].x), uniform_meta(pl.meta[s0].y));
    tr.mark(kTrWork);
    if (m0.x == kMetaExit) {
      if (T::kCarry && pending) {
        flush();
        store_held();
      }
      break;
    }
    const WorkRows w = work_rows<T>(a, m0.x, q_tiles, batch_heads);
    const int q_pos0 = w.q_pos0, q_block = w.q_block, seq_len = w.seq_len;
    const int wg_last_row = q_pos0 % T::kBlock + r.wg_row0 + 63;  // in the q_block
    if (m0.y & kInfoEmpty) {
      if (T::kCarry && pending) {
        flush();
        store_held();
      }
      pass_empty<T>(pl, i, w, r, tr);
      continue;
    }
    const int qb = wait_q<T>(pl, q_uses, tr);
    q_desc = make_desc(pl.q(qb) + r.wg_row0 * 128, 16, 1024);  // this warpgroup's rows of the Q tile
    if (!(T::kCarry && pending)) {  // else acc still holds the held work tile's o
#pragma unroll
      for (int j = 0; j < 64; ++j) acc[j] = 0.f;
    }
    start_rows(row_max, row_sum);
    for (bool last = false, first = true; !last; ++i, first = false) {
      const int s = slot_of<T>(i), vs = vslot_of<T>(i);
      const unsigned ph = parity_of<T>(i), vph = vparity_of<T>(i);
      int info = m0.y;
      if (!first) {  // the work tile's first use was waited for above
        mbar_wait(pl.k_full(s), ph);
        info = uniform_meta(pl.meta[s].y);
      }
      tr.mark(kTrKv);
      last = info & kInfoLast;
      const int kv = info_kv(info), key0 = info_sub(info) * kN;
      // Without OVERLAP, a tile whose keys all lie above every row of this warpgroup (diagonal block,
      // BLOCK_N < rows) gets no math; the ping-pong turns stay balanced with the other warpgroup.
      const bool skip = !T::kOverlap && kv == q_block && key0 > wg_last_row;
      // Q K^T with no P V to overlap: issued on this warpgroup's turn and waited for; Q is released after
      // the work tile's last Q K^T, K at once.
      auto qk_alone = [&](float (&sc)[kN / 2]) {
        turns.wait();
        tr.mark(kTrIssue);
        issue_qk(sc, s);
        turns.pass();
        wgmma_wait<0>();
        fence_operands(sc);
        tr.mark(kTrQkDone);
        if (last) mbar_arrive(pl.q_empty(qb));
        release_k(s);
      };
      if (T::kOverlap) {
        // Branch-free wgmma issue (a wgmma under a run-time condition makes ptxas serialise them all,
        // C7520): the first tile is peeled off, and a fully masked tile is computed (P = 0), not skipped.
        float sc[kN / 2], alpha[2];
        unsigned pn[kN / 16][4];
        if (first && !(T::kCarry && pending)) {
          qk_alone(sc);
          softmax<T, Fold, RescaleSkip>(sc, pa, alpha, row_max, row_sum, kv == q_block, true, q_pos0 + r.my_row0,
                                        kv * T::kBlock + key0, seq_len, lane);
          tr.mark(kTrSoftmax);
        } else {
          mbar_wait(pl.v_ready(prev_vs), prev_vph);
          turns.wait();
          tr.mark(kTrIssue);
          issue_qk(sc, s);
          issue_pv(prev_vs);
          turns.pass();
          wgmma_wait<1>();
          fence_operands(sc);
          tr.mark(kTrQkDone);
          if (last) mbar_arrive(pl.q_empty(qb));  // every Q K^T of the work tile is done
          release_k(s);
          const bool moved = softmax<T, Fold, RescaleSkip>(sc, pn, alpha, row_max, row_sum, kv == q_block, first,
                                                           q_pos0 + r.my_row0, kv * T::kBlock + key0, seq_len, lane);
          tr.mark(kTrSoftmax);
          finish_pv();
          tr.mark(kTrPvDone);
          release(prev_vs);
          if (T::kCarry && first) {  // the carried P V was the held work tile's last: its epilogue
            store_held();
#pragma unroll
            for (int j = 0; j < 64; ++j) acc[j] = 0.f;
          } else {
            rescale(alpha, moved);
          }
#pragma unroll
          for (int kk = 0; kk < kN / 16; ++kk)
#pragma unroll
            for (int e = 0; e < 4; ++e) pa[kk][e] = pn[kk][e];
        }
        prev_vs = vs;
        prev_vph = vph;
      } else {
        if (!skip) {
          float sc[kN / 2], alpha[2];
          qk_alone(sc);
          const bool moved = softmax<T, Fold, RescaleSkip>(sc, pa, alpha, row_max, row_sum, kv == q_block, first,
                                                           q_pos0 + r.my_row0, kv * T::kBlock + key0, seq_len, lane);
          rescale(alpha, moved);
          tr.mark(kTrSoftmax);
          mbar_wait(pl.v_ready(vs), vph);
          turns.wait();
          tr.mark(kTrPvIssue);
          wgmma_fence();
          issue_pv(vs);
          turns.pass();
          finish_pv();
          tr.mark(kTrPvDone);
        } else {
          turns.wait();
          turns.pass();
          turns.wait();
          turns.pass();
          if (last) mbar_arrive(pl.q_empty(qb));
          release_k(s);
          mbar_wait(pl.v_ready(vs), vph);
        }
        release(vs);
      }
    }
    const int row_out = T::kSameO ? 0 : w.bh * a.t_max + q_pos0;
    if (T::kCarry) {  // the last P V waits for the next work tile's first Q K^T
      held = Pending{w.o_rows, w.lse_rows, q_pos0, seq_len, row_out, {row_max[0], row_max[1]}, {row_sum[0], row_sum[1]}};
      pending = true;
      continue;
    }
    if (T::kOverlap) flush();  // the last tile's P V
    store_tile<T>(pl, smem, maps, acc, row_max, row_sum, w.o_rows, w.lse_rows, q_pos0, seq_len, row_out, r);
    tr.mark(kTrEpilogue);
  }
  finish_consumer<T>(turns, r, tr);
}

}  // namespace hopper
