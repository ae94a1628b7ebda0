// Where a run's time goes and what it did, counted as it goes (the status file, the end summary, `status`).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace attn::tuning {

/// A run's counts: wall times (ms) of NVRTC (summed over the compile threads), case building, screens, whole-suite
/// evaluations, A/B/A re-timings, held-out checks and spare evaluations; configs screened out and evaluated in full;
/// spare evaluations and those kept; screens sent ahead; the run's iterations at its last new overall champion.
struct RunCounters {
  double compile_ms = 0, prepare_ms = 0, screen_ms = 0, eval_ms = 0, retime_ms = 0, holdout_ms = 0, spare_ms = 0;
  std::int64_t screened_out = 0, full_evals = 0, spare_evals = 0, spare_kept = 0, sent_ahead = 0;
  std::int64_t champion_at = 0;
};

/// Thread-safe counts (one lock, held for an addition).
class RunStats {
 public:
  /// `f(RunCounters&)` with the counts to itself.
  template <class F>
  void add(F&& f) {
    std::lock_guard lock(mu_);
    std::forward<F>(f)(c_);
  }
  RunCounters now() const {
    std::lock_guard lock(mu_);
    return c_;
  }

 private:
  mutable std::mutex mu_;
  RunCounters c_;
};

/// One GPU's share of a run for its end summary: its index, busy and spare seconds.
struct GpuBusy {
  int index = 0;
  double busy_s = 0, spare_s = 0;
};

/// The end summary's lines after "run N ended": configs screened out and evaluated in full (per hour of `wall_s`),
/// where the time went (`compile_threads`, `compile_procs` 0: NVRTC in the daemon's process), spare GPU time (when
/// `spare_on`, within `spare_cutoff`), screens sent ahead (when `ahead_on`), each GPU's busy share.
std::vector<std::string> throughput_lines(const RunCounters& c, double wall_s, std::size_t compile_threads,
                                          unsigned compile_procs, bool spare_on, double spare_cutoff, bool ahead_on,
                                          const std::vector<GpuBusy>& gpus);

}  // namespace attn::tuning
