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
  /// The same against another reference of c's shape on the device (the case's check set:
  /// c.check_ref_o_dev / c.check_ref_lse_dev).
  /// `o_flip`: the head_dim columns whose reference o values are negated first (a timed sample's v flips,
  /// gpu/sample_checks.hpp); none by default.
  ValidationResult validate_against(const DeviceCase& c, CUdeviceptr ref_o, CUdeviceptr ref_lse, CUstream stream,
                                    const Tolerances& tol, ColumnFlip o_flip = {}) const;
  /// The counters of one validation: o's three (elements outside, max diff bits, one-finite flag), then lse's.
  static constexpr int kCounters = 6;
  /// Enqueues the same validation on `stream` without waiting: it adds to the kCounters unsigned at `counters`,
  /// which the caller zeroed; result_of reads a host copy of them.
  void enqueue_against(const DeviceCase& c, CUdeviceptr ref_o, CUdeviceptr ref_lse, CUstream stream,
                       const Tolerances& tol, ColumnFlip o_flip, CUdeviceptr counters) const;
  /// The verdict of kCounters counters written by enqueue_against.
  static ValidationResult result_of(const unsigned* counters);

 private:
  const Context& ctx_;
  std::unique_ptr<Module> module_;
  CUfunction o_fn_ = nullptr, lse_fn_ = nullptr;
  DeviceBuffer counters_;  ///< unsigned[kCounters]: o's three counters, then lse's
};

}  // namespace attn
