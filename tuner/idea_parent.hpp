// The parent of the next idea (docs/ideas.md, "Which template is the parent"): one rule for the daemon (which
// applies a queued idea to it and judges the idea against it), `idea context` (whose template/ is it) and `idea
// check --db` (which checks against it). Pure: the callers read the DB and the templates.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "db/store.hpp"
#include "tuner/space.hpp"

namespace attn {

/// A win of an idea lineage written into a repository template's source by `attn-tuner idea land` (docs/ideas.md,
/// "Land the wins"): one element of the template JSON's "landed" list, in the order landed. The idea's hash is its
/// identity in any DB (of its Template, Space, Default and diff: proposer/idea_file.hpp); the rest says where it
/// was judged.
struct LandedIdea {
  std::string idea_hash;      ///< IdeaRecord::idea_hash
  std::string template_name;  ///< the DB's template of the win ("fa3_tma_p42"), JSON key "template"
  std::int64_t idea = 0;      ///< its id in that DB
  std::string file;           ///< the idea file's name
  std::string suite;          ///< the suite of the verdict
};

/// The "landed" list of `space`'s JSON file ([{"idea_hash", "template", "idea", "file", "suite"}]); empty when it has
/// none. Throws std::invalid_argument naming the file for an element without an idea_hash or template.
std::vector<LandedIdea> landed_ideas(const TemplateSpace& space);

/// How many of the parent's best configs the daemon tunes an idea from first, after the parent's champion
/// (`attn-tuner run --idea-top`'s default); the kit's parent.json lists as many.
inline constexpr std::size_t kIdeaTopConfigs = 4;

/// What the rule knows of a template: whether the caller can build it (the daemon: it is in the search; a DB
/// reader: a repository template, or a proposal row with its files) and its parameter names.
struct ParentCandidate {
  std::set<std::string> parameters;
};

/// The parent of the next idea written against a repository template.
struct IdeaParent {
  /// The template whose files the idea is applied to and written against: the repository template itself
  /// when every win of its lineage is landed in its source (or it has no win), else the DB's template of the
  /// latest win.
  std::string code;
  /// The template whose measured configs stand for the parent (its best config is the A/B/A parent and the
  /// idea's first seed; IdeaRecord::parent_template): `code`, or, when `code` is the repository template with
  /// the lineage landed, the latest win's DB template if it has the same parameters (the landed axes keep the
  /// parent's value as default, so every config of the win's template is a config of the landed source that
  /// builds the same kernel: its rows are the landed template's measurements).
  std::string measured;
  /// The lineage's wins on the suite, newest first (their DB templates), and the ids of their ideas.
  std::vector<std::string> wins;
  std::vector<std::int64_t> win_ideas;
  bool landed = false;  ///< every win of the lineage is in the repository template's source
  std::string why;      ///< one line for people
};

/// The ideas of `ideas` recorded by runs of `suite` (a verdict holds for the suite it was measured on, and so
/// does a lineage of wins), in `ideas`' order.
std::vector<IdeaRecord> ideas_on_suite(const std::vector<IdeaRecord>& ideas, const std::vector<RunRecord>& runs,
                                       const std::string& suite);

/// The parent of the next idea written against repository template `root`, from the ideas judged on one suite
/// (`suite_ideas`, ideas_on_suite, oldest first), the hashes of the ideas landed in `root`'s source
/// (TemplateSpace::landed) and `candidate`, which says whether a template can be built (nullopt: not) and its
/// parameters. The lineage: the latest idea with verdict win whose template descends from `root` and can be
/// built, then its parent's win, and so on back to `root`. None when `root` itself cannot be built.
std::optional<IdeaParent> idea_parent(const std::vector<IdeaRecord>& suite_ideas, const std::string& root,
                                      const std::set<std::string>& landed_hashes,
                                      const std::function<std::optional<ParentCandidate>(const std::string&)>& candidate);

/// The decision on one queued idea: judged, or skipped for an earlier verdict (docs/ideas.md, "No re-run").
struct RerunDecision {
  bool judge = true;
  /// The latest verdict on this parent that this judgment repeats (a row of `ideas`); none for a first judgment here.
  std::optional<std::int64_t> repeat_of;
  /// Why it is skipped: the line the daemon and `idea check` say ("idea x.idea: already judged no_gain on fa3_tma_p59
  /// on full (idea 60)...").
  std::string skip_note;
  /// The verdict it is skipped for (set when judge is false).
  std::optional<IdeaRecord> skipped_for;
};

/// The one rule for whether the daemon judges the idea `hash` of file `file` on `parent` (IdeaParent::measured), with
/// the file's `retry` (Retry: yes) and `verdicts` (Verdicts: N, at least 1): `suite_ideas` holds the ideas judged on
/// suite `suite` (ideas_on_suite), oldest first; rows of other hashes and rows not done are passed over. An idea is its
/// hash: judged again on `parent` while it has fewer than `verdicts` verdicts there (a second look, which measures how
/// far a verdict reproduces); judged on `parent` for the first time unless it has a verdict on another parent and no
/// `retry`. Used by the daemon (daemon/idea_bench.cpp) and by `idea check --db` (already_judged).
RerunDecision decide_rerun(const std::vector<IdeaRecord>& suite_ideas, const std::string& hash, const std::string& parent,
                           bool retry, int verdicts, const std::string& file, const std::string& suite);

}  // namespace attn
