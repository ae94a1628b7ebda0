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

void SearchState::record_all(std::vector<std::pair<Config, Outcome>> history) {
  // The configs' order: std::map's (their (name, value) pairs compared in turn), computed on the values alone for
  // two configs with the same names (in a template's history, nearly all of them).
  const std::size_t n = history.size();
  std::vector<std::size_t> shape(n);                 // configs with one list of names share a shape
  std::vector<std::vector<std::string>> shapes;
  std::vector<std::size_t> first(n + 1, 0);          // config i's values: values[first[i] .. first[i + 1])
  std::vector<std::int64_t> values;
  for (std::size_t i = 0; i < n; ++i) {
    const Config& c = history[i].first;
    std::size_t s = 0;
    for (; s < shapes.size(); ++s) {
      const auto& names = shapes[s];
      if (names.size() != c.size()) continue;
      auto it = c.begin();
      std::size_t k = 0;
      while (k < names.size() && it->first == names[k]) ++k, ++it;
      if (k == names.size()) break;
    }
    if (s == shapes.size()) {
      shapes.emplace_back();
      for (const auto& [name, v] : c) shapes.back().push_back(name);
    }
    shape[i] = s;
    for (const auto& [name, v] : c) values.push_back(v);
    first[i + 1] = values.size();
  }
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (shape[a] != shape[b]) return history[a].first < history[b].first;
    return std::lexicographical_compare(values.begin() + first[a], values.begin() + first[a + 1],
                                        values.begin() + first[b], values.begin() + first[b + 1]);
  });
  auto same = [&](std::size_t a, std::size_t b) {
    return shape[a] == shape[b] ? std::equal(values.begin() + first[a], values.begin() + first[a + 1],
                                             values.begin() + first[b], values.begin() + first[b + 1])
                                : history[a].first == history[b].first;
  };
  const bool fresh = results_.empty();
  for (std::size_t k = 0; k < n; ++k) {
    if (k + 1 < n && same(order[k], order[k + 1])) continue;  // a later record of the same config follows
    auto& [c, outcome] = history[order[k]];
    if (!fresh) {  // configs recorded before: one at a time
      record(c, std::move(outcome));
      continue;
    }
    if (!pending_.empty() && pending_.erase(c) != 0) {
      // Pending: counted as seen already.
    } else if (!space_.check(c)) {
      ++seen_valid_;
    }
    results_.emplace_hint(results_.end(), std::move(c), std::move(outcome));
  }
  if (!fresh) return;
  auto& items = ranked_.items_;
  items.clear();
  for (const auto& entry : results_)
    if (entry.second.ok()) items.push_back(&entry);
  std::sort(items.begin(), items.end(), ranks_before);
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
