// Tile scheduler of the generation-2 templates: which work tile (batch, head, q tile of BLOCK_M rows) each
// CTA takes, and in which order. Work tiles are numbered w = 0 .. n_tiles - 1 in the order ORDER names;
// the schedule hands them out.
//   ORDER 0  longest first (LPT): q tiles from the last to the first, all (batch, head) of one q tile
//            together. The later q_blocks of a row hold the most kv blocks (a full window, plus the global
//            or retrieval blocks), so the longest work starts first and short tiles fill the tail.
//   ORDER 1  q tiles from the first to the last (shortest first), (batch, head) fastest.
//   ORDER 2  (batch, head) major, q tiles from the last to the first inside one head: neighbouring q
//            tiles of one head share sliding-window kv blocks in L2.
//   SCHEDULE 0  the ABI grid (t_max / BLOCK_M, heads, batch), one work tile per CTA, tile = linear CTA id.
//   SCHEDULE 1  persistent: min(n_tiles, SMs x CTAS_PER_SM) CTAs, CTA c takes w = c, c + grid, ...
//   SCHEDULE 2  persistent, dynamic: each CTA's producer takes the next w from a global atomic counter;
//               the last CTA to finish resets the counters for the next launch (atomics on a module
//               __device__ variable: launches of one module must not run concurrently).
// The producer thread walks the schedule; the consumers and converters learn each tile from the pipeline
// (producer.cuh), so only the producer calls next().
#pragma once

namespace hopper {

/// One work tile: query rows [q_tile * BLOCK_M, + BLOCK_M) of head (b, h).
struct WorkTile {
  int b, h, q_tile;
};

/// ORDER and KV_ORDER of a CMEM_PARAMS 1 build (fa3_tma.cu defines them, initialized from the macros): read at
/// run time, so the configs that differ only in them share one compile, their cubins differing only in these
/// two initial values (gpu/cubin_patch.hpp writes them; docs/gpu.md).
/// Declared only in such builds: a declaration alone is a definition in whole-program compilation, and any other
/// config's cubin stays byte-identical to the one compiled before CMEM_PARAMS existed.
#if defined(CMEM_PARAMS) && CMEM_PARAMS
#define ATTN_CMEM_PARAMS 1
extern "C" __constant__ int attn_param_ORDER;
extern "C" __constant__ int attn_param_KV_ORDER;
#endif

/// Work tile number `w` of the order ORDER; q_tiles = t_max / BLOCK_M, batch_heads = batch * heads.
template <int Order>
__device__ __forceinline__ WorkTile decode_work(int w, int q_tiles, int batch_heads, int heads) {
  static_assert(Order >= 0 && Order <= 2, "ORDER is read at run time here (CMEM_PARAMS 1): the producer decodes the "
                "schedule's number with decode_work_rt and hands the consumers head_major_number (producer.cuh)");
  int bh, q_tile;
  if constexpr (Order == 2) {
    bh = w / q_tiles;
    q_tile = q_tiles - 1 - w % q_tiles;
  } else {
    bh = w % batch_heads;
    q_tile = Order == 0 ? q_tiles - 1 - w / batch_heads : w / batch_heads;
  }
  return WorkTile{bh / heads, bh % heads, q_tile};
}

/// decode_work with the order `order` (0, 1 or 2) known at run time: the three orders as selects around one
/// division, no branch.
__device__ __forceinline__ WorkTile decode_work_rt(int order, int w, int q_tiles, int batch_heads, int heads) {
  const bool head_major = order == 2;
  const int div = head_major ? q_tiles : batch_heads;
  const int hi = w / div, lo = w - hi * div;
  const int bh = head_major ? hi : lo, t = head_major ? lo : hi;
  return WorkTile{bh / heads, bh % heads, order == 1 ? t : q_tiles - 1 - t};
}

/// The number of `wt` in ORDER 2, the inverse of decode_work<2>. With a run-time ORDER the producer alone decodes
/// the schedule's numbers and hands the consumers this one, so their decode is the compiled-in decode_work<2>
/// (a run-time decode in the consumers cost 2 % on full, H200 2026-11-26: docs/results.md "Patched siblings").
__device__ __forceinline__ int head_major_number(const WorkTile& wt, int q_tiles, int heads) {
  return (wt.b * heads + wt.h) * q_tiles + (q_tiles - 1 - wt.q_tile);
}

/// The order of the work numbers the consumers receive: ORDER, or 2 with a run-time ORDER (head_major_number).
template <class T>
inline constexpr int ConsumerOrder = T::kOrder < 0 ? 2 : T::kOrder;

/// Counters of SCHEDULE 2: {next work tile, CTAs done}. Zero at module load; reset by the last CTA (the
/// host can also zero them through cuModuleGetGlobal after an aborted launch).
extern "C" __device__ unsigned attn_sched_counters[2] = {0u, 0u};

/// The producer thread's view of the schedule. first() / next() return work tile numbers, n_tiles once done.
template <int Schedule>
struct TileScheduler {
  int n_tiles;
  __device__ __forceinline__ int first() const {
    if constexpr (Schedule == 2) return int(atomicAdd(&attn_sched_counters[0], 1u));
    return int(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
  }
  __device__ __forceinline__ int next(int w) const {
    if constexpr (Schedule == 0) return n_tiles;
    if constexpr (Schedule == 1) return w + int(gridDim.x);
    return int(atomicAdd(&attn_sched_counters[0], 1u));
  }
  /// Called once by the producer thread after next() returned >= n_tiles.
  __device__ __forceinline__ void finish() const {
    if constexpr (Schedule == 2) {
      __threadfence();
      if (atomicAdd(&attn_sched_counters[1], 1u) == gridDim.x - 1) {  // every CTA has taken its last tile
        atomicExch(&attn_sched_counters[0], 0u);
        atomicExch(&attn_sched_counters[1], 0u);
      }
    }
  }
};

}  // namespace hopper
