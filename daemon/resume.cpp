// Where the tuning loop starts from (daemon/loop.hpp): the run's templates and those that join from earlier runs
// (proposals, ideas), and a resumed DB (interrupted rows, configs already evaluated, champions).
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "daemon/loop.hpp"
#include "daemon/worker_answers.hpp"
#include "db/store_idea_agents.hpp"
#include "proposer/proposal_round.hpp"
#include "tuner/proposal_template.hpp"
#include "tuner/strategy.hpp"

namespace attn::tuning {
namespace {

/// The templates a run tunes: --template, else every *.json of the templates folder.
std::vector<std::string> resolve_templates(const RunOptions& o, const std::string& dir) {
  if (!o.templates.empty()) return o.templates;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) throw std::invalid_argument("no templates (*.json) in " + dir);
  return names;
}

}  // namespace

void Loop::load_templates() {
  for (const auto& name : resolve_templates(o_, templates_dir_))
    search_.add(TemplateSpace::load_named(templates_dir_, name), make_strategy(o_.strategy, o_.seed), std::nullopt, false);
  const auto [proposals, ideas] = db_.with([](ExperimentDb& db) { return std::make_pair(db.proposals(), db.ideas()); });
  std::map<std::string, bool> won;  // an idea's template -> whether its idea won (its latest row)
  for (const auto& i : ideas)
    if (!i.template_name.empty()) won[i.template_name] = i.status == IdeaStatus::done && i.verdict == IdeaVerdict::win;
  for (const auto& p : proposals) {
    if (p.status != ProposalStatus::accepted || !search_.has(proposal_root_template(p.template_name))) continue;
    try {
      const auto dir = fmt::format("{}/{}/template", proposals_dir_for(o_.db_path), p.id);
      search_.add(TemplateSpace::load(write_proposal_template(p, dir)), make_strategy(o_.strategy, o_.seed), p.id,
                  won.count(p.template_name) > 0);
    } catch (const std::exception& e) {
      spdlog::warn("proposal {} ({}) cannot rejoin the search: {}", p.id, p.template_name, e.what());
    }
  }
  for (const auto& [t, win] : won)  // an idea judged (or cut off before its verdict): no more GPU time
    if (!win && search_.has(t)) scheduler_.retire(t);
}

void Loop::resume() {
  const auto [ideas, runs, its] = db_.with([](ExperimentDb& db) {
    db.mark_interrupted_proposals();
    mark_interrupted_idea_agent_calls(db);
    auto i = db.mark_interrupted_ideas();
    auto r = db.mark_interrupted_runs();
    return std::make_tuple(std::move(i), std::move(r), db.mark_interrupted_iterations());
  });
  if (!ideas.empty())
    say(fmt::format("resumed: {} idea(s) left without a verdict were marked interrupted (queued again, they run "
                    "from the start)", ideas.size()));
  if (!runs.empty() || !its.empty())
    say(fmt::format("resumed: {} run(s) and {} iteration(s) left running were marked interrupted", runs.size(), its.size()));
  db_.rebuild_tsv_unless_current();
  // The history, read lean (a night's million rows) and recorded into each template's search at once.
  const SearchHistory history = db_.with([&](ExperimentDb& db) { return db.search_history(suite_); });
  std::size_t known = 0;
  search_.write([&](MultiSearch& search) {
    std::unordered_map<std::string, std::vector<std::string>> names;  // a names list -> the names
    std::vector<std::optional<Config>> configs(history.configs.size());  // completed; none: not a searched template
    const auto tuned = search.template_names();
    for (std::size_t i = 0; i < history.configs.size(); ++i) {
      const HistoryConfig& hc = history.configs[i];
      if (std::find(tuned.begin(), tuned.end(), hc.template_name) == tuned.end()) continue;
      auto [at, added] = names.try_emplace(hc.names_json);
      if (added) at->second = nlohmann::json::parse(hc.names_json).get<std::vector<std::string>>();
      // A row recorded before a parameter was added to the template is its config at that parameter's default (the
      // source's #ifndef): completed, it counts as evaluated in the current space.
      Config c = config_from_lists(at->second, hc.values_json);
      const TemplateSpace& space = search.state(hc.template_name).space();
      const auto& params = space.parameters();
      if (std::any_of(params.begin(), params.end(), [&](const Parameter& p) { return !c.count(p.name); }))
        c = space.complete(c);
      configs[i] = std::move(c);
    }
    std::vector<std::size_t> uses(history.configs.size(), 0);  // rows left of each config: the last one takes it
    for (const HistoryRow& r : history.rows) ++uses[r.config];
    std::map<std::string, std::vector<std::pair<Config, Outcome>>> by_template;
    std::unordered_set<std::int64_t> whole_suite;  // iters with a whole-suite score
    for (const HistoryRow& r : history.rows) {
      if (!configs[r.config]) continue;
      auto& rows = by_template[history.configs[r.config].template_name];
      if (--uses[r.config] == 0) rows.emplace_back(std::move(*configs[r.config]), outcome_of(r));
      else rows.emplace_back(*configs[r.config], outcome_of(r));
      if (r.geomean_ms) whole_suite.insert(r.iter);
      if (r.screen_ms) screens_.seed(*r.screen_ms);
      ++known;
    }
    configs.clear();
    // In iter order: a config met twice keeps its latest iteration's outcome.
    for (auto& [name, rows] : by_template) search.state(name).record_all(std::move(rows));
    by_template.clear();
    for (const auto& name : tuned) {  // champion: the best whole-suite score
      auto& st = search.state(name);
      for (const auto& [c, outcome] : st.ranked())
        if (whole_suite.count(outcome.iter)) {
          st.set_champion(c);
          break;
        }
    }
  });
  // A champion's cubin compiled again from its config (a DB resumed on a machine without the cubin: the cache is per
  // machine), so that A/B/A can re-time it; "" when it does not compile. A champion that cannot be re-timed cannot
  // defend itself: its first challenger would win on one look.
  const auto rebuild = [this](const Contender& c) -> std::string {
    const CompiledVariant cv = compiler_.compile(search_.compile_request(c.template_name, c.config));
    if (!cv.ok || cv.cubin_path.empty()) {
      spdlog::warn("champion iter {}: its cubin is missing and compiling it again failed ({}): it cannot be re-timed",
                   c.iter, compile_error_line(cv.log));
      return "";
    }
    say(fmt::format("champion iter {}: cubin compiled again ({}) for the A/B/A re-timings", c.iter, cv.hash.substr(0, 8)));
    return cv.cubin_path;
  };
  champions_.load(db_, suite_, [this](const std::string& t) { return search_.kernel(t); }, rebuild);
  if (known) say(fmt::format("history: {} config(s) already evaluated on {} are skipped", known, suite_));
}

}  // namespace attn::tuning
