// load_champion_template: the champion's row, variant and template from the DB (proposer/champion_template.hpp).
#include "proposer/champion_template.hpp"

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "db/suite_choice.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {

std::string champion_suite(ExperimentDb& db, const std::string& requested) {
  // The read commands' one suite rule (db/suite_choice.hpp); its note, where it picked among several, on stderr.
  const SuiteChoice choice = resolve_suite(db, requested);
  if (!choice.note.empty()) fmt::print(stderr, "{}\n", choice.note);
  return choice.suite;
}

ChampionTemplate load_champion_template(ExperimentDb& db, const std::string& suite_requested,
                                        const std::string& templates_dir, const std::string& dir) {
  const std::string suite = champion_suite(db, suite_requested);
  const auto rec = db.champion(suite, ChampionScope::overall);
  if (!rec) throw std::invalid_argument(fmt::format("{}: no overall champion for suite '{}'", db.path(), suite));
  auto it = db.iteration(rec->iteration_id);
  if (!it) throw std::invalid_argument(fmt::format("{}: the champion's iteration {} is missing", db.path(), rec->iteration_id));
  std::optional<VariantRecord> variant;
  if (it->variant_id) variant = db.variant(*it->variant_id);
  std::optional<ProposalRecord> proposal = db.proposal_by_template(it->template_name);
  std::optional<TemplateSpace> space;
  try {
    space = proposal ? TemplateSpace::load(write_proposal_template(*proposal, dir))
                     : TemplateSpace::load_named(templates_dir, it->template_name);
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format("{}: the champion's template '{}' is not usable from {}: {}", db.path(),
                                            it->template_name,
                                            proposal ? fmt::format("proposal {} in the DB", proposal->id) : templates_dir,
                                            e.what()));
  }
  Config config = space->complete(config_from_json(it->params_json));
  return ChampionTemplate{suite, std::move(*it), std::move(variant), std::move(proposal), std::move(*space),
                          std::move(config)};
}

}  // namespace attn
