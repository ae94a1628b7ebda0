#include "daemon/tuning_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "daemon/champion_book.hpp"
#include "db/iters_tsv.hpp"
#include "db/store.hpp"
#include "gpu/compiler.hpp"
#include "tuner/multi_search.hpp"
#include "tuner/proposal_template.hpp"
#include "workload/case_spec.hpp"

namespace attn {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<std::string> resolve_templates(const RunOptions& o, const std::string& dir) {
  if (!o.templates.empty()) return o.templates;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) throw std::invalid_argument("no templates (*.json) in " + dir);
  return names;
}

/// The source checkout's commit, for the run record ("" when unknown).
std::string git_commit() {
  const std::string cmd = std::string("git -C '") + ATTN_SOURCE_DIR + "' rev-parse --short HEAD 2>/dev/null";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[64];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "";
}

Measured to_measured(const EvalResponse& r) {
  Measured m;
  m.score_ms = r.score_ms;
  m.family_ms = r.family_median_ms;
  m.wall_ms = r.wall_ms;
  for (const auto& c : r.cases) m.rel_spread = std::max(m.rel_spread, c.spread);
  return m;
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

/// One proposal compiling ahead.
struct InFlight {
  TemplateProposal proposal;
  std::future<CompiledVariant> compiled;
};

class Loop {
 public:
  Loop(const RunOptions& o, StopRequest& stop)
      : o_(o),
        stop_(stop),
        db_(ExperimentDb::open(o.db_path)),
        suite_label_(suite_label(o)),
        templates_dir_(o.templates_dir.empty() ? default_templates_dir() : o.templates_dir),
        tsv_path_(o.tsv_path.empty() ? (std::filesystem::path(o.db_path).parent_path() / "iters.tsv").string()
                                     : o.tsv_path),
        compiler_(CompilerOptions{o.cache_dir}),
        pool_(compiler_, o.compile_jobs ? o.compile_jobs : std::max(1u, std::thread::hardware_concurrency())),
        worker_(o.worker ? *o.worker : default_worker_command()) {
    cases_ = o.manifest.empty() ? builtin_suite(o.suite, o.root_seed) : suite_from_manifest_file(o.manifest);
    if (o.budget_s && *o.budget_s <= 0) throw std::invalid_argument("--budget must be positive");
    if (o.max_iterations && *o.max_iterations <= 0) throw std::invalid_argument("--iterations must be positive");
    for (const auto& name : resolve_templates(o, templates_dir_)) {
      TemplateSpace space = TemplateSpace::load_named(templates_dir_, name);
      kernels_[name] = space.kernel();
      sources_[name] = space.source_path();
      search_.add(std::move(space), make_strategy(o.strategy, o.seed));
    }
    load_proposed_templates();
  }

  RunSummary run() {
    resume();
    start_worker();  // fails before the run is logged when there is no usable GPU
    RunRecord rr;
    rr.suite = suite_label_;
    rr.suite_json = suite_to_manifest_json(cases_);
    rr.strategy = o_.strategy;
    rr.templates = search_.template_names();
    rr.gpu_name = hello_.gpu_name;
    rr.driver = std::to_string(hello_.driver_version);
    if (hello_.sm_clock_mhz) rr.sm_clock_mhz = hello_.sm_clock_mhz;
    rr.git_commit = git_commit();
    rr.host = host_name();
    summary_.run_id = db_.begin_run(rr);
    say(fmt::format("run {} on {} ({} SMs): suite {} ({} cases), templates {}, strategy {}, db {}, tsv {}",
                    summary_.run_id, hello_.gpu_name, hello_.sm_count, suite_label_, cases_.size(),
                    fmt::join(rr.templates, ","), o_.strategy, o_.db_path, tsv_path_));
    RunStatus status = RunStatus::finished;
    write_status("starting");
    try {
      loop();
      if (stop_.stopping()) status = RunStatus::stopped;
    } catch (const std::exception& e) {
      status = RunStatus::failed;
      summary_.stop_reason = std::string("failed: ") + e.what();
      spdlog::error("run {} failed: {}", summary_.run_id, e.what());
    }
    for (auto& f : inflight_) search_.state(f.proposal.template_name).cancel_pending(f.proposal.proposal.config);
    db_.end_run(summary_.run_id, status, summary_.stop_reason);
    write_status(std::string("ended: ") + summary_.stop_reason);
    report_throughput();
    if (const auto best = db_.best(suite_label_)) summary_.best_ms = best->geomean_ms;
    return summary_;
  }

 private:
  const RunOptions& o_;
  StopRequest& stop_;
  ExperimentDb db_;
  std::string suite_label_, templates_dir_, tsv_path_;
  std::vector<CaseSpec> cases_;
  Compiler compiler_;
  CompilePool pool_;
  WorkerClient worker_;
  HelloResponse hello_;
  bool worker_ready_ = false;
  MultiSearch search_;
  std::map<std::string, std::string> kernels_, sources_;
  ChampionBook champions_;
  std::deque<InFlight> inflight_;
  RunSummary summary_;
  Clock::time_point started_ = Clock::now();
  std::map<std::string, std::int64_t> proposal_of_;  // proposed template -> its proposal id
  std::int64_t proposed_at_ = 0, champion_at_ = 0;   // iterations of this run at the last proposal / promotion
  double champion_eval_ms_ = 0;  // last evaluation wall time of the overall champion (watchdog)
  // Where the time goes (ms): NVRTC (sum over compile threads), case building, evaluations, re-timings.
  double compile_ms_ = 0, prepare_ms_ = 0, eval_ms_ = 0, retime_ms_ = 0;

  /// Live progress for `attn-tuner status` (the DB holds the iterations; this holds what is in flight
  /// and the limits): <db>.status.json, replaced atomically.
  void write_status(const std::string& current) {
    std::size_t total = 0, seen = 0;
    for (const auto& n : search_.template_names()) {
      const auto& st = search_.state(n);
      total += st.valid_configs().size();
      seen += st.valid_configs().size() - st.unseen_count();
    }
    nlohmann::json j = {{"pid", ::getpid()},
                        {"run_id", summary_.run_id},
                        {"suite", suite_label_},
                        {"elapsed_s", seconds_since(started_)},
                        {"iterations", summary_.iterations},
                        {"budget_s", o_.budget_s ? nlohmann::json(*o_.budget_s) : nlohmann::json()},
                        {"max_iterations", o_.max_iterations ? nlohmann::json(*o_.max_iterations) : nlohmann::json()},
                        {"space_total", total},
                        {"space_seen", seen},
                        {"current", current},
                        {"updated_unix", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()}};
    const std::string path = status_file_for(o_.db_path), tmp = path + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      const std::string text = j.dump(2);
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
      std::rename(tmp.c_str(), path.c_str());
    }
  }

  void say(const std::string& line) {
    if (o_.progress) fmt::print("{}\n", line);
    std::fflush(stdout);
    spdlog::debug("{}", line);
  }

  /// Restart after a crash or kill: runs and iterations left `running` become interrupted, iters.tsv is
  /// rebuilt from the DB, and every config already evaluated on this suite is known to the search.
  void resume() {
    db_.mark_interrupted_proposals();
    const auto runs = db_.mark_interrupted_runs();
    const auto its = db_.mark_interrupted_iterations();
    if (!runs.empty() || !its.empty())
      say(fmt::format("resumed: {} run(s) and {} iteration(s) left running were marked interrupted", runs.size(),
                      its.size()));
    write_all(tsv_path_, db_.iterations());
    std::size_t known = 0;
    IterationQuery q;
    q.suite = suite_label_;
    q.statuses = {IterationStatus::keep, IterationStatus::discard, IterationStatus::crash};
    for (const auto& it : db_.iterations(q)) {
      if (!kernels_.count(it.template_name)) continue;
      const Config c = config_from_json(it.params_json);
      search_.state(it.template_name).record(c, it.geomean_ms && it.status != IterationStatus::crash
                                                    ? Outcome::success(it.iter, *it.geomean_ms)
                                                    : Outcome::failed(it.iter, to_string(it.failure_kind)));
      ++known;
    }
    for (const auto& name : search_.template_names()) {
      auto& st = search_.state(name);
      if (const auto ranked = st.ranked(); !ranked.empty()) st.set_champion(ranked.front().first);
    }
    champions_.load(db_, suite_label_, [this](const std::string& t) -> std::optional<std::string> {
      const auto it = kernels_.find(t);
      return it == kernels_.end() ? std::nullopt : std::optional<std::string>(it->second);
    });
    if (known) say(fmt::format("history: {} config(s) already evaluated on {} are skipped", known, suite_label_));
  }

  void start_worker() {
    if (worker_ready_) return;
    if (worker_.starts() > 0) worker_.restart();
    hello_ = worker_.hello(milliseconds(60'000));
    if (!hello_.status.ok()) throw std::runtime_error("the GPU worker did not start: " + hello_.status.message);
    stop_.worker_pid = worker_.pid();
    const auto prep = worker_.prepare(cases_, milliseconds(std::int64_t(o_.prepare_timeout_s * 1000)));
    if (!prep.status.ok())
      throw std::runtime_error("the GPU worker could not build the suite's cases: " + prep.status.name() + ": " +
                               prep.status.message);
    prepare_ms_ += prep.ms;
    worker_ready_ = true;
  }

  milliseconds eval_deadline() const {
    double s = o_.watchdog_cap_s;
    if (champion_eval_ms_ > 0)
      s = std::min(std::max(o_.watchdog_factor * champion_eval_ms_ / 1000.0, o_.watchdog_min_s), o_.watchdog_cap_s);
    return milliseconds(std::int64_t(s * 1000));
  }

  std::optional<std::string> stop_reason() const {
    if (stop_.stopping()) return std::string("stopped on request");
    if (o_.budget_s && seconds_since(started_) >= *o_.budget_s)
      return fmt::format("budget of {:.0f} s used up", *o_.budget_s);
    if (o_.max_iterations && summary_.iterations >= *o_.max_iterations)
      return fmt::format("iteration limit {} reached", *o_.max_iterations);
    return std::nullopt;
  }

  void refill() {
    const std::size_t depth = std::max<std::size_t>(2, pool_.threads());
    while (inflight_.size() < depth) {
      auto p = search_.next();
      if (!p) return;
      search_.state(p->template_name).mark_pending(p->proposal.config);
      CompileRequest req{sources_.at(p->template_name), kernels_.at(p->template_name), p->proposal.config, {}};
      inflight_.push_back({*p, pool_.submit(std::move(req))});
    }
  }

  void loop() {
    for (;;) {
      if (auto why = stop_reason()) {
        summary_.stop_reason = *why;
        return;
      }
      if (o_.proposer.due(summary_.iterations, summary_.iterations - champion_at_, proposed_at_)) propose();
      refill();
      if (inflight_.empty() && o_.proposer.enabled() && !stop_reason() && propose()) continue;
      if (inflight_.empty()) {
        std::size_t total = 0;
        for (const auto& n : search_.template_names()) total += search_.state(n).valid_configs().size();
        summary_.stop_reason = fmt::format("search space exhausted: all {} valid configs evaluated", total);
        return;
      }
      InFlight job = std::move(inflight_.front());
      inflight_.pop_front();
      evaluate(job);
    }
  }

  /// Logs one finished iteration: DB (one transaction), iters.tsv, search state, progress line.
  void finish(IterationRecord& it, SearchState& st, const Config& cfg) {
    db_.finish_iteration(it);
    append_row(tsv_path_, *db_.iteration(it.iter));
    st.record(cfg, it.geomean_ms && it.status != IterationStatus::crash ? Outcome::success(it.iter, *it.geomean_ms)
                                                                        : Outcome::failed(it.iter, to_string(it.failure_kind)));
    if (it.geomean_ms && it.status != IterationStatus::crash) {
      const auto champ = st.champion();
      if (!champ || *it.geomean_ms < champ->score_ms) st.set_champion(cfg);
    }
    if (proposal_of_.count(it.template_name)) retire_if_broken(it.template_name, st);
    ++summary_.iterations;
    const double rate = summary_.iterations / std::max(1e-9, seconds_since(started_)) * 3600;
    const auto& best = champions_.overall();
    say(fmt::format("iter {:>4} {:<11} {:>8} ms  best {:>8} ms  {:>5.0f} it/h  {} {}  {}", it.iter,
                    to_string(it.status), format_ms(it.geomean_ms), best ? format_ms(best->measured.score_ms) : "-",
                    rate, it.template_name, it.params, it.description));
  }

  void evaluate(InFlight& job) {
    const std::string& tname = job.proposal.template_name;
    const Config& cfg = job.proposal.proposal.config;
    SearchState& st = search_.state(tname);
    IterationRecord it;
    it.run_id = summary_.run_id;
    it.suite = suite_label_;
    it.template_name = tname;
    it.params_json = config_to_json(cfg);
    it.description = job.proposal.proposal.move;
    if (const auto p = proposal_of_.find(tname); p != proposal_of_.end()) it.proposal_id = p->second;
    if (db_.has_evaluated(tname, it.params_json, suite_label_)) {  // another daemon on this DB got there first
      st.record(cfg, Outcome::failed(-1, "evaluated in an earlier run"));
      return;
    }
    it.iter = db_.begin_iteration(it);
    write_status(fmt::format("iter {}: {} {}", it.iter, tname, config_to_compact(cfg)));

    const CompiledVariant cv = job.compiled.get();
    if (!cv.cache_hit) compile_ms_ += cv.compile_ms;
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
    it.variant_id = db_.upsert_variant(vr);
    db_.set_iteration_variant(it.iter, *it.variant_id);
    it.compile_ms = cv.cache_hit ? 0.0 : cv.compile_ms;
    const std::string head = fmt::format("{} [{}]", job.proposal.proposal.move, tname);

    if (!cv.ok) {
      it.status = IterationStatus::crash;
      it.failure_kind = FailureKind::compile;
      it.description = head + "; compile error: " + compile_error_line(cv.log);
      return finish(it, st, cfg);
    }
    start_worker();
    const auto t0 = Clock::now();
    const milliseconds deadline = eval_deadline();
    const EvalResponse r = worker_.eval({cv.cubin_path, kernels_.at(tname), o_.timing, true, true}, deadline);
    it.gpu_ms = r.wall_ms > 0 ? r.wall_ms : seconds_since(t0) * 1000;
    eval_ms_ += *it.gpu_ms;
    for (const auto& c : r.cases) it.cases.push_back(to_record(c));

    if (stop_.abandoning()) {
      it.status = IterationStatus::interrupted;
      it.failure_kind = FailureKind::interrupted;
      it.description = head + "; interrupted: stop requested twice, evaluation abandoned";
      it.cases.clear();
      worker_ready_ = false;
      return finish(it, st, cfg);
    }
    if (!r.status.ok()) {
      it.status = IterationStatus::crash;
      it.failure_kind = r.status.rejected ? FailureKind::worker_died : r.status.failure;
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
      it.description = fmt::format("{}; {}: {}; {}", head, r.status.name(), what, resources_text(cv));
      if (r.status.failure == FailureKind::fault || r.status.failure == FailureKind::hang ||
          r.status.failure == FailureKind::worker_died || r.status.rejected) {
        worker_ready_ = false;  // a fresh worker for the next iteration
        worker_.restart();
      }
      return finish(it, st, cfg);
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
    if (const auto& inc = champions_.overall()) it.delta_ms = challenger.measured.score_ms - inc->measured.score_ms;

    const ChallengeResult cr = champions_.challenge(challenger, [this](const Contender& c) { return retime(c); });
    retime_ms_ += champions_.last_retime_ms();
    *it.gpu_ms += champions_.last_retime_ms();
    it.status = cr.kept() ? IterationStatus::keep : IterationStatus::discard;
    it.description = fmt::format("{}; {}; {}", head, cr.summary.empty() ? "not faster" : cr.summary, resources_text(cv));
    finish(it, st, cfg);
    for (const auto& p : cr.promotions) {
      db_.set_champion({suite_label_, p.scope, it.iter, p.score_ms, ""}, p.aba_json);
      if (p.scope == ChampionScope::overall) champion_eval_ms_ = r.wall_ms;
      if (p.scope == ChampionScope::overall) champion_at_ = summary_.iterations;
    }
  }

  /// A proposed template none of whose first configs worked is a broken kernel: no more GPU time for it.
  void retire_if_broken(const std::string& name, const SearchState& st) {
    if (search_.retired(name) || !st.ranked().empty()) return;
    std::size_t crashes = 0;
    for (const auto& [c, outcome] : st.results()) crashes += outcome.ok() ? 0 : 1;
    if (crashes < o_.proposer.retire_after_crashes) return;
    search_.retire(name);
    say(fmt::format("template {} (proposal {}) retired from the search: its first {} configs all crashed", name,
                    proposal_of_.at(name), crashes));
  }

  /// A template joins the search (a proposal's, accepted now or in an earlier run).
  void add_template(TemplateSpace space, std::int64_t proposal_id) {
    const std::string name = space.name();
    kernels_[name] = space.kernel();
    sources_[name] = space.source_path();
    proposal_of_[name] = proposal_id;
    search_.add(std::move(space), make_strategy(o_.strategy, o_.seed));
  }

  /// Accepted proposals of earlier runs whose root template this run tunes rejoin the search, from the DB.
  void load_proposed_templates() {
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

  /// One call of the proposer hook (daemon/proposal_round.hpp), from the overall champion's template.
  /// True when a new template joined the search.
  bool propose() {
    proposed_at_ = summary_.iterations;
    const auto& champ = champions_.overall();
    if (!champ || !kernels_.count(champ->template_name)) return false;  // nothing to start from yet
    for (auto& f : inflight_) f.compiled.wait();  // no compile writes to the watched folders meanwhile
    write_status(fmt::format("proposer: {}", o_.proposer.command));
    std::vector<std::string> template_dirs{templates_dir_};
    if (default_templates_dir() != templates_dir_) template_dirs.push_back(default_templates_dir());
    auto r = run_proposal_round(o_.proposer,
                                {summary_.run_id, suite_label_, &search_.state(champ->template_name).space(),
                                 champ->iter, o_.db_path, template_dirs},
                                db_, compiler_, [this] { return stop_.stopping(); });
    if (r.crash_iter) {
      append_row(tsv_path_, *db_.iteration(*r.crash_iter));
      ++summary_.iterations;
    }
    proposed_at_ = summary_.iterations;  // its own crash iteration does not count towards the next call
    say(r.crash_iter ? fmt::format("iter {:>4} crash       {}", *r.crash_iter, r.summary) : r.summary);
    if (!r.accepted) return false;
    add_template(std::move(*r.accepted), r.proposal_id);
    return true;
  }

  /// A/B/A re-timing of a validated variant: timing only.
  std::optional<Measured> retime(const Contender& c) {
    start_worker();
    const EvalResponse r = worker_.eval({c.cubin_path, c.kernel, o_.timing, false, true}, eval_deadline());
    if (!r.status.ok() || !(r.score_ms > 0)) {
      if (!r.status.ok() && !r.status.rejected && r.status.failure != FailureKind::device_limit) {
        worker_ready_ = false;
        worker_.restart();
      }
      spdlog::warn("re-timing iter {} failed: {} {}", c.iter, r.status.name(), r.status.message);
      return std::nullopt;
    }
    if (const auto& inc = champions_.overall(); inc && inc->iter == c.iter) champion_eval_ms_ = r.wall_ms;
    return to_measured(r);
  }

  void report_throughput() {
    const double wall = seconds_since(started_);
    say(fmt::format("run {} ended: {} iterations in {:.0f} s ({:.0f} configs/hour); {}", summary_.run_id,
                    summary_.iterations, wall, summary_.iterations / std::max(wall, 1e-9) * 3600,
                    summary_.stop_reason));
    say(fmt::format("time: case building {:.1f} s, evaluation (validation + timing) {:.1f} s, champion re-timing "
                    "{:.1f} s, NVRTC {:.1f} s over {} compile threads (overlapped with the GPU)",
                    prepare_ms_ / 1000, eval_ms_ / 1000, retime_ms_ / 1000, compile_ms_ / 1000, pool_.threads()));
  }
};

}  // namespace

std::string suite_label(const RunOptions& o) {
  return o.manifest.empty() ? o.suite : std::filesystem::path(o.manifest).stem().string();
}

RunSummary run_tuning_loop(const RunOptions& options, StopRequest& stop) {
  Loop loop(options, stop);
  return loop.run();
}

}  // namespace attn
