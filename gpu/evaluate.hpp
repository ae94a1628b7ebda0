// Evaluating a variant (a cubin) on a suite of built cases: validate every case against the reference
// with the harness's tolerances, then time every case cold; classify failures (FailureKind). The checks that
// a kernel doing less than the work cannot pass (docs/verification.md): a second validated launch on the same
// inputs with the outputs poisoned again; every timed sample on inputs of new magnitudes, poisoned before and
// checked after on rows drawn after it (gpu/sample_inputs.hpp, gpu/sample_checks.hpp); the median against the
// roofline floor (below_floor); the sign twin, one launch on the last sample's inputs with v's signs drawn anew
// and the outputs as that sample left them, checked the same way (inconsistent).
#pragma once
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpu/attn_kernel.hpp"
#include "gpu/case_data.hpp"
#include "gpu/device_validation.hpp"
#include "gpu/driver.hpp"
#include "gpu/failure.hpp"
#include "gpu/sample_checks.hpp"
#include "gpu/sample_inputs.hpp"
#include "gpu/timing.hpp"
#include "workload/roofline.hpp"
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
  /// The verification after timing (0 when not run): the case's roofline floor at the evaluation's ceilings,
  /// and the launch on the check inputs: its time and its max diffs against the check reference.
  double floor_ms = 0;
  int checked_samples = 0;  ///< timed samples run on fresh inputs and validated (EvalOptions::check_samples)
  double fresh_ms = 0;
  double fresh_o_max_abs_diff = 0;
  double fresh_lse_max_abs_diff = 0;
  bool operator==(const CaseResult&) const = default;
};

struct EvalOptions {
  bool validate = true;
  bool time = true;
  TimingParams timing;
  Tolerances tolerances;
  /// The verification (docs/verification.md); both run only where `validate` and `time` are on, since
  /// `--no-validate` times kernels that drop work on purpose (ablations) and a re-timing has been verified.
  /// check_floor: a case whose median is below floor_margin x its roofline floor (case_work at `ceilings`)
  /// fails below_floor. The margin allows SM clocks above the datasheet's (989 TFLOP/s is at 1830 MHz; the
  /// H100 boosts to 1980).
  bool check_floor = true;
  double floor_margin = 0.9;
  Ceilings ceilings;  ///< of the GPU: floor_check_ceilings(name) in the worker; default H100 SXM
  /// check_fresh (with validate): the launches that show reuse of earlier work. Right after a case's
  /// validated launch, o/lse are poisoned again and the variant launched again on the same inputs, validated
  /// (a kernel that recognises inputs it has seen and skips work leaves poison); after a case is timed (and its
  /// floor checked), the sign twin: the last timed sample's inputs with v's signs drawn anew per element
  /// (gpu/sample_inputs.hpp), o/lse left as that sample wrote them, one launch checked on rows drawn after it (a
  /// kernel keyed on what those flips keep returns a remembered o, one that skips when its outputs look done
  /// leaves them). A wrong result fails inconsistent. The twin is timed (fresh_ms)
  /// but not judged by time. Cases without helper kernels (built by hand) skip the twin.
  bool check_fresh = true;
  /// check_samples (with time, also without validate: the A/B/A re-timing): every timed sample on inputs of
  /// new magnitudes with o/lse poisoned before it and checked after it (gpu/sample_checks.hpp); a wrong sample
  /// fails inconsistent and ends the timing. Off only for builds that drop work on purpose (`bench
  /// --no-validate`). Cases without helper kernels (built by hand) time unchecked.
  bool check_samples = true;
  /// The rows a sample check (and the twin's) draws and compares with their fp32 reference: a kernel wrong on a
  /// share f of the valid rows passes one check with probability (1 - f)^sample_rows. 0: only the scan of every
  /// element (for the tests that show what the rows catch).
  int sample_rows = 128;
};

/// The below_floor verdict of a case timed at `median_ms` whose roofline floor is `floor_ms`: the
/// message ("case X: 4.85 us is below its roofline floor of 18.0 us (x 0.9 margin = 16.2 us): impossible
/// for a kernel that does the work") when median_ms < margin * floor_ms, else std::nullopt. A floor
/// <= 0 (unknown) never fails.
std::optional<std::string> below_floor_verdict(const std::string& case_id, double median_ms, double floor_ms,
                                               double margin);

/// A variant on a suite. status: none (all passed and, if asked, timed), compile (kernel or
/// attn_launch_info missing / malformed, or the cubin does not load), device_limit, fault (sticky CUDA
/// error: the caller's context is dead), wrong_result (some case failed validation: cases keep their
/// diffs, nothing is timed), below_floor / inconsistent (a timed case failed a check: the message names
/// it; the cases after it are not timed).
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
  /// validate on the host (workload/validation.hpp). Same verdicts either way. `draw`: the seeds of the samples'
  /// masks and drawn rows; empty (the worker): std::random_device, 64 bits a draw. Tests pass a fixed sequence.
  explicit Evaluator(const Context& ctx, const DeviceValidator* validator = nullptr, SeedDraw draw = {});

  /// Loads `cubin`, resolves `kernel` (ABI.md), then: per case poison o/lse with 0xFF (NaN), launch, and
  /// validate against the case's reference on the device or the host, then the repeat launch (check_fresh)
  /// (when options.validate); if every case passed, per case (when options.time): time_cold on fresh
  /// samples (check_samples), the floor and the check set (EvalOptions).
  /// Device errors become the status; it throws only std::bad_alloc-like host failures.
  EvalResult evaluate(const std::vector<char>& cubin, const std::string& kernel,
                      const std::vector<const DeviceCase*>& cases, const EvalOptions& options);

  L2Flusher& flusher() { return flusher_; }
  const Stream& stream() const { return stream_; }

 private:
  const Context& ctx_;
  const DeviceValidator* validator_;
  Stream stream_;
  L2Flusher flusher_;
  std::random_device seeds_;     ///< the samples' masks and drawn rows: from the OS, never logged or sent
  SeedDraw draw_;               ///< a 64-bit draw of seeds_
  SampleBuffers sample_buffers_;  ///< the sample checks' counters and drawn rows, grown on demand
};

/// FailureKind of a CudaError raised while loading or running a variant: sticky -> fault, resource limit
/// -> device_limit, a bad image / missing symbol -> compile, anything else -> fault.
FailureKind classify_cuda_error(const CudaError& e);

}  // namespace attn
