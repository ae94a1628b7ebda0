// The fidelity ladder: screen plan, screen timing, promotion verdict.
#include "tuner/fidelity.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "workload/layout.hpp"
#include "workload/roofline.hpp"

namespace attn {

const char* to_string(FidelityMode m) { return m == FidelityMode::ladder ? "ladder" : "full"; }

FidelityMode parse_fidelity_mode(const std::string& s) {
  if (s == "ladder") return FidelityMode::ladder;
  if (s == "full") return FidelityMode::full;
  throw std::invalid_argument(fmt::format("unknown fidelity \"{}\" (expected ladder or full)", s));
}

TimingParams screen_timing(const TimingParams& full, const LadderOptions& ladder) {
  TimingParams t = full;
  t.min_samples = std::min(ladder.screen_min_samples, full.min_samples);
  t.max_samples = std::max(t.min_samples, std::min(ladder.screen_max_samples, full.max_samples));
  t.max_seconds = std::min(ladder.screen_max_seconds, full.max_seconds);
  return t;
}

std::string ScreenPlan::describe() const {
  return fmt::format("{} of {} cases ({})", case_ids.size(), suite_cases, fmt::join(case_ids, ", "));
}

ScreenPlan plan_screen(const std::vector<CaseSpec>& suite) {
  if (suite.empty()) throw std::invalid_argument("plan_screen: the suite has no cases");
  std::map<Family, std::vector<std::pair<double, std::string>>> by_family;
  for (const auto& c : suite) {
    double flops = 0;
    try {
      flops = case_work(build_layout(c), c.t_max).flops;
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("plan_screen: case {}: {}", c.case_id, e.what()));
    }
    by_family[c.family].emplace_back(flops, c.case_id);
  }
  std::vector<std::string> picked;
  for (auto& [family, cases] : by_family) {
    std::sort(cases.begin(), cases.end());
    picked.push_back(cases[(cases.size() - 1) / 2].second);
  }
  ScreenPlan plan;
  plan.suite_cases = suite.size();
  for (const auto& c : suite)  // suite order
    if (std::find(picked.begin(), picked.end(), c.case_id) != picked.end()) plan.case_ids.push_back(c.case_id);
  return plan;
}

ScreenVerdict judge_screen(double screen_ms, std::optional<double> best_screen_ms, double cutoff) {
  if (!std::isfinite(screen_ms) || screen_ms <= 0)
    throw std::invalid_argument(fmt::format("judge_screen: screen score {} ms is not a positive number", screen_ms));
  if (!(cutoff >= 0)) throw std::invalid_argument(fmt::format("judge_screen: negative cut-off {}", cutoff));
  if (!best_screen_ms) return {true, "first screen of this suite"};
  const double best = *best_screen_ms;
  const double above = screen_ms / best - 1;
  const std::string cut = fmt::format("cut-off {:g}%", cutoff * 100);
  if (screen_ms <= best * (1 + cutoff)) {
    if (above <= 0) return {true, fmt::format("best screen so far (previous {:.4f} ms)", best)};
    return {true, fmt::format("{:.1f}% above the best screen {:.4f} ms, within the {}", above * 100, best, cut)};
  }
  return {false, fmt::format("{:.1f}% above the best screen {:.4f} ms ({})", above * 100, best, cut)};
}

bool spare_candidate(double screen_ms, std::optional<double> best_screen_ms, double spare_cutoff) {
  if (!std::isfinite(screen_ms) || screen_ms <= 0)
    throw std::invalid_argument(fmt::format("spare_candidate: screen score {} ms is not a positive number", screen_ms));
  if (!(spare_cutoff >= 0)) throw std::invalid_argument(fmt::format("spare_candidate: negative cut-off {}", spare_cutoff));
  return best_screen_ms && screen_ms <= *best_screen_ms * (1 + spare_cutoff);
}

}  // namespace attn
