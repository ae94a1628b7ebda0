// The idea queue in the tuning loop (daemon/loop.hpp, docs/ideas.md): one idea at a time is taken from the
// queue folder, applied to its parent (the latest winning idea of its template's lineage, else the
// template), checked on a thread of its own while the GPU goes on tuning, tuned within its budget (the
// parent's best configs first, evaluated in full), judged by A/B/A against the parent's best on one GPU and
// on the held-out seed, and given a verdict: win (it stays in the search and the next idea stacks on it),
// no_gain, slower (it leaves the search), or broken with the kind.
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
#include "tuner/proposal_template.hpp"

namespace attn::tuning {
namespace {

/// The identity of bytes that are not an idea (bad input, a queue problem): "file:" + their XXH3-128.
std::string bytes_hash(const std::string& s) { return "file:" + xxh128_hex(s); }

/// The Config with `axis` = `value` (a new axis of an idea switched on).
Config with(Config c, const std::string& axis, std::int64_t value) {
  c[axis] = value;
  return c;
}

}  // namespace

bool ActiveIdea::active(const Config& c) const {
  if (new_values.empty()) return true;
  for (const auto& [p, values] : new_values)
    if (const auto v = c.find(p); v != c.end() && values.count(v->second)) return true;
  return false;
}

std::vector<std::pair<Config, std::string>> Loop::idea_variants(const TemplateSpace& space, const Config& base) const {
  std::vector<std::pair<Config, std::string>> out;
  const Config c = space.complete(base);
  for (const auto& [p, values] : idea_->new_values)
    for (const auto v : values) out.emplace_back(with(c, p, v), fmt::format("{}={}", p, v));
  out.emplace_back(c, "");
  return out;
}

void Loop::load_idea_templates() {
  std::map<std::string, std::string> verdict_of;  // template -> the verdict of its idea (latest row)
  for (const auto& i : db_.ideas())
    if (!i.template_name.empty()) verdict_of[i.template_name] = i.status == "done" ? i.verdict : i.status;
  for (const auto& [t, verdict] : verdict_of) {
    if (!kernels_.count(t)) continue;
    idea_templates_.insert(t);
    if (verdict != "win") search_.retire(t);  // judged (or cut off before its verdict): no more GPU time
  }
}

std::optional<std::string> Loop::idea_parent(const std::vector<IdeaRecord>& ideas, const std::string& root) const {
  for (auto i = ideas.rbegin(); i != ideas.rend(); ++i)
    if (i->status == "done" && i->verdict == "win" && kernels_.count(i->template_name) &&
        proposal_root_template(i->template_name) == root)
      return i->template_name;
  if (kernels_.count(root)) return root;
  return std::nullopt;
}

void Loop::poll_ideas(GpuSlot& slot) {
  if (!o_.ideas.enabled()) return;
  if (idea_ && idea_->check.valid() &&
      idea_->check.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
    finish_idea_check();
  if (idea_tuned() && !catch_up_idea()) judge_idea(slot);
  if (idea_ || seconds_since(ideas_scanned_) < o_.ideas.poll_s) return;
  ideas_scanned_ = Clock::now();
  std::string problem;
  const auto queued = scan_idea_queue(o_.ideas.dir, problem);
  if (!problem.empty()) {
    if (problem != idea_queue_problem_) {  // once per problem, not every poll
      spdlog::warn("{}", problem);
      say("idea queue: " + problem + "; the run goes on and looks again");
      IdeaRecord r;
      r.run_id = summary_.run_id;
      r.file = o_.ideas.dir;
      r.idea_hash = bytes_hash(problem);
      r.status = "done";
      r.verdict = "broken";
      r.broken_kind = "bad_input";
      r.reason = problem;
      db_.add_idea(r);
    }
    idea_queue_problem_ = problem;
    return;
  }
  if (!idea_queue_problem_.empty()) say(fmt::format("idea queue: {} is there again", o_.ideas.dir));
  idea_queue_problem_.clear();
  for (const auto& q : queued) {
    const std::string key = idea_queue_key(q);
    if (ideas_taken_.count(key)) continue;
    if (start_idea(q)) ideas_taken_.insert(key);
    if (idea_) return;  // one idea at a time: the next one stacks on its verdict
  }
}

bool Loop::start_idea(const QueuedIdea& q) {
  const std::vector<IdeaRecord> known = db_.ideas();
  IdeaRecord rec;
  rec.run_id = summary_.run_id;
  rec.file = q.name;
  const auto record_broken = [&](const std::string& kind, const std::string& why) {
    rec.status = "done";
    rec.verdict = "broken";
    rec.broken_kind = kind;
    rec.reason = why;
    rec.wall_s = 0.0;
    for (const auto& old : known)  // the same bytes were judged bad before (an earlier run)
      if (old.idea_hash == rec.idea_hash && old.broken_kind == kind) return true;
    rec.id = db_.add_idea(rec);
    say(fmt::format("idea {} ({}): broken ({}): {}", rec.id, q.name, kind, why));
    return true;
  };
  if (!q.bytes) {
    rec.idea_hash = bytes_hash(q.name + "\n" + q.error);
    return record_broken("bad_input", q.error);
  }
  IdeaFile file;
  try {
    file = parse_idea(q.name, *q.bytes);
  } catch (const IdeaInputError& e) {
    rec.idea_hash = bytes_hash(*q.bytes);
    return record_broken("bad_input", e.what());
  }
  rec.idea_hash = file.hash;
  rec.description = file.description;
  rec.hypothesis = file.hypothesis;
  rec.diff = file.diff;
  rec.space_json = file.space.dump();
  rec.default_json = file.defaults.dump();

  // The ideas judged on this suite: a verdict holds for the suite it was measured on (an idea for the small shapes
  // judged on full is judged again on quick), and so does a lineage of wins.
  std::set<std::int64_t> runs_here;
  for (const auto& r : db_.runs())
    if (r.suite == suite_label_) runs_here.insert(r.id);
  std::vector<IdeaRecord> here;
  for (const auto& old : known)
    if (runs_here.count(old.run_id)) here.push_back(old);
  // Its parent: the latest win of the lineage of its template (or of the overall champion's) on this suite.
  std::string root = file.template_root;
  if (root.empty()) {
    const auto& champ = champions_.overall();
    if (!champ) return false;  // nothing tuned yet: it waits for a champion
    root = proposal_root_template(champ->template_name);
  }
  const auto parent = idea_parent(here, root);
  if (!parent)
    return record_broken("bad_input", fmt::format("Template: {} is not tuned by this run (templates: {})", root,
                                                  fmt::join(search_.template_names(), ", ")));
  const auto parent_best = search_.state(*parent).champion();
  if (!parent_best) return false;  // its parent has no whole-suite result yet: it waits
  rec.parent_template = *parent;
  rec.parent_iteration_id = parent_best->iter;

  // Never twice on the same parent (of this suite's lineage); on a new parent only when the file asks (Retry: yes).
  for (const auto& old : here) {
    if (old.idea_hash != file.hash || old.status != "done") continue;
    if (old.parent_template == *parent || !file.retry) {
      say(fmt::format("idea {}: already judged {} on {} on {} (idea {}){}", q.name, old.verdict, old.parent_template,
                      suite_label_, old.id, old.parent_template == *parent ? "" : "; add 'Retry: yes' to run it on " + *parent));
      return true;
    }
  }

  ProposalRecord pr;
  pr.run_id = summary_.run_id;
  pr.command = "idea " + q.name;
  pr.parent_template = *parent;
  pr.parent_iteration_id = parent_best->iter;
  const std::int64_t pid = db_.begin_proposal(pr);
  rec.proposal_id = pid;
  rec.template_name = proposal_template_name(*parent, pid);
  rec.status = "checking";
  rec.id = db_.add_idea(rec);

  ActiveIdea a;
  a.rec = rec;
  a.file = file;
  const TemplateSpace parent_space = search_.state(*parent).space();
  const std::string dir = fmt::format("{}/{}", proposals_dir_for(o_.db_path), pid), name = rec.template_name;
  // The checks (patch, NVRTC of the default config, ABI) run beside the tuning: the GPU does not wait.
  a.check = std::async(std::launch::async, [this, file, parent_space, dir, name] {
    return apply_idea(file, parent_space, dir, name, compiler_);
  });
  idea_.emplace(std::move(a));
  say(fmt::format("idea {} ({}): {} — applied to {} (best iter {}), checking", rec.id, q.name, file.description,
                  *parent, parent_best->iter));
  write_status("idea " + q.name + ": checking");
  return true;
}

void Loop::finish_idea_check() {
  ActiveIdea& a = *idea_;
  IdeaApplied r;
  try {
    r = a.check.get();
  } catch (const std::exception& e) {  // the daemon's own files: the idea cannot be judged, the run goes on
    r.broken_kind = "proposal";
    r.reason = std::string("applying it failed: ") + e.what();
  }
  ProposalRecord pr = *db_.proposal(*a.rec.proposal_id);
  pr.status = r.broken_kind.empty() ? ProposalStatus::accepted : ProposalStatus::rejected;
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
  if (!r.broken_kind.empty()) return end_idea("broken", r.broken_kind, r.reason);

  TemplateSpace space = std::move(*r.check.space);
  if (o_.shard) space.restrict_to_shard(o_.shard->index, o_.shard->count);
  const std::string t = space.name();
  // What the idea adds: values of new axes but their defaults, values added to the parent's axes.
  const SearchState& ps = search_.state(a.rec.parent_template);
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
    for (const auto& [c, change] : idea_variants(space, base))
      seeds.push_back({c, "idea: " + what + (change.empty() ? "" : ", " + change)});
  kernels_[t] = space.kernel();
  sources_[t] = space.source_path();
  proposal_of_[t] = *a.rec.proposal_id;
  idea_templates_.insert(t);
  search_.add(std::move(space), make_seeded_strategy(std::move(seeds), make_strategy(o_.strategy, o_.seed),
                                                     o_.ideas.budget));
  search_.prefer(t);
  a.rec.status = "tuning";
  db_.update_idea(a.rec);
  say(fmt::format("idea {} ({}): checked, template {} joins the search: {} configs, the parent's best first",
                  a.rec.id, a.rec.file, t, o_.ideas.budget));
  write_status("idea " + a.rec.file + ": tuning");
}

bool Loop::idea_tuned() const {
  if (!idea_ || idea_->check.valid() || idea_->rec.status != "tuning") return false;
  const std::string& t = idea_->rec.template_name;
  if (idea_->finished < idea_->issued) return false;
  return search_.retired(t) || search_.exhausted(t);
}

bool Loop::catch_up_idea() {
  ActiveIdea& a = *idea_;
  const auto parent_best = search_.state(a.rec.parent_template).champion();
  if (!parent_best) return false;
  SearchState& st = search_.state(a.rec.template_name);
  std::vector<Config> missing;
  for (const auto& [c, change] : idea_variants(st.space(), parent_best->config))
    if (!st.seen(c) && !st.space().check(c)) missing.push_back(c);
  if (missing.empty()) return false;
  // The parent found a better config while the idea was tuned: the idea gets it too, then the judging.
  for (const auto& c : missing) {
    st.mark_pending(c);
    ++a.issued;
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
  const CompiledVariant cv = unlocked(mu_, [&] { return compiler_.compile(compile_request(tname, c.config)); });
  if (cv.ok) k.cubin_path = cv.cubin_path;
  return k;
}

void Loop::judge_idea(GpuSlot& slot) {
  ActiveIdea& a = *idea_;
  std::string inactive_note;
  const std::string t = a.rec.template_name;
  search_.prefer("");
  a.rec.status = "judging";
  db_.update_idea(a.rec);
  const SearchState& st = search_.state(t);
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
    std::map<std::string, int> kinds;
    std::size_t active = 0;
    for (const auto& [c, o] : st.results())
      if (a.active(c)) {
        ++active;
        if (!o.ok()) ++kinds[o.failure];
      }
    search_.retire(t);
    if (!active)
      return end_idea("no_gain", "", fmt::format("none of its {} configs ran the idea (every new value off)",
                                                 st.results().size()));
    std::string kind = "crash";
    int n = 0;
    for (const auto& [k, count] : kinds)
      if (count > n) kind = k, n = count;
    return end_idea("broken", kind,
                    fmt::format("none of its {} configs with the idea on gave a valid whole-suite result ({} of "
                                "them: {})", active, n, kind));
  }
  if (const auto overall = st.champion(); overall && !a.active(overall->config) && overall->score_ms < best->score_ms)
    inactive_note = fmt::format("; its fastest config overall (iter {}, {:.4f} ms) has the idea off", overall->iter,
                                overall->score_ms);
  a.rec.best_iteration_id = best->iter;
  a.rec.best_ms = best->score_ms;
  const auto parent_best = search_.state(a.rec.parent_template).champion();
  // The paired config: the parent's best with the idea's values on and every old axis as it is, so that its
  // difference to the parent is the idea's code alone. The idea's fastest config may differ from it in the old
  // axes (a retuning, or the luckiest of a few noisy looks: a no-op probe was once judged slower that way,
  // docs/ideas.md); both are timed between the two looks at the parent.
  std::optional<Champion> paired;
  for (const auto& [c, change] : idea_variants(st.space(), parent_best->config)) {
    const auto r = st.results().find(c);
    if (change.empty() || r == st.results().end() || !r->second.ok()) continue;
    if (!paired || *r->second.score_ms < paired->score_ms) paired = Champion{c, r->second.iter, *r->second.score_ms};
  }
  const Contender pc = idea_contender(a.rec.parent_template, *parent_best), ic = idea_contender(t, *best);
  std::optional<Contender> icp;
  if (paired && paired->iter != best->iter) icp = idea_contender(t, *paired);

  // A/B/A on this GPU, one challenge at a time (lock order: challenge_mu_, then mu_): parent, paired, fastest,
  // parent.
  std::unique_lock challenge_lock(challenge_mu_, std::defer_lock);
  unlocked(mu_, [&] { challenge_lock.lock(); });
  challenge_slot_ = &slot;
  slot.state = fmt::format("judging idea {}", a.rec.id);
  write_status(fmt::format("idea {}: A/B/A against {}", a.rec.file, a.rec.parent_template));
  const auto t0 = Clock::now();
  std::optional<Measured> a1, b, p, a2;
  if (!pc.cubin_path.empty() && !ic.cubin_path.empty() && (!icp || !icp->cubin_path.empty())) {
    a1 = retime(pc);
    if (icp) p = retime(*icp);
    b = retime(ic);
    a2 = retime(pc);
  }
  if (!a1 || !b || !a2 || (icp && !p)) {
    challenge_slot_ = nullptr;
    a.gpu_ms += seconds_since(t0) * 1000;
    search_.retire(t);
    return end_idea("broken", "crash", "the A/B/A re-timing against the parent failed (see the log)");
  }
  // Each contender against the same two looks at the parent, with the champion rule's numbers
  // (tuner/champion.hpp, docs/tuner.md): noise = max(|A1 - A2|, the worst relative spread of the looks x the
  // score, the 0.5 % floor).
  struct Look {
    const Contender* contender;
    std::string what;
    Measured measured;
    ChampionDecision d;
    bool win = false, slower = false;
  };
  const auto look = [&](const Contender& c, std::string what, const Measured& m) {
    Look l{&c, std::move(what), m,
           measure_aba({pc.measured.score_ms, c.measured.score_ms,
                        std::max({pc.measured.rel_spread, a1->rel_spread, a2->rel_spread}),
                        std::max(c.measured.rel_spread, m.rel_spread)},
                       {a1->score_ms, m.score_ms, a2->score_ms})};
    l.win = m.score_ms < a1->score_ms && m.score_ms < a2->score_ms && l.d.lead_ms > l.d.noise_ms;
    l.slower = m.score_ms > a1->score_ms && m.score_ms > a2->score_ms && -l.d.lead_ms > l.d.noise_ms;
    return l;
  };
  std::vector<Look> looks;
  const bool best_is_paired = paired && paired->iter == best->iter;
  if (icp) looks.push_back(look(*icp, "paired", *p));
  looks.push_back(look(ic, best_is_paired ? "paired" : "fastest", *b));
  // The judged look: the faster winner if one wins; else the paired one (the code alone) where there is one.
  // A win on either is a win (a faster kernel either way); slower only when every look is slower.
  const Look* j = nullptr;
  for (const auto& l : looks)
    if (l.win && (!j || l.measured.score_ms < j->measured.score_ms)) j = &l;
  if (!j) j = &looks.front();
  const bool all_slower = std::all_of(looks.begin(), looks.end(), [](const Look& l) { return l.slower; });
  const double mean = j->d.incumbent_ms, noise = j->d.noise_ms, jb = j->measured.score_ms;
  a.rec.parent_ms = mean;
  a.rec.idea_ms = jb;
  a.rec.delta_pct = (jb / mean - 1) * 100;
  a.rec.noise_pct = noise / mean * 100;
  auto looks_json = nlohmann::json::array();
  std::string others;
  for (const auto& l : looks) {
    looks_json.push_back({{"what", l.what}, {"iter", l.contender->iter}, {"ms", l.measured.score_ms},
                          {"delta_pct", (l.measured.score_ms / l.d.incumbent_ms - 1) * 100}});
    if (&l != j)
      others += fmt::format("; {} config (iter {}) {:.4f} ms ({:+.2f} %)", l.what, l.contender->iter,
                            l.measured.score_ms, (l.measured.score_ms / l.d.incumbent_ms - 1) * 100);
  }
  a.rec.aba_json = nlohmann::json{{"a1_ms", a1->score_ms}, {"b_ms", jb}, {"a2_ms", a2->score_ms},
                                  {"noise_ms", noise}, {"parent_iter", pc.iter}, {"idea_iter", j->contender->iter},
                                  {"judged", j->what}, {"looks", looks_json},
                                  {"gpu_index", slot.gpu.index}, {"gpu_uuid", slot.gpu.uuid}}.dump();
  const std::string judged =
      j->what == "paired" ? fmt::format(" (paired: the parent's config with the idea on, iter {})", j->contender->iter)
                          : fmt::format(" (its fastest config with the idea on, iter {}{})", j->contender->iter,
                                        paired ? "" : "; no paired config: the parent's best with the idea on "
                                                      "has no valid result");
  std::string verdict, reason;
  if (j->win) {
    verdict = "win";
    reason = fmt::format("{:.4f} ms vs the parent's {:.4f} (A/B/A {:.4f}/{:.4f}/{:.4f}): {:+.2f} %, noise {:.2f} %",
                         jb, mean, a1->score_ms, jb, a2->score_ms, *a.rec.delta_pct, *a.rec.noise_pct);
  } else if (all_slower) {
    verdict = "slower";
    reason = fmt::format("{:.4f} ms vs the parent's {:.4f}: {:+.2f} %, beyond the noise {:.2f} %", jb, mean,
                         *a.rec.delta_pct, *a.rec.noise_pct);
  } else {
    verdict = "no_gain";
    reason = fmt::format("{:.4f} ms vs the parent's {:.4f}: {:+.2f} %, within the noise {:.2f} %", jb, mean,
                         *a.rec.delta_pct, *a.rec.noise_pct);
  }
  reason += judged + others;
  // The held-out seed: both validated and timed there, on the same GPU.
  std::string kind;
  if (holdout_) {
    const auto [hp, hi] = eval_holdout_pair(pc, *j->contender);
    if (hp.ok) a.rec.holdout_parent_ms = hp.measured.score_ms;
    if (hi.ok) a.rec.holdout_idea_ms = hi.measured.score_ms;
    if (!hi.ok) {
      verdict = "broken";
      kind = hi.failure.rfind("wrong result", 0) == 0 ? "wrong_result" : "crash";
      reason = "on the held-out seed: " + hi.failure;
    } else if (hp.ok) {
      const double d = (hi.measured.score_ms / hp.measured.score_ms - 1) * 100;
      reason += fmt::format("; held-out {:.4f} vs {:.4f} ms ({:+.2f} %)", hi.measured.score_ms, hp.measured.score_ms, d);
      if (verdict == "win" && d > *a.rec.noise_pct) {
        verdict = "no_gain";
        reason += ": faster on the tuning seed only";
      }
    }
  }
  challenge_slot_ = nullptr;
  a.gpu_ms += seconds_since(t0) * 1000;
  reason += inactive_note;
  if (verdict != "win") search_.retire(t);
  else search_.set_strategy(t, make_strategy(o_.strategy, o_.seed));  // a win is tuned on like any template
  end_idea(verdict, kind, reason);
}

void Loop::end_idea(const std::string& verdict, const std::string& kind, const std::string& reason) {
  ActiveIdea& a = *idea_;
  a.rec.status = "done";
  a.rec.verdict = verdict;
  a.rec.broken_kind = kind;
  a.rec.reason = reason;
  a.rec.wall_s = seconds_since(a.t0);
  a.rec.gpu_s = a.gpu_ms / 1000;
  if (!a.rec.template_name.empty() && kernels_.count(a.rec.template_name))
    a.rec.configs = std::int64_t(search_.state(a.rec.template_name).results().size());
  db_.update_idea(a.rec);
  say(fmt::format("idea {} ({}): {}{}: {} [{} configs, {:.0f} s]", a.rec.id, a.rec.file, verdict,
                  kind.empty() ? "" : " (" + kind + ")", reason, a.rec.configs, *a.rec.wall_s));
  if (verdict == "win")
    say(fmt::format("idea {}: {} is the parent of the next idea of its lineage", a.rec.id, a.rec.template_name));
  idea_.reset();
  ideas_scanned_ = {};  // the next idea now
  write_status("idea queue: waiting");
}

void Loop::interrupt_idea(const std::string& why) {
  if (!idea_) return;
  if (idea_->check.valid()) idea_->check.wait();
  idea_->rec.status = "interrupted";
  idea_->rec.reason = why;
  idea_->rec.wall_s = seconds_since(idea_->t0);
  idea_->rec.gpu_s = idea_->gpu_ms / 1000;
  try {
    db_.update_idea(idea_->rec);
  } catch (const std::exception& e) {
    spdlog::warn("idea {}: cannot record its interruption: {}", idea_->rec.id, e.what());
  }
  idea_.reset();
}

}  // namespace attn::tuning
