// One champion challenge at a time (docs/tuner.md, docs/scale-out.md): the A/B/A re-timings and held-out checks of a
// challenger, of an incumbent and of an idea against its parent all run on the GPU of whoever holds the seat, one
// challenge after the other, so that every A/B/A is back to back on one GPU.
#pragma once
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "daemon/champion_book.hpp"
#include "daemon/gpu_slot.hpp"
#include "daemon/holdout.hpp"
#include "daemon/run_stats.hpp"
#include "gpu/timing.hpp"

namespace attn::tuning {

class Challenge;

/// The seat of the challenge in progress. Thread-safe: its one lock is the seat, held by a Challenge for the whole
/// challenge (GPU work included); the holder takes no other part's lock for longer than a call.
class ChallengeSeat {
 public:
  /// Re-timings use `timing` (RunOptions::timing); held-out checks the cases `holdout` (CaseRounds::holdout); their
  /// wall time counts in `stats`; `retimed(c, wall_ms)` hears of each re-timing that worked (the watchdog keeps the
  /// overall champion's evaluation time). All must outlive the seat.
  ChallengeSeat(const TimingParams& timing, const std::vector<CaseSpec>& holdout, RunStats& stats,
                std::function<void(const Contender&, double wall_ms)> retimed);
  /// Waits until no challenge runs, then takes the seat for `slot`: the challenge runs on its GPU until the handle
  /// is destroyed.
  Challenge take(GpuSlot& slot);

 private:
  friend class Challenge;
  const TimingParams& timing_;
  const std::vector<CaseSpec>& holdout_;
  RunStats& stats_;
  std::function<void(const Contender&, double)> retimed_;
  std::mutex mu_;
};

/// A challenge in progress: the seat held, on one GPU slot (its thread's own). Movable, not copyable.
class Challenge {
 public:
  GpuSlot& slot() const { return *slot_; }
  /// A/B/A re-timing of a validated variant on this GPU: timing only; none when it failed (the worker restarted
  /// under the one rule when the failure ended it).
  std::optional<Measured> retime(const Contender& c);
  /// `c` validated and timed on the held-out cases; the tuning cases are prepared again after.
  HoldoutResult holdout(const Contender& c);
  /// `a`, then `b`, on the held-out cases, prepared once (an idea's parent and the idea).
  std::pair<HoldoutResult, HoldoutResult> holdout_pair(const Contender& a, const Contender& b);

 private:
  friend class ChallengeSeat;
  Challenge(ChallengeSeat& seat, GpuSlot& slot);
  std::unique_lock<std::mutex> lock_;
  ChallengeSeat* seat_;
  GpuSlot* slot_;
  /// One contender on the held-out cases already prepared.
  HoldoutResult on_holdout(const Contender& c);
};

}  // namespace attn::tuning
