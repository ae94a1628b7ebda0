// Exhaustive strategy: odometer order over the valid configs, skipping seen ones.
#include <fmt/format.h>

#include "tuner/strategy.hpp"

namespace attn {
namespace {

class ExhaustiveStrategy final : public Strategy {
 public:
  std::optional<Proposal> next(const SearchState& state) override {
    const auto& valid = state.valid_configs();
    if (state.unseen_count() == 0) return std::nullopt;
    // Results only grow, so everything before the first unevaluated config stays evaluated.
    while (cursor_ < valid.size() && state.evaluated(valid[cursor_])) ++cursor_;
    for (std::size_t i = cursor_; i < valid.size(); ++i) {
      if (state.seen(valid[i])) continue;
      return Proposal{valid[i], fmt::format("exhaustive {}/{}", i + 1, valid.size())};
    }
    return std::nullopt;
  }
  std::string name() const override { return "exhaustive"; }

 private:
  std::size_t cursor_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive_strategy() { return std::make_unique<ExhaustiveStrategy>(); }

}  // namespace attn
