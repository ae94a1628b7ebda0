// The seeded, bounded strategy of an idea's tuning (tuner/strategy.hpp: make_seeded_strategy).
#include <stdexcept>

#include "tuner/strategy.hpp"

namespace attn {
namespace {

class SeededStrategy final : public Strategy {
 public:
  SeededStrategy(std::vector<Proposal> seeds, std::unique_ptr<Strategy> then, std::size_t budget)
      : seeds_(std::move(seeds)), then_(std::move(then)), budget_(budget) {
    if (!then_) throw std::invalid_argument("make_seeded_strategy: no strategy to go on with");
  }
  std::optional<Proposal> next(const SearchState& state) override {
    if (issued_ >= budget_) return std::nullopt;
    while (next_seed_ < seeds_.size()) {
      Proposal p = seeds_[next_seed_++];
      if (state.seen(p.config) || state.space().check(p.config)) continue;
      ++issued_;
      return p;
    }
    auto p = then_->next(state);
    if (p) ++issued_;
    return p;
  }
  std::string name() const override { return "seeded+" + then_->name(); }

 private:
  std::vector<Proposal> seeds_;
  std::unique_ptr<Strategy> then_;
  std::size_t budget_, issued_ = 0, next_seed_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_seeded_strategy(std::vector<Proposal> seeds, std::unique_ptr<Strategy> then,
                                               std::size_t budget) {
  return std::make_unique<SeededStrategy>(std::move(seeds), std::move(then), budget);
}

}  // namespace attn
