// The kernel ABI of kernels_templates/ABI.md on the host: read attn_launch_info from a loaded module,
// raise the kernel's dynamic smem limit, encode the tensor maps a TMA template takes, and launch with the
// ABI's grid (or the persistent grid) and argument list.
#pragma once
#include <cuda.h>

#include <string>

#include "gpu/driver.hpp"

namespace attn {

/// attn_launch_info (ABI.md): {threads per CTA, dynamic smem bytes, BLOCK_M, grid mode} and, in modules
/// that define 8 entries, {box rows of the q, kv and o tensor maps (0: no tensor maps), CTAs per SM}.
struct LaunchInfo {
  int threads = 0;
  int smem_bytes = 0;
  int block_m = 0;
  int grid_mode = 0;    ///< 0: grid (t_max / BLOCK_M, heads, batch); 1: persistent (SMs x CTAs per SM)
  int tma_q_rows = 0;   ///< box rows of the q tensor map
  int tma_kv_rows = 0;  ///< box rows of the k and v tensor maps; 0: the kernel takes no tensor maps
  int tma_o_rows = 0;   ///< box rows of the o tensor map; 0: the kernel does not use it (left zero)
  int ctas_per_sm = 1;  ///< CTAs resident per SM (sizes the persistent grid)
  bool uses_tensor_maps() const { return tma_kv_rows > 0; }
};

/// A kernel with the ABI's signature, resolved in a loaded Module, its dynamic smem limit raised.
struct AttnKernel {
  CUfunction function = nullptr;
  LaunchInfo info;
  int sm_count = 0;  ///< multiprocessors of the module's device (persistent grid)
};

/// Looks up `kernel` and `attn_launch_info` in `module`, then sets
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to info.smem_bytes.
/// Throws CudaError: CUDA_ERROR_NOT_FOUND when the kernel or attn_launch_info is missing;
/// a resource-limit error (resource_limit() true) when the smem exceeds the device's opt-in maximum.
/// Throws std::invalid_argument when the info is malformed (threads not in 1..1024, negative smem,
/// BLOCK_M not positive, unknown grid mode, tensor-map rows outside 1..256, CTAs per SM < 1).
AttnKernel load_attn_kernel(const Module& module, const std::string& kernel);

/// Device pointers and sizes of one call (ABI.md's argument list, in order).
struct AttnArgs {
  CUdeviceptr q = 0, k = 0, v = 0, row_ptr = 0, col_idx = 0, seq_lens = 0, o = 0, lse = 0;
  int batch_size = 0, num_heads = 0, t_max = 0, col_width = 0;
};

/// The tensor maps of one call, in kernel-parameter order (ABI.md "Tensor maps").
struct AttnTensorMaps {
  CUtensorMap q, k, v, o;
};

/// Encodes q, k, v, o as 2-D tiled maps over the flattened [batch * heads * t_max, 128] bf16 tensors:
/// 128-byte swizzle, boxes of 64 columns x the info's rows. Throws std::invalid_argument for an address
/// that is not 16-byte aligned; CudaError when the driver rejects a map.
AttnTensorMaps encode_tensor_maps(const LaunchInfo& info, const AttnArgs& args);

/// One call, prepared once (grid, argument copies, tensor maps, kernelParams): enqueue() only launches,
/// so that a timed region holds no host work. Not copyable (kernelParams point into the object).
class PreparedLaunch {
 public:
  /// Throws std::invalid_argument when t_max is not a multiple of BLOCK_M; see encode_tensor_maps.
  PreparedLaunch(const AttnKernel& kernel, const AttnArgs& args);
  PreparedLaunch(const PreparedLaunch&) = delete;
  PreparedLaunch& operator=(const PreparedLaunch&) = delete;

  /// Enqueues the call on `stream`. Throws CudaError on a launch error (resource limits show here as
  /// CUDA_ERROR_INVALID_VALUE / CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).
  void enqueue(CUstream stream) const;
  unsigned grid_x() const { return grid_[0]; }
  unsigned ctas() const { return grid_[0] * grid_[1] * grid_[2]; }  ///< CTAs of the launch

 private:
  const AttnKernel& kernel_;
  AttnArgs args_;
  AttnTensorMaps maps_{};
  unsigned grid_[3] = {0, 0, 0};
  void* params_[13] = {};
};

/// Prepares and enqueues one call on `stream` (see PreparedLaunch).
void launch_attn(const AttnKernel& kernel, const AttnArgs& args, CUstream stream);

}  // namespace attn
