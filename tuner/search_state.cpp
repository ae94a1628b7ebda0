// SearchState: results, pending proposals and champion of one template.
#include "tuner/search_state.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {

SearchState::SearchState(TemplateSpace space) : space_(std::move(space)), valid_(space_.enumerate()) {}

void SearchState::on_first_seen(const Config& c) {
  if (!space_.check(c)) ++seen_valid_;
}

void SearchState::record(const Config& c, Outcome outcome) {
  if (!seen(c)) on_first_seen(c);
  pending_.erase(c);
  results_[c] = std::move(outcome);
}

void SearchState::mark_pending(const Config& c) {
  if (!seen(c)) on_first_seen(c);
  pending_.insert(c);
}

void SearchState::cancel_pending(const Config& c) {
  if (pending_.erase(c) != 0 && !evaluated(c) && !space_.check(c)) --seen_valid_;
}

std::vector<std::pair<Config, Outcome>> SearchState::ranked() const {
  std::vector<std::pair<Config, Outcome>> out;
  for (const auto& [c, o] : results_)
    if (o.ok()) out.emplace_back(c, o);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (*a.second.score_ms != *b.second.score_ms) return *a.second.score_ms < *b.second.score_ms;
    return a.second.iter < b.second.iter;
  });
  return out;
}

void SearchState::set_champion(const Config& c) {
  auto it = results_.find(c);
  if (it == results_.end())
    throw std::invalid_argument(
        fmt::format("template {}: champion {} was never recorded", template_name(), config_to_compact(c)));
  if (!it->second.ok())
    throw std::invalid_argument(fmt::format("template {}: champion {} has no score (it failed: {})",
                                            template_name(), config_to_compact(c), it->second.failure));
  champion_ = c;
}

std::optional<Champion> SearchState::champion() const {
  if (!champion_) return std::nullopt;
  const auto& o = results_.at(*champion_);
  return Champion{*champion_, o.iter, *o.score_ms};
}

}  // namespace attn
