// Producer side of generation 4: the TMA producer thread and the V converters are generation 2's (blocks/producer.cuh
// `produce` and `convert_v`, the latter with V_UNPACK 1), with one more schedule:
//   SCHEDULE 3  the dynamic schedule (SCHEDULE 2) without the atomic before a CTA's first work tile: CTA c starts on
//               work tile c (the persistent grid is at most the number of tiles, ABI.md), and the global counter
//               hands out the tiles from gridDim.x on. The first CSR reads and TMA loads of every CTA then wait on
//               no atomic round trip (quick pays ~3,200 cycles before a producer's first TMA: lab/notebook-gen2.md).
#pragma once
#include "blocks/tile_scheduler.cuh"

namespace hopper {

/// SCHEDULE 3: the first work tile static, the later ones from attn_sched_counters (reset as SCHEDULE 2 does).
template <>
struct TileScheduler<3> {
  int n_tiles;
  __device__ __forceinline__ int first() const { return int(blockIdx.x); }
  __device__ __forceinline__ int next(int) const { return int(gridDim.x + atomicAdd(&attn_sched_counters[0], 1u)); }
  __device__ __forceinline__ void finish() const { TileScheduler<2>{n_tiles}.finish(); }
};

}  // namespace hopper
