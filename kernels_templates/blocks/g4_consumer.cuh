// Consumers of generation 4: warpgroup 1 + cwg owns query rows [64 cwg, 64 cwg + 64) of every work tile and
// walks the pipeline's stream of kv tiles (pipeline.cuh) as generation 2's consumers do, with the order of the
// GEMMs as the structural axis:
//   DEPTH 2  the Q K^T of the next kv tile is issued, with the P V of the previous one, BEFORE this tile's
//            softmax: the softmax runs while both are on the tensor cores, and when it ends the next S is
//            (usually) there already. S is double-buffered (two accumulators, alternated by unrolling the loop
//            by two), so DEPTH 2 needs BLOCK_N 64 (O 64 + two S 32 + two P 16 registers, Q 32 more with
//            Q_REGS) within the 232 registers a consumer thread has.
//   DEPTH 1  FlashAttention-3's intra-warpgroup overlap (generation 2's OVERLAP 1): this tile's Q K^T is issued
//            with the previous tile's P V, waited for, and its softmax runs under that P V.
// DEPTH 2, per kv tile u: [PV u-1] [QK u+1] issued, the softmax of u (its S complete since the step before), then
// both waited for: no wgmma is in flight across the loop's back edge (ptxas serialises the wgmma otherwise).
//   Q_REGS 1  Q K^T takes Q from registers: each warpgroup loads its 64 Q rows with ldmatrix once per work tile and
//            releases the Q buffer at once (the next work tile's Q loads during this one; 32 KB less
//            shared-memory reading per 128-key tile at BLOCK_N 128, 64 KB at 64).
// The rest is generation 2's: a work tile's frame (blocks/consumer.cuh: work_rows, pass_empty, wait_q, start_rows,
// rescale_o, PINGPONG's Turns, finish_consumer), the softmax (blocks/softmax.cuh, SOFTMAX 2, EXP2_POLY as its Poly),
// the epilogue (blocks/epilogue.cuh, EPI_LEAN 1) and the P V wgmma (wgmma_ops.cuh; Q K^T too unless Q_REGS).
// Sources: Shah et al., "FlashAttention-3" (2024), sections 3.1-3.2; PTX ISA, wgmma register fragments.
#pragma once
#include "blocks/consumer.cuh"
#include "blocks/g4_wgmma.cuh"

namespace hopper {

template <class T, bool Fold>
__device__ __forceinline__ void consume_g4(const Pipeline<T>& pl, unsigned char* smem, const AttnTmaps& maps,
                                           const KernelArgs& a, int cwg, int tid) {
  constexpr int kN = T::kBlockN;
  constexpr bool kDeep = T::kDepth == 2;
  const WgRows r{cwg, cwg * 64, cwg * 64 + (tid >> 5) * 16 + ((tid & 31) >> 2), tid};
  const int lane = tid & 31;
  const int q_tiles = a.t_max / T::kBlockM, batch_heads = a.batch_size * a.num_heads;
  float acc[64];                            // O
  float row_max[2], row_sum[2];             // the online softmax's base and row sums
  float sa[kN / 2], sb[kN / 2];             // S of two kv tiles (DEPTH 2: one in the softmax, one on the tensor cores)
  unsigned pa[kN / 16][4], pb[kN / 16][4];  // P of two kv tiles (one read by the pending P V, one being written)
  unsigned qf[T::kQRegs ? 8 : 1][4];        // Q_REGS: this warpgroup's Q rows, one A fragment per k16 step
  unsigned long long q_desc = 0;
  const Turns<T> turns{cwg};
  Tracer tr;  // ATTN_TRACE builds only (trace.cuh)
  tr.start(2 + cwg, tid == 0);

  auto issue_qk = [&](float (&sc)[kN / 2], int slot) {
    const unsigned long long k_desc = make_desc(pl.k(slot), 16, 1024);
    // S zeroed by one mov per register in inline PTX: a zero register that other code shares and a wgmma then
    // defines makes ptxas wait for the wgmma there (C7517 / C7511, lab/notebook-gen2.md QK_SPLIT).
#pragma unroll
    for (int j = 0; j < kN / 2; ++j) asm volatile("mov.b32 %0, 0;\n" : "=f"(sc[j]));
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < (T::kNoQk ? 0 : 8); ++kk) {
      const unsigned long long kd = desc_add(k_desc, (kk >> 2) * T::kKvHalf + (kk & 3) * 32);
      if constexpr (T::kQRegs) g4_wgmma_rs_qk(sc, qf[kk], kd);
      else wgmma_qk(sc, desc_add(q_desc, (kk >> 2) * T::kQHalf + (kk & 3) * 32), kd);
    }
    wgmma_commit();
  };
  auto issue_pv = [&](const unsigned (&p)[kN / 16][4], int vslot) {
    const unsigned long long v_desc = make_desc(pl.v(vslot), T::kKvHalf, 1024);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < (T::kNoPv ? 0 : kN / 16); ++kk) wgmma_rs_n128_tb(acc, p[kk], desc_add(v_desc, kk * 2048));
    wgmma_commit();
  };
  auto release_k = [&](int slot) { mbar_arrive(pl.k_empty(slot)); };  // KV_SPLIT: K once its Q K^T is done
  auto release_v = [&](int vslot) { mbar_arrive(pl.v_empty(vslot)); };  // V after its P V

  turns.start();
  int i = 0;       // slot uses consumed (this warpgroup's count; every role counts its own)
  int q_uses = 0;  // Q loads consumed
  for (;;) {
    const int s0 = slot_of<T>(i);
    mbar_wait(pl.k_full(s0), parity_of<T>(i));
    const int2 m0 = make_int2(uniform_meta(pl.meta[s0].x), uniform_meta(pl.meta[s0].y));
    tr.mark(kTrWork);
    if (m0.x == kMetaExit) break;
    const WorkRows w = work_rows<T>(a, m0.x, q_tiles, batch_heads);
    const int q_pos0 = w.q_pos0, q_block = w.q_block, seq_len = w.seq_len;
    if (m0.y & kInfoEmpty) {
      pass_empty<T>(pl, i, w, r, tr);
      continue;
    }
    const int qb = wait_q<T>(pl, q_uses, tr);
    q_desc = make_desc(pl.q(qb) + r.wg_row0 * 128, 16, 1024);  // this warpgroup's rows of the Q tile
    if constexpr (T::kQRegs) {  // warp w's rows 16 w .. 16 w + 15; lane: row lane % 16, 8 dims at (lane / 16) x 8
      const int row = r.wg_row0 + (tid >> 5) * 16 + (lane & 15);
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) g4_ldmatrix_x4(qf[kk], pl.q(qb) + swz128(T::kBlockM, row, 2 * kk + (lane >> 4)));
      mbar_arrive(pl.q_empty(qb));  // Q is in registers: the buffer goes back to the producer now
    }
#pragma unroll
    for (int j = 0; j < 64; ++j) acc[j] = 0.f;
    start_rows(row_max, row_sum);

    int info = m0.y;      // the current use's info (kv block, sub-tile, kInfoLast)
    int prev_vs = 0;      // the V slot of the pending P V (use i - 1) and its phase
    unsigned prev_vph = 0;
    if constexpr (kDeep) {  // the first Q K^T alone; every later one goes with the step before it
      turns.wait();
      tr.mark(kTrIssue);
      issue_qk(sa, s0);
      turns.pass();
    }
    // One kv tile (use i): cur holds (or receives) its S, prev_p the P of use i - 1 (pending P V unless first),
    // next_s / new_p the other buffers. last: whether it is the work tile's last kv tile, a constant in each of
    // the two inlined copies `step` calls: a wgmma issued under a run-time condition leaves S's registers
    // defined by a wgmma on one path and not on the other, and ptxas serialises every wgmma (C7515). Returns
    // true after the work tile's last tile, its P V done.
    auto tile = [&](float (&cur)[kN / 2], float (&next_s)[kN / 2], const unsigned (&prev_p)[kN / 16][4],
                    unsigned (&new_p)[kN / 16][4], bool first, const bool last) -> bool {

      const int s = slot_of<T>(i), vs = vslot_of<T>(i);
      const unsigned vph = vparity_of<T>(i);
      const int kv = info_kv(info), key0 = info_sub(info) * kN;
      int info_next = 0;
      if (!first) mbar_wait(pl.v_ready(prev_vs), prev_vph);
      turns.wait();
      tr.mark(kTrIssue);
      if constexpr (kDeep) {
        if (!first) issue_pv(prev_p, prev_vs);
        if (!last) {  // the next tile's K, then its Q K^T, ahead of this softmax
          const int sn = slot_of<T>(i + 1);
          mbar_wait(pl.k_full(sn), parity_of<T>(i + 1));
          info_next = uniform_meta(pl.meta[sn].y);
          issue_qk(next_s, sn);
        }
        turns.pass();
        // Only the first tile's Q K^T (the work tile's prologue) may still be running: a later one was waited
        // for at the end of the step before, so that no wgmma is in flight across the loop's back edge (ptxas
        // then copies the alternating S registers and serialises every wgmma: C7511 / C7517).
        if (first) {
          if (last) wgmma_wait<0>(); else wgmma_wait<1>();
        }
      } else {
        issue_qk(cur, s);
        if (!first) issue_pv(prev_p, prev_vs);
        turns.pass();
        if (first) wgmma_wait<0>(); else wgmma_wait<1>();
      }
      fence_operands(cur);
      tr.mark(kTrQkDone);
      if (!T::kQRegs && last) mbar_arrive(pl.q_empty(qb));  // every Q K^T of the work tile is done
      release_k(s);
      float alpha[2];
      const bool moved = softmax<T, Fold, false, kN, T::kExpPoly>(cur, new_p, alpha, row_max, row_sum, kv == q_block, first,
                                                 q_pos0 + r.my_row0, kv * T::kBlock + key0, seq_len, lane);
      tr.mark(kTrSoftmax);
      if (kDeep && !last) {  // the next Q K^T and the previous P V, both issued before the softmax
        wgmma_wait<0>();
        fence_operands(next_s);
      }
      if (!first) {  // the previous P V: done before O is rescaled and its V slot goes back
        wgmma_wait<0>();
        fence_operands(acc);
        tr.mark(kTrPvDone);
        release_v(prev_vs);
        if (moved) rescale_o(acc, alpha);
      }
      if (last) {  // the work tile's last P V, alone
        mbar_wait(pl.v_ready(vs), vph);
        turns.wait();
        tr.mark(kTrPvIssue);
        issue_pv(new_p, vs);
        turns.pass();
        wgmma_wait<0>();
        fence_operands(acc);
        tr.mark(kTrPvDone);
        release_v(vs);
        ++i;
        return true;
      }
      prev_vs = vs;
      prev_vph = vph;
      info = info_next;
      ++i;
      return false;
    };
    auto step = [&](float (&cur)[kN / 2], float (&next_s)[kN / 2], const unsigned (&prev_p)[kN / 16][4],
                    unsigned (&new_p)[kN / 16][4], bool first) -> bool {
      if (!kDeep && !first) {  // DEPTH 1: this tile's K (the first one's was waited for above)
        mbar_wait(pl.k_full(slot_of<T>(i)), parity_of<T>(i));
        info = uniform_meta(pl.meta[slot_of<T>(i)].y);
      }
      tr.mark(kTrKv);
      if (info & kInfoLast) return tile(cur, next_s, prev_p, new_p, first, true);  // two copies: see `tile`
      return tile(cur, next_s, prev_p, new_p, first, false);
    };
    if (!step(sa, sb, pb, pa, true))
      for (;;) {
        if (step(sb, sa, pa, pb, false)) break;
        if (step(sa, sb, pb, pa, false)) break;
      }
    const int row_out = T::kSameO ? 0 : w.bh * a.t_max + q_pos0;
    store_tile<T>(pl, smem, maps, acc, row_max, row_sum, w.o_rows, w.lse_rows, q_pos0, seq_len, row_out, r);
    tr.mark(kTrEpilogue);
  }
  finish_consumer<T>(turns, r, tr);
}

}  // namespace hopper
