// One iteration of the tuning loop (daemon/loop.hpp): the compile result, the ladder's screen, the whole
// suite, the champion challenge (A/B/A re-timing, held-out check) and promotion, logged to the DB.
#include <algorithm>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "daemon/loop.hpp"
#include "db/iters_tsv.hpp"
#include "tuner/proposal_template.hpp"

namespace attn::tuning {

Measured to_measured(const EvalResponse& r) {
  Measured m;
  m.score_ms = r.score_ms;
  m.family_ms = r.family_median_ms;
  m.wall_ms = r.wall_ms;
  for (const auto& c : r.cases) m.rel_spread = std::max(m.rel_spread, c.spread);
  return m;
}

FailureKind failure_kind(const ReplyStatus& s) { return s.rejected ? FailureKind::worker_died : s.failure; }

bool ends_worker(const ReplyStatus& s) {
  return s.failure == FailureKind::fault || s.failure == FailureKind::hang || s.failure == FailureKind::worker_died ||
         s.rejected;
}

CaseResultRecord to_record(const CaseResult& c) {
  CaseResultRecord r;
  r.case_id = c.case_id;
  r.family = c.family;
  if (c.timed) {
    r.median_ms = c.median_ms;
    r.spread = c.spread;
    r.samples = c.samples;
    if (c.sm_clock_mhz) r.sm_clock_mhz = c.sm_clock_mhz;
  }
  if (c.validated) {
    r.o_max_abs_diff = c.o_max_abs_diff;
    r.lse_max_abs_diff = c.lse_max_abs_diff;
  }
  r.passed = c.passed;
  return r;
}

std::string resources_text(const CompiledVariant& cv) {
  const auto& r = cv.resources;
  std::string s = fmt::format("{} regs", r.registers);
  if (r.spill_stores + r.spill_loads > 0) s += fmt::format(", spills {}+{} B", r.spill_stores, r.spill_loads);
  if (cv.log.find("C7520") != std::string::npos || cv.log.find("C7512") != std::string::npos ||
      cv.log.find("serialized") != std::string::npos)
    s += ", wgmma serialized";
  return s;
}

/// What the search learns from a finished iteration: the whole-suite score, else the screen score (an
/// estimate of it, for the strategies' ranking; never a champion), else a failure.
namespace {
Outcome outcome_from(std::int64_t iter, IterationStatus status, FailureKind kind, std::optional<double> geomean_ms,
                     std::optional<double> screen_ms) {
  if (status != IterationStatus::crash) {
    if (geomean_ms) return Outcome::success(iter, *geomean_ms);
    if (screen_ms) return Outcome::success(iter, *screen_ms);
  }
  return Outcome::failed(iter, to_string(kind));
}
}  // namespace

Outcome outcome_of(const IterationRecord& it) {
  return outcome_from(it.iter, it.status, it.failure_kind, it.geomean_ms, it.screen_ms);
}

Outcome outcome_of(const HistoryRow& r) {
  return outcome_from(r.iter, r.status, r.failure_kind, r.geomean_ms, r.screen_ms);
}

HoldoutResult Loop::eval_on_holdout(GpuSlot& slot, const Contender& c) {
  HoldoutResult h;
  const auto t0 = Clock::now();
  const EvalRequest req{c.cubin_path, c.kernel, o_.timing, true, true, {}};
  const auto deadline = eval_deadline();
  const EvalResponse r = eval_on(slot, req, deadline);
  holdout_ms_ += r.wall_ms > 0 ? r.wall_ms : seconds_since(t0) * 1000;
  for (const auto& cr : r.cases) h.cases.push_back(to_record(cr));
  if (r.status.ok() && r.score_ms > 0) {
    h.ok = true;
    h.measured = to_measured(r);
  } else {
    h.failure = r.status.ok() ? "no score" : r.status.name() + ": " + r.status.message;
    h.kind = failure_kind(r.status);
    for (const auto& cr : r.cases)
      if (cr.validated && !cr.passed) {
        h.failure = fmt::format("wrong result on {}: o max diff {:.3g}", cr.case_id, cr.o_max_abs_diff);
        break;
      }
    // wrong_result, inconsistent, below_floor and device_limit leave a healthy worker (docs/verification.md).
    if (!r.status.ok() && !is_result_check_failure(r.status.failure) && r.status.failure != FailureKind::device_limit)
      restart_worker(slot);
  }
  return h;
}

bool Loop::prepare_holdout(GpuSlot& slot) {
  slot.cases_gen = -1;  // its worker holds the held-out cases from now on
  return prepare_suite(slot, holdout_cases_);  // its time counts as case building (prepare_ms_)
}

HoldoutResult Loop::eval_holdout(const Contender& c) {
  GpuSlot& slot = *challenge_slot_;
  HoldoutResult h;
  if (!prepare_holdout(slot)) {
    h.failure = "the worker could not build the held-out cases";
    return h;
  }
  h = eval_on_holdout(slot, c);
  if (slot.ready) ensure_cases(slot);
  return h;
}

std::pair<HoldoutResult, HoldoutResult> Loop::eval_holdout_pair(const Contender& a, const Contender& b) {
  GpuSlot& slot = *challenge_slot_;
  std::pair<HoldoutResult, HoldoutResult> out;
  if (!prepare_holdout(slot)) {
    out.first.failure = out.second.failure = "the worker could not build the held-out cases";
    return out;
  }
  out.first = eval_on_holdout(slot, a);
  if (slot.ready) out.second = eval_on_holdout(slot, b);  // a crash of the first restarted the worker: none
  else out.second.failure = "not run: the worker restarted after the other's failure";
  if (slot.ready) ensure_cases(slot);
  return out;
}

void Loop::finish(IterationRecord& it, const Config& cfg, GpuSlot& slot, bool spare) {
  SearchState& st = search_.state(it.template_name);  // looked up now: a proposal may have added a template
  db_.finish_iteration(it);
  if (!spare) ++slot.iterations;
  std::string tsv_note;
  if (tsv_.write(*db_.iteration(it.iter), tsv_note) != ItersTsvWriter::Outcome::appended) spdlog::warn("{}", tsv_note);
  st.record(cfg, outcome_of(it));
  if (it.fidelity == Fidelity::screen && it.status == IterationStatus::discard) ++screened_out_;
  if (spare) {
    ++spare_evals_;
    if (it.status == IterationStatus::keep) ++spare_kept_;
  } else if (it.fidelity == Fidelity::full && it.geomean_ms && it.status != IterationStatus::crash) {
    ++full_evals_;
  }
  if (it.geomean_ms && it.status != IterationStatus::crash) {
    const auto champ = st.champion();
    if (!champ || *it.geomean_ms < champ->score_ms) st.set_champion(cfg);
  }
  if (proposal_of_.count(it.template_name)) retire_if_broken(it.template_name, st);
  ideas_.on_finished(it.template_name, it.gpu_ms.value_or(0.0));
  if (!spare) ++summary_.iterations;
  const double rate = summary_.iterations / std::max(1e-9, seconds_since(started_)) * 3600;
  const auto& best = champions_.overall();
  const double hours = std::max(1e-9, seconds_since(started_)) / 3600;
  say(fmt::format("iter {:>4} {:<11} {:>8} ms  best {:>8} ms  {:>5.0f} it/h (screened out {:.0f}/h, full {:.0f}/h)  {} {}  {}",
                  it.iter, it.fidelity == Fidelity::screen ? "screened" : spare ? fmt::format("spare {}", to_string(it.status))
                                                                                : std::string(to_string(it.status)),
                  format_ms(it.geomean_ms ? it.geomean_ms : it.screen_ms),
                  best ? format_ms(best->measured.score_ms) : "-", rate, screened_out_ / hours, full_evals_ / hours,
                  it.template_name, it.params, it.description));
}

void Loop::note_sm_clock(IterationRecord& it, const EvalResponse& r) {
  std::vector<unsigned> mhz;
  for (const auto& c : r.cases)
    if (c.timed && c.sm_clock_mhz) mhz.push_back(c.sm_clock_mhz);
  if (mhz.empty()) return;
  std::nth_element(mhz.begin(), mhz.begin() + std::ptrdiff_t(mhz.size() / 2), mhz.end());
  it.sm_clock_mhz = mhz[mhz.size() / 2];
}

std::string Loop::rebuild_champion(const Contender& c) {
  const CompiledVariant cv = compiler_.compile(compile_request(c.template_name, c.config));
  if (!cv.ok || cv.cubin_path.empty()) {
    spdlog::warn("champion iter {}: its cubin is missing and compiling it again failed ({}): it cannot be re-timed",
                 c.iter, compile_error_line(cv.log));
    return "";
  }
  say(fmt::format("champion iter {}: cubin compiled again ({}) for the A/B/A re-timings", c.iter, cv.hash.substr(0, 8)));
  return cv.cubin_path;
}

CompileRequest Loop::compile_request(const std::string& tname, const Config& cfg) const {
  return attn::compile_request(search_.state(tname).space(), cfg);
}

void Loop::evaluate(InFlight& job, GpuSlot& slot) {
  const std::string& tname = job.proposal.template_name;
  const Config& cfg = job.proposal.proposal.config;
  IterationRecord it;
  it.run_id = summary_.run_id;
  it.suite = suite_label_;
  it.template_name = tname;
  it.params_json = config_to_json(cfg);
  it.description = job.proposal.proposal.move;
  it.root_seed = root_seed_;
  if (const auto p = proposal_of_.find(tname); p != proposal_of_.end()) it.proposal_id = p->second;
  const bool spare = job.spare_of.has_value();  // its config has a screen row: evaluated again on purpose
  if (!spare && db_.has_evaluated(tname, it.params_json, suite_label_)) {  // another daemon on this DB got there first
    search_.state(tname).record(cfg, Outcome::failed(-1, "evaluated in an earlier run"));
    ideas_.on_finished(tname, 0.0);
    return;
  }
  slot.state = "waiting for its compile";
  CompiledVariant cv = unlocked(mu_, [&] { return job.compiled.get(); });
  // A header that could not be read is the file system's fault, not the config's: compile again a few
  // times (an editor or a sync rewriting the folder), then stop the run with the reason; the config
  // stays unevaluated, so a resumed run takes it up.
  if (!cv.ok && cv.transient) {
    const CompileRequest req = compile_request(tname, cfg);  // under mu_: it reads the search state
    cv = unlocked(mu_, [&] {
      return compiler_.retry_transient(std::move(cv), req, [&](int attempt, const auto& last) {
        spdlog::warn("{} {}: {}; compiling again in {} s ({}/{})", tname, config_to_compact(cfg), compile_error_line(last.log),
                     Compiler::kTransientWait.count(), attempt, Compiler::kTransientRetries);
      });
    });
  }
  if (!cv.ok && cv.transient)
    throw std::runtime_error(fmt::format("template {}: {} (after {} retries; restore the file and resume with the "
                                         "same command)", tname, compile_error_line(cv.log), Compiler::kTransientRetries));
  if (!cv.cache_hit) compile_ms_ += cv.compile_ms;
  if (!job.sibling && !spare) queue_siblings(job.proposal, cv);  // the same cubin with other values of its patchable parameters
  VariantRecord vr;
  vr.template_name = tname;
  vr.params_json = it.params_json;
  vr.content_hash = cv.hash;
  vr.compile_ok = cv.ok;
  vr.compile_ms = cv.compile_ms;
  vr.compile_log = cv.log;
  if (cv.resources.registers >= 0) vr.registers = cv.resources.registers;
  vr.smem_bytes = cv.resources.static_smem;
  vr.spill_bytes = cv.resources.spill_stores + cv.resources.spill_loads;
  vr.cubin_path = cv.cubin_path;
  vr.cubin_hash = cv.cubin_hash;
  // The iteration begins once its config compiled, with its variant, in one commit (the loop's DB writes are
  // two commits an iteration: this and finish()); a kill before it loses only this config in flight, which the
  // resumed search proposes again.
  std::tie(it.iter, it.variant_id) = db_.begin_iteration_with_variant(it, vr, job.spare_of);
  slot.state = fmt::format("evaluating iter {}", it.iter);
  write_status(slots_.size() > 1 ? fmt::format("iter {} on GPU {}: {} {}", it.iter, slot.gpu.index, tname, config_to_compact(cfg))
                                 : fmt::format("iter {}: {} {}", it.iter, tname, config_to_compact(cfg)));
  it.compile_ms = cv.cache_hit ? 0.0 : cv.compile_ms;
  const std::string head = fmt::format("{} [{}]", job.proposal.proposal.move, tname);

  if (!cv.ok) {  // NVRTC's verdict, or the compile worker running it hung or died (restarted: gpu/compile_procs.hpp)
    it.status = IterationStatus::crash;
    it.failure_kind = cv.error;
    it.description = head + (cv.error == FailureKind::compile ? "; compile error: " + compile_error_line(cv.log)
                                                              : "; compile " + std::string(to_string(cv.error)) + ": " + cv.log);
    return finish(it, cfg, slot, spare);
  }
  if (cv.cubin_path.empty()) {  // compiled, but the cubin could not be stored (full disk?): not the config's fault
    it.status = IterationStatus::interrupted;
    it.failure_kind = FailureKind::interrupted;
    it.description = head + "; interrupted: the compiled cubin could not be written to the cache";
    finish(it, cfg, slot, spare);
    const std::size_t why = cv.log.rfind("(cache write failed: ");
    throw std::runtime_error(fmt::format("cannot store compiled cubins in the cubin cache{}; the iteration is "
                                         "interrupted and will be tried again",
                                         why == std::string::npos ? "" : " " + cv.log.substr(why)));
  }
  ensure_cases(slot);  // started, and holding the current cases (the request below is built without unlocking)
  it.root_seed = root_seed_;
  it.gpu_index = slot.gpu.index;
  it.gpu_uuid = slot.gpu.uuid;
  if (slot.hello.sm_clock_mhz) it.sm_clock_mhz = slot.hello.sm_clock_mhz;
  slot.state = fmt::format("evaluating iter {}", it.iter);
  auto t0 = Clock::now();
  const milliseconds deadline = eval_deadline();
  std::string screen_note;
  EvalResponse r;
  it.gpu_ms = 0.0;
  // An idea's configs are judged in full; a spare evaluation is the whole suite for a config screened before.
  const bool screened = screen_ && !ideas_.is_idea_template(tname) && !spare;
  bool screen_failed = false;  // its failure restarted the worker as it was read (receive_front)
  if (screened) {  // the ladder's first rung: the screen cases, few samples
    r = screen_on(slot, job, screen_request(tname, cv));
    screen_failed = !r.status.ok();
    note_sm_clock(it, r);
    const double ms = r.wall_ms > 0 ? r.wall_ms : seconds_since(t0) * 1000;
    *it.gpu_ms += ms;
    screen_ms_ += ms;
    if (r.status.ok() && r.score_ms > 0 && !stop_.abandoning()) {
      it.screen_ms = r.score_ms;
      const ScreenVerdict v = judge_screen(r.score_ms, best_screen_ms_, o_.ladder.cutoff);
      if (!best_screen_ms_ || r.score_ms < *best_screen_ms_) best_screen_ms_ = r.score_ms;
      const std::string what = fmt::format("screened on {} with at most {} samples: {:.4f} ms, {}", screen_->describe(),
                                           o_.ladder.screen_max_samples, r.score_ms, v.reason);
      if (!v.promote) {
        it.status = IterationStatus::discard;
        it.fidelity = Fidelity::screen;
        for (const auto& c : r.cases) it.cases.push_back(to_record(c));
        // Short: the screened cases are its case_results rows, and fidelity screen says it went no further.
        it.description = fmt::format("{}; screened out on {} of {} cases with at most {} samples: {:.4f} ms, {}; {}",
                                     head, screen_->case_ids.size(), screen_->suite_cases,
                                     o_.ladder.screen_max_samples, r.score_ms, v.reason, resources_text(cv));
        if (o_.spare_evals && spare_candidate(r.score_ms, best_screen_ms_, o_.spare_cutoff)) {
          ScreenedNearMiss miss{job.proposal, it.iter, cv};
          miss.cv.cubin.clear();
          miss.cv.cubin.shrink_to_fit();
          near_misses_.emplace(r.score_ms, std::move(miss));
        }
        return finish(it, cfg, slot, spare);
      }
      screen_note = what + ": evaluated in full; ";
    }
  }
  // The whole suite: without the ladder, or for a contender of the screen (a failure there ends here).
  it.fidelity = screened && !it.screen_ms ? Fidelity::screen : Fidelity::full;
  if (it.fidelity == Fidelity::full) {
    t0 = Clock::now();
    const EvalRequest req{cv.cubin_path, kernels_.at(tname), o_.timing, true, true, {}};
    r = eval_on(slot, req, deadline);
    note_sm_clock(it, r);
    const double ms = r.wall_ms > 0 ? r.wall_ms : seconds_since(t0) * 1000;
    *it.gpu_ms += ms;
    (spare ? spare_ms_ : eval_ms_) += ms;
    if (spare) slot.spare_ms += seconds_since(t0) * 1000;  // as its busy time counts (eval_on)
  }
  for (const auto& c : r.cases) it.cases.push_back(to_record(c));

  if (stop_.abandoning()) {
    it.status = IterationStatus::interrupted;
    it.failure_kind = FailureKind::interrupted;
    it.description = head + "; interrupted: stop requested twice, evaluation abandoned";
    it.cases.clear();
    slot.ready = false;
    return finish(it, cfg, slot, spare);
  }
  if (!r.status.ok()) {
    it.status = IterationStatus::crash;
    it.failure_kind = failure_kind(r.status);
    std::string what = r.status.message;
    if (r.status.failure == FailureKind::wrong_result) {
      for (const auto& c : r.cases)
        if (c.validated && !c.passed) {
          what = fmt::format("wrong result on {}: o max diff {:.3g}, lse max diff {:.3g}", c.case_id,
                             c.o_max_abs_diff, c.lse_max_abs_diff);
          break;
        }
    } else if (r.status.failure == FailureKind::hang) {
      what = fmt::format("no answer within {:.1f} s, worker killed", deadline.count() / 1000.0);
    }
    it.description = fmt::format("{}; {}{}: {}; {}", head, screen_note, r.status.name(), what, resources_text(cv));
    if (ends_worker(r.status) && !screen_failed)
      restart_worker(slot);  // a fresh worker on this GPU for its next iteration; the other GPUs go on
    return finish(it, cfg, slot, spare);
  }

  Contender challenger{it.iter, tname, cfg, cv.cubin_path, kernels_.at(tname), to_measured(r)};
  it.geomean_ms = challenger.measured.score_ms;
  const auto fam = [&](Family f) -> std::optional<double> {
    const auto x = r.family_median_ms.find(f);
    return x == r.family_median_ms.end() ? std::nullopt : std::optional<double>(x->second);
  };
  it.window_ms = fam(Family::sliding_window);
  it.global_ms = fam(Family::sliding_window_global);
  it.retrieval_ms = fam(Family::sliding_window_retrieval);

  // A plain discard (not faster than any champion on the first look) needs no GPU and no wait. Otherwise
  // one challenge at a time, on this GPU: the A/B/A re-timings and held-out checks of the champion and the
  // challenger all come from the challenger's GPU. (Lock order: challenge_mu_, then mu_.)
  std::unique_lock challenge_lock(challenge_mu_, std::defer_lock);
  std::optional<ChallengeResult> plain = champions_.plain_discard(challenger);
  if (!plain) {
    unlocked(mu_, [&] { challenge_lock.lock(); });
    plain = champions_.plain_discard(challenger);  // the champions may have changed meanwhile
  }
  if (const auto& inc = champions_.overall()) it.delta_ms = challenger.measured.score_ms - inc->measured.score_ms;
  ChallengeResult cr;
  if (plain) {
    cr = *plain;
  } else {
    challenge_slot_ = &slot;
    slot.state = fmt::format("challenge: iter {}", it.iter);
    if (holdout_) holdout_->begin_challenge();
    const auto gate = [this](int scope, const Contender& ch, const Contender* inc) { return holdout_->gate(scope, ch, inc); };
    cr = champions_.challenge(challenger, [this](const Contender& c) { return retime(c); },
                              holdout_ ? PromotionGate(gate) : PromotionGate());
    challenge_slot_ = nullptr;
  }
  for (auto& p : cr.promotions) {  // which GPU the A/B/A re-timing ran on
    auto j = nlohmann::json::parse(p.aba_json);
    j["gpu_index"] = slot.gpu.index;
    if (!slot.gpu.uuid.empty()) j["gpu_uuid"] = slot.gpu.uuid;
    p.aba_json = j.dump();
  }
  const double retimed_ms = plain ? 0.0 : champions_.last_retime_ms();
  retime_ms_ += retimed_ms;
  *it.gpu_ms += retimed_ms;
  it.status = cr.kept() ? IterationStatus::keep : IterationStatus::discard;
  it.description = fmt::format("{}; {}{}; {}", head, screen_note, cr.summary.empty() ? "not faster" : cr.summary,
                               resources_text(cv));
  finish(it, cfg, slot, spare);
  for (const auto& p : cr.promotions) {
    db_.set_champion({suite_label_, p.scope, it.iter, p.score_ms, ""}, p.aba_json);
    if (p.scope == ChampionScope::overall) champion_eval_ms_ = r.wall_ms;
    if (p.scope == ChampionScope::overall) champion_at_ = summary_.iterations;
  }
}

EvalResponse Loop::eval_on(GpuSlot& slot, const EvalRequest& req, milliseconds deadline) {
  drain_ahead(slot);
  if (!slot.ready) ensure_cases(slot);  // a screen read just now ended the worker
  const auto t0 = Clock::now();
  EvalResponse r = unlocked(mu_, [&] { return slot.worker->eval(req, deadline); });
  slot.answered_at = Clock::now();
  slot.busy_ms += std::chrono::duration<double, std::milli>(slot.answered_at - t0).count();
  return r;
}

std::optional<Measured> Loop::retime(const Contender& c) {
  GpuSlot& slot = *challenge_slot_;
  ensure_cases(slot);
  const EvalRequest req{c.cubin_path, c.kernel, o_.timing, false, true, {}};
  const auto deadline = eval_deadline();
  const EvalResponse r = eval_on(slot, req, deadline);
  if (!r.status.ok() || !(r.score_ms > 0)) {
    if (!r.status.ok() && !r.status.rejected && r.status.failure != FailureKind::device_limit) restart_worker(slot);
    spdlog::warn("re-timing iter {} failed: {} {}", c.iter, r.status.name(), r.status.message);
    return std::nullopt;
  }
  if (const auto& inc = champions_.overall(); inc && inc->iter == c.iter) champion_eval_ms_ = r.wall_ms;
  return to_measured(r);
}

EvalRequest Loop::screen_request(const std::string& tname, const CompiledVariant& cv) const {
  return EvalRequest{cv.cubin_path, kernels_.at(tname), screen_timing(o_.timing, o_.ladder), true, true, screen_->case_ids};
}

std::shared_ptr<SentScreen> Loop::send_screen(GpuSlot& slot, const EvalRequest& req) {
  auto s = std::make_shared<SentScreen>();
  s->cases_gen = slot.cases_gen;
  s->sent = Clock::now();
  if (const ReplyStatus st = slot.worker->send_eval(req); !st.ok()) {  // a pipe write: no unlock needed
    EvalResponse r;
    r.status = st;
    s->reply = std::move(r);
    restart_worker(slot);  // it is gone: a fresh one on this GPU for the next request
  } else {
    slot.unanswered.push_back(s);
  }
  return s;
}

void Loop::receive_front(GpuSlot& slot) {
  const std::shared_ptr<SentScreen> s = slot.unanswered.front();
  const milliseconds deadline = eval_deadline();
  EvalResponse r = unlocked(mu_, [&] { return slot.worker->receive_eval(deadline); });
  slot.unanswered.pop_front();  // only this slot's thread touches its worker and this deque
  const auto now = Clock::now();
  slot.busy_ms += std::chrono::duration<double, std::milli>(now - std::max(s->sent, slot.answered_at)).count();
  slot.answered_at = now;
  const bool ended = ends_worker(r.status);
  s->reply = std::move(r);
  if (ended) restart_worker(slot);
}

void Loop::drain_ahead(GpuSlot& slot) {
  while (!slot.unanswered.empty()) receive_front(slot);
}

EvalResponse Loop::screen_on(GpuSlot& slot, InFlight& job, const EvalRequest& req) {
  std::int64_t gen = slot.cases_gen;  // the cases its worker holds now (ensure_cases ran)
  for (;;) {
    const bool answered = job.sent && job.sent->reply && job.sent->cases_gen == gen;
    const bool waiting = job.sent && !job.sent->reply &&
                         std::find(slot.unanswered.begin(), slot.unanswered.end(), job.sent) != slot.unanswered.end();
    if (answered || waiting) {
      send_ahead(slot);  // the GPU gets its next config before this answer is read and recorded
      while (!job.sent->reply && !slot.unanswered.empty()) receive_front(slot);
      if (job.sent->reply && job.sent->cases_gen == gen) return *job.sent->reply;
    }
    // Not sent yet, sent against cases the worker no longer holds, or lost with a worker that ended: now.
    if (!slot.ready) ensure_cases(slot);
    gen = slot.cases_gen;
    job.sent = send_screen(slot, req);
  }
}

}  // namespace attn::tuning
