// The checks of the launches an evaluation times (docs/verification.md). Every timed sample runs on new inputs
// (gpu/sample_inputs.hpp) with o and lse poisoned before it; after it, outside its events, its check: rows of o
// drawn only then (a seed the kernel never sees: it is an argument of a kernel enqueued after it) get their
// fp32 reference on the GPU and are compared with the harness's tolerances, and a scan of every element of o
// and lse fails what the poison would leave, what is not finite and padding rows unlike their known reference
// (gpu/sample_verdict.hpp). On the device that is one launch (kernels_templates/validate_outputs.cu's
// validate_sample); the host path takes the rows' reference from reference_rows_fp32 (the same rows, the same
// bits) and checks on host copies. A kernel wrong on a share f of the valid rows passes one check of n drawn
// rows with probability (1 - f)^n. The same check judges the sign twin.
#pragma once
#include <cuda.h>

#include <optional>
#include <string>
#include <vector>

#include "gpu/case_data.hpp"
#include "gpu/device_validation.hpp"
#include "gpu/driver.hpp"
#include "gpu/sample_verdict.hpp"
#include "workload/validation.hpp"

namespace attn {

/// Validates c.o / c.lse, as the launches enqueued on `stream` leave them, against the case's reference: on
/// the device with `validator`, else on host copies (the same verdicts). Synchronizes `stream`. Throws CudaError.
ValidationResult validate_case(const DeviceCase& c, const DeviceValidator* validator, CUstream stream,
                               const Tolerances& tol);

/// Enqueues NaN over o and lse (0xFF bytes: a bf16 and an fp32 NaN), so that an element a launch does not
/// write fails validation.
void poison_outputs(const DeviceCase& c, CUstream stream);

/// The device memory of an evaluation's sample checks, grown on demand: the counters of `slots` checks
/// (DeviceValidator::kSampleCounters each) and the drawn rows' reference (RowsBuffer of `rows` rows).
class SampleBuffers {
 public:
  /// Makes room for `slots` checks of `rows` rows each (keeps larger buffers).
  void reserve(int slots, int rows);
  int slots() const { return slots_; }
  /// The counters of check `i` (< slots()).
  CUdeviceptr slot(int i) const;
  /// `count` rows of the rows buffer (count <= the rows reserved).
  RowsBuffer rows(int count) const;

 private:
  DeviceBuffer counters_, rows_, ref_o_, ref_lse_;
  int slots_ = 0, rows_count_ = 0;
};

/// The checks of one case's timed samples and of its sign twin. With a device validator each sample's check is
/// enqueued behind it into a slot of its own and read once by finish() (no host wait per sample); without one
/// (the host path) each is copied back and checked when it ends. Needs c.kernels (the drawn rows' reference).
class SampleChecks {
 public:
  /// `rows`: the rows drawn per check (0: the scan alone); `buffers` reserved for at least `rows` rows.
  SampleChecks(const DeviceCase& c, const DeviceValidator* validator, const Tolerances& tol, SampleBuffers& buffers,
               int rows);

  /// After timed sample `sample` (0-based): its check with rows drawn by `row_seed`, enqueued (device, while a
  /// slot is free) or at once. False, with failure() set, when a check made at once found it wrong (the timing
  /// stops); an enqueued one returns true and finish() decides.
  bool after(CUstream s, int sample, std::uint64_t row_seed);
  /// Reads the enqueued checks (synchronizes `s`); failure() then names the first wrong sample.
  void finish(CUstream s);
  /// One check now, synchronously: the sign twin's.
  SampleVerdict check_now(CUstream s, std::uint64_t row_seed);

  /// sample_failure_message of the first wrong sample; nullopt while every sample checked so far is right.
  const std::optional<std::string>& failure() const { return failure_; }
  /// The largest diffs over the checked samples.
  double o_max_abs_diff() const { return o_diff_; }
  double lse_max_abs_diff() const { return lse_diff_; }
  int validated() const { return validated_; }

 private:
  void record(int sample, const SampleVerdict& v);

  const DeviceCase& c_;
  const DeviceValidator* validator_;
  Tolerances tol_;
  SampleBuffers& buffers_;
  int rows_;
  std::vector<int> pending_;  ///< the samples whose check is enqueued in slots 0.. and not read
  bool slots_zeroed_ = false;  ///< every slot's counters zeroed (once per case, before its first check)
  std::optional<std::string> failure_;
  double o_diff_ = 0, lse_diff_ = 0;
  int validated_ = 0;
};

}  // namespace attn
