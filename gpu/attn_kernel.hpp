// The kernel ABI of kernels_templates/ABI.md on the host: read attn_launch_info from a loaded module,
// raise the kernel's dynamic smem limit, and launch with the ABI's grid and argument list.
#pragma once
#include <cuda.h>

#include <string>

#include "gpu/driver.hpp"

namespace attn {

/// attn_launch_info = {threads per CTA, dynamic smem bytes, BLOCK_M, grid mode} (ABI.md).
struct LaunchInfo {
  int threads = 0;
  int smem_bytes = 0;
  int block_m = 0;
  int grid_mode = 0;  ///< 0: grid = (t_max / BLOCK_M, heads, batch); others reserved
};

/// A kernel with the ABI's signature, resolved in a loaded Module, its dynamic smem limit raised.
struct AttnKernel {
  CUfunction function = nullptr;
  LaunchInfo info;
};

/// Looks up `kernel` and `attn_launch_info` in `module`, then sets
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to info.smem_bytes.
/// Throws CudaError: CUDA_ERROR_NOT_FOUND when the kernel or attn_launch_info is missing;
/// a resource-limit error (resource_limit() true) when the smem exceeds the device's opt-in maximum.
/// Throws std::invalid_argument when the info is malformed (threads not in 1..1024, negative smem,
/// BLOCK_M not positive, unknown grid mode).
AttnKernel load_attn_kernel(const Module& module, const std::string& kernel);

/// Device pointers and sizes of one call (ABI.md's argument list, in order).
struct AttnArgs {
  CUdeviceptr q = 0, k = 0, v = 0, row_ptr = 0, col_idx = 0, seq_lens = 0, o = 0, lse = 0;
  int batch_size = 0, num_heads = 0, t_max = 0, col_width = 0;
};

/// Enqueues one call on `stream`: grid (t_max / BLOCK_M, heads, batch), block (threads), dynamic smem.
/// Throws std::invalid_argument when t_max is not a multiple of BLOCK_M; CudaError on a launch error
/// (resource limits show here as CUDA_ERROR_INVALID_VALUE / CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).
void launch_attn(const AttnKernel& kernel, const AttnArgs& args, CUstream stream);

}  // namespace attn
