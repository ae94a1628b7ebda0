// Producer of the generation-2 and generation-4 templates (fa4_g4: V_UNPACK 1; its SCHEDULE 3 in g4_producer.cuh):
// one thread of warpgroup 0 walks the tile schedule, filters each work tile's CSR row, and streams Q, K and V into
// shared memory with TMA (pipeline.cuh describes the stream); warps 1..CONVERTERS of the same warpgroup convert
// each V tile from bf16 to fp16 in place, so that P V runs with fp16 P (bf16 P fails the harness tolerance:
// DESIGN.md).
#pragma once
#include "blocks/pipeline.cuh"
#include "blocks/tile_scheduler.cuh"
#include "blocks/trace.cuh"

// ATTN_CONVERT_UNROLL: 16-byte V chunks each converter thread has in flight (the unroll of its loop; a
// measurement switch, bench --define: more hides more shared-memory latency, at 4 registers a chunk).
#ifndef ATTN_CONVERT_UNROLL
#define ATTN_CONVERT_UNROLL 4
#endif
// V_UNPACK 1 (V_CONVERT 0 only): each bf16 pair goes to fp32 with one op per half (lo: shl 16, hi: and
// 0xFFFF0000) before the one cvt.rn.f16x2.f32, instead of the PRMT + two IMAD.U32 that
// __bfloat1622float2 compiles to (4 -> 3 instructions per word, 16 -> 12 per 16-byte chunk). Exact: the fp32
// values are the bf16 values, the cvt rounds as before.

namespace hopper {

#if V_UNPACK
__device__ __forceinline__ unsigned bf16x2_to_f16x2_lean(unsigned w) {
  unsigned r;
  asm("{\n.reg .b32 lo, hi;\n"
      "shl.b32 lo, %1, 16;\n"
      "and.b32 hi, %1, 0xFFFF0000;\n"
      "cvt.rn.f16x2.f32 %0, hi, lo;\n}\n"  // upper half from hi, lower from lo
      : "=r"(r)
      : "r"(w));
  return r;
}
#endif

/// The CSR entries of one work tile, filtered as reference.py filters them: an entry outside
/// [0, min(q_block, valid_blocks - 1)] is dropped, a sub-tile whose keys all lie at or past seq_len or
/// above every query row of the tile is skipped. Tile t (0 .. n - 1) is visited in KV_ORDER.
template <class T>
struct KvWalk {
  const int* cols;  // this head's col_idx row
  int begin, n, col_width, q_block, valid_blocks, seq_len, last_row;  // last_row: in the q_block, 0..127
  bool reversed_rt;  // KV_ORDER 1 when it is read at run time (T::kKvOrder -1); unused otherwise

  /// Packed info (kv | sub << 16) of tile t, or -1 when it contributes nothing.
  __device__ __forceinline__ int info(int t) const {
    if constexpr (T::kKvOrder < 0) {  // KV_ORDER at run time (CMEM_PARAMS 1): reversed_rt
      // Reversed, tile t is tile n - 1 - t in CSR order (n is a multiple of kSubTiles): one select per tile.
      const int u = reversed_rt ? n - 1 - t : t;
      return at(u / T::kSubTiles, u % T::kSubTiles);
    }
    const int e = T::kKvOrder ? n / T::kSubTiles - 1 - t / T::kSubTiles : t / T::kSubTiles;
    const int sub = T::kKvOrder ? T::kSubTiles - 1 - t % T::kSubTiles : t % T::kSubTiles;
    return at(e, sub);
  }
  /// Packed info of CSR entry e's sub-tile sub, or -1 when it contributes nothing.
  __device__ __forceinline__ int at(int e, int sub) const {
    const int kv = __ldg(cols + min(begin + e, col_width - 1));  // reference.py clamps the gather index
    if (kv < 0 || kv > q_block || kv >= valid_blocks) return -1;
    if (kv * T::kBlock + sub * T::kBlockN >= seq_len) return -1;
    if (kv == q_block && sub * T::kBlockN > last_row) return -1;
    return kv | (sub << 16);
  }
  /// First tile at or after t that contributes, or n.
  __device__ __forceinline__ int next(int t, int& info_out) const {
    for (; t < n; ++t)
      if ((info_out = info(t)) >= 0) return t;
    return n;
  }
};

/// The producer thread. `i` counts slot uses (shared with nobody: every role counts its own).
template <class T>
__device__ __forceinline__ void produce(const Pipeline<T>& pl, const AttnTmaps& maps, const KernelArgs& a) {
  const int q_tiles = a.t_max / T::kBlockM, batch_heads = a.batch_size * a.num_heads;
  const TileScheduler<T::kSchedule> sched{q_tiles * batch_heads};
#ifdef ATTN_CMEM_PARAMS
  // ORDER and KV_ORDER at run time (tile_scheduler.cuh), read first: the first read of their constant bank misses
  // in every CTA, and here it overlaps the prefetches and the schedule's first step.
  const int order_rt = attn_param_ORDER;
  const bool kv_reversed_rt = attn_param_KV_ORDER != 0;
#else
  constexpr int order_rt = 0;
  constexpr bool kv_reversed_rt = false;
#endif
  tma_prefetch(&maps.q);
  tma_prefetch(&maps.k);
  tma_prefetch(&maps.v);
  Tracer tr;  // ATTN_TRACE builds only (trace.cuh)
  tr.start(0, true);
  int i = 0, q_loads = 0;
  // Next slot use: claim waits for the slot's K half (the whole slot without KV_SPLIT) and publishes meta;
  // claim_v waits for its V half (KV_SPLIT) and publishes vmeta, then the use is counted.
  auto claim = [&](int w, int info) {
    const int s = slot_of<T>(i);
    if (i >= T::kStages) mbar_wait(pl.k_empty(s), parity_of<T>(i) ^ 1u);
    pl.meta[s] = make_int2(w, info);
    tr.mark(kTrSlot);
    return s;
  };
  auto claim_v = [&](int w, int info) {  // returns the V slot
    const int vs = vslot_of<T>(i);
    if constexpr (T::kKvSplit) {
      if (i >= T::kVStages) mbar_wait(pl.v_empty(vs), vparity_of<T>(i) ^ 1u);
      pl.vmeta(vs) = make_int2(w, info);
    }
    ++i;
    return vs;
  };
  for (int w = sched.first(); w < sched.n_tiles; w = sched.next(w)) {
    WorkTile wt;
    if constexpr (T::kOrder < 0) wt = decode_work_rt(order_rt, w, q_tiles, batch_heads, a.num_heads);
    else wt = decode_work<T::kOrder>(w, q_tiles, batch_heads, a.num_heads);
    // What the consumers decode (ConsumerOrder<T>): the schedule's number, or with a run-time ORDER its ORDER 2 one.
    const int wm = T::kOrder < 0 ? head_major_number(wt, q_tiles, a.num_heads) : w;
    const int bh = wt.b * a.num_heads + wt.h;
    const int q_blocks = a.t_max / T::kBlock;
    const int q_block = wt.q_tile * T::kBlockM / T::kBlock;
    const int row0 = wt.q_tile * T::kBlockM % T::kBlock;  // first row of the tile in its q_block
    KvWalk<T> walk;
    if constexpr (T::kKvOrder < 0) walk.reversed_rt = kv_reversed_rt;
    walk.seq_len = __ldg(a.seq_lens + wt.b);
    walk.valid_blocks = (walk.seq_len + T::kBlock - 1) / T::kBlock;
    walk.q_block = q_block;
    walk.last_row = row0 + T::kBlockM - 1;
    walk.col_width = a.col_width;
    walk.cols = a.col_idx + size_t(bh) * a.col_width;
    walk.begin = __ldg(a.row_ptr + size_t(bh) * (q_blocks + 1) + q_block);
    walk.n = q_block < walk.valid_blocks
                 ? (__ldg(a.row_ptr + size_t(bh) * (q_blocks + 1) + q_block + 1) - walk.begin) * T::kSubTiles
                 : 0;
    int info = -1;
    int t = walk.next(0, info);
    if (t >= walk.n) {  // nothing to attend to: one data-less use tells the consumers to write zeros
      const int s = claim(wm, kInfoEmpty | kInfoLast);
      const int vs = claim_v(wm, kInfoEmpty | kInfoLast);
      mbar_arrive(pl.k_full(s));
      mbar_arrive(pl.v_full(vs));
      continue;
    }
    const int row = bh * a.t_max + wt.q_tile * T::kBlockM;  // first row in the flattened tensor
    auto load_q = [&]() {  // after the first K/V tile: a wait for the Q buffer overlaps that load
      const int b = q_buffer_of<T>(q_loads);
      if (q_loads >= T::kQBuffers) mbar_wait(pl.q_empty(b), q_parity_of<T>(q_loads) ^ 1u);
      ++q_loads;
      mbar_arrive_expect_tx(pl.q_full(b), T::kQBytes);
      tma_load_2d(pl.q(b), &maps.q, pl.q_full(b), 0, row);
      tma_load_2d(pl.q(b) + T::kQHalf, &maps.q, pl.q_full(b), 64, row);
    };
    // L2_PREFETCH (measurement switch): the work tile's other K and V tiles start from device memory into L2
    // while its first one loads, so that their TMA loads, issued as ring slots free up, hit L2. Measured 11 %
    // slower on full (2026-11-25): the walk delays the tile's Q load, and the consumers' waits for K did not
    // shrink, so they are not L2 misses (lab/notebook-gen2.md).
    auto prefetch_rest = [&]() {
#pragma unroll 2
      for (int tt = t + 1; tt < walk.n; ++tt) {
        const int inf = walk.info(tt);
        if (inf < 0) continue;
        const int kv_row = (T::kSameKv ? 0 : bh * a.t_max + info_kv(inf) * T::kBlock) + info_sub(inf) * T::kBlockN;
        tma_prefetch_l2(&maps.k, 0, kv_row);
        tma_prefetch_l2(&maps.k, 64, kv_row);
        tma_prefetch_l2(&maps.v, 0, kv_row);
        tma_prefetch_l2(&maps.v, 64, kv_row);
      }
    };
    for (bool first = true; t < walk.n; first = false) {
      int info_next = -1;
      const int t_next = walk.next(t + 1, info_next);
      const int s = claim(wm, info | (t_next >= walk.n ? kInfoLast : 0));
      const int kv_row = (T::kSameKv ? 0 : bh * a.t_max + info_kv(info) * T::kBlock) + info_sub(info) * T::kBlockN;
      mbar_arrive_expect_tx(pl.k_full(s), T::kKvBytes);
      tma_load_2d(pl.k(s), &maps.k, pl.k_full(s), 0, kv_row);
      tma_load_2d(pl.k(s) + T::kKvHalf, &maps.k, pl.k_full(s), 64, kv_row);
      const int vs = claim_v(wm, info);  // the converters read only the exit and empty flags
      mbar_arrive_expect_tx(pl.v_full(vs), T::kKvBytes);
      tma_load_2d(pl.v(vs), &maps.v, pl.v_full(vs), 0, kv_row);
      tma_load_2d(pl.v(vs) + T::kKvHalf, &maps.v, pl.v_full(vs), 64, kv_row);
      if (first) {
        if constexpr (T::kL2Prefetch) prefetch_rest();
        load_q();
      }
      t = t_next;
      info = info_next;
    }
  }
  sched.finish();
  const int s = claim(kMetaExit, 0);  // tells consumers and converters to leave
  const int vs = claim_v(kMetaExit, 0);
  mbar_arrive(pl.k_full(s));
  mbar_arrive(pl.v_full(vs));
  tr.stop();
}

/// A converter thread (c in 0 .. Traits::kConverterThreads - 1): each V tile of the stream, bf16 -> fp16 in place
/// (V_CONVERT 0: cvt through fp32, 1: integer bit arithmetic, hopper_common.cuh), then fence the
/// generic-proxy writes for wgmma (async proxy) and arrive on v_ready.
template <class T>
__device__ __forceinline__ void convert_v(const Pipeline<T>& pl, unsigned char* smem, int c) {
  constexpr int kThreads = T::kConverterThreads;
  constexpr int kChunks = T::kBlockN * 16;  // 16-byte chunks per V tile
  Tracer tr;  // ATTN_TRACE builds only (trace.cuh)
  tr.start(1, c == 0);
  for (int i = 0;; ++i) {
    const int s = vslot_of<T>(i);
    mbar_wait(pl.v_full(s), vparity_of<T>(i));
    tr.mark(kTrVFull);
    const int2 m = pl.vmeta(s);
    if (m.x == kMetaExit) {
      tr.stop();
      return;
    }
    if (!(m.y & kInfoEmpty) && !T::kNoConvert) {
      unsigned char* tile = smem + (pl.v(s) - pl.base);
#pragma unroll ATTN_CONVERT_UNROLL
      for (int idx = c; idx < kChunks; idx += kThreads) {
        uint4* p = reinterpret_cast<uint4*>(tile + idx * 16);  // chunk order is irrelevant in place
        uint4 x = *p;
        unsigned* w = reinterpret_cast<unsigned*>(&x);
#pragma unroll
#if V_UNPACK
        for (int j = 0; j < 4; ++j) w[j] = T::kVConvert ? bf16x2_to_f16x2_bits(w[j]) : bf16x2_to_f16x2_lean(w[j]);
#else
        for (int j = 0; j < 4; ++j) w[j] = T::kVConvert ? bf16x2_to_f16x2_bits(w[j]) : bf16x2_to_f16x2_cvt(w[j]);
#endif
        *p = x;
      }
      fence_proxy_async();
    }
    mbar_arrive(pl.v_ready(s));
    tr.mark(kTrVReady);
  }
}

}  // namespace hopper
