// The fidelity ladder's book of screens in one run (tuner/fidelity.hpp, docs/daemon.md "Spare GPU time"): the best
// screen score, against which each new screen is judged, and the near misses that spare GPU time may evaluate on the
// whole suite.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "daemon/job.hpp"
#include "tuner/fidelity.hpp"

namespace attn::tuning {

/// A screened-out near miss that spare GPU time may evaluate on the whole suite (RunOptions::spare_evals).
struct ScreenedNearMiss {
  TemplateProposal proposal;
  std::int64_t iter = 0;  ///< its screen iteration
  CompiledVariant cv;     ///< its compile, without the cubin's bytes (the worker reads cv.cubin_path)
};

/// Thread-safe: one lock, held for no I/O but a file's existence.
class ScreenBook {
 public:
  /// `cutoff`: the ladder's (LadderOptions::cutoff); `spare`: spare evaluations on, of near misses within
  /// `spare_cutoff` of the best screen (RunOptions::spare_evals, spare_cutoff).
  ScreenBook(double cutoff, bool spare, double spare_cutoff);
  /// A screen score of an earlier run of this suite (a resume): the best so far when it is lower.
  void seed(double screen_ms);
  /// A new screen judged against the best before it (judge_screen); the best is then updated.
  ScreenVerdict judge(double screen_ms);
  /// A screened-out config (its screen `screen_ms`, judged already) is kept as a near miss when spare evaluations
  /// are on and it is within their cut-off of the best screen.
  void screened_out(double screen_ms, ScreenedNearMiss miss);
  /// A spare evaluation is due: a near miss is left that is still within the cut-off of the best screen and whose
  /// cubin is still in the cache (the others are dropped). False with spare evaluations off.
  bool spare_due();
  /// The best near miss as a job for the whole suite (InFlight::spare_of its screen iteration); none when none is
  /// left (another GPU took it).
  std::optional<InFlight> take_spare();

 private:
  const double cutoff_, spare_cutoff_;
  const bool spare_;
  std::mutex mu_;
  std::optional<double> best_;
  std::multimap<double, ScreenedNearMiss> near_misses_;  // by screen score, best first
};

}  // namespace attn::tuning
