// Noise-aware champion rule (see tuner/champion.hpp and docs/tuner.md).
#include "tuner/champion.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {
namespace {

void require_score(double v, const char* what) {
  if (!std::isfinite(v) || v <= 0)
    throw std::invalid_argument(fmt::format("champion rule: {} must be a positive finite score, got {}", what, v));
}

void require_spread(double v, const char* what) {
  if (!std::isfinite(v) || v < 0)
    throw std::invalid_argument(fmt::format("champion rule: {} must be a finite spread >= 0, got {}", what, v));
}

double pct(double part, double whole) { return 100.0 * part / whole; }

}  // namespace

const char* verdict_name(ChampionVerdict v) {
  switch (v) {
    case ChampionVerdict::retime: return "retime";
    case ChampionVerdict::promote: return "promote";
    case ChampionVerdict::not_faster: return "not_faster";
    case ChampionVerdict::aba_disagree: return "aba_disagree";
    case ChampionVerdict::within_noise: return "within_noise";
  }
  return "?";
}

double relative_spread(const std::vector<CaseTiming>& cases) {
  if (cases.empty()) throw std::invalid_argument("relative_spread: no cases");
  double worst = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    if (!std::isfinite(c.median_ms) || c.median_ms <= 0)
      throw std::invalid_argument(fmt::format("relative_spread: case {} has median {} ms (must be > 0)", i, c.median_ms));
    if (!std::isfinite(c.spread) || c.spread < 0)
      throw std::invalid_argument(fmt::format("relative_spread: case {} has spread {} (must be >= 0)", i, c.spread));
    worst = std::max(worst, c.spread);
  }
  return worst;
}

ChampionDecision prefilter_challenger(const FirstLook& first) {
  require_score(first.incumbent_ms, "incumbent first score");
  require_score(first.challenger_ms, "challenger first score");
  require_spread(first.incumbent_rel_spread, "incumbent relative spread");
  require_spread(first.challenger_rel_spread, "challenger relative spread");
  ChampionDecision d;
  d.incumbent_ms = first.incumbent_ms;
  d.challenger_ms = first.challenger_ms;
  d.lead_ms = first.incumbent_ms - first.challenger_ms;
  if (first.challenger_ms < first.incumbent_ms) {
    d.verdict = ChampionVerdict::retime;
    d.reason = fmt::format("first score {:.4f} ms is below the champion's {:.4f} ms: re-timing A/B/A",
                           first.challenger_ms, first.incumbent_ms);
  } else {
    d.verdict = ChampionVerdict::not_faster;
    d.reason = fmt::format("discard: first score {:.4f} ms is not below the champion's {:.4f} ms",
                           first.challenger_ms, first.incumbent_ms);
  }
  return d;
}

ChampionDecision measure_aba(const FirstLook& first, const AbaTiming& aba, const ChampionRule& rule) {
  require_score(aba.a1_ms, "A/B/A first incumbent score A1");
  require_score(aba.b_ms, "A/B/A challenger score B");
  require_score(aba.a2_ms, "A/B/A second incumbent score A2");
  require_spread(first.incumbent_rel_spread, "incumbent relative spread");
  require_spread(first.challenger_rel_spread, "challenger relative spread");
  if (!std::isfinite(rule.floor_rel) || rule.floor_rel < 0)
    throw std::invalid_argument(fmt::format("champion rule: floor_rel must be >= 0, got {}", rule.floor_rel));
  if (!std::isfinite(rule.spread_weight) || rule.spread_weight < 0)
    throw std::invalid_argument(fmt::format("champion rule: spread_weight must be >= 0, got {}", rule.spread_weight));
  ChampionDecision d;
  const double a = 0.5 * (aba.a1_ms + aba.a2_ms);
  const double rel = rule.spread_weight * std::max(first.incumbent_rel_spread, first.challenger_rel_spread);
  d.incumbent_ms = a;
  d.challenger_ms = aba.b_ms;
  d.lead_ms = a - aba.b_ms;
  d.noise_aba_ms = std::fabs(aba.a1_ms - aba.a2_ms);
  d.noise_spread_ms = rel * a;
  d.noise_floor_ms = rule.floor_rel * a;
  d.noise_ms = std::max({d.noise_aba_ms, d.noise_spread_ms, d.noise_floor_ms});
  return d;
}

ChampionDecision decide_champion(const FirstLook& first, const AbaTiming& aba, const ChampionRule& rule) {
  const ChampionDecision pre = prefilter_challenger(first);
  if (pre.verdict == ChampionVerdict::not_faster) return pre;
  return decide_aba(first, aba, rule);
}

ChampionDecision decide_aba(const FirstLook& first, const AbaTiming& aba, const ChampionRule& rule) {
  ChampionDecision d = measure_aba(first, aba, rule);
  const double a = d.incumbent_ms;
  const double rel = rule.spread_weight * std::max(first.incumbent_rel_spread, first.challenger_rel_spread);
  const std::string noise_terms =
      fmt::format("noise {:.4f} ms = max(A/A {:.4f}, spread {:.2f}% -> {:.4f}, floor {:.2f}% -> {:.4f})", d.noise_ms,
                  d.noise_aba_ms, 100.0 * rel, d.noise_spread_ms, 100.0 * rule.floor_rel, d.noise_floor_ms);

  if (!(aba.b_ms < aba.a1_ms && aba.b_ms < aba.a2_ms)) {
    d.verdict = ChampionVerdict::aba_disagree;
    d.reason = fmt::format("discard: A/B/A disagrees: challenger {:.4f} ms is not below both champion re-timings "
                           "{:.4f} and {:.4f} ms",
                           aba.b_ms, aba.a1_ms, aba.a2_ms);
  } else if (!(d.lead_ms > d.noise_ms)) {
    d.verdict = ChampionVerdict::within_noise;
    d.reason = fmt::format("discard: lead {:.4f} ms ({:.2f}%) over the champion's {:.4f} ms is within the {}",
                           d.lead_ms, pct(d.lead_ms, a), a, noise_terms);
  } else {
    d.verdict = ChampionVerdict::promote;
    d.reason = fmt::format("promote: {:.4f} ms beats the champion's {:.4f}/{:.4f} ms (A/B/A) by {:.4f} ms ({:.2f}%), "
                           "above the {}",
                           aba.b_ms, aba.a1_ms, aba.a2_ms, d.lead_ms, pct(d.lead_ms, a), noise_terms);
  }
  return d;
}

}  // namespace attn
