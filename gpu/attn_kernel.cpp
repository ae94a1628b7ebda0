#include "gpu/attn_kernel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "gpu/driver_api.hpp"

namespace attn {

AttnKernel load_attn_kernel(const Module& module, const std::string& kernel) {
  AttnKernel out;
  out.function = module.function(kernel);
  const auto bytes = module.read_global("attn_launch_info");
  if (bytes.size() < 4 * sizeof(int))
    throw std::invalid_argument(fmt::format("attn_launch_info has {} bytes, expected 16 or 32", bytes.size()));
  int v[8] = {0, 0, 0, 0, 0, 0, 0, 1};
  std::memcpy(v, bytes.data(), std::min(bytes.size(), sizeof v));
  out.info = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  const LaunchInfo& i = out.info;
  const auto rows_ok = [](int r) { return r >= 1 && r <= 256; };
  if (i.threads < 1 || i.threads > 1024 || i.smem_bytes < 0 || i.block_m < 1 || (i.grid_mode != 0 && i.grid_mode != 1) ||
      i.ctas_per_sm < 1 || (i.uses_tensor_maps() && !(rows_ok(i.tma_q_rows) && rows_ok(i.tma_kv_rows) &&
                                   (i.tma_o_rows == 0 || rows_ok(i.tma_o_rows)))))
    throw std::invalid_argument(fmt::format(
        "attn_launch_info {{{}, {}, {}, {}, {}, {}, {}, {}}} is malformed: need threads in 1..1024, smem >= 0, "
        "BLOCK_M >= 1, grid mode 0 or 1, tensor-map rows of q and kv in 1..256 (o: 0 = unused) or kv 0 (no maps), "
        "CTAs per SM >= 1",
        i.threads, i.smem_bytes, i.block_m, i.grid_mode, i.tma_q_rows, i.tma_kv_rows, i.tma_o_rows, i.ctas_per_sm));
  check(cu::api().cuFuncSetAttribute(out.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     i.smem_bytes),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  CUdevice dev = 0;
  check(cu::api().cuCtxGetDevice(&dev), "cuCtxGetDevice");
  check(cu::api().cuDeviceGetAttribute(&out.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
        "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  return out;
}

AttnTensorMaps encode_tensor_maps(const LaunchInfo& info, const AttnArgs& a) {
  AttnTensorMaps m{};
  const cuuint64_t rows = cuuint64_t(a.batch_size) * cuuint64_t(a.num_heads) * cuuint64_t(a.t_max);
  const auto encode = [&](CUtensorMap& map, CUdeviceptr ptr, int box_rows, const char* name) {
    if (ptr % 16 != 0)
      throw std::invalid_argument(fmt::format("tensor {} at {:#x} is not 16-byte aligned (TMA)", name, ptr));
    const cuuint64_t dims[2] = {128, rows};
    const cuuint64_t strides[1] = {128 * 2};  // bytes between rows
    const cuuint32_t box[2] = {64, cuuint32_t(box_rows)};
    const cuuint32_t elem_strides[2] = {1, 1};
    check(cu::api().cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, reinterpret_cast<void*>(ptr),
                                           dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                           CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          fmt::format("cuTensorMapEncodeTiled({})", name).c_str());
  };
  encode(m.q, a.q, info.tma_q_rows, "q");
  encode(m.k, a.k, info.tma_kv_rows, "k");
  encode(m.v, a.v, info.tma_kv_rows, "v");
  if (info.tma_o_rows > 0) encode(m.o, a.o, info.tma_o_rows, "o");
  return m;
}

PreparedLaunch::PreparedLaunch(const AttnKernel& kernel, const AttnArgs& a) : kernel_(kernel), args_(a) {
  const LaunchInfo& i = kernel.info;
  if (a.t_max % i.block_m != 0)
    throw std::invalid_argument(fmt::format("t_max {} is not a multiple of BLOCK_M {}", a.t_max, i.block_m));
  const long long tiles = (long long)(a.t_max / i.block_m) * a.num_heads * a.batch_size;
  if (i.grid_mode == 1) {
    const long long ctas = std::max(1LL, std::min<long long>(tiles, (long long)kernel.sm_count * i.ctas_per_sm));
    grid_[0] = unsigned(ctas);
    grid_[1] = grid_[2] = 1;
  } else {
    grid_[0] = unsigned(a.t_max / i.block_m);
    grid_[1] = unsigned(a.num_heads);
    grid_[2] = unsigned(a.batch_size);
  }
  void* p[] = {&args_.q,   &args_.k,          &args_.v,         &args_.row_ptr, &args_.col_idx,
               &args_.seq_lens, &args_.o,     &args_.lse,       &args_.batch_size, &args_.num_heads,
               &args_.t_max, &args_.col_width, &maps_};
  std::copy(std::begin(p), std::end(p), params_);
  if (i.uses_tensor_maps()) maps_ = encode_tensor_maps(i, a);
}

void PreparedLaunch::enqueue(CUstream stream) const {
  const LaunchInfo& i = kernel_.info;
  check(cu::api().cuLaunchKernel(kernel_.function, grid_[0], grid_[1], grid_[2], unsigned(i.threads), 1, 1,
                                 unsigned(i.smem_bytes), stream, const_cast<void**>(params_), nullptr),
        "cuLaunchKernel");
}

void launch_attn(const AttnKernel& kernel, const AttnArgs& a, CUstream stream) {
  const PreparedLaunch launch(kernel, a);
  launch.enqueue(stream);
}

}  // namespace attn
