// What a search strategy sees of one template's tuning so far: the space, the configs already
// evaluated (and those proposed but not yet measured), their results, and the champion.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tuner/space.hpp"

namespace attn {

/// The result of evaluating one config on the suite.
struct Outcome {
  std::int64_t iter = -1;          ///< iteration id that measured it (-1 when unknown)
  std::optional<double> score_ms;  ///< suite score in ms (geomean of family medians); empty = failed
  std::string failure;             ///< why it failed (compile, validation, device limit, crash)

  bool ok() const { return score_ms.has_value(); }
  static Outcome success(std::int64_t iter, double score_ms) { return {iter, score_ms, {}}; }
  static Outcome failed(std::int64_t iter, std::string why) { return {iter, std::nullopt, std::move(why)}; }
};

/// The compile report of a config (gpu/compiler's resource report), as model features.
struct ConfigResources {
  double registers = 0;    ///< per thread
  double smem_bytes = 0;   ///< static shared memory
  double spill_bytes = 0;  ///< spill stores + loads
  bool operator==(const ConfigResources&) const = default;
};

/// The config the daemon currently holds as best for this template (promoted by the champion rule).
struct Champion {
  Config config;
  std::int64_t iter = -1;  ///< iteration of its recorded outcome
  double score_ms = 0;     ///< its recorded score
};

/// Tuning state of one template. Owned by the daemon (one per template); strategies only read it.
/// Not thread-safe: the daemon's proposal loop updates and reads it from one thread.
class SearchState {
 public:
  /// Enumerates the valid configs once (TemplateSpace::enumerate()).
  explicit SearchState(TemplateSpace space);

  const TemplateSpace& space() const { return space_; }
  const std::string& template_name() const { return space_.name(); }
  /// Every valid config in odometer order (cached enumerate()).
  const std::vector<Config>& valid_configs() const { return valid_; }

  /// Stores the outcome of `c` (a later record of the same config replaces the earlier one, e.g. an
  /// A/B/A re-timing) and clears its pending mark. Configs outside the space are accepted (results
  /// loaded from a database written with an older space) and just count as evaluated.
  void record(const Config& c, Outcome outcome);
  /// Marks `c` as proposed and in flight (compiling or timing), so strategies do not propose it again;
  /// record() or cancel_pending() clears the mark.
  void mark_pending(const Config& c);
  void cancel_pending(const Config& c);

  bool evaluated(const Config& c) const { return results_.count(c) != 0; }
  bool pending(const Config& c) const { return pending_.count(c) != 0; }
  /// Evaluated or pending: a strategy never proposes such a config.
  bool seen(const Config& c) const { return evaluated(c) || pending(c); }
  /// Number of valid configs not yet seen (0: exhausted).
  std::size_t unseen_count() const { return valid_.size() - seen_valid_; }
  const std::map<Config, Outcome>& results() const { return results_; }
  /// Successful outcomes, lowest score first (ties: lower iter first).
  std::vector<std::pair<Config, Outcome>> ranked() const;

  /// The compile report of `c`, once it was compiled (the daemon sets it after each compile, replay
  /// from the DB); null when unknown. Strategies may use it as features (the model strategy does).
  void set_resources(const Config& c, ConfigResources r) { resources_[c] = r; }
  const ConfigResources* resources(const Config& c) const {
    const auto it = resources_.find(c);
    return it == resources_.end() ? nullptr : &it->second;
  }

  /// Makes `c` the champion. Throws std::invalid_argument unless `c` was recorded with a score.
  void set_champion(const Config& c);
  /// The champion with its current recorded outcome, if one was set.
  std::optional<Champion> champion() const;

 private:
  TemplateSpace space_;
  std::vector<Config> valid_;
  std::map<Config, Outcome> results_;
  std::set<Config> pending_;
  std::map<Config, ConfigResources> resources_;
  std::optional<Config> champion_;
  std::size_t seen_valid_ = 0;  // valid configs that are evaluated or pending

  void on_first_seen(const Config& c);
};

}  // namespace attn
