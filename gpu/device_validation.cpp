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
constexpr unsigned kSampleThreads = 128;  // validate_sample: one thread per column of a drawn row
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
      sample_fn_(module_->function("validate_sample")),
      counters_(kSampleCounters * sizeof(unsigned)) {}

DeviceValidator::~DeviceValidator() = default;

ValidationResult DeviceValidator::validate(const DeviceCase& c, CUstream stream, const Tolerances& tol) const {
  check(cu::api().cuMemsetD32Async(counters_.ptr(), 0, kCounters, stream), "cuMemsetD32Async(counters)");
  const unsigned max_grid = unsigned(ctx_.info().sm_count) * 8;
  auto launch = [&](CUfunction fn, CUdeviceptr out, CUdeviceptr ref, std::uint64_t n, double atol, double rtol,
                    int slot, const char* what) {
    if (n == 0) return;
    unsigned long long n_arg = n;
    float atol_arg = float(atol), rtol_arg = float(rtol);  // as the host path: float(tol) (validation.cpp)
    CUdeviceptr slot_counters = counters_.ptr() + CUdeviceptr(slot * kPerOutput * sizeof(unsigned));
    void* params[] = {&out, &ref, &n_arg, &atol_arg, &rtol_arg, &slot_counters};
    const unsigned grid = unsigned(std::min<std::uint64_t>((n + kThreads - 1) / kThreads, max_grid));
    check(cu::api().cuLaunchKernel(fn, grid, 1, 1, kThreads, 1, 1, 0, stream, params, nullptr), what);
  };
  launch(o_fn_, c.o.ptr(), c.ref_o_dev.ptr(), c.qkv_elems(), tol.output_atol, tol.output_rtol, 0,
         "cuLaunchKernel(validate_o_bf16)");
  launch(lse_fn_, c.lse.ptr(), c.ref_lse_dev.ptr(), c.lse_elems(), tol.lse_atol, tol.lse_rtol, 1,
         "cuLaunchKernel(validate_lse_fp32)");
  check(cu::api().cuStreamSynchronize(stream), "cuStreamSynchronize(validation)");
  std::array<unsigned, kCounters> h{};
  counters_.download(h.data(), sizeof(h));
  return validation_result(h[0] == 0, h[kPerOutput] == 0, max_diff(&h[0]), max_diff(&h[kPerOutput]));
}

void DeviceValidator::enqueue_sample(const DeviceCase& c, std::uint64_t seed, int rows, CUstream stream,
                                     const Tolerances& tol, CUdeviceptr counters) const {
  const AttnArgs a = c.args();
  CUdeviceptr q = a.q, k = a.k, v = a.v, row_ptr = a.row_ptr, col_idx = a.col_idx, seq_lens = a.seq_lens, o = a.o,
              lse = a.lse;
  int batch = a.batch_size, heads = a.num_heads, t_max = a.t_max, col_width = a.col_width, n_rows = std::max(rows, 0);
  unsigned long long seed_arg = seed;
  float o_atol = float(tol.output_atol), o_rtol = float(tol.output_rtol), lse_atol = float(tol.lse_atol),
        lse_rtol = float(tol.lse_rtol);
  void* params[] = {&q,     &k,      &v,      &row_ptr, &col_idx,  &seq_lens, &batch,    &heads,    &t_max, &col_width,
                    &seed_arg, &n_rows, &o,   &lse,     &o_atol,   &o_rtol,   &lse_atol, &lse_rtol, &counters};
  // The drawn rows' blocks first (they take longest), then the scan's: 8 blocks of 128 threads per SM.
  const std::uint64_t scan_blocks = std::min<std::uint64_t>((c.lse_elems() * 16 + kSampleThreads - 1) / kSampleThreads,
                                                            std::uint64_t(ctx_.info().sm_count) * 8);
  const unsigned grid = unsigned(n_rows) + unsigned(std::max<std::uint64_t>(scan_blocks, 1));
  check(cu::api().cuLaunchKernel(sample_fn_, grid, 1, 1, kSampleThreads, 1, 1, 0, stream, params, nullptr),
        "cuLaunchKernel(validate_sample)");
}

SampleVerdict DeviceValidator::check_sample(const DeviceCase& c, std::uint64_t seed, int rows, CUstream stream,
                                            const Tolerances& tol) const {
  check(cu::api().cuMemsetD32Async(counters_.ptr(), 0, kSampleCounters, stream), "cuMemsetD32Async(counters)");
  enqueue_sample(c, seed, rows, stream, tol, counters_.ptr());
  check(cu::api().cuStreamSynchronize(stream), "cuStreamSynchronize(sample check)");
  std::array<unsigned, kSampleCounters> h{};
  counters_.download(h.data(), sizeof(h));
  return sample_verdict_of(h.data(), std::max(rows, 0));
}

SampleVerdict DeviceValidator::sample_verdict_of(const unsigned* h, int rows_checked) {
  SampleVerdict v;
  v.passed = h[0] == 0 && h[kPerOutput] == 0;
  v.o_max_abs_diff = max_diff(&h[0]);
  v.lse_max_abs_diff = max_diff(&h[kPerOutput]);
  v.rows_checked = std::max(rows_checked, 0);
  v.rows_wrong = int(h[6]);
  v.scan_failures = h[7];
  return v;
}

}  // namespace attn
