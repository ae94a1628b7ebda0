// One iteration of the tuning loop (daemon/iteration.hpp).
#include "daemon/iteration.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "daemon/worker_answers.hpp"
#include "db/iters_tsv.hpp"

namespace attn::tuning {

CompiledVariant IterationRunner::compiled(InFlight& job) {
  const std::string& tname = job.proposal.template_name;
  const Config& cfg = job.proposal.proposal.config;
  CompiledVariant cv = job.compiled.get();
  // A header that could not be read is the file system's fault, not the config's: compile again a few times (an
  // editor or a sync rewriting the folder), then stop the run with the reason; the config stays unevaluated, so a
  // resumed run takes it up.
  if (!cv.ok && cv.transient)
    cv = env_.compiler.retry_transient(std::move(cv), env_.search.compile_request(tname, cfg), [&](int attempt, const auto& last) {
      spdlog::warn("{} {}: {}; compiling again in {} s ({}/{})", tname, config_to_compact(cfg), compile_error_line(last.log),
                   Compiler::kTransientWait.count(), attempt, Compiler::kTransientRetries);
    });
  if (!cv.ok && cv.transient)
    throw std::runtime_error(fmt::format("template {}: {} (after {} retries; restore the file and resume with the same "
                                         "command)", tname, compile_error_line(cv.log), Compiler::kTransientRetries));
  return cv;
}

EvalRequest IterationRunner::screen_request(const std::string& t, const CompiledVariant& cv, const ScreenPlan& plan) const {
  return EvalRequest{cv.cubin_path, env_.search.kernel(t).value_or(""), screen_timing(env_.o.timing, env_.o.ladder), true,
                     true, plan.case_ids};
}

void IterationRunner::send_ahead(GpuSlot& slot) {
  if (!env_.o.eval_ahead || slot.has_ahead() || !slot.ready()) return;
  const auto cases = env_.rounds.now();
  if (!cases->screen || !slot.holds(cases->gen)) return;
  std::optional<InFlight> job = env_.scheduler.take_screen_ahead();
  if (!job) return;
  const std::shared_ptr<SentScreen> sent =
      slot.send_screen(screen_request(job->proposal.template_name, job->compiled.get(), *cases->screen));
  if (sent->reply) {  // the worker is gone: the current job's answer says so
    env_.scheduler.put_back(std::move(*job));
    return;
  }
  job->sent = sent;
  slot.set_ahead(std::move(*job));
  env_.stats.add([](RunCounters& c) { ++c.sent_ahead; });
}

void IterationRunner::run(InFlight& job, GpuSlot& slot, Scheduler::Ticket& ticket) {
  const std::string& tname = job.proposal.template_name;
  const Config& cfg = job.proposal.proposal.config;
  IterationRecord it;
  it.run_id = run_id_;
  it.suite = env_.suite;
  it.template_name = tname;
  it.params_json = config_to_json(cfg);
  it.description = job.proposal.proposal.move;
  it.root_seed = env_.rounds.now()->root_seed;
  it.proposal_id = env_.search.proposal_of(tname);
  const bool spare = job.spare_of.has_value();  // its config has a screen row: evaluated again on purpose
  if (!spare && env_.db.with([&](ExperimentDb& db) { return db.has_evaluated(tname, it.params_json, env_.suite); })) {
    env_.search.skipped(tname, cfg, "evaluated in an earlier run");  // another daemon on this DB got there first
    return;
  }
  slot.set_state("waiting for its compile");
  const CompiledVariant cv = compiled(job);
  if (!cv.cache_hit) env_.stats.add([&](RunCounters& c) { c.compile_ms += cv.compile_ms; });
  if (!job.sibling && !spare) env_.scheduler.queue_siblings(job.proposal, cv);  // other values of its patchable parameters
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
  // The iteration begins once its config compiled, with its variant, in one commit (the loop's DB writes are two
  // commits an iteration: this and finish()); a kill before it loses only this config in flight, which the resumed
  // search proposes again.
  std::tie(it.iter, it.variant_id) =
      env_.db.with([&](ExperimentDb& db) { return db.begin_iteration_with_variant(it, vr, job.spare_of); });
  slot.set_state(fmt::format("evaluating iter {}", it.iter));
  env_.status(env_.o.gpus.size() > 1
                  ? fmt::format("iter {} on GPU {}: {} {}", it.iter, slot.gpu().index, tname, config_to_compact(cfg))
                  : fmt::format("iter {}: {} {}", it.iter, tname, config_to_compact(cfg)));
  it.compile_ms = cv.cache_hit ? 0.0 : cv.compile_ms;
  const std::string head = fmt::format("{} [{}]", job.proposal.proposal.move, tname);

  if (!cv.ok) {  // NVRTC's verdict, or the compile worker running it hung or died (restarted: gpu/compile_procs.hpp)
    it.status = IterationStatus::crash;
    it.failure_kind = cv.error;
    it.description = head + (cv.error == FailureKind::compile ? "; compile error: " + compile_error_line(cv.log)
                                                              : "; compile " + std::string(to_string(cv.error)) + ": " + cv.log);
    finish(it, cfg, slot, spare, ticket);
    return;
  }
  if (cv.cubin_path.empty()) {  // compiled, but the cubin could not be stored (full disk?): not the config's fault
    it.status = IterationStatus::interrupted;
    it.failure_kind = FailureKind::interrupted;
    it.description = head + "; interrupted: the compiled cubin could not be written to the cache";
    finish(it, cfg, slot, spare, ticket);
    const std::size_t why = cv.log.rfind("(cache write failed: ");
    throw std::runtime_error(fmt::format("cannot store compiled cubins in the cubin cache{}; the iteration is interrupted "
                                         "and will be tried again",
                                         why == std::string::npos ? "" : " " + cv.log.substr(why)));
  }
  const auto cases = slot.ensure_cases();  // started, and holding the current cases
  it.root_seed = cases->root_seed;
  it.gpu_index = slot.gpu().index;
  it.gpu_uuid = slot.gpu().uuid;
  if (slot.hello().sm_clock_mhz) it.sm_clock_mhz = slot.hello().sm_clock_mhz;
  const auto note_clock = [&](const EvalResponse& r) {
    if (const unsigned mhz = sm_clock_of(r)) it.sm_clock_mhz = mhz;
  };
  const std::string kernel = env_.search.kernel(tname).value_or("");
  auto t0 = Clock::now();
  std::string screen_note;
  EvalResponse r;
  it.gpu_ms = 0.0;
  // An idea's configs are judged in full; a spare evaluation is the whole suite for a config screened before.
  const bool screened = cases->screen && !env_.search.is_idea(tname) && !spare;
  if (screened) {  // the ladder's first rung: the screen cases, few samples
    const ScreenPlan& plan = *cases->screen;
    r = slot.screen(job, screen_request(tname, cv, plan), [&] { send_ahead(slot); });
    note_clock(r);
    const double ms = r.wall_ms > 0 ? r.wall_ms : seconds_since(t0) * 1000;
    *it.gpu_ms += ms;
    env_.stats.add([&](RunCounters& c) { c.screen_ms += ms; });
    if (r.status.ok() && r.score_ms > 0 && !env_.stop.abandoning()) {
      it.screen_ms = r.score_ms;
      const ScreenVerdict v = env_.screens.judge(r.score_ms);
      const std::string what = fmt::format("screened on {} with at most {} samples: {:.4f} ms, {}", plan.describe(),
                                           env_.o.ladder.screen_max_samples, r.score_ms, v.reason);
      if (!v.promote) {
        it.status = IterationStatus::discard;
        it.fidelity = Fidelity::screen;
        for (const auto& c : r.cases) it.cases.push_back(to_record(c));
        // Short: the screened cases are its case_results rows, and fidelity screen says it went no further.
        it.description = fmt::format("{}; screened out on {} of {} cases with at most {} samples: {:.4f} ms, {}; {}", head,
                                     plan.case_ids.size(), plan.suite_cases, env_.o.ladder.screen_max_samples, r.score_ms,
                                     v.reason, resources_text(cv));
        env_.screens.screened_out(r.score_ms, ScreenedNearMiss{job.proposal, it.iter, cv});
        finish(it, cfg, slot, spare, ticket);
        return;
      }
      screen_note = what + ": evaluated in full; ";
    }
  }
  // The whole suite: without the ladder, or for a contender of the screen (a failure there ends here).
  it.fidelity = screened && !it.screen_ms ? Fidelity::screen : Fidelity::full;
  if (it.fidelity == Fidelity::full) {
    t0 = Clock::now();
    r = slot.eval(EvalRequest{cv.cubin_path, kernel, env_.o.timing, true, true, {}});
    note_clock(r);
    const double ms = r.wall_ms > 0 ? r.wall_ms : seconds_since(t0) * 1000;
    *it.gpu_ms += ms;
    env_.stats.add([&](RunCounters& c) { (spare ? c.spare_ms : c.eval_ms) += ms; });
    if (spare) slot.count(false, seconds_since(t0) * 1000);  // as its busy time counts
  }
  for (const auto& c : r.cases) it.cases.push_back(to_record(c));

  if (env_.stop.abandoning()) {
    it.status = IterationStatus::interrupted;
    it.failure_kind = FailureKind::interrupted;
    it.description = head + "; interrupted: stop requested twice, evaluation abandoned";
    it.cases.clear();
    slot.restart();  // its worker was killed by the second stop
    finish(it, cfg, slot, spare, ticket);
    return;
  }
  if (!r.status.ok()) {  // the worker was restarted already when the answer ended it (GpuSlot: the one rule)
    it.status = IterationStatus::crash;
    it.failure_kind = failure_kind(r.status);
    std::string what = r.status.message;
    if (r.status.failure == FailureKind::wrong_result) {
      for (const auto& c : r.cases)
        if (c.validated && !c.passed) {
          what = fmt::format("wrong result on {}: o max diff {:.3g}, lse max diff {:.3g}", c.case_id, c.o_max_abs_diff,
                             c.lse_max_abs_diff);
          break;
        }
    } else if (r.status.failure == FailureKind::hang) {
      what = fmt::format("no answer within {:.1f} s, worker killed", env_.champions.deadline().count() / 1000.0);
    }
    it.description = fmt::format("{}; {}{}: {}; {}", head, screen_note, r.status.name(), what, resources_text(cv));
    finish(it, cfg, slot, spare, ticket);
    return;
  }

  Contender challenger{it.iter, tname, cfg, cv.cubin_path, kernel, to_measured(r)};
  it.geomean_ms = challenger.measured.score_ms;
  const auto fam = [&](Family f) -> std::optional<double> {
    const auto x = r.family_median_ms.find(f);
    return x == r.family_median_ms.end() ? std::nullopt : std::optional<double>(x->second);
  };
  it.window_ms = fam(Family::sliding_window);
  it.global_ms = fam(Family::sliding_window_global);
  it.retrieval_ms = fam(Family::sliding_window_retrieval);
  challenge(it, cfg, challenger, r, head, screen_note, cv, slot, spare, ticket);
}

void IterationRunner::challenge(IterationRecord& it, const Config& cfg, const Contender& challenger, const EvalResponse& r,
                                const std::string& head, const std::string& screen_note, const CompiledVariant& cv,
                                GpuSlot& slot, bool spare, Scheduler::Ticket& ticket) {
  // A plain discard (not faster than any champion on the first look) needs no GPU and no wait. Otherwise one challenge
  // at a time, on this GPU: the A/B/A re-timings and held-out checks of the champion and the challenger all come from
  // the challenger's GPU; the seat is held until the promotions are in the DB.
  std::optional<Challenge> seat;
  std::optional<ChallengeResult> plain = env_.champions.plain_discard(challenger);
  if (!plain) {
    seat.emplace(env_.seat.take(slot));
    plain = env_.champions.plain_discard(challenger);  // the champions may have changed meanwhile
  }
  if (const auto inc = env_.champions.overall()) it.delta_ms = challenger.measured.score_ms - inc->measured.score_ms;
  ChallengeResult cr;
  if (plain) {
    cr = *plain;
  } else {
    slot.set_state(fmt::format("challenge: iter {}", it.iter));
    cr = env_.champions.challenge(*seat, challenger, env_.holdout);
  }
  for (auto& p : cr.promotions) {  // which GPU the A/B/A re-timing ran on
    auto j = nlohmann::json::parse(p.aba_json);
    j["gpu_index"] = slot.gpu().index;
    if (!slot.gpu().uuid.empty()) j["gpu_uuid"] = slot.gpu().uuid;
    p.aba_json = j.dump();
  }
  const double retimed_ms = plain ? 0.0 : cr.retime_ms;
  env_.stats.add([&](RunCounters& c) { c.retime_ms += retimed_ms; });
  *it.gpu_ms += retimed_ms;
  it.status = cr.kept() ? IterationStatus::keep : IterationStatus::discard;
  it.description = fmt::format("{}; {}{}; {}", head, screen_note, cr.summary.empty() ? "not faster" : cr.summary,
                               resources_text(cv));
  const std::int64_t done = finish(it, cfg, slot, spare, ticket);
  for (const auto& p : cr.promotions) {
    env_.db.with([&](ExperimentDb& db) { db.set_champion({env_.suite, p.scope, it.iter, p.score_ms, ""}, p.aba_json); });
    if (p.scope != ChampionScope::overall) continue;
    env_.champions.promoted(r.wall_ms);
    env_.stats.add([&](RunCounters& c) { c.champion_at = done; });
  }
}

std::int64_t IterationRunner::finish(IterationRecord& it, const Config& cfg, GpuSlot& slot, bool spare,
                                     Scheduler::Ticket& ticket) {
  env_.db.finish_iteration(it);
  if (!spare) slot.count(true);
  if (const auto broken = env_.search.record(it, cfg)) {
    env_.scheduler.retire(it.template_name);
    env_.say(*broken);
  }
  env_.stats.add([&](RunCounters& c) {
    if (it.fidelity == Fidelity::screen && it.status == IterationStatus::discard) ++c.screened_out;
    if (spare) {
      ++c.spare_evals;
      if (it.status == IterationStatus::keep) ++c.spare_kept;
    } else if (it.fidelity == Fidelity::full && it.geomean_ms && it.status != IterationStatus::crash) {
      ++c.full_evals;
    }
  });
  const std::int64_t done = ticket.finish(!spare);
  const RunCounters c = env_.stats.now();
  const double hours = std::max(1e-9, seconds_since(env_.started)) / 3600;
  const auto best = env_.champions.overall();
  env_.say(fmt::format("iter {:>4} {:<11} {:>8} ms  best {:>8} ms  {:>5.0f} it/h (screened out {:.0f}/h, full {:.0f}/h)  {} {}  {}",
                       it.iter, it.fidelity == Fidelity::screen ? "screened" : spare ? fmt::format("spare {}", to_string(it.status))
                                                                                     : std::string(to_string(it.status)),
                       format_ms(it.geomean_ms ? it.geomean_ms : it.screen_ms), best ? format_ms(best->measured.score_ms) : "-",
                       done / hours, c.screened_out / hours, c.full_evals / hours, it.template_name, it.params,
                       it.description));
  return done;
}

}  // namespace attn::tuning
