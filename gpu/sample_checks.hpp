// The checks of the launches an evaluation times (docs/verification.md): every timed sample runs on inputs
// no earlier launch of the evaluation has seen, with o and lse poisoned before it, and its outputs are
// validated after it, both outside its events. The fresh inputs are the tuning inputs with the signs of
// random head_dim columns flipped: one 128-bit mask over q and k, drawn per case before its first timed
// sample (q.k^T is bit-identical), and a new one over v for every sample (o's flipped columns change sign
// exactly, lse does not), so the tuning reference with o's flipped columns negated is the sample's
// reference, with no reference computed per sample.
#pragma once
#include <cuda.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpu/case_data.hpp"
#include "gpu/device_validation.hpp"
#include "workload/validation.hpp"

namespace attn {

/// Which of a case's references to validate against: the tuning inputs' or the check set's.
enum class CaseReference { tuning, check };

/// Validates c.o / c.lse, as the launches enqueued on `stream` leave them, against the case's `which`
/// reference with o's `o_flip` columns negated: on the device with `validator`, else on host copies (the
/// same verdicts). Synchronizes `stream`. Throws CudaError.
ValidationResult validate_case(const DeviceCase& c, const DeviceValidator* validator, CUstream stream,
                               const Tolerances& tol, CaseReference which = CaseReference::tuning,
                               ColumnFlip o_flip = {});

/// Enqueues NaN over o and lse (0xFF bytes: a bf16 and an fp32 NaN), so that an element a launch does not
/// write fails validation.
void poison_outputs(const DeviceCase& c, CUstream stream);

/// The timed samples of one case on fresh inputs (the header comment): SampleHooks for time_cold. The flips
/// come from `rng`, the evaluation's generator (seeded from std::random_device, never logged or sent). With a
/// device validator each sample's validation is enqueued behind it into its own counters (`slots`: room for
/// `max_samples` x DeviceValidator::kCounters unsigned) and read once by finish(); on the host path each
/// sample is validated when it ends. The case needs a masker (DeviceCase::masker).
class FreshSamples {
 public:
  FreshSamples(const DeviceCase& c, const DeviceValidator* validator, const Tolerances& tol, std::mt19937_64& rng,
               CUdeviceptr slots = 0, int max_samples = 0);
  /// Puts the tuning inputs back if restore() was not called (errors swallowed: a dead context).
  ~FreshSamples();
  FreshSamples(const FreshSamples&) = delete;
  FreshSamples& operator=(const FreshSamples&) = delete;

  /// Enqueues the flips to new random masks (q and k: before the first sample only; v: every sample), then
  /// the outputs' poison.
  void before(CUstream s);
  /// Validates sample `sample`: enqueued (device) or at once (host). False, with failure() set, when a host
  /// validation found it wrong (the timing stops); the device path returns true and finish() decides.
  bool after(CUstream s, int sample);
  /// Reads the enqueued validations (synchronizes `s`); failure() then names the first wrong sample.
  void finish(CUstream s);
  /// Enqueues the flips that put the tuning inputs back. Throws CudaError.
  void restore(CUstream s);

  /// "case X: timed sample 3, on fresh inputs with o and lse poisoned before it, is wrong (o diff D, lse diff
  /// L): ..." for the first wrong sample; nullopt while every sample checked so far is right.
  const std::optional<std::string>& failure() const { return failure_; }
  /// The largest diffs over the validated samples.
  double o_max_abs_diff() const { return o_diff_; }
  double lse_max_abs_diff() const { return lse_diff_; }
  int validated() const { return validated_; }

 private:
  void record(int sample, const ValidationResult& r);

  const DeviceCase& c_;
  const DeviceValidator* validator_;
  Tolerances tol_;
  std::mt19937_64& rng_;
  CUdeviceptr slots_;
  int max_samples_;
  ColumnFlip qk_, v_;                  ///< the flips the inputs are under now
  int pending_ = 0;                    ///< samples whose validation is enqueued and not read
  CUstream last_stream_ = nullptr;
  std::optional<std::string> failure_;
  double o_diff_ = 0, lse_diff_ = 0;
  int validated_ = 0;
};

}  // namespace attn
