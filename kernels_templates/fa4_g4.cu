// Generation-4 block-sparse causal flash-attention forward on Hopper (sm_90a), for the challenge contract
// (kernels_templates/ABI.md, with tensor maps). Generation 2's kernel, roles and pipeline, shared with fa3_tma.cu
// (blocks/kernel.cuh: a TMA producer thread, V converter warps, two consumer warpgroups of 64 query rows on
// mbarriers, setmaxnreg), with the research DB's two wins built in (V_UNPACK 1, blocks/producer.cuh; EPI_LEAN 1,
// blocks/epilogue.cuh) and the kernel's structure as parameters (docs/kernels.md, "Generation 4"); the blocks g4_*
// hold only what generation 4 adds:
//
//   warpgroup 0      producer: thread 0 streams Q / K / V with TMA along the tile schedule (blocks/producer.cuh,
//                    SCHEDULE 3 in blocks/g4_producer.cuh); warps 1..CONVERTERS turn each V tile into fp16
//   warpgroups 1, 2  consumers (blocks/g4_consumer.cuh): S = Q K^T, SOFTMAX 2 (blocks/softmax.cuh, exponentials split
//                    by EXP2_POLY), O += P V, epilogue (blocks/epilogue.cuh)
//
// Parameters (-D macros; space, defaults and constraints in fa4_g4.json):
//   BLOCK_N        keys per pipeline tile (64 | 128)
//   DEPTH          2: the next kv tile's Q K^T issued before this tile's softmax (two S buffers; BLOCK_N 64);
//                  1: after it, with the previous P V (FlashAttention-3's intra-warpgroup overlap)
//   Q_REGS         1: Q K^T with Q from registers, loaded once per work tile (BLOCK_N 64)
//   EXP2_POLY      of every 8 softmax exponentials, this many on the FMA pipe (FlashAttention-4's split)
//   STAGES         K ring slots (the V ring has one more where shared memory has room: Fa3Traits::kVStages)
//   PRODUCER_REGS  registers per producer-warpgroup thread after setmaxnreg (the consumers get the rest)
//   SCHEDULE       0 one CTA per work tile, 1 persistent static, 2 persistent dynamic, 3 dynamic with a static first tile
//   ORDER          work order: 0 longest first, 2 head-major (blocks/tile_scheduler.cuh)
//   KV_ORDER       0 CSR order (diagonal block last), 1 reversed
//   PINGPONG       1 the two consumer warpgroups take turns issuing GEMMs
//   EPILOGUE       1 via shared memory + 16-byte stores, 2 via shared memory + TMA store
//   CONVERTERS     warps of the producer warpgroup that convert V (2 | 3)
//   Q_BUFFERS      2 the next work tile's Q loads while this one computes; 1 one Q buffer
// Measurement switches (bench --define, outside the space): ABLATE (blocks/traits.cuh), ATTN_TRACE (`attn-tuner
// trace`), ATTN_CONVERT_UNROLL (blocks/producer.cuh).
#ifndef BLOCK_N
#error "BLOCK_N not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef DEPTH
#error "DEPTH not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef Q_REGS
#error "Q_REGS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef EXP2_POLY
#error "EXP2_POLY not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef STAGES
#error "STAGES not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef PRODUCER_REGS
#error "PRODUCER_REGS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef SCHEDULE
#error "SCHEDULE not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef ORDER
#error "ORDER not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef KV_ORDER
#error "KV_ORDER not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef PINGPONG
#error "PINGPONG not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef EPILOGUE
#error "EPILOGUE not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef CONVERTERS
#error "CONVERTERS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef Q_BUFFERS
#error "Q_BUFFERS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef ABLATE
#define ABLATE 0  // measurement only, outside the space: Fa3Traits::kAblate (blocks/traits.cuh)
#endif
// The research DB's two wins, built in (fa3_tma's V_UNPACK 1 and EPI_LEAN 1: blocks/producer.cuh, blocks/epilogue.cuh).
#define V_UNPACK 1
#define EPI_LEAN 1
// The exact softmax path (hopper_common.cuh softmax_tile) splits its exponentials by ATTN_EXP2_POLY.
#define ATTN_EXP2_POLY EXP2_POLY

#include "blocks/g4_consumer.cuh"
#include "blocks/g4_producer.cuh"
#include "blocks/g4_traits.cuh"
#include "hopper_common.cuh"

namespace {
using Traits = hopper::G4Traits<BLOCK_N, STAGES, PRODUCER_REGS, EPILOGUE, SCHEDULE, ORDER, KV_ORDER, CONVERTERS,
                                Q_BUFFERS, PINGPONG, DEPTH, Q_REGS, EXP2_POLY, ABLATE>;

/// The consumer warpgroups' loop (blocks/kernel.cuh): generation 4's (blocks/g4_consumer.cuh).
__device__ __forceinline__ void consumer_loop(const hopper::Pipeline<Traits>& pl, unsigned char* smem,
                                              const hopper::AttnTmaps& maps, const hopper::KernelArgs& args, int cwg,
                                              int tid) {
  hopper::consume_g4<Traits, true>(pl, smem, maps, args, cwg, tid);
}
}  // namespace

#include "blocks/kernel.cuh"  // block_sparse_attn_fwd and attn_launch_info
