// Tensor Memory Accelerator (TMA) and mbarrier transaction wrappers for sm_90 (PTX ISA 8.x:
// "cp.async.bulk.tensor", "mbarrier.arrive.expect_tx", "cp.async.bulk.commit_group / wait_group").
// The tensor maps are encoded on the host (cuTensorMapEncodeTiled, ABI.md "Tensor maps") and passed by value
// as one __grid_constant__ kernel parameter: TMA reads them from the parameter space through their generic
// address, as CUTLASS's SM90_TMA_LOAD does.
#pragma once

namespace hopper {

/// CUtensorMap stand-in: <cuda.h> does not compile under NVRTC. 128 opaque bytes, 64-byte aligned
/// (cuTensorMapEncodeTiled's alignment requirement).
struct alignas(64) TmaDesc {
  unsigned long long opaque[16];
};

/// The maps of one call, in kernel-parameter order (ABI.md): q, k, v, o, each over the flattened
/// [batch * heads * t_max, 128] bf16 tensor with the 128-byte swizzle and a box of 64 columns.
struct AttnTmaps {
  TmaDesc q, k, v, o;
};

/// Loads the box at (column c0, row c1) of `map` into shared memory at `dst` (1024-byte aligned for the
/// 128-byte swizzle) and counts its bytes on the mbarrier at `bar` (complete_tx).
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TmaDesc* map, unsigned bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
/// Stores the shared-memory box at `src` to (column c0, row c1) of `map`; completes in a bulk group.
__device__ __forceinline__ void tma_store_2d(const TmaDesc* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/// Waits until at most N bulk groups still read their shared-memory source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
/// Waits until at most N bulk groups are incomplete (their global writes done).
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
/// Starts fetching the box at (column c0, row c1) of `map` from device memory into L2, with no shared-memory
/// destination and nothing to wait for (PTX "cp.async.bulk.prefetch.tensor"): a later tma_load_2d of the
/// box then hits L2.
__device__ __forceinline__ void tma_prefetch_l2(const TmaDesc* map, int c0, int c1) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1)
               : "memory");
}
/// Pulls a tensor map into the descriptor cache ahead of its first use.
__device__ __forceinline__ void tma_prefetch(const TmaDesc* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}
/// One arrival on the mbarrier at `bar` that also expects `bytes` more transaction bytes in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
/// Named barrier `id` over `threads` threads: sync waits, arrive only counts (PTX "bar.sync / bar.arrive").
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace hopper
