// MultiSearch: round-robin over several templates' strategies.
#include "tuner/multi_search.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attn {

void MultiSearch::add(TemplateSpace space, std::unique_ptr<Strategy> strategy) {
  if (!strategy) throw std::invalid_argument(fmt::format("template {}: no strategy given", space.name()));
  for (const auto& e : entries_)
    if (e.state.template_name() == space.name())
      throw std::invalid_argument(fmt::format("template {} is added twice", space.name()));
  entries_.push_back(Entry{SearchState(std::move(space)), std::move(strategy), false});
}

std::optional<TemplateProposal> MultiSearch::next_preferred() {
  if (preferred_.empty()) return std::nullopt;
  auto& e = entries_[find(preferred_)];
  if (e.retired) return std::nullopt;
  auto p = e.strategy->next(e.state);
  e.exhausted = !p;
  if (!p) return std::nullopt;
  return TemplateProposal{e.state.template_name(), std::move(*p)};
}

std::optional<TemplateProposal> MultiSearch::next() {
  if (auto p = next_preferred()) return p;
  for (std::size_t k = 0; k < entries_.size(); ++k) {
    const std::size_t i = (turn_ + k) % entries_.size();
    auto& e = entries_[i];
    if (e.retired) continue;
    auto p = e.strategy->next(e.state);
    e.exhausted = !p;
    if (p) {
      turn_ = (i + 1) % entries_.size();
      return TemplateProposal{e.state.template_name(), std::move(*p)};
    }
  }
  return std::nullopt;
}

std::size_t MultiSearch::find(const std::string& template_name) const {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].state.template_name() == template_name) return i;
  throw std::invalid_argument(
      fmt::format("unknown template \"{}\" (tuning: {})", template_name, fmt::join(template_names(), ", ")));
}

SearchState& MultiSearch::state(const std::string& template_name) { return entries_[find(template_name)].state; }
const SearchState& MultiSearch::state(const std::string& template_name) const {
  return entries_[find(template_name)].state;
}

std::vector<std::string> MultiSearch::template_names() const {
  std::vector<std::string> names;
  for (const auto& e : entries_) names.push_back(e.state.template_name());
  return names;
}

void MultiSearch::retire(const std::string& template_name) { entries_[find(template_name)].retired = true; }
bool MultiSearch::retired(const std::string& template_name) const { return entries_[find(template_name)].retired; }
void MultiSearch::prefer(const std::string& template_name) {
  if (!template_name.empty()) find(template_name);
  preferred_ = template_name;
}
void MultiSearch::set_strategy(const std::string& template_name, std::unique_ptr<Strategy> strategy) {
  if (!strategy) throw std::invalid_argument(fmt::format("template {}: no strategy given", template_name));
  auto& e = entries_[find(template_name)];
  e.strategy = std::move(strategy);
  e.exhausted = false;
}
bool MultiSearch::exhausted(const std::string& template_name) const { return entries_[find(template_name)].exhausted; }

}  // namespace attn
