// Shared by the red-team templates (tests/data/redteam, docs/verification.md): kernels that each cheat the
// evaluation in one way and must end as a crash, never as a champion. The honest work is
// kernels_templates/fa2_mma.cu itself, included by path and turned into a __device__ function
// `fa2_honest` (same parameters, ATTN_ABI_PARAMS), so that every cheat computes exactly what the repo's
// kernel computes when it computes at all. fa2_mma.cu's attn_launch_info, kThreads, kSmemBytes,
// MIN_BLOCKS, CTA_ORDER, BLOCK_M come along: a wrapper launches with fa2_mma's geometry. The template folder
// here is tests/data/redteam, not kernels_templates: cta_order.cuh beside this file forwards the one header
// that kernels_templates/blocks/cta_tile.cuh finds through -I<template folder>.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// NVRTC ignores #pragma push_macro: the two macros are put back as crt/host_defines.h defines them.
#undef __global__
#undef __launch_bounds__
#define __global__ __device__
#define __launch_bounds__(...)
#define block_sparse_attn_fwd fa2_honest
#include "../../../kernels_templates/fa2_mma.cu"
#undef block_sparse_attn_fwd
#undef __launch_bounds__
#undef __global__
#define __launch_bounds__(...) __annotate__(launch_bounds(__VA_ARGS__))
#define __global__ __location__(global)

// The honest kernel's work, for the wrapper's own arguments.
#define REDTEAM_HONEST() fa2_honest(q, k, v, row_ptr, col_idx, seq_lens, o, lse, batch_size, num_heads, t_max, col_width)

namespace redteam {

/// This CTA's q tile in the ABI grid (cta_order.cuh): its first row in lse's [B*H*t_max] rows, its q_block.
struct Tile {
  size_t row0;  // (batch * heads + head) * t_max + first row
  int q_block;
};
__device__ __forceinline__ Tile tile(int num_heads, int t_max) {
  int q_tile, h, b;
  cta_work<CTA_ORDER>(q_tile, h, b);
  return {(size_t(b) * num_heads + h) * size_t(t_max) + size_t(q_tile) * BLOCK_M, q_tile * BLOCK_M / 128};
}

/// Copies this CTA's BLOCK_M rows of o (128 bf16 each) and lse from `from_o`/`from_lse` to `to_o`/`to_lse`
/// (row offsets in rows), all threads of the CTA.
__device__ __forceinline__ void copy_rows(__nv_bfloat16* to_o, float* to_lse, const __nv_bfloat16* from_o,
                                          const float* from_lse, size_t row0) {
  const uint4* src = reinterpret_cast<const uint4*>(from_o + row0 * 128);
  uint4* dst = reinterpret_cast<uint4*>(to_o + row0 * 128);
  for (int i = threadIdx.x; i < BLOCK_M * 16; i += blockDim.x) dst[i] = src[i];
  for (int i = threadIdx.x; i < BLOCK_M; i += blockDim.x) to_lse[row0 + i] = from_lse[row0 + i];
}

/// FNV-1a's step over one value: the content keys of the cheats that recognise inputs by what they hold.
__device__ __forceinline__ unsigned long long fnv(unsigned long long h, unsigned x) { return (h ^ x) * 0x100000001B3ull; }
/// A content key's first value: the shape.
__device__ __forceinline__ unsigned long long key_start(int batch_size, int num_heads, int t_max) {
  return 0xCBF29CE484222325ull ^ (((unsigned long long)batch_size << 40) ^ ((unsigned long long)num_heads << 20) ^
                                  (unsigned long long)t_max);
}
/// The i-th (0..15) element a content key reads of a [B, H, t_max, 128] tensor: one value in each sixteenth,
/// columns spread.
__device__ __forceinline__ size_t key_position(int batch_size, int num_heads, int t_max, int i) {
  const size_t n = size_t(batch_size) * num_heads * t_max * 128;
  return (n / 16) * i + size_t(i) * 131 % 128;
}

/// True in exactly one CTA of the launch: the last to get here (after every thread of the CTA did, and its
/// writes are fenced). Resets `counter` for the next launch.
__device__ __forceinline__ bool last_cta(unsigned* counter) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned ctas = gridDim.x * gridDim.y * gridDim.z;
    last = atomicAdd(counter, 1u) == ctas - 1;
    if (last) *counter = 0;
  }
  __syncthreads();
  return last;
}

}  // namespace redteam
