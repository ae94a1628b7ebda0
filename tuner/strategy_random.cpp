// Random strategy: uniform over the valid configs not yet seen.
#include <fmt/format.h>

#include "tuner/strategy.hpp"

namespace attn {
namespace {

class RandomStrategy final : public Strategy {
 public:
  explicit RandomStrategy(std::uint64_t seed) : rng_(seed) {}

  std::optional<Proposal> next(const SearchState& state) override {
    const std::size_t left = state.unseen_count();
    auto c = detail::random_unseen(state, rng_);
    if (!c) return std::nullopt;
    return Proposal{*c, fmt::format("random sample ({} of {} valid configs left)", left,
                                    state.valid_configs().size())};
  }
  std::string name() const override { return "random"; }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<Strategy> make_random_strategy(std::uint64_t seed) {
  return std::make_unique<RandomStrategy>(seed);
}

}  // namespace attn
