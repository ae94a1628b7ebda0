// The run's cases, round by round (daemon/case_rounds.hpp).
#include "daemon/case_rounds.hpp"

#include <fmt/format.h>

#include "daemon/seed_rounds.hpp"

namespace attn::tuning {
namespace {

bool seeded(const RunOptions& o) { return o.manifest.empty() && suite_has_root_seed(o.suite); }

std::shared_ptr<const CaseSet> case_set(const RunOptions& o, std::int64_t gen, std::vector<CaseSpec> cases,
                                        std::optional<std::int64_t> root_seed) {
  auto set = std::make_shared<CaseSet>();
  set->gen = gen;
  set->cases = std::move(cases);
  set->root_seed = root_seed;
  if (o.fidelity == FidelityMode::ladder) {
    set->screen = plan_screen(set->cases);
    if (set->screen->whole_suite()) set->screen.reset();  // one case per family: a screen would only repeat the suite
  }
  return set;
}

}  // namespace

CaseRounds::CaseRounds(const RunOptions& o, std::vector<CaseSpec> cases)
    : o_(o),
      holdout_(seeded(o) && o.holdout ? builtin_suite(o.suite, o.holdout_seed) : std::vector<CaseSpec>{}),
      now_(case_set(o, 0, std::move(cases), seeded(o) ? std::optional<std::int64_t>(o.root_seed) : std::nullopt)) {}

std::shared_ptr<const CaseSet> CaseRounds::now() const {
  std::lock_guard lock(mu_);
  return now_;
}

std::optional<std::string> CaseRounds::rotate(std::int64_t iterations, std::int64_t run_id) {
  if (!o_.rotate_seeds) return std::nullopt;
  std::lock_guard lock(mu_);
  const std::int64_t round = iterations / o_.round_configs;
  if (round == round_) return std::nullopt;
  round_ = round;
  const std::int64_t seed = round_root_seed(o_.root_seed, run_id, round_, o_.holdout_seed);
  now_ = case_set(o_, now_->gen + 1, builtin_suite(o_.suite, seed), seed);  // each slot prepares them before its next config
  return fmt::format("round {}: the suite's cases now come from root seed {}", round_, seed);
}

}  // namespace attn::tuning
