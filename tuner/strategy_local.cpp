// Local strategy: first-improvement hill climbing from the champion, with best-first restarts.
//
// Each call expands the first "base" that still has an unseen valid neighbour:
//   1. nothing evaluated successfully yet and the template default not seen: propose the default;
//   2. bases in order: the champion, then every successful config best score first;
//      neighbours of a base: one parameter moved to an adjacent value in its list (random order),
//      then, once those are all seen or invalid, two parameters moved at once;
//      a base whose neighbours are all evaluated or invalid is "expanded" and skipped from then on;
//   3. every base expanded: a random valid unseen config (random restart); none left: nullopt.
// First improvement comes from the daemon: as soon as a neighbour beats the champion it is promoted,
// and the next call climbs from it.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "tuner/neighbours.hpp"
#include "tuner/strategy.hpp"

namespace attn {
namespace {

class LocalStrategy final : public Strategy {
 public:
  LocalStrategy(std::uint64_t seed, LocalSearchOptions options) : rng_(seed), options_(options) {}

  std::optional<Proposal> next(const SearchState& state) override {
    const auto& space = state.space();
    const auto& ranked = state.ranked();
    if (ranked.empty() && !state.seen(space.default_config()) && !space.check(space.default_config()))
      return Proposal{space.default_config(), "template default (start of local search)"};

    // Bases: the champion, then the successful configs best first (labels built only when used).
    const auto champion = state.champion();
    std::vector<const RankedView::Entry*> bases;
    if (champion) bases.push_back(&*state.results().find(champion->config));
    for (const auto& r : ranked)
      if (!champion || r.first != champion->config) bases.push_back(&r);
    auto label = [&](const RankedView::Entry& base) {
      if (champion && base.first == champion->config) return fmt::format("champion iter {}", champion->iter);
      return fmt::format("iter {} ({:.4f} ms; restart from the best not-yet-expanded config)", base.second.iter,
                         *base.second.score_ms);
    };

    for (const auto* base : bases) {
      if (expanded_.count(base->first)) continue;
      const auto idx = space.indices_of(base->first);
      if (!idx) {  // recorded under an older space: no neighbourhood here
        expanded_.insert(base->first);
        continue;
      }
      bool any_pending = false;
      const int max_k = options_.two_parameter_moves ? 2 : 1;
      for (int k = 1; k <= max_k; ++k) {
        auto moves = detail::neighbours(space, *idx, k);
        std::shuffle(moves.begin(), moves.end(), rng_);
        for (const auto& m : moves) {
          Config c = space.config_at(m);
          if (state.pending(c)) {
            any_pending = true;
            continue;
          }
          if (state.evaluated(c) || space.check(c)) continue;
          return Proposal{c, fmt::format("{} from {}", detail::describe_change(base->first, c), label(*base))};
        }
      }
      // Pending neighbours may be cancelled, so only a fully evaluated neighbourhood is final.
      if (!any_pending) expanded_.insert(base->first);
    }

    if (auto c = detail::random_unseen(state, rng_))
      return Proposal{*c, "random restart (every evaluated config's neighbourhood is exhausted)"};
    return std::nullopt;
  }

  std::string name() const override { return "local"; }

 private:
  std::mt19937_64 rng_;
  LocalSearchOptions options_;
  std::set<Config> expanded_;
};

}  // namespace

std::unique_ptr<Strategy> make_local_strategy(std::uint64_t seed, LocalSearchOptions options) {
  return std::make_unique<LocalStrategy>(seed, options);
}

}  // namespace attn
