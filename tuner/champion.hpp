// Noise-aware champion promotion: a challenger replaces the champion only when it wins an A/B/A
// re-timing by more than the measured noise. Formula and reasoning: docs/tuner.md, "Champion rule".
// The same rule serves the overall champion (suite scores) and per-family champions (family medians).
#pragma once
#include <string>
#include <vector>

namespace attn {

/// One case's timing from a measurement: the median of its samples in ms and their relative spread
/// (IQR / median, exactly gpu/timing.hpp's TimingResult::spread).
struct CaseTiming {
  double median_ms = 0;
  double spread = 0;
};

/// max over cases of the relative spread: a bound on the relative noise of any median, geomean or
/// mix of them (both are monotone, so if every case moves by at most a factor 1 +- r, so do they).
/// Throws std::invalid_argument on no cases, a median <= 0, a negative or non-finite value.
double relative_spread(const std::vector<CaseTiming>& cases);

/// First measurement of incumbent (champion) and challenger: scores in ms (suite score, or one
/// family's median for a per-family champion) and relative spreads from relative_spread().
struct FirstLook {
  double incumbent_ms = 0;
  double challenger_ms = 0;
  double incumbent_rel_spread = 0;
  double challenger_rel_spread = 0;
};

/// The A/B/A re-timing: incumbent, challenger, incumbent, each a full score in ms, timed back to back.
struct AbaTiming {
  double a1_ms = 0;
  double b_ms = 0;
  double a2_ms = 0;
};

/// Knobs of the rule.
struct ChampionRule {
  /// Noise floor as a fraction of the score: nvbench's default --max-noise is 0.5 % relative stdev.
  double floor_rel = 0.005;
  /// Multiplies the relative spread term (1 = the sample IQR itself; the median of n samples is
  /// steadier than that by about sqrt(n), so values below 1 are defensible, never needed for safety).
  double spread_weight = 1.0;
};

enum class ChampionVerdict {
  retime,        ///< pre-filter passed: run the A/B/A re-timing, then decide_champion()
  promote,       ///< the challenger becomes the champion
  not_faster,    ///< first score not below the incumbent's: plain discard, no re-timing
  aba_disagree,  ///< challenger not below both incumbent re-timings
  within_noise,  ///< lead not above the noise
};

/// "retime", "promote", "not_faster", "aba_disagree", "within_noise".
const char* verdict_name(ChampionVerdict v);

/// The decision with its numbers (ms) and a one-line reason in plain words for the iteration log.
struct ChampionDecision {
  ChampionVerdict verdict = ChampionVerdict::not_faster;
  double incumbent_ms = 0;     ///< first look (pre-filter), else mean(A1, A2)
  double challenger_ms = 0;    ///< first look (pre-filter), else B
  double lead_ms = 0;          ///< incumbent_ms - challenger_ms
  double noise_ms = 0;         ///< max of the three terms below (0 in the pre-filter)
  double noise_aba_ms = 0;     ///< |A1 - A2|
  double noise_spread_ms = 0;  ///< spread_weight * max(rel spreads) * incumbent_ms
  double noise_floor_ms = 0;   ///< floor_rel * incumbent_ms
  std::string reason;

  bool promote() const { return verdict == ChampionVerdict::promote; }
};

/// Pre-filter: verdict retime when challenger_ms < incumbent_ms, else not_faster.
/// Throws std::invalid_argument on a score <= 0, a negative spread, or a non-finite number.
ChampionDecision prefilter_challenger(const FirstLook& first);

/// The A/B/A's numbers without a verdict: incumbent_ms = mean(A1, A2), challenger_ms = B, lead_ms, and the
/// noise terms of the rule (|A1 - A2|, spread_weight * max(rel spreads) * mean, floor_rel * mean; noise_ms their
/// max). verdict and reason are left at their defaults. Only the spreads of `first` are used. Throws
/// std::invalid_argument for an A/B/A score <= 0, a negative spread, bad knobs or a non-finite number.
ChampionDecision measure_aba(const FirstLook& first, const AbaTiming& aba, const ChampionRule& rule = {});

/// The rule after its pre-filter: promote iff B < A1 and B < A2 and
/// mean(A1, A2) - B > max(|A1 - A2|, spread_weight * max(rel spreads) * mean(A1, A2),
///                        floor_rel * mean(A1, A2));
/// else aba_disagree (B not below both A's) or within_noise. The numbers are measure_aba's. An idea's win is
/// this promote (tuner/idea_rule.hpp). Throws std::invalid_argument like measure_aba.
ChampionDecision decide_aba(const FirstLook& first, const AbaTiming& aba, const ChampionRule& rule = {});

/// The full rule: prefilter_challenger, then decide_aba. Throws std::invalid_argument like prefilter_challenger,
/// also for A/B/A scores.
ChampionDecision decide_champion(const FirstLook& first, const AbaTiming& aba, const ChampionRule& rule = {});

}  // namespace attn
