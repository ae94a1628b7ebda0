// Kernel traits of generation 4 (fa4_g4.cu): generation 2's Fa3Traits (tile, pipeline and shared-memory
// layout, register split; blocks/traits.cuh) with two consumer warpgroups, KV_SPLIT, OVERLAP's V ring and
// SOFTMAX 2 fixed, plus the axes of generation 4's structure:
//   kDepth    2: a warpgroup issues the Q K^T of its next kv tile before the softmax of this one, so the
//             softmax runs while that Q K^T and the previous P V are on the tensor cores (two S buffers);
//             1: the next Q K^T after this softmax, with the previous P V (FlashAttention-3's intra-warpgroup
//             overlap, generation 2's OVERLAP 1) (blocks/g4_consumer.cuh)
//   kQRegs    Q K^T with Q from registers (A fragments loaded once per work tile, the Q buffer released at once)
//   kExpPoly  of every 8 exponentials of the softmax's stale-base path, this many on the FMA pipe
//             (FlashAttention-4's split; blocks/softmax.cuh's Poly)
//   kSchedule 3: as SCHEDULE 2 (the dynamic counter), but each CTA's first work tile is its own index, taken
//             without the atomic (blocks/g4_producer.cuh); 0..2 as in generation 2
// Every block reads this struct as it reads Fa3Traits (blocks/kernel.cuh, producer.cuh, softmax.cuh, epilogue.cuh).
#pragma once
#include "blocks/traits.cuh"

namespace hopper {

template <int BlockN, int Stages, int ProducerRegs, int Epilogue, int Schedule, int Order, int KvOrder,
          int Converters, int QBuffers, int Pingpong, int Depth, int QRegs, int ExpPoly, int Ablate = 0>
struct G4Traits : Fa3Traits<2, BlockN, Stages, ProducerRegs, 1, Epilogue, Schedule == 3 ? 2 : Schedule, Order,
                            KvOrder, /*Overlap*/ 1, Pingpong, Converters, QBuffers, Ablate, /*KvSplit*/ 1,
                            /*VStages*/ 0, /*Softmax*/ 2, /*VConvert*/ 0, /*L2Prefetch*/ 0> {
  static constexpr int kSchedule = Schedule;  // hides the base's: TileScheduler<3> is generation 4's
  static constexpr int kDepth = Depth;
  static constexpr bool kQRegs = QRegs != 0;
  static constexpr int kExpPoly = ExpPoly;

  static_assert(Schedule >= 0 && Schedule <= 3, "SCHEDULE 0..2 as generation 2, 3 static first tile + dynamic");
  static_assert(Depth == 1 || Depth == 2, "the next Q K^T before (2) or after (1) this tile's softmax");
  static_assert(ExpPoly >= 0 && ExpPoly <= 8, "EXP2_POLY: of every 8 exponentials, 0..8 on the FMA pipe");
  static_assert(Epilogue == 1 || Epilogue == 2, "generation 4 stages o in shared memory with stmatrix (EPI_LEAN 1)");
};

}  // namespace hopper
