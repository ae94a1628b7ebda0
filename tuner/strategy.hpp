// Search strategies: which config of a template to evaluate next. A small interface in the spirit of
// KTT's Searcher: the daemon asks next(state), evaluates the proposal, records the outcome in the
// SearchState, maybe promotes a champion, and asks again.
//
// Contract for every strategy:
// - never propose a config that state.seen() (evaluated or pending) or that space().check() rejects;
// - nullopt means "nothing left for me to propose" (for exhaustive and random: every valid config
//   is seen; the learning strategies fall back to random sampling, so the same holds for them);
// - deterministic for a given seed and sequence of states;
// - one instance per template (they may cache per-template facts); the daemon round-robins over
//   templates (see MultiSearch in tuner/multi_search.hpp).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tuner/search_state.hpp"

namespace attn {

/// A config to evaluate next and, in plain words, why: what changed relative to the champion
/// ("BLOCK_N 64->128 from champion iter 12"), "random sample", "exhaustive 17/96", ... It goes into
/// the iteration's description.
struct Proposal {
  Config config;
  std::string move;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  /// The next config to evaluate for state.template_name(), or nullopt when exhausted.
  virtual std::optional<Proposal> next(const SearchState& state) = 0;
  /// "exhaustive", "random", "local", "evolutionary" or "model".
  virtual std::string name() const = 0;
};

/// Knobs of the local search (hill climbing, first improvement).
struct LocalSearchOptions {
  bool two_parameter_moves = true;  ///< after one-parameter neighbours run out, move two at once
};

/// Knobs of the evolutionary search.
struct EvolutionaryOptions {
  std::size_t population = 8;      ///< the best N successful configs are the parents' pool
  std::size_t tournament = 2;      ///< contestants per tournament selection
  double mutation_rate = 0.5;      ///< chance that a child gets one parameter moved to an adjacent value
  std::size_t max_retries = 64;    ///< children tried before widening the mutation (then each width as long)
  /// Once the pool's children with one moved parameter are all seen (a long run), children of one
  /// tournament winner with 2, 3, .. max_mutations parameters moved are tried (max_retries each) before a
  /// random sample: the search stays near the best configs instead of falling back to the whole space.
  std::size_t max_mutations = 4;
};

/// Knobs of the model strategy (a random-forest surrogate, dlib).
struct ModelOptions {
  std::size_t initial = 12;       ///< successful results (default, then random samples) before the first model
  std::size_t candidates = 2048;  ///< unseen valid configs scored per proposal (all of them when fewer)
  double explore = 0.1;           ///< chance of a random proposal instead of the best predicted
  unsigned long trees = 64;       ///< trees of the forest
};

/// Odometer order over state.valid_configs(), skipping seen configs. move = "exhaustive k/N".
std::unique_ptr<Strategy> make_exhaustive_strategy();
/// Uniform over the valid configs not yet seen (std::mt19937_64 seeded with `seed`).
std::unique_ptr<Strategy> make_random_strategy(std::uint64_t seed);
/// First-improvement hill climbing from the champion; see docs/tuner.md.
std::unique_ptr<Strategy> make_local_strategy(std::uint64_t seed, LocalSearchOptions options = {});
/// Tournament selection, uniform crossover and adjacent-value mutation over the best configs.
std::unique_ptr<Strategy> make_evolutionary_strategy(std::uint64_t seed, EvolutionaryOptions options = {});

/// A random-forest surrogate of log(score) on the parameters (plus the compile report's registers, shared
/// memory and spills where SearchState::resources knows them) ranks unseen configs; proposes the best
/// predicted, a random one with probability `explore`. See docs/tuner.md.
std::unique_ptr<Strategy> make_model_strategy(std::uint64_t seed, ModelOptions options = {});

/// A bounded search that starts from known configs (an idea's tuning, docs/ideas.md): first `seeds` in
/// order (skipping any the state has seen or the space rejects), then `then`'s proposals, and nothing after
/// `budget` proposals in all. Throws std::invalid_argument for a null `then`.
std::unique_ptr<Strategy> make_seeded_strategy(std::vector<Proposal> seeds, std::unique_ptr<Strategy> then,
                                               std::size_t budget);

/// The strategy names make_strategy accepts: exhaustive, random, local, evolutionary, model.
const std::vector<std::string>& strategy_names();
/// Strategy by name with default options. Throws std::invalid_argument listing the known names.
std::unique_ptr<Strategy> make_strategy(const std::string& name, std::uint64_t seed);

namespace detail {
/// Uniform pick among state.valid_configs() that are not seen; nullopt when none is left.
std::optional<Config> random_unseen(const SearchState& state, std::mt19937_64& rng);
/// "BLOCK_N 64->128, STAGES 2->3": the parameters that differ from `from` to `to` (or "no change").
std::string describe_change(const Config& from, const Config& to);
}  // namespace detail

}  // namespace attn
