// The idea bench: the queue, the check, the tuning (daemon/idea_bench.hpp). The judging: daemon/idea_judge.cpp.
#include "daemon/idea_bench.hpp"

#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "db/idea_repeats.hpp"
#include "proposer/idea_apply.hpp"
#include "proposer/proposal_round.hpp"
#include "tuner/idea_parent.hpp"
#include "tuner/proposal_template.hpp"
#include "tuner/strategy.hpp"

namespace attn::tuning {

IdeaBench::IdeaBench(const RunOptions& o, std::string suite, Env env) : o_(o), suite_(std::move(suite)), env_(std::move(env)) {
  if (o_.ideas.enabled()) {
    std::error_code ec;
    std::filesystem::create_directories(o_.ideas.dir, ec);  // a queue folder the user fills later
  }
}

void IdeaBench::poll(GpuSlot& slot, bool wait_turn) {
  if (!enabled()) return;
  std::unique_lock lock(mu_, std::defer_lock);
  if (wait_turn) lock.lock();
  else if (!lock.try_lock()) return;  // another GPU's thread is at the bench
  std::vector<std::string> notes;     // status lines, written once the lock is released
  if (const ActiveIdea* a = session_.current();
      a && a->check.valid() && a->check.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
    finish_check(notes);
  if (const ActiveIdea* a = session_.current(); a && a->rec.status == IdeaStatus::tuning && !a->check.valid() &&
                                                env_.search.tuned(a->rec.template_name) && !catch_up())
    judge(slot, lock, notes);
  if (session_.look_due(o_.ideas.poll_s)) look(notes);
  lock.unlock();
  for (const auto& n : notes) env_.status(n);
}

void IdeaBench::look_now() {
  std::lock_guard lock(mu_);
  session_.look_now();
}

std::size_t IdeaBench::waiting(const std::vector<QueuedIdea>& queued) const {
  std::lock_guard lock(mu_);
  return untaken_ideas(queued, session_.taken_keys()) + (session_.current() ? 1 : 0);
}

nlohmann::json IdeaBench::status() const {
  std::lock_guard lock(mu_);
  const ActiveIdea* idea = session_.current();
  if (!idea) return nlohmann::json();
  return {{"id", idea->rec.id}, {"file", idea->rec.file}, {"status", to_string(idea->rec.status)},
          {"template", idea->rec.template_name}, {"configs", env_.search.progress(idea->rec.template_name).finished}};
}

void IdeaBench::look(std::vector<std::string>& notes) {
  std::string problem;
  const auto queued = scan_idea_queue(o_.ideas.dir, problem);
  const std::string before = session_.set_problem(problem);
  if (!problem.empty()) {
    if (problem != before) {  // once per problem, not every poll
      spdlog::warn("{}", problem);
      env_.say("idea queue: " + problem + "; the run goes on and looks again");
      IdeaRecord r;
      r.run_id = run_id_;
      r.file = o_.ideas.dir;
      r.idea_hash = non_idea_hash(problem);
      r.status = IdeaStatus::done;
      r.verdict = IdeaVerdict::broken;
      r.broken_kind = IdeaBrokenKind::bad_input;
      r.reason = problem;
      env_.db.with([&](ExperimentDb& db) { db.add_idea(r); });
    }
    return;
  }
  if (!before.empty()) env_.say(fmt::format("idea queue: {} is there again", o_.ideas.dir));
  for (const auto& q : queued) {
    const std::string key = idea_queue_key(q);
    if (session_.taken(key)) continue;
    if (start(q, notes)) session_.take(key);
    if (session_.current()) return;  // one idea at a time: the next one stacks on its verdict
  }
}

bool IdeaBench::start(const QueuedIdea& q, std::vector<std::string>& notes) {
  const auto [known, runs] = env_.db.with([](ExperimentDb& db) { return std::make_pair(db.ideas(), db.runs()); });
  IdeaRecord rec;
  rec.run_id = run_id_;
  rec.file = q.name;
  const auto record_broken = [&](IdeaBrokenKind kind, const std::string& why) {
    rec.status = IdeaStatus::done;
    rec.verdict = IdeaVerdict::broken;
    rec.broken_kind = kind;
    rec.reason = why;
    rec.wall_s = 0.0;
    for (const auto& old : known)  // the same bytes were judged bad before (an earlier run)
      if (old.idea_hash == rec.idea_hash && old.broken_kind == kind) return true;
    rec.id = env_.db.with([&](ExperimentDb& db) { return db.add_idea(rec); });
    env_.say(fmt::format("idea {} ({}): broken ({}): {}", rec.id, q.name, to_string(kind), why));
    return true;
  };
  if (!q.bytes) {
    rec.idea_hash = non_idea_hash(q.name + "\n" + q.error);
    return record_broken(IdeaBrokenKind::bad_input, q.error);
  }
  IdeaFile file;
  try {
    file = parse_idea(q.name, *q.bytes);
  } catch (const IdeaInputError& e) {
    rec.idea_hash = non_idea_hash(*q.bytes);
    return record_broken(IdeaBrokenKind::bad_input, e.what());
  }
  rec.idea_hash = file.hash;
  rec.description = file.description;
  rec.hypothesis = file.hypothesis;
  rec.diff = file.diff;
  rec.space_json = file.space.dump();
  rec.default_json = file.defaults.dump();

  // The ideas judged on this suite and the parent: the one rule of tuner/idea_parent.hpp.
  const std::vector<IdeaRecord> here = ideas_on_suite(known, runs, suite_);
  std::string root = file.template_root;
  if (root.empty()) {
    const auto champ = env_.champions.overall();
    if (!champ) return false;  // nothing tuned yet: it waits for a champion
    root = proposal_root_template(champ->template_name);
  }
  std::vector<std::string> names;  // the templates this run tunes, and their axes, read under one lock
  std::map<std::string, ParentCandidate> tuned;
  std::set<std::string> landed;  // the ideas landed in the root's source
  env_.search.read([&](const MultiSearch& s) {
    names = s.template_names();
    for (const auto& t : names)
      for (const auto& p : s.state(t).space().parameters()) tuned[t].parameters.insert(p.name);
    if (tuned.count(root))
      for (const auto& l : landed_ideas(s.state(root).space())) landed.insert(l.idea_hash);
  });
  const auto found = idea_parent(here, root, landed, [&tuned](const std::string& t) -> std::optional<ParentCandidate> {
    const auto it = tuned.find(t);
    if (it == tuned.end()) return std::nullopt;
    return it->second;
  });
  if (!found)
    return record_broken(IdeaBrokenKind::bad_input, fmt::format("Template: {} is not tuned by this run (templates: {})",
                                                                root, fmt::join(names, ", ")));
  const std::string& parent = found->measured;
  const auto parent_best = env_.search.read([&](const MultiSearch& s) { return s.state(parent).champion(); });
  if (!parent_best) return false;  // its parent has no whole-suite result yet: it waits
  rec.parent_template = parent;
  rec.parent_iteration_id = parent_best->iter;

  const RerunDecision rerun = decide_rerun(here, file.hash, parent, file.retry, file.verdicts, q.name, suite_);
  if (!rerun.judge) {
    env_.say(rerun.skip_note);
    return true;
  }

  ProposalRecord pr;
  pr.run_id = run_id_;
  pr.command = "idea " + q.name;
  pr.parent_template = parent;
  pr.parent_iteration_id = parent_best->iter;
  const std::int64_t pid = env_.db.with([&](ExperimentDb& db) { return db.begin_proposal(pr); });
  rec.proposal_id = pid;
  rec.template_name = proposal_template_name(parent, pid);
  rec.status = IdeaStatus::checking;
  rec.id = env_.db.with([&](ExperimentDb& db) {
    const std::int64_t id = db.add_idea(rec);
    if (rerun.repeat_of) add_idea_repeat(db, id, *rerun.repeat_of);  // both verdicts stay, linked
    return id;
  });

  ActiveIdea a;
  a.rec = rec;
  a.file = file;
  a.repeat_of = rerun.repeat_of;
  const TemplateSpace parent_space = env_.search.read([&](const MultiSearch& s) { return s.state(found->code).space(); });
  const std::string dir = fmt::format("{}/{}", proposals_dir_for(o_.db_path), pid), name = rec.template_name;
  Compiler& compiler = env_.compiler;
  // The checks (patch, NVRTC of the default config, ABI) run beside the tuning: the GPU does not wait.
  a.check = std::async(std::launch::async, [file, parent_space, dir, name, &compiler] {
    return apply_idea(file, parent_space, dir, name, compiler);
  });
  session_.begin(std::move(a));
  in_progress_ = true;
  env_.say(fmt::format("idea {} ({}): {} — applied to {} (best iter {}){}, checking", rec.id, q.name, file.description,
                       found->code == parent ? parent : found->code + ", measured as " + parent, parent_best->iter,
                       rerun.repeat_of ? fmt::format(", judged again (idea {} was judged there)", *rerun.repeat_of) : ""));
  notes.push_back("idea " + q.name + ": checking");
  return true;
}

void IdeaBench::finish_check(std::vector<std::string>& notes) {
  ActiveIdea& a = *session_.current();
  IdeaApplied r;
  try {
    r = a.check.get();
  } catch (const std::exception& e) {  // the daemon's own files: the idea cannot be judged, the run goes on
    r.broken_kind = IdeaBrokenKind::proposal;
    r.reason = std::string("applying it failed: ") + e.what();
  }
  const bool broken = r.broken_kind != IdeaBrokenKind::none;
  env_.db.with([&](ExperimentDb& db) {
    ProposalRecord pr = *db.proposal(*a.rec.proposal_id);
    pr.status = broken ? ProposalStatus::rejected : ProposalStatus::accepted;
    pr.reason = r.reason;
    pr.description = a.file.description;
    pr.exit_status = "idea file";
    pr.template_name = a.rec.template_name;
    if (r.checked) {
      pr.source = r.check.source;
      pr.space_json = r.check.space_json;
      pr.headers_json = r.check.headers_json;
      pr.diff = r.check.diff;
    }
    db.finish_proposal(pr);
  });
  if (broken) return end(IdeaVerdict::broken, r.broken_kind, r.reason, notes);

  TemplateSpace space = std::move(*r.check.space);
  const std::string t = space.name();
  // Seeds: the parent's champion and best configs, each first with every value the idea adds, then as they are.
  const std::vector<Proposal> seeds = env_.search.read([&](const MultiSearch& s) {
    const SearchState& ps = s.state(a.rec.parent_template);
    a.new_values = idea_new_values(ps.space(), space);
    return idea_seeds(ps, space, a.new_values, o_.ideas.top);
  });
  env_.search.add(std::move(space),
                  make_seeded_strategy(seeds, make_strategy(o_.strategy, o_.seed), o_.ideas.budget), *a.rec.proposal_id, true);
  env_.search.prefer(t);
  a.rec.status = IdeaStatus::tuning;
  env_.db.with([&](ExperimentDb& db) { db.update_idea(a.rec); });
  env_.say(fmt::format("idea {} ({}): checked, template {} joins the search: {} configs, the parent's best first",
                       a.rec.id, a.rec.file, t, o_.ideas.budget));
  notes.push_back("idea " + a.rec.file + ": tuning");
}

bool IdeaBench::catch_up() {
  const ActiveIdea& a = *session_.current();
  const auto [parent_best, variants] = env_.search.read([&](const MultiSearch& s) {
    const auto best = s.state(a.rec.parent_template).champion();
    std::vector<Config> configs;
    if (best)
      for (const auto& [c, change] : idea_variants(a.new_values, s.state(a.rec.template_name).space(), best->config))
        configs.push_back(c);
    return std::make_pair(best, configs);
  });
  if (!parent_best) return false;
  // The parent found a better config while the idea was tuned: the idea gets it too, then the judging.
  return env_.scheduler.issue_front(a.rec.template_name, variants,
                                    fmt::format("idea: the parent's champion now (iter {})", parent_best->iter)) > 0;
}

void IdeaBench::end(IdeaVerdict verdict, IdeaBrokenKind kind, const std::string& reason, std::vector<std::string>& notes) {
  ActiveIdea& a = *session_.current();
  a.rec.status = IdeaStatus::done;
  a.rec.verdict = verdict;
  a.rec.broken_kind = kind;
  a.rec.reason = reason;
  a.rec.wall_s = seconds_since(a.t0);
  const std::string& t = a.rec.template_name;
  a.rec.gpu_s = ((t.empty() ? 0.0 : env_.search.progress(t).gpu_ms) + session_.judging_ms()) / 1000;
  if (!t.empty() && env_.search.has(t))
    a.rec.configs = std::int64_t(env_.search.read([&](const MultiSearch& s) { return s.state(t).results().size(); }));
  env_.db.with([&](ExperimentDb& db) { db.update_idea(a.rec); });
  env_.say(fmt::format("idea {} ({}): {}{}: {} [{} configs, {:.0f} s]", a.rec.id, a.rec.file, to_string(verdict),
                       kind == IdeaBrokenKind::none ? "" : fmt::format(" ({})", to_string(kind)), reason, a.rec.configs,
                       *a.rec.wall_s));
  if (verdict == IdeaVerdict::win)
    env_.say(fmt::format("idea {}: {} is the parent of the next idea of its lineage", a.rec.id, a.rec.template_name));
  session_.end();  // the next idea now
  in_progress_ = false;
  notes.push_back("idea queue: waiting");
}

void IdeaBench::interrupt(const std::string& why) {
  std::lock_guard lock(mu_);
  ActiveIdea* a = session_.current();
  if (!a) return;
  if (a->check.valid()) a->check.wait();
  a->rec.status = IdeaStatus::interrupted;
  a->rec.reason = why;
  a->rec.wall_s = seconds_since(a->t0);
  const std::string& t = a->rec.template_name;
  a->rec.gpu_s = ((t.empty() ? 0.0 : env_.search.progress(t).gpu_ms) + session_.judging_ms()) / 1000;
  try {
    env_.db.with([&](ExperimentDb& db) { db.update_idea(a->rec); });
  } catch (const std::exception& e) {
    spdlog::warn("idea {}: cannot record its interruption: {}", a->rec.id, e.what());
  }
  session_.end();
  in_progress_ = false;
}

}  // namespace attn::tuning
