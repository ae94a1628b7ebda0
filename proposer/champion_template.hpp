// The overall champion of a DB and its template, as export reads them (export/db_variant.hpp): a repository
// template from the templates folder, a proposal's or an idea's template (its lineage) written back out of
// the DB. `idea check --db`, `idea context` and the idea agent start from it.
#pragma once
#include <optional>
#include <string>

#include "db/store.hpp"
#include "tuner/space.hpp"

namespace attn {

/// A DB's overall champion with its template.
struct ChampionTemplate {
  std::string suite;
  IterationRecord champion;               ///< with its per-case results
  std::optional<VariantRecord> variant;   ///< its compiled variant (registers, spills, log, cubin path)
  std::optional<ProposalRecord> proposal; ///< the proposal row of its template (none: a repository template)
  TemplateSpace space;                    ///< the template, loadable and compilable
  Config config;                          ///< the champion's config
};

/// The suite `requested`, else the only suite with an overall champion. Throws std::invalid_argument when
/// the DB has no champion, or champions of several suites and none was requested.
std::string champion_suite(ExperimentDb& db, const std::string& requested);

/// The overall champion of `suite` ("": champion_suite) and its template: a proposal's template is written
/// into `dir` (made when missing), a repository template is loaded from `templates_dir`. Throws
/// std::invalid_argument naming the DB and the problem (no champion, a template not usable).
ChampionTemplate load_champion_template(ExperimentDb& db, const std::string& suite, const std::string& templates_dir,
                                        const std::string& dir);

}  // namespace attn
