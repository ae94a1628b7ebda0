// The checks of the launches an evaluation times (docs/verification.md): every timed sample runs on inputs
// no earlier launch of the evaluation has seen, with o and lse poisoned before it, and its outputs are
// validated after it, both outside its events. The fresh inputs are the tuning inputs with the signs of
// random head_dim columns flipped: one 128-bit mask over q and k (q.k^T is bit-identical) and another over v
// (o's flipped columns change sign exactly, lse does not), so the tuning reference with o's flipped columns
// negated is the sample's reference, with no reference computed per sample.
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
/// come from `rng`, the evaluation's generator (seeded from std::random_device, never logged or sent), drawn
/// after the previous sample was validated. The case needs a masker (DeviceCase::has_check_set).
class FreshSamples {
 public:
  FreshSamples(const DeviceCase& c, const DeviceValidator* validator, const Tolerances& tol, std::mt19937_64& rng);
  /// Puts the tuning inputs back if restore() was not called (errors swallowed: a dead context).
  ~FreshSamples();
  FreshSamples(const FreshSamples&) = delete;
  FreshSamples& operator=(const FreshSamples&) = delete;

  /// Enqueues the flip from the current masks to new random ones, then the outputs' poison.
  void before(CUstream s);
  /// Validates sample `sample` (synchronizes `s`); false, with failure() set, when it is wrong.
  bool after(CUstream s, int sample);
  /// Enqueues the flips that put the tuning inputs back. Throws CudaError.
  void restore(CUstream s);

  /// "case X: timed sample 3 (of the samples so far), on fresh inputs with o and lse poisoned before it, is
  /// wrong (o diff D, lse diff L): ..." for the first wrong sample; nullopt while every sample is right.
  const std::optional<std::string>& failure() const { return failure_; }
  /// The largest diffs over the validated samples.
  double o_max_abs_diff() const { return o_diff_; }
  double lse_max_abs_diff() const { return lse_diff_; }
  int validated() const { return validated_; }

 private:
  const DeviceCase& c_;
  const DeviceValidator* validator_;
  Tolerances tol_;
  std::mt19937_64& rng_;
  ColumnFlip qk_, v_;  ///< the flips the inputs are under now
  CUstream last_stream_ = nullptr;
  std::optional<std::string> failure_;
  double o_diff_ = 0, lse_diff_ = 0;
  int validated_ = 0;
};

}  // namespace attn
