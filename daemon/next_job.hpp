// What a free GPU slot of the tuning loop does next (docs/daemon.md, "Spare GPU time"): a compiled config that
// waits for a GPU always goes first; only when none is ready does the GPU do a spare evaluation; else it waits
// for the oldest compile.
#pragma once
#include <cstddef>
#include <vector>

namespace attn {

/// The choice of a free GPU slot.
struct NextJob {
  enum class Kind {
    compiled,  ///< evaluate the queued config at `index`, whose compile is done (the first such in queue order)
    spare,     ///< no queued config is compiled: a spare evaluation
    wait,      ///< no queued config is compiled and no spare evaluation is available: take the queue's front and
               ///< wait for its compile (index 0)
  };
  Kind kind = Kind::wait;
  std::size_t index = 0;
  bool operator==(const NextJob&) const = default;
};

/// `compiled[i]`: the compile of the i-th queued config has finished (the queue is not empty). `spare_available`:
/// spare evaluations are on and one is due.
NextJob next_job(const std::vector<bool>& compiled, bool spare_available);

}  // namespace attn
