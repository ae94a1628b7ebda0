// The cases a run tunes on (docs/tuner.md, "Seeds"): the suite's cases of the current round, the ladder's screen of
// them, a new round's seeds with --rotate-seeds, and the held-out cases that tuning never uses.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/tuning_loop.hpp"
#include "tuner/fidelity.hpp"
#include "workload/case_spec.hpp"

namespace attn::tuning {

/// The tuning cases of one round: what every GPU's worker holds before it evaluates a config.
struct CaseSet {
  std::int64_t gen = 0;                   ///< generation: 0 at the start, one more at each new round
  std::vector<CaseSpec> cases;
  std::optional<std::int64_t> root_seed;  ///< the root seed they come from; none: the suite's own seeds
  std::optional<ScreenPlan> screen;       ///< the ladder's screen of these cases; none: every config in full
};

/// The run's cases, one round at a time. Thread-safe: the slots read the current round while one of them starts the
/// next (one lock, held for no I/O).
class CaseRounds {
 public:
  /// `cases`: the suite's cases at RunOptions::root_seed (or the manifest's). The ladder's screen when the fidelity
  /// is the ladder and the suite has more than one case per family; the held-out cases (the suite at
  /// RunOptions::holdout_seed) when the suite's seeds come from a root seed and the held-out check is on.
  /// `o` must outlive this object.
  CaseRounds(const RunOptions& o, std::vector<CaseSpec> cases);
  /// The current round's cases.
  std::shared_ptr<const CaseSet> now() const;
  /// --rotate-seeds: at each round boundary (every RunOptions::round_configs of the run's `iterations`) the suite's
  /// seeds are drawn from the round's root seed (round_root_seed of `run_id`); the new round's line for the log,
  /// else none.
  std::optional<std::string> rotate(std::int64_t iterations, std::int64_t run_id);
  /// The held-out cases; empty without the held-out check.
  const std::vector<CaseSpec>& holdout() const { return holdout_; }

 private:
  const RunOptions& o_;
  const std::vector<CaseSpec> holdout_;
  mutable std::mutex mu_;
  std::shared_ptr<const CaseSet> now_;
  std::int64_t round_ = 0;
};

}  // namespace attn::tuning
