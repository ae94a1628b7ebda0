#include "gpu/attn_kernel.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "gpu/driver_api.hpp"

namespace attn {

AttnKernel load_attn_kernel(const Module& module, const std::string& kernel) {
  AttnKernel out;
  out.function = module.function(kernel);
  const auto bytes = module.read_global("attn_launch_info");
  if (bytes.size() < 4 * sizeof(int))
    throw std::invalid_argument(fmt::format("attn_launch_info has {} bytes, expected 16", bytes.size()));
  int v[4];
  std::memcpy(v, bytes.data(), sizeof v);
  out.info = {v[0], v[1], v[2], v[3]};
  const LaunchInfo& i = out.info;
  if (i.threads < 1 || i.threads > 1024 || i.smem_bytes < 0 || i.block_m < 1 || i.grid_mode != 0)
    throw std::invalid_argument(
        fmt::format("attn_launch_info {{{}, {}, {}, {}}} is malformed: need threads in 1..1024, smem >= 0, "
                    "BLOCK_M >= 1, grid mode 0",
                    i.threads, i.smem_bytes, i.block_m, i.grid_mode));
  check(cu::api().cuFuncSetAttribute(out.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     i.smem_bytes),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  return out;
}

void launch_attn(const AttnKernel& kernel, const AttnArgs& a, CUstream stream) {
  const LaunchInfo& i = kernel.info;
  if (a.t_max % i.block_m != 0)
    throw std::invalid_argument(fmt::format("t_max {} is not a multiple of BLOCK_M {}", a.t_max, i.block_m));
  // kernelParams holds the addresses of the arguments; `a` outlives the (synchronous) enqueue.
  AttnArgs args = a;
  void* params[] = {&args.q,        &args.k,   &args.v,   &args.row_ptr,    &args.col_idx,   &args.seq_lens,
                    &args.o,        &args.lse, &args.batch_size, &args.num_heads, &args.t_max, &args.col_width};
  check(cu::api().cuLaunchKernel(kernel.function, unsigned(a.t_max / i.block_m), unsigned(a.num_heads),
                                 unsigned(a.batch_size), unsigned(i.threads), 1, 1, unsigned(i.smem_bytes),
                                 stream, params, nullptr),
        "cuLaunchKernel");
}

}  // namespace attn
