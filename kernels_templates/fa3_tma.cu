// Generation-2 block-sparse causal flash-attention forward on Hopper (sm_90a), for the challenge contract
// (kernels_templates/ABI.md, with tensor maps): FlashAttention-3's structure (Shah et al. 2024) built from
// the blocks in blocks/ (traits, tile scheduler, TMA producer + V converters, wgmma consumers, epilogue; the kernel
// itself is blocks/kernel.cuh, shared with generation 4's fa4_g4.cu).
//
//   warpgroup 0      producer: thread 0 streams Q / K / V with TMA along the tile schedule (producer.cuh);
//                    warps 1..CONVERTERS turn each V tile into fp16 in place; setmaxnreg.dec
//   warpgroups 1..C  consumers, 64 query rows each: S = Q K^T, masked online softmax (exp2), O += P V,
//                    epilogue (consumer.cuh, epilogue.cuh); setmaxnreg.inc
// Only the diagonal kv block is masked; rows at or past seq_len and rows without keys get o = 0, lse = -inf.
//
// Parameters (-D macros; space and constraints in fa3_tma.json), each a structural choice:
//   CONSUMERS      consumer warpgroups (1 | 2): BLOCK_M = 64 * CONSUMERS query rows per work tile
//   BLOCK_N        keys per pipeline tile (64 | 128)
//   STAGES         K/V ring slots
//   PRODUCER_REGS  registers per producer-warpgroup thread after setmaxnreg (the consumers get the rest)
//   CTAS_PER_SM    CTAs resident per SM (register budget and persistent grid size)
//   SCHEDULE       0 one CTA per work tile, 1 persistent static, 2 persistent dynamic (tile_scheduler.cuh)
//   ORDER          work order: 0 longest first, 1 shortest first, 2 head-major (tile_scheduler.cuh)
//   KV_ORDER       0 CSR order (diagonal block last), 1 reversed (diagonal block, the masked one, first)
//   CMEM_PARAMS    1 ORDER and KV_ORDER read at run time from __constant__ attn_param_ORDER / _KV_ORDER (their
//                  macros initialize them), so their configs share one compile ("patchable", docs/gpu.md);
//                  0 (the macro's default: configs recorded before it) compiles them in
//   OVERLAP        1 softmax of tile i overlaps P V of tile i-1 (FA3 intra-warpgroup); 2 also across work tiles
//   PINGPONG       1 the two consumer warpgroups take turns issuing GEMMs (FA3 inter-warpgroup)
//   EPILOGUE       0 direct stores, 1 via shared memory, 2 via shared memory + TMA store
//   CONVERTERS     warps of the producer warpgroup that convert V (1..3; 4: warp 0's lanes 1..31 as well)
//   FOLD_SCALE     1 softmax scale folded into the exp2 FMA, 0 a separate multiply
//   RESCALE_SKIP   1 skip the O rescale when no row maximum of the warp moved
//   SOFTMAX        0 exact row maximum per tile, 1 conditional rescale (base moves only by > 8 in log2),
//                  2 stale base checked by the row sum (blocks/softmax.cuh)
//   V_CONVERT      V tiles bf16 -> fp16: 0 cvt through fp32, 1 integer bit arithmetic (hopper_common.cuh)
//   Q_BUFFERS      2 the next work tile's Q loads while this one computes; 1 one Q buffer
// Measurement-only switches (bench --define, outside the space): FOLD_SCALE, ABLATE, KV_SPLIT (1: K and V
// slots released apart, the default), V_STAGES (0: derived), L2_PREFETCH (blocks/traits.cuh); ATTN_EXP2_POLY,
// ATTN_ROWSUM_CHAINS, ATTN_MAX_TREE, ATTN_DESC_ADD32 (hopper_common.cuh); ATTN_UNIFORM_META (blocks/consumer.cuh);
// ATTN_CONVERT_UNROLL (blocks/producer.cuh); ATTN_TRACE (blocks/trace.cuh, set by `attn-tuner trace`).
// CONVERTERS 1 and 4 and OVERLAP 2 exist for ablation too (docs/kernels.md, lab/notebook-gen2.md).
#include "blocks/consumer.cuh"
#include "blocks/traits.cuh"
#include "hopper_common.cuh"

#ifndef CONSUMERS
#error "CONSUMERS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef BLOCK_N
#error "BLOCK_N not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef STAGES
#error "STAGES not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef PRODUCER_REGS
#error "PRODUCER_REGS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef CTAS_PER_SM
#error "CTAS_PER_SM not given: a parameter of the space (its default is in the .json)"
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
#ifndef OVERLAP
#error "OVERLAP not given: a parameter of the space (its default is in the .json)"
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
#ifndef FOLD_SCALE
#define FOLD_SCALE 1
#endif
#ifndef RESCALE_SKIP
#error "RESCALE_SKIP not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef Q_BUFFERS
#error "Q_BUFFERS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef SOFTMAX
#error "SOFTMAX not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef V_CONVERT
#error "V_CONVERT not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef CMEM_PARAMS
#error "CMEM_PARAMS not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef V_UNPACK
#error "V_UNPACK not given: a parameter of the space (its default is in the .json)"
#endif
#ifndef EPI_LEAN
#error "EPI_LEAN not given: a parameter of the space (its default is in the .json)"
#endif
#if CMEM_PARAMS
extern "C" __constant__ int attn_param_ORDER = ORDER;
extern "C" __constant__ int attn_param_KV_ORDER = KV_ORDER;
#endif
#ifndef L2_PREFETCH
#define L2_PREFETCH 0  // measurement switch: Fa3Traits::kL2Prefetch (blocks/producer.cuh)
#endif
#ifndef KV_SPLIT
#define KV_SPLIT 1  // measurement switch (bench --define KV_SPLIT=0): Fa3Traits::kKvSplit (blocks/traits.cuh)
#endif
#ifndef V_STAGES
#define V_STAGES 0  // measurement switch: V ring slots (0 derives them), Fa3Traits::kVStages (blocks/traits.cuh)
#endif
#ifndef ABLATE
#define ABLATE 0  // measurement only, outside the space: Fa3Traits::kAblate (blocks/traits.cuh)
#endif

namespace {
using Traits = hopper::Fa3Traits<CONSUMERS, BLOCK_N, STAGES, PRODUCER_REGS, CTAS_PER_SM, EPILOGUE, SCHEDULE,
                                 CMEM_PARAMS ? -1 : ORDER, CMEM_PARAMS ? -1 : KV_ORDER, OVERLAP, PINGPONG, CONVERTERS, Q_BUFFERS, ABLATE, KV_SPLIT, V_STAGES,
                                 SOFTMAX, V_CONVERT, L2_PREFETCH>;

/// The consumer warpgroups' loop (blocks/kernel.cuh): generation 2's (blocks/consumer.cuh).
__device__ __forceinline__ void consumer_loop(const hopper::Pipeline<Traits>& pl, unsigned char* smem,
                                              const hopper::AttnTmaps& maps, const hopper::KernelArgs& args, int cwg,
                                              int tid) {
  hopper::consume<Traits, FOLD_SCALE != 0, RESCALE_SKIP != 0>(pl, smem, maps, args, cwg, tid);
}
}  // namespace

#include "blocks/kernel.cuh"  // block_sparse_attn_fwd and attn_launch_info
