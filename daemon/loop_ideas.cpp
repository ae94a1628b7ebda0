// The idea queue in the tuning loop (daemon/loop.hpp, docs/ideas.md): one idea at a time is taken from the
// queue folder, applied to its parent (tuner/idea_parent.hpp: the latest win of its template's lineage, or the
// template once the lineage is landed in it), checked on a thread of its own while the GPU goes on tuning, tuned within its budget (the
// parent's best configs first, evaluated in full), judged by A/B/A against the parent's best on one GPU and
// on the held-out seed, and given a verdict (tuner/idea_rule.hpp decide_idea): win (it stays in the search and the
// next idea stacks on it), no_gain, slower (it leaves the search), or broken with the kind. Its state is
// IdeaSession's (daemon/idea_session.hpp); this file does the I/O.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "daemon/loop.hpp"
#include "proposer/idea_apply.hpp"
#include "tuner/champion.hpp"
#include "tuner/idea_parent.hpp"
#include "tuner/proposal_template.hpp"

namespace attn::tuning {
namespace {

/// The Config with `axis` = `value` (a new axis of an idea switched on).
Config with(Config c, const std::string& axis, std::int64_t value) {
  c[axis] = value;
  return c;
}

}  // namespace

std::vector<std::pair<Config, std::string>> Loop::idea_variants(const ActiveIdea& a, const TemplateSpace& space,
                                                                const Config& base) const {
  std::vector<std::pair<Config, std::string>> out;
  const Config c = space.complete(base);
  for (const auto& [p, values] : a.new_values)
    for (const auto v : values) out.emplace_back(with(c, p, v), fmt::format("{}={}", p, v));
  out.emplace_back(c, "");
  return out;
}

void Loop::load_idea_templates() {
  std::map<std::string, bool> won;  // template -> whether its idea won (latest row)
  for (const auto& i : db_.ideas())
    if (!i.template_name.empty()) won[i.template_name] = i.status == IdeaStatus::done && i.verdict == IdeaVerdict::win;
  for (const auto& [t, win] : won) {
    if (!kernels_.count(t)) continue;
    ideas_.add_template(t);
    if (!win) retire(t);  // judged (or cut off before its verdict): no more GPU time
  }
}

void Loop::poll_ideas(GpuSlot& slot) {
  if (!o_.ideas.enabled()) return;
  if (const ActiveIdea* a = ideas_.current();
      a && a->check.valid() && a->check.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
    finish_idea_check();
  if (ideas_.tuned(search_) && !catch_up_idea()) judge_idea(slot);
  if (!ideas_.look_due(o_.ideas.poll_s)) return;
  std::string problem;
  const auto queued = scan_idea_queue(o_.ideas.dir, problem);
  const std::string before = ideas_.set_problem(problem);
  if (!problem.empty()) {
    if (problem != before) {  // once per problem, not every poll
      spdlog::warn("{}", problem);
      say("idea queue: " + problem + "; the run goes on and looks again");
      IdeaRecord r;
      r.run_id = summary_.run_id;
      r.file = o_.ideas.dir;
      r.idea_hash = non_idea_hash(problem);
      r.status = IdeaStatus::done;
      r.verdict = IdeaVerdict::broken;
      r.broken_kind = IdeaBrokenKind::bad_input;
      r.reason = problem;
      db_.add_idea(r);
    }
    return;
  }
  if (!before.empty()) say(fmt::format("idea queue: {} is there again", o_.ideas.dir));
  for (const auto& q : queued) {
    const std::string key = idea_queue_key(q);
    if (ideas_.taken(key)) continue;
    if (start_idea(q)) ideas_.take(key);
    if (ideas_.current()) return;  // one idea at a time: the next one stacks on its verdict
  }
}

bool Loop::start_idea(const QueuedIdea& q) {
  const std::vector<IdeaRecord> known = db_.ideas();
  IdeaRecord rec;
  rec.run_id = summary_.run_id;
  rec.file = q.name;
  const auto record_broken = [&](IdeaBrokenKind kind, const std::string& why) {
    rec.status = IdeaStatus::done;
    rec.verdict = IdeaVerdict::broken;
    rec.broken_kind = kind;
    rec.reason = why;
    rec.wall_s = 0.0;
    for (const auto& old : known)  // the same bytes were judged bad before (an earlier run)
      if (old.idea_hash == rec.idea_hash && old.broken_kind == kind) return true;
    rec.id = db_.add_idea(rec);
    say(fmt::format("idea {} ({}): broken ({}): {}", rec.id, q.name, to_string(kind), why));
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
  const std::vector<IdeaRecord> here = ideas_on_suite(known, db_.runs(), suite_label_);
  std::string root = file.template_root;
  if (root.empty()) {
    const auto& champ = champions_.overall();
    if (!champ) return false;  // nothing tuned yet: it waits for a champion
    root = proposal_root_template(champ->template_name);
  }
  std::set<std::string> landed;
  if (kernels_.count(root))
    for (const auto& l : landed_ideas(search_.state(root).space())) landed.insert(l.idea_hash);
  const auto found = idea_parent(here, root, landed, [this](const std::string& t) -> std::optional<ParentCandidate> {
    if (!kernels_.count(t)) return std::nullopt;
    ParentCandidate c;
    for (const auto& p : search_.state(t).space().parameters()) c.parameters.insert(p.name);
    return c;
  });
  if (!found)
    return record_broken(IdeaBrokenKind::bad_input, fmt::format("Template: {} is not tuned by this run (templates: {})", root,
                                                  fmt::join(search_.template_names(), ", ")));
  const std::string* parent = &found->measured;
  const auto parent_best = search_.state(*parent).champion();
  if (!parent_best) return false;  // its parent has no whole-suite result yet: it waits
  rec.parent_template = *parent;
  rec.parent_iteration_id = parent_best->iter;

  // Never twice on the same parent (of this suite's lineage); on a new parent only when the file asks (Retry: yes).
  if (const auto old = judged_before(here, file.hash, *parent, file.retry)) {
    say(judged_before_text(q.name, *old, *parent, suite_label_));
    return true;
  }

  ProposalRecord pr;
  pr.run_id = summary_.run_id;
  pr.command = "idea " + q.name;
  pr.parent_template = *parent;
  pr.parent_iteration_id = parent_best->iter;
  const std::int64_t pid = db_.begin_proposal(pr);
  rec.proposal_id = pid;
  rec.template_name = proposal_template_name(*parent, pid);
  rec.status = IdeaStatus::checking;
  rec.id = db_.add_idea(rec);

  ActiveIdea a;
  a.rec = rec;
  a.file = file;
  const TemplateSpace parent_space = search_.state(found->code).space();
  const std::string dir = fmt::format("{}/{}", proposals_dir_for(o_.db_path), pid), name = rec.template_name;
  // The checks (patch, NVRTC of the default config, ABI) run beside the tuning: the GPU does not wait.
  a.check = std::async(std::launch::async, [this, file, parent_space, dir, name] {
    return apply_idea(file, parent_space, dir, name, compiler_);
  });
  ideas_.begin(std::move(a));
  say(fmt::format("idea {} ({}): {} — applied to {} (best iter {}), checking", rec.id, q.name, file.description,
                  found->code == *parent ? *parent : found->code + ", measured as " + *parent, parent_best->iter));
  write_status("idea " + q.name + ": checking");
  return true;
}

void Loop::finish_idea_check() {
  ActiveIdea& a = *ideas_.current();
  IdeaApplied r;
  try {
    r = a.check.get();
  } catch (const std::exception& e) {  // the daemon's own files: the idea cannot be judged, the run goes on
    r.broken_kind = IdeaBrokenKind::proposal;
    r.reason = std::string("applying it failed: ") + e.what();
  }
  const bool broken = r.broken_kind != IdeaBrokenKind::none;
  ProposalRecord pr = *db_.proposal(*a.rec.proposal_id);
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
  db_.finish_proposal(pr);
  if (broken) return end_idea(IdeaVerdict::broken, r.broken_kind, r.reason);

  TemplateSpace space = std::move(*r.check.space);
  if (o_.shard) space.restrict_to_shard(o_.shard->index, o_.shard->count);
  const std::string t = space.name();
  std::vector<Proposal> seeds = idea_seeds(a, space);
  kernels_[t] = space.kernel();
  proposal_of_[t] = *a.rec.proposal_id;
  ideas_.add_template(t);
  search_.add(std::move(space), make_seeded_strategy(std::move(seeds), make_strategy(o_.strategy, o_.seed),
                                                     o_.ideas.budget));
  search_.prefer(t);
  a.rec.status = IdeaStatus::tuning;
  db_.update_idea(a.rec);
  say(fmt::format("idea {} ({}): checked, template {} joins the search: {} configs, the parent's best first",
                  a.rec.id, a.rec.file, t, o_.ideas.budget));
  write_status("idea " + a.rec.file + ": tuning");
}

std::vector<Proposal> Loop::idea_seeds(ActiveIdea& a, const TemplateSpace& space) const {
  const SearchState& ps = search_.state(a.rec.parent_template);
  // What the idea adds: values of new axes but their defaults, values added to the parent's axes.
  for (const auto& p : space.parameters()) {
    const auto pp = std::find_if(ps.space().parameters().begin(), ps.space().parameters().end(),
                                 [&](const Parameter& q) { return q.name == p.name; });
    for (const auto v : p.values) {
      const bool is_new = pp == ps.space().parameters().end()
                              ? v != space.default_config().at(p.name)
                              : std::find(pp->values.begin(), pp->values.end(), v) == pp->values.end();
      if (is_new) a.new_values[p.name].insert(v);
    }
  }
  // Seeds: the parent's champion and best configs, each first with every new value, then as they are.
  std::vector<std::pair<Config, std::string>> bases;
  if (const auto c = ps.champion()) bases.emplace_back(c->config, fmt::format("parent's champion (iter {})", c->iter));
  for (const auto& [c, outcome] : ps.ranked()) {
    if (bases.size() > o_.ideas.top) break;
    if (std::none_of(bases.begin(), bases.end(), [&](const auto& b) { return b.first == c; }))
      bases.emplace_back(c, fmt::format("parent's iter {}", outcome.iter));
  }
  std::vector<Proposal> seeds;
  for (const auto& [base, what] : bases)
    for (const auto& [c, change] : idea_variants(a, space, base))
      seeds.push_back({c, "idea: " + what + (change.empty() ? "" : ", " + change)});
  return seeds;
}

bool Loop::catch_up_idea() {
  const ActiveIdea& a = *ideas_.current();
  const auto parent_best = search_.state(a.rec.parent_template).champion();
  if (!parent_best) return false;
  SearchState& st = search_.state(a.rec.template_name);
  std::vector<Config> missing;
  for (const auto& [c, change] : idea_variants(a, st.space(), parent_best->config))
    if (!st.seen(c) && !st.space().check(c)) missing.push_back(c);
  if (missing.empty()) return false;
  // The parent found a better config while the idea was tuned: the idea gets it too, then the judging.
  for (const auto& c : missing) {
    st.mark_pending(c);
    ideas_.on_issued(a.rec.template_name);
    inflight_.push_front({TemplateProposal{a.rec.template_name, {c, fmt::format("idea: the parent's champion now "
                                                                                 "(iter {})", parent_best->iter)}},
                          pool_.submit(compile_request(a.rec.template_name, c)).share()});
  }
  return true;
}

Contender Loop::idea_contender(const std::string& tname, const Champion& c) {
  Contender k{c.iter, tname, c.config, "", kernels_.at(tname), {}};
  k.measured.score_ms = c.score_ms;
  if (const auto row = db_.iteration(c.iter))
    for (const auto& cr : row->cases) k.measured.rel_spread = std::max(k.measured.rel_spread, cr.spread.value_or(0.0));
  const CompileRequest req = compile_request(tname, c.config);  // reads the search: before the unlock
  const CompiledVariant cv = unlocked(mu_, [&] { return compiler_.compile(req); });
  if (cv.ok) k.cubin_path = cv.cubin_path;
  return k;
}

void Loop::judge_idea(GpuSlot& slot) {
  ActiveIdea& a = *ideas_.current();
  const std::string t = a.rec.template_name;
  search_.prefer("");
  a.rec.status = IdeaStatus::judging;
  db_.update_idea(a.rec);
  const std::optional<IdeaPick> pick = pick_idea_contenders(a);
  if (!pick) return;
  // The contenders in the order timed: the paired config, then the fastest (one when they are the same).
  const Contender parent = idea_contender(a.rec.parent_template, pick->parent_best);
  std::vector<Contender> contenders;
  std::vector<bool> paired;
  if (pick->paired && pick->paired->iter != pick->best.iter) {
    contenders.push_back(idea_contender(t, *pick->paired));
    paired.push_back(true);
  }
  contenders.push_back(idea_contender(t, pick->best));
  paired.push_back(pick->paired && pick->paired->iter == pick->best.iter);

  // One challenge at a time, on this GPU (lock order: challenge_mu_, then mu_).
  std::unique_lock challenge_lock(challenge_mu_, std::defer_lock);
  unlocked(mu_, [&] { challenge_lock.lock(); });
  challenge_slot_ = &slot;
  struct EndChallenge {
    GpuSlot*& slot;
    ~EndChallenge() { slot = nullptr; }
  } end_challenge{challenge_slot_};
  slot.state = fmt::format("judging idea {}", a.rec.id);
  write_status(fmt::format("idea {}: A/B/A against {}", a.rec.file, a.rec.parent_template));
  const auto t0 = Clock::now();
  const std::optional<IdeaAba> aba = retime_idea(parent, contenders, paired);
  if (!aba) {
    ideas_.add_gpu_ms(seconds_since(t0) * 1000);
    retire(t);
    return end_idea(IdeaVerdict::broken, IdeaBrokenKind::crash, "the A/B/A re-timing against the parent failed (see the log)");
  }
  std::optional<IdeaHoldout> holdout;
  if (holdout_) holdout = holdout_idea(parent, contenders[decide_idea(*aba, std::nullopt).judged]);
  const IdeaDecision d = decide_idea(*aba, holdout);
  ideas_.add_gpu_ms(seconds_since(t0) * 1000);
  record_idea_numbers(a, d, *aba, holdout, parent, contenders, slot);
  if (d.verdict != IdeaVerdict::win) retire(t);
  else search_.set_strategy(t, make_strategy(o_.strategy, o_.seed));  // a win is tuned on like any template
  end_idea(d.verdict, d.broken_kind, d.reason + pick->inactive_note);
}

std::optional<IdeaPick> Loop::pick_idea_contenders(ActiveIdea& a) {
  const std::string& t = a.rec.template_name;
  const SearchState& st = search_.state(t);  // read here only: the unlocks of the judging come after
  a.rec.configs = std::int64_t(st.results().size());
  // The idea's contender: its best config that runs the idea (a config with every new value off is the
  // parent's code: a lead there would be the parent's own tuning noise, not the idea).
  std::optional<Champion> best;
  for (const auto& [c, o] : st.ranked())
    if (a.active(c)) {
      best = Champion{c, o.iter, *o.score_ms};
      break;
    }
  if (!best) {
    std::map<FailureKind, int> kinds;
    std::size_t active = 0;
    for (const auto& [c, o] : st.results())
      if (a.active(c)) {
        ++active;
        if (const auto k = failure_kind_from_string(o.failure); !o.ok() && k) ++kinds[*k];
      }
    const std::size_t configs = st.results().size();
    retire(t);
    if (!active)
      end_idea(IdeaVerdict::no_gain, IdeaBrokenKind::none,
               fmt::format("none of its {} configs ran the idea (every new value off)", configs));
    else {
      IdeaBrokenKind kind = IdeaBrokenKind::crash;
      int n = 0;
      for (const auto& [k, count] : kinds)
        if (count > n) kind = idea_broken_kind(k), n = count;
      end_idea(IdeaVerdict::broken, kind,
               fmt::format("none of its {} configs with the idea on gave a valid whole-suite result ({} of them: {})",
                           active, n, to_string(kind)));
    }
    return std::nullopt;
  }
  IdeaPick pick{search_.state(a.rec.parent_template).champion().value(), *best, std::nullopt, ""};
  if (const auto overall = st.champion(); overall && !a.active(overall->config) && overall->score_ms < best->score_ms)
    pick.inactive_note = fmt::format("; its fastest config overall (iter {}, {:.4f} ms) has the idea off",
                                     overall->iter, overall->score_ms);
  a.rec.best_iteration_id = best->iter;
  a.rec.best_ms = best->score_ms;
  // The paired config: the parent's best with the idea's values on and every old axis as it is, so that its
  // difference to the parent is the idea's code alone. The idea's fastest config may differ from it in the old
  // axes (a retuning, or the luckiest of a few noisy looks); both are timed between the two looks at the parent.
  for (const auto& [c, change] : idea_variants(a, st.space(), pick.parent_best.config)) {
    const auto r = st.results().find(c);
    if (change.empty() || r == st.results().end() || !r->second.ok()) continue;
    if (!pick.paired || *r->second.score_ms < pick.paired->score_ms)
      pick.paired = Champion{c, r->second.iter, *r->second.score_ms};
  }
  return pick;
}

std::optional<IdeaAba> Loop::retime_idea(const Contender& parent, const std::vector<Contender>& contenders,
                                         const std::vector<bool>& paired) {
  if (parent.cubin_path.empty()) return std::nullopt;
  for (const auto& c : contenders)
    if (c.cubin_path.empty()) return std::nullopt;
  const auto timing = [](const Measured& m) { return SuiteTiming{m.score_ms, m.rel_spread}; };
  IdeaAba aba;
  aba.parent_tuned = timing(parent.measured);
  const auto a1 = retime(parent);
  if (!a1) return std::nullopt;
  aba.a1 = timing(*a1);
  for (std::size_t i = 0; i < contenders.size(); ++i) {
    const auto b = retime(contenders[i]);
    if (!b) return std::nullopt;
    aba.contenders.push_back({paired[i], contenders[i].iter, timing(contenders[i].measured), timing(*b)});
  }
  const auto a2 = retime(parent);
  if (!a2) return std::nullopt;
  aba.a2 = timing(*a2);
  return aba;
}

IdeaHoldout Loop::holdout_idea(const Contender& parent, const Contender& judged) {
  const auto [hp, hi] = eval_holdout_pair(parent, judged);
  const auto run = [](const HoldoutResult& h) {
    return HeldOutRun{h.ok ? std::optional<double>(h.measured.score_ms) : std::nullopt, h.kind, h.failure};
  };
  return {run(hp), run(hi)};
}

void Loop::record_idea_numbers(ActiveIdea& a, const IdeaDecision& d, const IdeaAba& aba,
                               const std::optional<IdeaHoldout>& holdout, const Contender& parent,
                               const std::vector<Contender>& contenders, const GpuSlot& slot) {
  if (holdout) {
    a.rec.holdout_parent_ms = holdout->parent.ms;
    a.rec.holdout_idea_ms = holdout->idea.ms;
  }
  a.rec.parent_ms = d.parent_ms;
  a.rec.idea_ms = d.idea_ms;
  a.rec.delta_pct = d.delta_pct;
  a.rec.noise_pct = d.noise_pct;
  auto looks = nlohmann::json::array();
  for (std::size_t i = 0; i < d.looks.size(); ++i)
    looks.push_back({{"what", aba.contenders[i].paired ? "paired" : "fastest"}, {"iter", contenders[i].iter},
                     {"ms", aba.contenders[i].b.ms}, {"delta_pct", d.looks[i].delta_pct}});
  a.rec.aba_json = nlohmann::json{{"a1_ms", aba.a1.ms}, {"b_ms", d.idea_ms}, {"a2_ms", aba.a2.ms},
                                  {"noise_ms", d.looks[d.judged].d.noise_ms}, {"parent_iter", parent.iter},
                                  {"idea_iter", contenders[d.judged].iter}, {"judged", looks[d.judged]["what"]},
                                  {"looks", looks}, {"gpu_index", slot.gpu.index}, {"gpu_uuid", slot.gpu.uuid}}.dump();
}

void Loop::end_idea(IdeaVerdict verdict, IdeaBrokenKind kind, const std::string& reason) {
  ActiveIdea& a = *ideas_.current();
  a.rec.status = IdeaStatus::done;
  a.rec.verdict = verdict;
  a.rec.broken_kind = kind;
  a.rec.reason = reason;
  a.rec.wall_s = seconds_since(a.t0);
  a.rec.gpu_s = ideas_.gpu_ms() / 1000;
  if (!a.rec.template_name.empty() && kernels_.count(a.rec.template_name))
    a.rec.configs = std::int64_t(search_.state(a.rec.template_name).results().size());
  db_.update_idea(a.rec);
  say(fmt::format("idea {} ({}): {}{}: {} [{} configs, {:.0f} s]", a.rec.id, a.rec.file, to_string(verdict),
                  kind == IdeaBrokenKind::none ? "" : fmt::format(" ({})", to_string(kind)), reason, a.rec.configs,
                  *a.rec.wall_s));
  if (verdict == IdeaVerdict::win)
    say(fmt::format("idea {}: {} is the parent of the next idea of its lineage", a.rec.id, a.rec.template_name));
  ideas_.end();  // the next idea now
  write_status("idea queue: waiting");
}

void Loop::interrupt_idea(const std::string& why) {
  ActiveIdea* a = ideas_.current();
  if (!a) return;
  if (a->check.valid()) a->check.wait();
  a->rec.status = IdeaStatus::interrupted;
  a->rec.reason = why;
  a->rec.wall_s = seconds_since(a->t0);
  a->rec.gpu_s = ideas_.gpu_ms() / 1000;
  try {
    db_.update_idea(a->rec);
  } catch (const std::exception& e) {
    spdlog::warn("idea {}: cannot record its interruption: {}", a->rec.id, e.what());
  }
  ideas_.end();
}

}  // namespace attn::tuning
