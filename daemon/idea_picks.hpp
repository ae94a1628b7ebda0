// The idea bench's choices of configs, as pure functions of the searches (docs/ideas.md, "What the daemon does with
// one"): what an idea adds to its parent, the configs it is tuned from, and the contenders it is judged on.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "db/store.hpp"
#include "tuner/search_state.hpp"
#include "tuner/strategy.hpp"

namespace attn::tuning {

/// The values an idea adds to its parent's space: a new axis' values but its default, values added to an existing
/// axis. A config runs the idea's code only when it uses one; none: every config runs it (a plain code change).
using NewValues = std::map<std::string, std::set<std::int64_t>>;

/// What idea space `idea` adds to `parent`.
NewValues idea_new_values(const TemplateSpace& parent, const TemplateSpace& idea);
/// Whether config `c` runs the idea (uses one of `added`, or `added` is empty).
bool idea_active(const NewValues& added, const Config& c);
/// `base` completed in the idea's `space`, first with each value the idea adds ("P=v"), then as it is ("").
std::vector<std::pair<Config, std::string>> idea_variants(const NewValues& added, const TemplateSpace& space,
                                                          const Config& base);
/// The configs an idea is tuned from first: its parent's champion and its `top` best configs (of `parent`), each with
/// every value the idea adds, then as it is (the control).
std::vector<Proposal> idea_seeds(const SearchState& parent, const TemplateSpace& space, const NewValues& added,
                                 std::size_t top);

/// What an idea's judging starts from, copied out of the searches.
struct IdeaPick {
  Champion parent_best;            ///< the parent's best config now
  Champion best;                   ///< the idea's fastest config with the idea on
  std::optional<Champion> paired;  ///< the parent's best config with the idea's values on: its fastest valid look
  std::string inactive_note;       ///< "; its fastest config overall (...) has the idea off", or ""
};

/// The contenders of an idea, or its verdict when there are none.
struct IdeaPickOutcome {
  std::size_t configs = 0;        ///< configs of the idea's template with a result
  std::optional<IdeaPick> pick;   ///< none: no config with the idea on has a valid whole-suite result
  IdeaVerdict verdict = IdeaVerdict::no_gain;  ///< without a pick: no_gain (none ran the idea) or broken
  IdeaBrokenKind kind = IdeaBrokenKind::none;  ///< broken: the most frequent failure of its configs with the idea on
  std::string reason;                          ///< without a pick: why
};

/// The idea's contenders (tuned `idea`, its parent `parent` with a champion): its fastest config that runs the idea (a
/// config with every new value off is the parent's code: a lead there would be the parent's own tuning noise), and
/// the paired config, the parent's best with the idea's values on and every old axis as it is (its difference to the
/// parent is the idea's code alone).
IdeaPickOutcome pick_idea_contenders(const SearchState& idea, const SearchState& parent, const NewValues& added);

}  // namespace attn::tuning
