// What a free GPU slot of the tuning loop does next (docs/daemon.md, "Spare GPU time"): a compiled config that
// waits for a GPU always goes first; only when none is ready does the GPU do a spare evaluation; else it waits
// for the oldest compile. And how many compiles the queue starts: the compile pool stays busy while compiled configs
// wait for a GPU, up to a backlog.
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

/// Compiled configs that may wait for a GPU, per compile thread: a GPU busy with whole-suite evaluations, re-timings
/// or patched siblings lets them pile up, and a run of quick screens after it uses them up while the pool keeps
/// compiling. 4: at fa3_tma's ~1 s a compile and ~30 configs/s a GPU, 16 threads bank about 2 s of screens
/// (docs/results.md, "Screens sent ahead"); a deeper bank would only make the search's proposals staler.
inline constexpr std::size_t kCompiledBacklogPerThread = 4;

/// How many new compiles to start: enough that `threads` compiles run, while the queued configs (those compiling,
/// `compiling`, and those compiled and waiting for a GPU, `waiting`; patched siblings not counted) stay under
/// kCompiledBacklogPerThread x `threads`. `threads` is at least 1.
std::size_t compiles_to_start(std::size_t compiling, std::size_t waiting, std::size_t threads);

}  // namespace attn
