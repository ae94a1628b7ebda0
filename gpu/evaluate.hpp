// Evaluating a variant (a cubin) on a suite of built cases: validate every case against the reference
// with the harness's tolerances, then time every case cold; classify failures (FailureKind).
#pragma once
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "gpu/attn_kernel.hpp"
#include "gpu/case_data.hpp"
#include "gpu/device_validation.hpp"
#include "gpu/driver.hpp"
#include "gpu/failure.hpp"
#include "gpu/timing.hpp"
#include "workload/validation.hpp"

namespace attn {

/// One case's outcome. median_ms etc. are 0 when the case was not timed; diffs are 0 when not validated.
struct CaseResult {
  std::string case_id;
  Family family = Family::sliding_window;
  double median_ms = 0;
  double spread = 0;
  int samples = 0;
  unsigned sm_clock_mhz = 0;
  double o_max_abs_diff = 0;
  double lse_max_abs_diff = 0;
  bool passed = false;     ///< validated within tolerance (true when validation was skipped)
  bool validated = false;
  bool timed = false;
  bool operator==(const CaseResult&) const = default;
};

struct EvalOptions {
  bool validate = true;
  bool time = true;
  TimingParams timing;
  Tolerances tolerances;
};

/// A variant on a suite. status: none (all passed and, if asked, timed), compile (kernel or
/// attn_launch_info missing / malformed, or the cubin does not load), device_limit, fault (sticky CUDA
/// error: the caller's context is dead), wrong_result (some case failed validation: cases keep their
/// diffs, nothing is timed).
struct EvalResult {
  FailureKind status = FailureKind::none;
  std::string message;
  LaunchInfo launch;
  std::vector<CaseResult> cases;
  /// Harness score over the timed cases: geomean over families of the per-family median of median_ms.
  /// NaN when nothing was timed.
  double score_ms = std::numeric_limits<double>::quiet_NaN();
  std::map<Family, double> family_median_ms;
  double wall_ms = 0;
};

/// Holds a stream and the L2-flush buffer for repeated evaluations on one context.
class Evaluator {
 public:
  /// `validator`: validate on the device (gpu/device_validation.hpp); nullptr: copy o/lse back and
  /// validate on the host (workload/validation.hpp). Same verdicts either way.
  explicit Evaluator(const Context& ctx, const DeviceValidator* validator = nullptr);

  /// Loads `cubin`, resolves `kernel` (ABI.md), then: per case poison o/lse with 0xFF (NaN), launch, and
  /// validate against the case's reference on the device or the host (when options.validate);
  /// if every case passed, time each case with time_cold (when options.time). Device errors become the
  /// status; it throws only std::bad_alloc-like host failures.
  EvalResult evaluate(const std::vector<char>& cubin, const std::string& kernel,
                      const std::vector<const DeviceCase*>& cases, const EvalOptions& options);

  L2Flusher& flusher() { return flusher_; }
  const Stream& stream() const { return stream_; }

 private:
  const Context& ctx_;
  const DeviceValidator* validator_;
  Stream stream_;
  L2Flusher flusher_;
};

/// FailureKind of a CudaError raised while loading or running a variant: sticky -> fault, resource limit
/// -> device_limit, a bad image / missing symbol -> compile, anything else -> fault.
FailureKind classify_cuda_error(const CudaError& e);

}  // namespace attn
