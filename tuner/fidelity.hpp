// The fidelity ladder (successive halving with two rungs, in the spirit of Hyperband's): a proposed config
// is first *screened* on one case per family with few timing samples; only a config whose screen score is
// within a cut-off of the best screen score seen goes on to the whole suite (*full*), and only a full
// evaluation can challenge the champion (A/B/A, tuner/champion.hpp). docs/tuner.md has the rationale.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gpu/timing.hpp"
#include "workload/case_spec.hpp"

namespace attn {

/// How the daemon evaluates a proposal: `ladder` (screen, then full for contenders) or `full` (the whole
/// suite at once, as before the ladder existed).
enum class FidelityMode { ladder, full };
/// "ladder" / "full".
const char* to_string(FidelityMode m);
/// Throws std::invalid_argument naming the bad value and the valid ones.
FidelityMode parse_fidelity_mode(const std::string& s);

/// Knobs of the ladder.
struct LadderOptions {
  /// A config goes on to the whole suite when screen_ms <= best_screen_ms * (1 + cutoff). The default
  /// was chosen by replay (docs/results.md, "Replay"): the loosest cut-off that keeps the ladder's best
  /// within 1% of the full-fidelity best while screening out most configs.
  double cutoff = 0.10;
  /// Timing of the screen: few samples per case (the full evaluation uses the run's timing).
  int screen_min_samples = 3;
  int screen_max_samples = 5;
  double screen_max_seconds = 0.5;
};

/// Timing parameters of a screen evaluation: `full` with the sample counts and time cap of `ladder`.
TimingParams screen_timing(const TimingParams& full, const LadderOptions& ladder);

/// The screen of a suite: per family, the case of median work (roofline FLOPs of its layout,
/// workload/roofline.hpp; the lower median for an even count, ties by case_id), in suite order.
struct ScreenPlan {
  std::vector<std::string> case_ids;
  std::size_t suite_cases = 0;  ///< cases in the whole suite
  /// "3 of 9 cases (full-window-2, full-global-1, full-retrieval-3)"
  std::string describe() const;
  /// True when the screen is the whole suite (one case per family): the ladder then saves only samples.
  bool whole_suite() const { return case_ids.size() == suite_cases; }
};
/// Throws std::invalid_argument for an empty suite or a case whose layout cannot be built.
ScreenPlan plan_screen(const std::vector<CaseSpec>& suite);

/// Whether a screened config goes on to the whole suite, and why in plain words.
struct ScreenVerdict {
  bool promote = false;
  std::string reason;  ///< e.g. "31.0% above the best screen 0.3912 ms (cut-off 10%)"
};
/// `best_screen_ms`: the lowest screen score seen so far (none: this is the first, promoted).
/// Throws std::invalid_argument for a non-positive or non-finite screen score or a negative cut-off.
ScreenVerdict judge_screen(double screen_ms, std::optional<double> best_screen_ms, double cutoff);

/// Whether spare GPU time (docs/daemon.md, "Spare GPU time") may evaluate a screened-out config on the whole suite:
/// its screen score is within `spare_cutoff` of the best screen now (screen_ms <= best * (1 + spare_cutoff)), where
/// the ladder's cut-off sent it no further (a near miss, which the screen's few samples may have judged wrongly).
/// False without a best screen. Throws std::invalid_argument for a non-positive or non-finite screen score or a
/// negative cut-off.
bool spare_candidate(double screen_ms, std::optional<double> best_screen_ms, double spare_cutoff);

}  // namespace attn
