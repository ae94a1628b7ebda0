// SearchState: results, pending proposals and champion of one template.
#include "tuner/search_state.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {

ValidConfigs::ValidConfigs(const TemplateSpace& space) {
  const auto& params = space.parameters();
  for (const auto& p : params) {
    names_.push_back(p.name);
    values_.push_back(p.values);
  }
  by_name_.resize(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) by_name_[i] = i;
  std::sort(by_name_.begin(), by_name_.end(), [&](std::size_t a, std::size_t b) { return names_[a] < names_[b]; });
  // Each value index takes bit_width(count - 1) bits; a field never straddles two words.
  unsigned used = 64;
  for (const auto& values : values_) {
    Field f;
    f.bits = static_cast<unsigned>(std::bit_width(values.size() - 1));
    if (f.bits > 0) {
      if (used + f.bits > 64) {
        ++words_per_config_;
        used = 0;
      }
      f.word = words_per_config_ - 1;
      f.shift = used;
      used += f.bits;
    }
    fields_.push_back(f);
  }
  std::vector<std::uint64_t> packed(words_per_config_);
  space.for_each_valid([&](const std::vector<std::size_t>& idx) {
    std::fill(packed.begin(), packed.end(), 0);
    for (std::size_t i = 0; i < idx.size(); ++i)
      if (fields_[i].bits) packed[fields_[i].word] |= static_cast<std::uint64_t>(idx[i]) << fields_[i].shift;
    words_.insert(words_.end(), packed.begin(), packed.end());
    ++size_;
  });
  words_.shrink_to_fit();
}

Config ValidConfigs::operator[](std::size_t i) const {
  const std::uint64_t* w = words_.data() + i * words_per_config_;
  Config c;
  for (const std::size_t k : by_name_) {  // sorted keys: each insertion lands at the end
    const Field& f = fields_[k];
    const std::uint64_t mask = f.bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << f.bits) - 1;
    const auto v = f.bits ? static_cast<std::size_t>((w[f.word] >> f.shift) & mask) : std::size_t{0};
    c.emplace_hint(c.end(), names_[k], values_[k][v]);
  }
  return c;
}

SearchState::SearchState(TemplateSpace space) : space_(std::move(space)), valid_(space_) {}

void SearchState::on_first_seen(const Config& c) {
  if (!space_.check(c)) ++seen_valid_;
}

namespace {
/// RankedView's order: score, then iter.
bool ranks_before(const RankedView::Entry* a, const RankedView::Entry* b) {
  if (*a->second.score_ms != *b->second.score_ms) return *a->second.score_ms < *b->second.score_ms;
  return a->second.iter < b->second.iter;
}
}  // namespace

void SearchState::record(const Config& c, Outcome outcome) {
  if (!seen(c)) on_first_seen(c);
  pending_.erase(c);
  auto& items = ranked_.items_;
  auto [it, inserted] = results_.try_emplace(c, outcome);
  const RankedView::Entry* node = &*it;
  if (!inserted) {
    if (it->second.ok()) {  // a re-timing replaces the entry: take the old one out of the order first
      auto pos = std::lower_bound(items.begin(), items.end(), node, ranks_before);
      while (pos != items.end() && *pos != node) ++pos;
      if (pos != items.end()) items.erase(pos);
    }
    it->second = std::move(outcome);
  }
  if (it->second.ok()) items.insert(std::upper_bound(items.begin(), items.end(), node, ranks_before), node);
}

void SearchState::mark_pending(const Config& c) {
  if (!seen(c)) on_first_seen(c);
  pending_.insert(c);
}

void SearchState::cancel_pending(const Config& c) {
  if (pending_.erase(c) != 0 && !evaluated(c) && !space_.check(c)) --seen_valid_;
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
