// Where the tuning loop starts from (daemon/loop.hpp): a resumed DB (interrupted rows, configs already
// evaluated, champions), the seeds and fidelity of the run, and templates that join the search: proposals
// of earlier runs and of the proposer hook.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/templates_dir.hpp"
#include "daemon/loop.hpp"
#include "db/store_idea_agents.hpp"
#include "daemon/pid_lock.hpp"
#include "daemon/stale_worker.hpp"
#include "daemon/supervise.hpp"
#include "db/iters_tsv.hpp"
#include "tuner/proposal_template.hpp"

namespace attn::tuning {

void Loop::setup_seeds_and_fidelity() {
  const bool seeded = o_.manifest.empty() && suite_has_root_seed(o_.suite);  // options checked: validate_run_options
  if (seeded) root_seed_ = o_.root_seed;
  if (seeded && o_.holdout) {
    holdout_cases_ = builtin_suite(o_.suite, o_.holdout_seed);
    holdout_ = std::make_unique<HoldoutChecker>(db_, suite_label_, o_.holdout_seed,
                                                [this](const Contender& c) { return eval_holdout(c); });
  }
  if (o_.fidelity == FidelityMode::ladder) {
    screen_ = plan_screen(cases_);
    if (screen_->whole_suite()) screen_.reset();  // one case per family: a screen would only repeat the suite
  }
}

void Loop::resume() {
  db_.mark_interrupted_proposals();
  mark_interrupted_idea_agent_calls(db_);
  if (const auto ideas = db_.mark_interrupted_ideas(); !ideas.empty())
    say(fmt::format("resumed: {} idea(s) left without a verdict were marked interrupted (queued again, they run "
                    "from the start)", ideas.size()));
  const auto runs = db_.mark_interrupted_runs();
  const auto its = db_.mark_interrupted_iterations();
  if (!runs.empty() || !its.empty())
    say(fmt::format("resumed: {} run(s) and {} iteration(s) left running were marked interrupted", runs.size(),
                    its.size()));
  tsv_.rebuild_unless_current();
  // The history, read lean (a night's million rows) and recorded into each template's search at once.
  const SearchHistory history = db_.search_history(suite_label_);
  std::unordered_map<std::string, std::vector<std::string>> names;  // a names list -> the names
  std::vector<std::optional<Config>> configs(history.configs.size());  // completed; none: not a searched template
  for (std::size_t i = 0; i < history.configs.size(); ++i) {
    const HistoryConfig& hc = history.configs[i];
    if (!kernels_.count(hc.template_name)) continue;
    auto [at, added] = names.try_emplace(hc.names_json);
    if (added) at->second = nlohmann::json::parse(hc.names_json).get<std::vector<std::string>>();
    // A row recorded before a parameter was added to the template is its config at that parameter's
    // default (the source's #ifndef): completed, it counts as evaluated in the current space.
    Config c = config_from_lists(at->second, hc.values_json);
    const TemplateSpace& space = search_.state(hc.template_name).space();
    const auto& params = space.parameters();
    if (std::any_of(params.begin(), params.end(), [&](const Parameter& p) { return !c.count(p.name); }))
      c = space.complete(c);
    configs[i] = std::move(c);
  }
  std::vector<std::size_t> uses(history.configs.size(), 0);  // rows left of each config: the last one takes it
  for (const HistoryRow& r : history.rows) ++uses[r.config];
  std::map<std::string, std::vector<std::pair<Config, Outcome>>> by_template;
  std::unordered_set<std::int64_t> whole_suite;  // iters with a whole-suite score
  std::size_t known = 0;
  for (const HistoryRow& r : history.rows) {
    if (!configs[r.config]) continue;
    auto& rows = by_template[history.configs[r.config].template_name];
    if (--uses[r.config] == 0) rows.emplace_back(std::move(*configs[r.config]), outcome_of(r));
    else rows.emplace_back(*configs[r.config], outcome_of(r));
    if (r.geomean_ms) whole_suite.insert(r.iter);
    if (r.screen_ms && (!best_screen_ms_ || *r.screen_ms < *best_screen_ms_)) best_screen_ms_ = r.screen_ms;
    ++known;
  }
  configs.clear();
  // In iter order: a config met twice keeps its latest iteration's outcome.
  for (auto& [name, rows] : by_template) search_.state(name).record_all(std::move(rows));
  by_template.clear();
  for (const auto& name : search_.template_names()) {  // champion: the best whole-suite score
    auto& st = search_.state(name);
    for (const auto& [c, outcome] : st.ranked()) {
      if (whole_suite.count(outcome.iter)) {
        st.set_champion(c);
        break;
      }
    }
  }
  champions_.load(
      db_, suite_label_,
      [this](const std::string& t) -> std::optional<std::string> {
        const auto it = kernels_.find(t);
        return it == kernels_.end() ? std::nullopt : std::optional<std::string>(it->second);
      },
      [this](const Contender& c) { return rebuild_champion(c); });
  if (known) say(fmt::format("history: {} config(s) already evaluated on {} are skipped", known, suite_label_));
}

void Loop::retire_if_broken(const std::string& name, const SearchState& st) {
  if (search_.retired(name)) return;
  // A verdict that a kernel doing the work cannot get (docs/verification.md) is about the template's code,
  // not one config: the proposal leaves the search at once, whatever its other configs scored.
  const auto cheat = [](const Outcome& o) {
    const auto kind = failure_kind_from_string(o.failure);
    return kind == FailureKind::inconsistent || kind == FailureKind::below_floor;
  };
  for (const auto& [c, outcome] : st.results())
    if (cheat(outcome)) {
      retire(name);
      say(fmt::format("template {} (proposal {}) retired from the search: iter {} failed the verification ({}): its "
                      "result or its speed depends on more than its inputs",
                      name, proposal_of_.at(name), outcome.iter, outcome.failure));
      return;
    }
  if (!st.ranked().empty()) return;
  std::size_t crashes = 0;
  for (const auto& [c, outcome] : st.results()) crashes += outcome.ok() ? 0 : 1;
  if (crashes < o_.proposer.retire_after_crashes) return;
  retire(name);
  say(fmt::format("template {} (proposal {}) retired from the search: its first {} configs all crashed", name,
                  proposal_of_.at(name), crashes));
}

void Loop::retire(const std::string& name) {
  search_.retire(name);
  // Its configs still queued (compiling, or compiled and waiting for a GPU) get no GPU time either; configs whose
  // screen was sent ahead to a GPU already are recorded as they come.
  for (auto i = inflight_.begin(); i != inflight_.end();)
    if (i->proposal.template_name == name && !i->spare_of) {
      ideas_.on_finished(name, 0.0);
      i = inflight_.erase(i);
    } else {
      ++i;
    }
}

void Loop::add_template(TemplateSpace space, std::int64_t proposal_id) {
  const std::string name = space.name();
  if (o_.shard) space.restrict_to_shard(o_.shard->index, o_.shard->count);
  kernels_[name] = space.kernel();
  proposal_of_[name] = proposal_id;
  search_.add(std::move(space), make_strategy(o_.strategy, o_.seed));
}

void Loop::load_proposed_templates() {
  for (const auto& p : db_.proposals()) {
    if (p.status != ProposalStatus::accepted || !kernels_.count(proposal_root_template(p.template_name))) continue;
    try {
      const auto dir = fmt::format("{}/{}/template", proposals_dir_for(o_.db_path), p.id);
      add_template(TemplateSpace::load(write_proposal_template(p, dir)), p.id);
    } catch (const std::exception& e) {
      spdlog::warn("proposal {} ({}) cannot rejoin the search: {}", p.id, p.template_name, e.what());
    }
  }
}

void Loop::start_proposal() {
  if (proposing_.valid()) return;
  proposed_at_ = summary_.iterations;
  const auto& champ = champions_.overall();
  if (!champ || !kernels_.count(champ->template_name)) return;  // nothing to start from yet
  std::vector<std::string> template_dirs{templates_dir_};
  if (default_templates_dir() != templates_dir_) template_dirs.push_back(default_templates_dir());
  // The parent is copied: the search's templates may grow (and move) while the proposer runs.
  auto parent = std::make_shared<TemplateSpace>(search_.state(champ->template_name).space());
  ProposalRequest req{summary_.run_id, suite_label_, parent.get(), champ->iter, o_.db_path, template_dirs,
                      {o_.db_path, o_.db_path + "-wal", o_.db_path + "-shm", o_.db_path + "-journal", tsv_path_,
                       status_file_for(o_.db_path), status_file_for(o_.db_path) + ".tmp",
                       worker_record_file_for(o_.db_path), pid_file_for(o_.db_path), log_file_for(o_.db_path),
                       compiler_.cache_dir()}};
  if (!o_.ideas.dir.empty()) req.daemon_files.push_back(o_.ideas.dir);  // a person drops ideas in meanwhile
  proposal_cancel_ = false;
  proposing_ = std::async(std::launch::async, [this, req, parent] {
    auto db = ExperimentDb::open(o_.db_path);  // a connection of its own: SQLite serialises the two writers
    return run_proposal_round(o_.proposer, req, db, compiler_,
                              [this] { return stop_.stopping() || proposal_cancel_.load(); });
  });
  say(fmt::format("proposer: `{}` runs beside the tuning (from {}, champion iter {})", o_.proposer.command,
                  champ->template_name, champ->iter));
}

bool Loop::collect_proposal(bool wait) {
  if (!proposing_.valid()) return false;
  if (!wait && proposing_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
  ProposalRoundResult r;
  try {
    r = unlocked(mu_, [&] { return proposing_.get(); });
  } catch (const std::exception& e) {
    spdlog::error("proposer call failed: {}", e.what());
    say(std::string("proposer: the call failed: ") + e.what());
    return false;
  }
  if (r.crash_iter) {
    append_row(tsv_path_, *db_.iteration(*r.crash_iter));
    ++summary_.iterations;
  }
  proposed_at_ = summary_.iterations;  // its own crash iteration does not count towards the next call
  say(r.crash_iter ? fmt::format("iter {:>4} crash       {}", *r.crash_iter, r.summary) : r.summary);
  if (!r.accepted) return false;
  add_template(std::move(*r.accepted), r.proposal_id);
  idle_proposal_tried_ = false;
  return true;
}

}  // namespace attn::tuning
