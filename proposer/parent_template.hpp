// The parent of the next idea as a DB reader sees it (`idea context`, `idea check --db`, `idea land`): the rule of
// tuner/idea_parent.hpp over the DB's ideas and templates (a repository template from the templates folder, an
// idea's template written out of its proposal row), with the parent's best config on the suite, the one the
// daemon seeds an idea with first.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "db/store.hpp"
#include "tuner/idea_parent.hpp"
#include "tuner/space.hpp"

namespace attn {

/// The parent of the next idea of a DB's suite, loadable.
struct ParentTemplate {
  std::string suite;
  IdeaParent rule;                           ///< which template, and why
  TemplateSpace space;                       ///< rule.code's template, compilable
  std::optional<IterationRecord> best;       ///< rule.measured's best whole-suite iteration on the suite
  Config config;                             ///< its config completed in `space` (the parent's default without one)
};

/// The ideas landed in the repository templates of `templates_dir` (every <name>.json that loads): idea hash ->
/// the template it is landed in. Templates that do not load are skipped.
std::map<std::string, std::string> landed_in_templates(const std::string& templates_dir);

/// The best whole-suite (keep or discard with a geomean) iterations of `template_name` on `suite`, one per config
/// (its fastest), fastest first, at most `n`. Throws std::invalid_argument for a template name that is not an
/// identifier.
std::vector<IterationRecord> top_of_template(ExperimentDb& db, const std::string& suite, const std::string& template_name,
                                             std::size_t n);

/// The first of top_of_template; none without one.
std::optional<IterationRecord> best_of_template(ExperimentDb& db, const std::string& suite, const std::string& template_name);

/// The parent of the next idea written against repository template `root` on `suite` (idea_parent over the ideas
/// of the suite's runs; a DB template can be built when its proposal row holds its files, `root` when
/// `templates_dir` has it, its landed wins read from there). A DB template is written into `dir` (made when
/// missing). Throws std::invalid_argument naming the problem (no such root, a template that does not load).
ParentTemplate load_parent_template(ExperimentDb& db, const std::string& suite, const std::string& root,
                                    const std::string& templates_dir, const std::string& dir);

}  // namespace attn
