// load_parent_template: the rule of tuner/idea_parent.hpp over a DB (proposer/parent_template.hpp).
#include "proposer/parent_template.hpp"

#include <filesystem>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proposer/idea_check.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {
namespace fs = std::filesystem;

std::map<std::string, std::string> landed_in_templates(const std::string& templates_dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(templates_dir, ec)) {
    if (e.path().extension() != ".json") continue;
    try {
      const TemplateSpace t = TemplateSpace::load(e.path().string());
      for (const auto& l : landed_ideas(t)) out.emplace(l.idea_hash, t.name());
    } catch (const std::invalid_argument&) {
      // not a template (or a broken one): nothing landed in it
    }
  }
  return out;
}

std::vector<IterationRecord> top_of_template(ExperimentDb& db, const std::string& suite, const std::string& t,
                                             std::size_t n) {
  static const std::regex name("[A-Za-z_][A-Za-z0-9_]*");
  if (!std::regex_match(t, name) || !std::regex_match(suite, std::regex("[A-Za-z0-9_.-]+")))
    throw std::invalid_argument(fmt::format("top_of_template: '{}' on '{}' is not a template and suite name", t, suite));
  const SqlResult r = db.sql_readonly(fmt::format(
      "SELECT id FROM (SELECT id, geomean_ms, ROW_NUMBER() OVER (PARTITION BY params_json ORDER BY geomean_ms, id) AS k "
      "FROM iterations WHERE template = '{}' AND suite = '{}' AND status IN ('keep', 'discard') AND geomean_ms IS NOT "
      "NULL) WHERE k = 1 ORDER BY geomean_ms, id LIMIT {}", t, suite, n));
  std::vector<IterationRecord> out;
  for (const auto& row : r.rows)
    if (row[0])
      if (auto it = db.iteration(std::stoll(*row[0]))) out.push_back(std::move(*it));
  return out;
}

std::optional<IterationRecord> best_of_template(ExperimentDb& db, const std::string& suite, const std::string& t) {
  auto top = top_of_template(db, suite, t, 1);
  if (top.empty()) return std::nullopt;
  return std::move(top.front());
}

ParentTemplate load_parent_template(ExperimentDb& db, const std::string& suite, const std::string& root,
                                    const std::string& templates_dir, const std::string& dir) {
  std::optional<TemplateSpace> repo;
  try {
    repo = TemplateSpace::load_named(templates_dir, root);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("the parent's repository template '{}': {}", root, e.what()));
  }
  std::map<std::string, ProposalRecord> proposals;
  for (auto& p : db.proposals())
    if (p.status == ProposalStatus::accepted && p.source && p.space_json && !p.template_name.empty())
      proposals.emplace(p.template_name, std::move(p));
  const auto candidate = [&](const std::string& t) -> std::optional<ParentCandidate> {
    ParentCandidate c;
    if (t == root) {
      for (const auto& p : repo->parameters()) c.parameters.insert(p.name);
      return c;
    }
    const auto it = proposals.find(t);
    if (it == proposals.end()) return std::nullopt;
    try {
      const auto j = nlohmann::json::parse(*it->second.space_json);
      for (const auto& [name, v] : j.at("parameters").items()) c.parameters.insert(name);
    } catch (const nlohmann::json::exception&) {
      return std::nullopt;  // a template whose space does not parse cannot be a parent
    }
    return c;
  };
  std::set<std::string> landed;
  for (const auto& l : landed_ideas(*repo)) landed.insert(l.idea_hash);
  const auto rule = idea_parent(ideas_on_suite(db.ideas(), db.runs(), suite), root, landed, candidate);
  if (!rule) throw std::invalid_argument(fmt::format("no parent for template {} on {}", root, suite));
  std::optional<TemplateSpace> space;
  if (rule->code == root) {
    space = std::move(*repo);
  } else {
    try {
      space = TemplateSpace::load(write_proposal_template(proposals.at(rule->code), dir));
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("{}: the parent's template '{}' (proposal {}) is not usable: {}", db.path(),
                                              rule->code, proposals.at(rule->code).id, e.what()));
    }
  }
  ParentTemplate out{suite, *rule, std::move(*space), best_of_template(db, suite, rule->measured), {}};
  out.config = out.space.default_config();
  if (out.best) out.config = in_space_of(out.space, config_from_json(out.best->params_json));
  return out;
}

}  // namespace attn
