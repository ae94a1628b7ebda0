// The idea bench's choices of configs (daemon/idea_picks.hpp).
#include "daemon/idea_picks.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace attn::tuning {

NewValues idea_new_values(const TemplateSpace& parent, const TemplateSpace& idea) {
  NewValues added;
  for (const auto& p : idea.parameters()) {
    const auto pp = std::find_if(parent.parameters().begin(), parent.parameters().end(),
                                 [&](const Parameter& q) { return q.name == p.name; });
    for (const auto v : p.values) {
      const bool is_new = pp == parent.parameters().end() ? v != idea.default_config().at(p.name)
                                                          : std::find(pp->values.begin(), pp->values.end(), v) == pp->values.end();
      if (is_new) added[p.name].insert(v);
    }
  }
  return added;
}

bool idea_active(const NewValues& added, const Config& c) {
  if (added.empty()) return true;
  for (const auto& [p, values] : added)
    if (const auto v = c.find(p); v != c.end() && values.count(v->second)) return true;
  return false;
}

std::vector<std::pair<Config, std::string>> idea_variants(const NewValues& added, const TemplateSpace& space,
                                                          const Config& base) {
  std::vector<std::pair<Config, std::string>> out;
  const Config c = space.complete(base);
  for (const auto& [p, values] : added)
    for (const auto v : values) {
      Config on = c;
      on[p] = v;
      out.emplace_back(std::move(on), fmt::format("{}={}", p, v));
    }
  out.emplace_back(c, "");
  return out;
}

std::vector<Proposal> idea_seeds(const SearchState& parent, const TemplateSpace& space, const NewValues& added,
                                 std::size_t top) {
  std::vector<std::pair<Config, std::string>> bases;
  if (const auto c = parent.champion()) bases.emplace_back(c->config, fmt::format("parent's champion (iter {})", c->iter));
  for (const auto& [c, outcome] : parent.ranked()) {
    if (bases.size() > top) break;
    if (std::none_of(bases.begin(), bases.end(), [&](const auto& b) { return b.first == c; }))
      bases.emplace_back(c, fmt::format("parent's iter {}", outcome.iter));
  }
  std::vector<Proposal> seeds;
  for (const auto& [base, what] : bases)
    for (const auto& [c, change] : idea_variants(added, space, base))
      seeds.push_back({c, "idea: " + what + (change.empty() ? "" : ", " + change)});
  return seeds;
}

IdeaPickOutcome pick_idea_contenders(const SearchState& idea, const SearchState& parent, const NewValues& added) {
  IdeaPickOutcome out;
  out.configs = idea.results().size();
  std::optional<Champion> best;
  for (const auto& [c, o] : idea.ranked())
    if (idea_active(added, c)) {
      best = Champion{c, o.iter, *o.score_ms};
      break;
    }
  if (!best) {
    std::map<FailureKind, int> kinds;
    std::size_t active = 0;
    for (const auto& [c, o] : idea.results())
      if (idea_active(added, c)) {
        ++active;
        if (const auto k = failure_kind_from_string(o.failure); !o.ok() && k) ++kinds[*k];
      }
    if (!active) {
      out.reason = fmt::format("none of its {} configs ran the idea (every new value off)", out.configs);
      return out;
    }
    int n = 0;
    out.verdict = IdeaVerdict::broken;
    out.kind = IdeaBrokenKind::crash;
    for (const auto& [k, count] : kinds)
      if (count > n) out.kind = idea_broken_kind(k), n = count;
    out.reason = fmt::format("none of its {} configs with the idea on gave a valid whole-suite result ({} of them: {})",
                             active, n, to_string(out.kind));
    return out;
  }
  IdeaPick pick{parent.champion().value(), *best, std::nullopt, ""};
  if (const auto overall = idea.champion(); overall && !idea_active(added, overall->config) && overall->score_ms < best->score_ms)
    pick.inactive_note = fmt::format("; its fastest config overall (iter {}, {:.4f} ms) has the idea off", overall->iter,
                                     overall->score_ms);
  // The idea's fastest config may differ from the paired one in the old axes (a retuning, or the luckiest of a few
  // noisy looks); both are timed between the two looks at the parent.
  for (const auto& [c, change] : idea_variants(added, idea.space(), pick.parent_best.config)) {
    const auto r = idea.results().find(c);
    if (change.empty() || r == idea.results().end() || !r->second.ok()) continue;
    if (!pick.paired || *r->second.score_ms < pick.paired->score_ms) pick.paired = Champion{c, r->second.iter, *r->second.score_ms};
  }
  out.pick = std::move(pick);
  return out;
}

}  // namespace attn::tuning
