// The options of `attn-tuner run` (daemon/tuning_loop.hpp): their one check, the suite's label, the iters.tsv path.
// The loop itself: daemon/loop.hpp, loop.cpp (run_tuning_loop with it).
#include "daemon/tuning_loop.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "db/iters_tsv_owner.hpp"
#include "tuner/strategy.hpp"

namespace attn {

std::string suite_label(const RunOptions& o) {
  return o.manifest.empty() ? o.suite : std::filesystem::path(o.manifest).stem().string();
}

std::string tsv_path_of(const RunOptions& o) {
  return o.tsv_path.empty() ? default_iters_tsv_path(o.db_path) : o.tsv_path;
}

void validate_run_options(const RunOptions& o) {
  const auto bad = [](const std::string& why) { throw std::invalid_argument(why); };
  if (o.budget_s && !(*o.budget_s > 0)) bad("--budget must be positive");
  if (o.max_iterations && *o.max_iterations <= 0) bad("--iterations must be positive");
  if (!(o.ladder.cutoff >= 0)) bad("--screen-cutoff must be >= 0");
  if (!(o.spare_cutoff >= 0)) bad("--spare-cutoff must be >= 0");
  if (o.ladder.screen_max_samples < 1) bad("--screen-samples must be >= 1");
  if (o.round_configs <= 0) bad("--round must be a positive number of configs");
  const bool seeded = o.manifest.empty() && suite_has_root_seed(o.suite);
  if (o.rotate_seeds && !seeded)
    bad(fmt::format("--rotate-seeds needs a suite whose case seeds come from a root seed (quick, full, broad), not {}",
                    suite_label(o)));
  if (seeded && o.holdout && o.root_seed == o.holdout_seed)
    bad(fmt::format("--root-seed {} is the held-out seed: tuning never uses it (pick another, or --holdout-seed)",
                    o.root_seed));
  if (o.ideas.enabled()) {
    if (o.ideas.budget < 1) bad("--idea-budget must be at least 1 config");
    if (!(o.ideas.poll_s > 0)) bad("--idea-poll must be positive");
  }
  if (!o.manifest.empty() && !std::filesystem::exists(o.manifest)) bad("--manifest: no such file " + o.manifest);
  const auto& names = strategy_names();
  if (std::find(names.begin(), names.end(), o.strategy) == names.end())
    bad(fmt::format("--strategy: unknown '{}' ({})", o.strategy, fmt::join(names, ", ")));
}

}  // namespace attn
