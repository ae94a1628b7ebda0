// The kernel of the generation-2 and generation-4 templates (fa3_tma.cu, fa4_g4.cu): the ABI's entry point
// block_sparse_attn_fwd and its attn_launch_info (kernels_templates/ABI.md) for the template's traits, the roles
// split by warpgroup:
//   warpgroup 0      setmaxnreg.dec; thread 0 the TMA producer (producer.cuh produce), warps 1..CONVERTERS the V
//                    converters (producer.cuh convert_v; CONVERTERS 4: warp 0's lanes 1..31 as well)
//   warpgroups 1..C  setmaxnreg.inc; the template's consumer loop
// A template includes this header once, last, after defining in its anonymous namespace
//   Traits          its kernel traits (Fa3Traits, blocks/traits.cuh, or a struct derived from it)
//   consumer_loop   void(const Pipeline<Traits>&, unsigned char* smem, const AttnTmaps&, const KernelArgs&, int cwg,
//                   int tid): consumer warpgroup cwg's loop, tid 0..127 inside it (consumer.cuh, g4_consumer.cuh)
// ATTN_ONLY_ROLE (a measurement switch outside every space, set by `idea check` alone: its spills by role): 0 every
// role; 1 the producer, 2 the converters, 3 the consumers alone, the other roles' code left out; -1, -2, -3 every
// role but that one (a kernel that only compiles: its ptxas report is those roles' registers and spills).
#pragma once
#include "blocks/consumer.cuh"
#include "blocks/producer.cuh"

#ifndef ATTN_ONLY_ROLE
#define ATTN_ONLY_ROLE 0
#endif
// Whether role r (1 the producer, 2 the converters, 3 the consumers) is built under ATTN_ONLY_ROLE.
#define ATTN_ROLE_BUILT(r) (ATTN_ONLY_ROLE == 0 || ATTN_ONLY_ROLE == (r) || (ATTN_ONLY_ROLE < 0 && ATTN_ONLY_ROLE != -(r)))

// {threads, dynamic smem bytes, BLOCK_M, grid mode (0 ABI grid, 1 persistent), tensor-map box rows of
// q / kv / o (o: 0 = unused), CTAs per SM}: ABI.md.
extern "C" __device__ int attn_launch_info[8] = {
    Traits::kThreads, Traits::kSmemBytes, Traits::kBlockM,           Traits::kSchedule == 0 ? 0 : 1,
    Traits::kBlockM,  Traits::kBlockN,    Traits::kEpilogue == 2 ? 64 : 0, Traits::kCtasPerSm};

extern "C" __global__ void __maxnreg__(Traits::kLaunchRegs)
block_sparse_attn_fwd(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                      const __nv_bfloat16* __restrict__ v, const int* __restrict__ row_ptr,
                      const int* __restrict__ col_idx, const int* __restrict__ seq_lens,
                      __nv_bfloat16* __restrict__ o, float* __restrict__ lse, int batch_size, int num_heads,
                      int t_max, int col_width, const __grid_constant__ hopper::AttnTmaps maps) {
  using namespace hopper;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long bars[Pipeline<Traits>::kBars];
  __shared__ int2 meta[Pipeline<Traits>::kMetas];
  const unsigned raw_base = unsigned(__cvta_generic_to_shared(smem_raw));
  const unsigned pad = ((raw_base + 1023) & ~1023u) - raw_base;
  unsigned char* smem = smem_raw + pad;  // 1024-byte aligned, generic pointer
  const Pipeline<Traits> pl{raw_base + pad, unsigned(__cvta_generic_to_shared(bars)), meta};
  const KernelArgs args{row_ptr, col_idx, seq_lens, o, lse, batch_size, num_heads, t_max, col_width};

  const int tid = threadIdx.x, wg = uniform_meta(tid >> 7);
  if (tid == 0) pl.init();
  __syncthreads();

  // The roles are the two branches of one if/else that never merge again: setmaxnreg re-partitions the
  // registers, so nothing may be live across the split (HOPPER.md).
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Traits::kProducerRegs));
    const int warp = tid >> 5;
    if (warp == 0) {
      if (tid == 0) {
        if constexpr (ATTN_ROLE_BUILT(1)) produce<Traits>(pl, maps, args);
      } else if (Traits::kConverterWarps == 4) {
        if constexpr (ATTN_ROLE_BUILT(2)) convert_v<Traits>(pl, smem, 95 + tid);  // lanes 1..31: 96..126
      }
    } else if (warp <= Traits::kConverterWarps) {
      if constexpr (ATTN_ROLE_BUILT(2)) convert_v<Traits>(pl, smem, tid - 32);
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Traits::kConsumerRegs));
    if constexpr (ATTN_ROLE_BUILT(3)) consumer_loop(pl, smem, maps, args, wg - 1, tid & 127);
  }
}
