// Output validation on the device (kernels_templates/validate_outputs.cu): the rules and tolerances of
// workload/validation.cpp, element for element, reading the candidate and the reference where they are,
// so that only three counters per output come back. On a full-suite case (2 x 16 x 8192 x 128 o) the
// host path copies 64 MiB and walks 33.5 M elements twice per evaluation; this reads them once at HBM
// bandwidth.
#pragma once
#include <memory>
#include <string>

#include "gpu/case_data.hpp"
#include "gpu/compiler.hpp"
#include "gpu/driver.hpp"
#include "gpu/sample_verdict.hpp"
#include "workload/validation.hpp"

namespace attn {

/// Compiles the validation kernels once (through `compiler`, its disk cache applies) and validates a
/// case's outputs (o, lse of the DeviceCase) against its device copy of the reference.
class DeviceValidator {
 public:
  /// Compiles <templates_dir>/validate_outputs.cu (the helper kernels' folder, CaseBuilder::templates_dir).
  /// Throws std::runtime_error with the NVRTC log when the kernels do not compile.
  DeviceValidator(const Context& ctx, const Compiler& compiler, const std::string& templates_dir);
  ~DeviceValidator();
  DeviceValidator(const DeviceValidator&) = delete;
  DeviceValidator& operator=(const DeviceValidator&) = delete;

  /// Validates c.o / c.lse (as a variant left them on `stream`) against c.ref_o_dev / c.ref_lse_dev with
  /// `tol`; synchronizes `stream`. Same result as validate_outputs on the host copies. Throws CudaError.
  ValidationResult validate(const DeviceCase& c, CUstream stream, const Tolerances& tol) const;
  /// The counters of one validation: o's three (elements outside, max diff bits, one-finite flag), then lse's.
  static constexpr int kCounters = 6;

  /// The counters of a timed sample's check (gpu/sample_checks.hpp): kCounters, then the drawn rows outside the
  /// tolerances, then the elements the scan failed.
  static constexpr int kSampleCounters = 8;
  /// Enqueues a timed sample's check on `stream` without waiting (kernels_templates/validate_outputs.cu's
  /// validate_sample, one launch): `rows` rows of c drawn with `seed` (attn_sample::sampled_row) against their
  /// fp32 reference computed in the same launch from c's inputs as they are, and the scan of every element of
  /// c.o / c.lse. Adds to the kSampleCounters unsigned at `counters`, which the caller zeroed;
  /// sample_verdict_of reads a host copy of them.
  void enqueue_sample(const DeviceCase& c, std::uint64_t seed, int rows, CUstream stream, const Tolerances& tol,
                      CUdeviceptr counters) const;
  /// The same, waited for: its verdict. Throws CudaError.
  SampleVerdict check_sample(const DeviceCase& c, std::uint64_t seed, int rows, CUstream stream,
                             const Tolerances& tol) const;
  /// The verdict of kSampleCounters counters written by enqueue_sample over `rows_checked` drawn rows; the same
  /// as check_sample on the host (gpu/sample_verdict.hpp) for the same outputs.
  static SampleVerdict sample_verdict_of(const unsigned* counters, int rows_checked);

 private:
  const Context& ctx_;
  std::unique_ptr<Module> module_;
  CUfunction o_fn_ = nullptr, lse_fn_ = nullptr, sample_fn_ = nullptr;
  DeviceBuffer counters_;  ///< unsigned[kSampleCounters]: the counters of a validation waited for
};

}  // namespace attn
