// Evolutionary strategy: the best `population` successful configs are the parents' pool; a child is
// two tournament winners' uniform crossover, with one parameter moved to an adjacent value at
// `mutation_rate` (always when the crossover alone reproduces a parent). Seen or invalid children are
// rejected; after `max_retries` rejections the mutation widens: one tournament winner with 2, 3, ..
// `max_mutations` parameters moved, `max_retries` tries each (a long run has seen the pool's one-step
// children: without the widening it would propose random samples most of the time). Only then, or
// while fewer than two parents exist, a random valid unseen config is proposed instead.
#include <algorithm>

#include <fmt/format.h>

#include "tuner/neighbours.hpp"
#include "tuner/strategy.hpp"

namespace attn {
namespace {

class EvolutionaryStrategy final : public Strategy {
 public:
  EvolutionaryStrategy(std::uint64_t seed, EvolutionaryOptions options) : rng_(seed), options_(options) {
    options_.population = std::max<std::size_t>(options_.population, 2);
    options_.tournament = std::max<std::size_t>(options_.tournament, 1);
  }

  std::optional<Proposal> next(const SearchState& state) override {
    const auto& space = state.space();
    struct Member {
      Config config;
      std::vector<std::size_t> idx;
      std::int64_t iter;
    };
    std::vector<Member> pool;  // best first
    for (const auto& [c, o] : state.ranked()) {
      if (pool.size() == options_.population) break;
      if (auto idx = space.indices_of(c)) pool.push_back({c, std::move(*idx), o.iter});
    }
    const auto champion = state.champion();
    auto versus_champion = [&](const Config& c) {
      if (!champion) return std::string();
      return fmt::format("; vs champion iter {}: {}", champion->iter, detail::describe_change(champion->config, c));
    };

    if (pool.size() < 2) {
      if (state.results().empty() && !state.seen(space.default_config()) && !space.check(space.default_config()))
        return Proposal{space.default_config(), "template default (seeds the population)"};
      if (auto c = detail::random_unseen(state, rng_))
        return Proposal{*c, fmt::format("random sample (population {}/{}, seeding)", pool.size(),
                                        options_.population)};
      return std::nullopt;
    }

    std::uniform_int_distribution<std::size_t> any(0, pool.size() - 1);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    auto tournament = [&] {
      std::size_t best = any(rng_);
      for (std::size_t t = 1; t < options_.tournament; ++t) best = std::min(best, any(rng_));
      return best;  // the pool is sorted best first
    };
    for (std::size_t attempt = 0; attempt < options_.max_retries; ++attempt) {
      const std::size_t a = tournament();
      std::size_t b = tournament();
      for (int t = 0; t < 4 && b == a; ++t) b = tournament();
      auto child = pool[a].idx;
      for (std::size_t i = 0; i < child.size(); ++i)
        if (unit(rng_) < 0.5) child[i] = pool[b].idx[i];
      const Config crossed = space.config_at(child);
      std::string mutation;
      if (unit(rng_) < options_.mutation_rate || child == pool[a].idx || child == pool[b].idx) {
        if (detail::mutate_adjacent(space, child, rng_))
          mutation = fmt::format(", mutated {}", detail::describe_change(crossed, space.config_at(child)));
      }
      Config c = space.config_at(child);
      if (state.seen(c) || space.check(c)) continue;
      return Proposal{c, fmt::format("crossover of iter {} x iter {}{}{}", pool[a].iter, pool[b].iter, mutation,
                                     versus_champion(c))};
    }
    for (std::size_t width = 2; width <= options_.max_mutations; ++width)
      for (std::size_t attempt = 0; attempt < options_.max_retries; ++attempt) {
        const std::size_t a = tournament();
        auto child = pool[a].idx;
        for (std::size_t m = 0; m < width; ++m) detail::mutate_adjacent(space, child, rng_);
        Config c = space.config_at(child);
        if (state.seen(c) || space.check(c)) continue;
        return Proposal{c, fmt::format("iter {} mutated {} times ({}; no new child with one in {} tries){}",
                                       pool[a].iter, width, detail::describe_change(pool[a].config, c),
                                       options_.max_retries, versus_champion(c))};
      }
    if (auto c = detail::random_unseen(state, rng_))
      return Proposal{*c, fmt::format("random sample (no new valid child in {} tries with up to {} parameters moved)",
                                      options_.max_retries, options_.max_mutations)};
    return std::nullopt;
  }

  std::string name() const override { return "evolutionary"; }

 private:
  std::mt19937_64 rng_;
  EvolutionaryOptions options_;
};

}  // namespace

std::unique_ptr<Strategy> make_evolutionary_strategy(std::uint64_t seed, EvolutionaryOptions options) {
  return std::make_unique<EvolutionaryStrategy>(seed, options);
}

}  // namespace attn
