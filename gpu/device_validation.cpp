#include "gpu/device_validation.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <filesystem>
#include <limits>

#include "gpu/driver_api.hpp"

namespace attn {
namespace {

constexpr unsigned kThreads = 256;
constexpr int kPerOutput = 3;  // per output: elements outside the tolerance, max diff bits, one-finite flag


/// The harness's max abs diff from the counters: inf when a pair had exactly one finite member.
double max_diff(const unsigned* counters) {
  if (counters[2]) return std::numeric_limits<double>::infinity();
  return std::bit_cast<float>(counters[1]);
}

}  // namespace

DeviceValidator::DeviceValidator(const Context& ctx, const Compiler& compiler, const std::string& templates_dir)
    : ctx_(ctx),
      module_(compile_helper(compiler, (std::filesystem::path(templates_dir) / "validate_outputs.cu").string(),
                             "validate_o_bf16")),
      o_fn_(module_->function("validate_o_bf16")),
      lse_fn_(module_->function("validate_lse_fp32")),
      counters_(kCounters * sizeof(unsigned)) {}

DeviceValidator::~DeviceValidator() = default;

ValidationResult DeviceValidator::validate(const DeviceCase& c, CUstream stream, const Tolerances& tol) const {
  return validate_against(c, c.ref_o_dev.ptr(), c.ref_lse_dev.ptr(), stream, tol);
}

ValidationResult DeviceValidator::validate_against(const DeviceCase& c, CUdeviceptr ref_o, CUdeviceptr ref_lse,
                                                   CUstream stream, const Tolerances& tol, ColumnFlip o_flip) const {
  check(cu::api().cuMemsetD32Async(counters_.ptr(), 0, kCounters, stream), "cuMemsetD32Async(counters)");
  enqueue_against(c, ref_o, ref_lse, stream, tol, o_flip, counters_.ptr());
  check(cu::api().cuStreamSynchronize(stream), "cuStreamSynchronize(validation)");
  std::array<unsigned, kCounters> h{};
  counters_.download(h.data(), sizeof(h));
  return result_of(h.data());
}

void DeviceValidator::enqueue_against(const DeviceCase& c, CUdeviceptr ref_o, CUdeviceptr ref_lse, CUstream stream,
                                      const Tolerances& tol, ColumnFlip o_flip, CUdeviceptr counters) const {
  const unsigned max_grid = unsigned(ctx_.info().sm_count) * 8;
  auto launch = [&](CUfunction fn, CUdeviceptr out, CUdeviceptr ref, std::uint64_t n, double atol, double rtol,
                    int slot, const char* what) {
    if (n == 0) return;
    unsigned long long n_arg = n;
    float atol_arg = float(atol), rtol_arg = float(rtol);  // as the host path: float(tol) (validation.cpp)
    CUdeviceptr slot_counters = counters + CUdeviceptr(slot * kPerOutput * sizeof(unsigned));
    unsigned long long flip_lo = o_flip.lo, flip_hi = o_flip.hi;  // read by validate_o_bf16 only
    void* params[] = {&out, &ref, &n_arg, &atol_arg, &rtol_arg, &slot_counters, &flip_lo, &flip_hi};
    const unsigned grid = unsigned(std::min<std::uint64_t>((n + kThreads - 1) / kThreads, max_grid));
    check(cu::api().cuLaunchKernel(fn, grid, 1, 1, kThreads, 1, 1, 0, stream, params, nullptr), what);
  };
  launch(o_fn_, c.o.ptr(), ref_o, c.qkv_elems(), tol.output_atol, tol.output_rtol, 0,
         "cuLaunchKernel(validate_o_bf16)");
  launch(lse_fn_, c.lse.ptr(), ref_lse, c.lse_elems(), tol.lse_atol, tol.lse_rtol, 1,
         "cuLaunchKernel(validate_lse_fp32)");
}

ValidationResult DeviceValidator::result_of(const unsigned* h) {
  return validation_result(h[0] == 0, h[kPerOutput] == 0, max_diff(&h[0]), max_diff(&h[kPerOutput]));
}

}  // namespace attn
