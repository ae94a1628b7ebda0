#include "daemon/tuning_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "daemon/champion_book.hpp"
#include "daemon/stale_worker.hpp"
#include "daemon/storage_checks.hpp"
#include "daemon/holdout.hpp"
#include "daemon/gpu_set.hpp"
#include "db/iters_tsv.hpp"
#include "db/iters_tsv_writer.hpp"
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

/// The source checkout's commit when the run starts, "-dirty" appended when the tree has uncommitted
/// changes (a build from such a tree is not that commit), for the run record ("" when unknown).
std::string git_commit() {
  const std::string cmd =
      std::string("git -C '") + ATTN_SOURCE_DIR + "' describe --always --dirty --abbrev=7 --exclude='*' 2>/dev/null";
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

/// What the search learns from a finished iteration: the whole-suite score, else the screen score (an
/// estimate of it, for the strategies' ranking; never a champion), else a failure.
Outcome outcome_of(const IterationRecord& it) {
  if (it.status != IterationStatus::crash) {
    if (it.geomean_ms) return Outcome::success(it.iter, *it.geomean_ms);
    if (it.screen_ms) return Outcome::success(it.iter, *it.screen_ms);
  }
  return Outcome::failed(it.iter, to_string(it.failure_kind));
}

/// One proposal compiling ahead.
struct InFlight {
  TemplateProposal proposal;
  std::future<CompiledVariant> compiled;
};

/// One GPU and its isolated worker (docs/scale-out.md). Every field but `worker`'s I/O is guarded by the
/// loop's lock; only the thread that runs this slot talks to its worker, so no two configs are ever timed on
/// one GPU at once.
struct GpuSlot {
  int slot = 0;                  // position in Loop::slots_ (0 runs on the daemon's main thread)
  GpuSpec gpu;                   // index and UUID (the UUID from the worker's hello when NVML did not say)
  std::unique_ptr<WorkerClient> worker;
  HelloResponse hello;
  bool ready = false;            // started, hello answered, the tuning cases prepared
  std::int64_t cases_gen = -1;   // which generation of the tuning cases its worker holds (seed rotation)
  std::string state = "starting";
  std::int64_t iterations = 0, restarts = 0;
  double busy_ms = 0;            // wall time spent evaluating
  WorkerRecord record;           // its current worker (the <db>.worker file lists every slot's)
};

/// Runs `f` with `mu` unlocked (the caller holds it) and locks it again, also when `f` throws.
template <class F>
auto unlocked(std::mutex& mu, F&& f) {
  mu.unlock();
  struct Relock {
    std::mutex& m;
    ~Relock() { m.lock(); }
  } relock{mu};
  return f();
}

class Loop {
 public:
  Loop(const RunOptions& o, StopRequest& stop)
      : o_(o),
        stop_(stop),
        db_(ExperimentDb::open(o.db_path)),
        suite_label_(suite_label(o)),
        templates_dir_(o.templates_dir.empty() ? default_templates_dir() : o.templates_dir),
        tsv_path_(tsv_path_of(o)),
        compiler_(CompilerOptions{o.cache_dir}),
        pool_(compiler_, o.compile_jobs ? o.compile_jobs : std::max(1u, std::thread::hardware_concurrency())) {
    make_slots();
    cases_ = o.manifest.empty() ? builtin_suite(o.suite, o.root_seed) : suite_from_manifest_file(o.manifest);
    if (o.budget_s && *o.budget_s <= 0) throw std::invalid_argument("--budget must be positive");
    setup_seeds_and_fidelity();
    if (o.max_iterations && *o.max_iterations <= 0) throw std::invalid_argument("--iterations must be positive");
    for (const auto& name : resolve_templates(o, templates_dir_)) {
      TemplateSpace space = TemplateSpace::load_named(templates_dir_, name);
      if (o.shard) space.restrict_to_shard(o.shard->index, o.shard->count);
      kernels_[name] = space.kernel();
      sources_[name] = space.source_path();
      search_.add(std::move(space), make_strategy(o.strategy, o.seed));
    }
    load_proposed_templates();
  }

  RunSummary run() {
    std::unique_lock lock(mu_);  // the loop's lock: held except around worker I/O and compile waits
    resume();
    start_worker(*slots_[0]);  // fails before the run is logged when there is no usable GPU
    const HelloResponse& hello_ = slots_[0]->hello;
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
    if (holdout_) holdout_->set_run(summary_.run_id);
    say(fmt::format("run {} on {} ({} SMs): suite {} ({} cases), templates {}, strategy {}, db {}, tsv {}",
                    summary_.run_id, hello_.gpu_name, hello_.sm_count, suite_label_, cases_.size(),
                    fmt::join(rr.templates, ","), o_.strategy, o_.db_path, tsv_path_));
    if (!o_.gpus.empty() || o_.shard) {
      std::vector<std::string> gpus;
      for (const auto& s : slots_) gpus.push_back(s->gpu.uuid.empty() ? std::to_string(s->gpu.index)
                                                                       : fmt::format("{} ({})", s->gpu.index, s->gpu.uuid));
      std::size_t total = 0;
      for (const auto& n : search_.template_names()) total += search_.state(n).valid_configs().size();
      say(fmt::format("{} worker(s), one per GPU: {}; {}", slots_.size(), fmt::join(gpus, ", "),
                      o_.shard ? fmt::format("shard {} of the space: {} valid configs", o_.shard->text(), total)
                               : std::string("the whole space")));
    }
    say(fmt::format("fidelity {}{}; case seeds {}; held-out check {}", to_string(o_.fidelity),
                    screen_ ? fmt::format(" (screen: {}, {} samples, cut-off {:g}%)", screen_->describe(),
                                          o_.ladder.screen_max_samples, o_.ladder.cutoff * 100)
                    : o_.fidelity == FidelityMode::ladder ? " (one case per family: every config is evaluated in full)"
                                                          : "",
                    !root_seed_ ? "fixed by the suite"
                    : o_.rotate_seeds ? fmt::format("root seed {}, a new one every {} configs", *root_seed_, o_.round_configs)
                                      : fmt::format("root seed {}", *root_seed_),
                    holdout_ ? fmt::format("on (root seed {})", holdout_->root_seed()) : std::string("off")));
    RunStatus status = RunStatus::finished;
    write_status("starting");
    try {
      loop(lock);
      if (stop_.stopping()) status = RunStatus::stopped;
      if (holdout_ && !stop_.abandoning()) {  // before export: every champion confirmed on held-out seeds
        challenge_slot_ = slots_[0].get();    // the main thread's GPU
        for (const auto& note : holdout_->confirm_champions(champions_)) say("held-out check: " + note);
      }
    } catch (const std::exception& e) {
      status = RunStatus::failed;
      summary_.failed = true;
      summary_.stop_reason = std::string("failed: ") + explain_run_failure(e, o_.db_path);
      spdlog::error("run {} {}", summary_.run_id, summary_.stop_reason);
    }
    for (auto& f : inflight_) search_.state(f.proposal.template_name).cancel_pending(f.proposal.proposal.config);
    try {
      db_.end_run(summary_.run_id, status, summary_.stop_reason);
    } catch (const std::exception& e) {  // e.g. the disk is still full: the next start marks it interrupted
      throw std::runtime_error(fmt::format("run {} {}; its end could not be recorded ({}), so the next start "
                                           "marks it interrupted",
                                           summary_.run_id, summary_.stop_reason, e.what()));
    }
    for (auto& slot : slots_) slot->state = "stopped";
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
  ItersTsvWriter tsv_{tsv_path_, [this] { return db_.iterations(); }};  // rebuilt from the DB when needed
  std::vector<CaseSpec> cases_;
  Compiler compiler_;
  CompilePool pool_;
  std::vector<std::unique_ptr<GpuSlot>> slots_;  // one per GPU; slot 0 runs on the main thread
  std::mutex mu_;            // the loop's lock (every member; the DB is written by whoever holds it)
  std::mutex challenge_mu_;  // one champion challenge at a time (A/B/A re-timings, held-out checks)
  std::mutex records_mu_;    // the worker records (<db>.worker), written when a worker starts
  std::condition_variable cv_;  // a slot finished an evaluation, or the loop ends
  int busy_ = 0;                // slots evaluating now
  std::exception_ptr failure_;  // what ended a slot's thread (rethrown by loop())
  std::int64_t cases_gen_ = 0;  // generation of cases_ (seed rotation); slots re-prepare lazily
  GpuSlot* challenge_slot_ = nullptr;  // the GPU of the challenge in progress (re-timing, held-out check)
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
  double compile_ms_ = 0, prepare_ms_ = 0, eval_ms_ = 0, retime_ms_ = 0, screen_ms_ = 0, holdout_ms_ = 0;
  // Seeds and fidelity (RunOptions): the root seed of the cases now prepared (none: fixed seeds), the
  // round of a --rotate-seeds run, the screen of the ladder and the best screen score of this suite.
  std::optional<std::int64_t> root_seed_;
  std::int64_t round_ = 0;
  std::optional<ScreenPlan> screen_;
  std::optional<double> best_screen_ms_;
  std::vector<CaseSpec> holdout_cases_;
  std::unique_ptr<HoldoutChecker> holdout_;
  std::int64_t screened_out_ = 0, full_evals_ = 0;  // this run

  /// One slot per GPU of --gpus (each worker sees only its GPU: CUDA_VISIBLE_DEVICES), or the single worker
  /// of a default run (GPU 0, the environment untouched). Each slot records its worker group in <db>.worker.
  void make_slots() {
    const WorkerCommand base = o_.worker ? *o_.worker : default_worker_command();
    const std::vector<GpuSpec> gpus = o_.gpus.empty() ? std::vector<GpuSpec>{GpuSpec{}} : o_.gpus;
    if (gpus.size() > std::size_t(StopRequest::kMaxExtraWorkers) + 1)
      throw std::invalid_argument(fmt::format("--gpus: at most {} GPUs", StopRequest::kMaxExtraWorkers + 1));
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      auto slot = std::make_unique<GpuSlot>();
      slot->slot = int(i);
      slot->gpu = gpus[i];
      WorkerCommand cmd = base;
      if (!o_.gpus.empty()) cmd.env = worker_env_for(gpus[i]);  // the worker's only device is ordinal 0
      slot->worker = std::make_unique<WorkerClient>(std::move(cmd));
      GpuSlot* raw = slot.get();
      // Runs in the slot's thread without the loop's lock: so that a later daemon can kill a worker that
      // outlives this one, and a second Ctrl-C kills every worker.
      raw->worker->on_start([this, raw](pid_t pid) {
        (raw->slot == 0 ? stop_.worker_pid : stop_.extra_worker_pids[std::size_t(raw->slot - 1)]) = pid;
        std::lock_guard lock(records_mu_);
        raw->record = make_worker_record(pid, raw->worker->command().exe);
        bool ok = true;
        if (slots_.size() == 1) {
          ok = save_worker_record(o_.db_path, raw->record);
        } else {
          std::vector<WorkerRecord> all;
          for (const auto& s : slots_)
            if (s->record.pgid > 0) all.push_back(s->record);
          ok = save_worker_records(o_.db_path, all);
        }
        if (!ok) spdlog::warn("cannot write {}", worker_record_file_for(o_.db_path));
      });
      slots_.push_back(std::move(slot));
    }
  }

  /// Checks the seed and fidelity options against the suite; sets up the screen and the held-out check.
  void setup_seeds_and_fidelity() {
    const bool seeded = o_.manifest.empty() && suite_has_root_seed(o_.suite);
    if (o_.rotate_seeds && !seeded)
      throw std::invalid_argument(fmt::format(
          "--rotate-seeds needs a suite whose case seeds come from a root seed (quick, full, broad), not {}",
          suite_label_));
    if (o_.round_configs <= 0) throw std::invalid_argument("--round must be a positive number of configs");
    if (!(o_.ladder.cutoff >= 0)) throw std::invalid_argument("--screen-cutoff must be >= 0");
    if (seeded) root_seed_ = o_.root_seed;
    if (seeded && o_.holdout) {
      if (o_.root_seed == o_.holdout_seed)
        throw std::invalid_argument(fmt::format(
            "--root-seed {} is the held-out seed: tuning never uses it (pick another, or --holdout-seed)", o_.root_seed));
      holdout_cases_ = builtin_suite(o_.suite, o_.holdout_seed);
      holdout_ = std::make_unique<HoldoutChecker>(db_, suite_label_, o_.holdout_seed,
                                                  [this](const Contender& c) { return eval_holdout(c); });
    }
    if (o_.fidelity == FidelityMode::ladder) {
      screen_ = plan_screen(cases_);
      if (screen_->whole_suite()) screen_.reset();  // one case per family: a screen would only repeat the suite
    }
  }

  /// Prepares `cases` on the worker (started and ready), freeing the device memory of older seeds.
  /// False (and a fresh worker next time) when the worker could not.
  bool prepare_suite(GpuSlot& slot, const std::vector<CaseSpec>& cases) {
    start_worker(slot);
    slot.state = "preparing cases";
    const auto timeout = milliseconds(std::int64_t(o_.prepare_timeout_s * 1000));
    const auto prep = unlocked(mu_, [&] { return slot.worker->prepare(cases, timeout, true); });
    prepare_ms_ += prep.ms;
    if (prep.status.ok()) return true;
    spdlog::warn("GPU {}: preparing {} cases failed: {} {}", slot.gpu.index, cases.size(), prep.status.name(),
                 prep.status.message);
    restart_worker(slot);
    return false;
  }

  /// The slot's worker started and holding the current tuning cases (after a seed rotation or a held-out
  /// check it prepares them again).
  void ensure_cases(GpuSlot& slot) {
    start_worker(slot);
    while (slot.cases_gen != cases_gen_) {
      const std::vector<CaseSpec> cases = cases_;
      const std::int64_t gen = cases_gen_;
      if (prepare_suite(slot, cases))
        slot.cases_gen = gen;
      else
        start_worker(slot);
    }
  }

  /// Kills the slot's worker (it died, hung or faulted); the next use starts a fresh one on the same GPU.
  void restart_worker(GpuSlot& slot) {
    slot.ready = false;
    slot.state = "restarting";
    unlocked(mu_, [&] { slot.worker->restart(); });
  }

  /// --rotate-seeds: at each round boundary draw the suite's seeds from the round's root seed.
  void maybe_rotate() {
    if (!o_.rotate_seeds) return;
    const std::int64_t round = summary_.iterations / o_.round_configs;
    if (round == round_) return;
    round_ = round;
    root_seed_ = round_root_seed(o_.root_seed, summary_.run_id, round_, o_.holdout_seed);
    cases_ = builtin_suite(o_.suite, *root_seed_);
    ++cases_gen_;  // every slot prepares the new cases before its next evaluation
    if (screen_) screen_ = plan_screen(cases_);
    say(fmt::format("round {}: the suite's cases now come from root seed {}", round_, *root_seed_));
  }

  /// A contender validated and timed on the held-out cases, on the GPU of the challenge in progress; the
  /// tuning cases are prepared again after.
  HoldoutResult eval_holdout(const Contender& c) {
    GpuSlot& slot = *challenge_slot_;
    HoldoutResult h;
    const auto t0 = Clock::now();
    slot.cases_gen = -1;  // its worker holds the held-out cases from now on
    if (!prepare_suite(slot, holdout_cases_)) {
      h.failure = "the worker could not build the held-out cases";
      return h;
    }
    const EvalRequest req{c.cubin_path, c.kernel, o_.timing, true, true, {}};
    const auto deadline = eval_deadline();
    const EvalResponse r = unlocked(mu_, [&] { return slot.worker->eval(req, deadline); });
    holdout_ms_ += r.wall_ms > 0 ? r.wall_ms : seconds_since(t0) * 1000;
    for (const auto& cr : r.cases) h.cases.push_back(to_record(cr));
    if (r.status.ok() && r.score_ms > 0) {
      h.ok = true;
      h.measured = to_measured(r);
    } else {
      h.failure = r.status.ok() ? "no score" : r.status.name() + ": " + r.status.message;
      for (const auto& cr : r.cases)
        if (cr.validated && !cr.passed) {
          h.failure = fmt::format("wrong result on {}: o max diff {:.3g}", cr.case_id, cr.o_max_abs_diff);
          break;
        }
      if (!r.status.ok() && r.status.failure != FailureKind::wrong_result && r.status.failure != FailureKind::device_limit)
        restart_worker(slot);
    }
    if (slot.ready) ensure_cases(slot);
    return h;
  }

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
                        {"stale_worker", o_.stale_worker_note},
                        {"fidelity", screen_ ? "ladder" : "full"},  // what runs: no screen on one case per family
                        {"screened_out", screened_out_},
                        {"full_evaluations", full_evals_},
                        {"root_seed", root_seed_ ? nlohmann::json(*root_seed_) : nlohmann::json()},
                        {"holdout_seed", holdout_ ? nlohmann::json(holdout_->root_seed()) : nlohmann::json()},
                        {"shard", o_.shard ? nlohmann::json(o_.shard->text()) : nlohmann::json()},
                        {"gpus", gpus_status()},
                        {"updated_unix", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()}};
    const std::string path = status_file_for(o_.db_path), tmp = path + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      const std::string text = j.dump(2);
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
      std::rename(tmp.c_str(), path.c_str());
    }
  }

  /// Each GPU's state for `status`: index, UUID, worker pid, what it does, iterations finished on it, its
  /// rate (configs/hour over the run's wall time), worker restarts, busy time.
  nlohmann::json gpus_status() const {
    nlohmann::json list = nlohmann::json::array();
    const double hours = std::max(1e-9, seconds_since(started_)) / 3600;
    for (const auto& s : slots_)
      list.push_back({{"index", s->gpu.index},
                      {"uuid", s->gpu.uuid},
                      {"pid", s->worker->pid()},
                      {"state", s->state},
                      {"iterations", s->iterations},
                      {"rate_per_hour", s->iterations / hours},
                      {"restarts", s->restarts},
                      {"busy_s", s->busy_ms / 1000}});
    return list;
  }

  void say(const std::string& line) {
    if (o_.progress) fmt::print("{}\n", line);
    std::fflush(stdout);
    spdlog::debug("{}", line);
  }

  /// Restart after a crash or kill: runs and iterations left `running` become interrupted, iters.tsv is
  /// rebuilt from the DB, and every config already evaluated on this suite is known to the search
  /// (completed with the space's defaults: TemplateSpace::complete).
  void resume() {
    db_.mark_interrupted_proposals();
    const auto runs = db_.mark_interrupted_runs();
    const auto its = db_.mark_interrupted_iterations();
    if (!runs.empty() || !its.empty())
      say(fmt::format("resumed: {} run(s) and {} iteration(s) left running were marked interrupted", runs.size(),
                      its.size()));
    tsv_.rebuild();
    std::size_t known = 0;
    IterationQuery q;
    q.suite = suite_label_;
    q.statuses = {IterationStatus::keep, IterationStatus::discard, IterationStatus::crash};
    for (const auto& it : db_.iterations(q)) {
      if (!kernels_.count(it.template_name)) continue;
      // A row recorded before a parameter was added to the template is its config at that parameter's
      // default (the source's #ifndef): completed, it counts as evaluated in the current space.
      SearchState& st = search_.state(it.template_name);
      st.record(st.space().complete(config_from_json(it.params_json)), outcome_of(it));
      if (it.screen_ms && (!best_screen_ms_ || *it.screen_ms < *best_screen_ms_)) best_screen_ms_ = it.screen_ms;
      ++known;
    }
    for (const auto& name : search_.template_names()) {  // champion: the best whole-suite score
      auto& st = search_.state(name);
      for (const auto& [c, outcome] : st.ranked()) {
        const auto row = db_.iteration(outcome.iter);
        if (row && row->geomean_ms) {
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

  /// Starts (or restarts) the slot's worker on its GPU and prepares the tuning cases, unless it is ready.
  void start_worker(GpuSlot& slot) {
    if (slot.ready) return;
    const std::string gpu = slots_.size() > 1 ? fmt::format(" of GPU {}", slot.gpu.index) : "";
    if (slot.worker->starts() > 0) {
      unlocked(mu_, [&] { slot.worker->restart(); });
      ++slot.restarts;
    }
    slot.state = "starting";
    const HelloResponse hello = unlocked(mu_, [&] { return slot.worker->hello(milliseconds(60'000)); });
    if (!hello.status.ok()) throw std::runtime_error("the GPU worker" + gpu + " did not start: " + hello.status.message);
    slot.hello = hello;
    if (slot.gpu.uuid.empty()) slot.gpu.uuid = hello.uuid;
    const std::vector<CaseSpec> cases = cases_;
    const std::int64_t gen = cases_gen_;
    const auto timeout = milliseconds(std::int64_t(o_.prepare_timeout_s * 1000));
    const auto prep = unlocked(mu_, [&] { return slot.worker->prepare(cases, timeout); });
    if (!prep.status.ok())
      throw std::runtime_error("the GPU worker" + gpu + " could not build the suite's cases: " + prep.status.name() +
                               ": " + prep.status.message);
    prepare_ms_ += prep.ms;
    slot.cases_gen = gen;
    slot.ready = true;
    slot.state = "idle";
  }

  milliseconds eval_deadline() const {
    double s = o_.watchdog_cap_s;
    if (champion_eval_ms_ > 0)
      s = std::min(std::max(o_.watchdog_factor * champion_eval_ms_ / 1000.0, o_.watchdog_min_s), o_.watchdog_cap_s);
    return milliseconds(std::int64_t(s * 1000));
  }

  std::optional<std::string> stop_reason() const {
    if (!summary_.stop_reason.empty()) return summary_.stop_reason;  // another GPU's loop ended the run
    if (failure_) return std::string("a GPU's loop failed");
    if (stop_.stopping()) return std::string("stopped on request");
    if (o_.budget_s && seconds_since(started_) >= *o_.budget_s)
      return fmt::format("budget of {:.0f} s used up", *o_.budget_s);
    if (o_.max_iterations && summary_.iterations + busy_ >= *o_.max_iterations)  // counting those in flight
      return fmt::format("iteration limit {} reached", *o_.max_iterations);
    return std::nullopt;
  }

  void refill() {
    const std::size_t depth = std::max<std::size_t>(2, pool_.threads());
    while (inflight_.size() < depth) {
      auto p = search_.next();
      if (!p) return;
      search_.state(p->template_name).mark_pending(p->proposal.config);
      inflight_.push_back({*p, pool_.submit(compile_request(p->template_name, p->proposal.config))});
    }
  }

  /// Runs slot 0's loop on this thread and every other slot's on a thread of its own (which starts, and so
  /// owns, that slot's worker); returns when all have ended. `lock` holds mu_.
  void loop(std::unique_lock<std::mutex>& lock) {
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < slots_.size(); ++i)
      threads.emplace_back([this, i] {
        std::unique_lock slot_lock(mu_);
        GpuSlot& slot = *slots_[i];
        try {
          gpu_loop(slot, slot_lock);
        } catch (...) {
          if (!failure_) failure_ = std::current_exception();
        }
        cv_.notify_all();
        slot.state = "stopped";
        slot.ready = false;
        // Its worker dies with this thread (PR_SET_PDEATHSIG); end it cleanly first.
        unlocked(mu_, [&] { slot.worker->restart(); });
      });
    try {
      gpu_loop(*slots_[0], lock);
    } catch (...) {
      if (!failure_) failure_ = std::current_exception();
    }
    cv_.notify_all();
    unlocked(mu_, [&] {
      for (auto& t : threads) t.join();
    });
    if (failure_) std::rethrow_exception(failure_);
  }

  /// One GPU's share of the loop: take the next compiled proposal, evaluate it on this GPU, repeat. With
  /// nothing to take while other GPUs still evaluate (their results may open new proposals), it waits.
  void gpu_loop(GpuSlot& slot, std::unique_lock<std::mutex>& lock) {
    for (;;) {
      if (auto why = stop_reason()) {
        if (summary_.stop_reason.empty() && !failure_) summary_.stop_reason = *why;
        return;
      }
      maybe_rotate();
      if (o_.proposer.due(summary_.iterations, summary_.iterations - champion_at_, proposed_at_)) propose();
      refill();
      if (inflight_.empty() && busy_ == 0 && o_.proposer.enabled() && !stop_reason() && propose()) continue;
      if (inflight_.empty()) {
        if (busy_ > 0) {
          slot.state = "idle";
          cv_.wait(lock);
          continue;
        }
        std::size_t total = 0;
        for (const auto& n : search_.template_names()) total += search_.state(n).valid_configs().size();
        if (summary_.stop_reason.empty())
          summary_.stop_reason = fmt::format("search space exhausted: all {} valid configs evaluated", total);
        cv_.notify_all();
        return;
      }
      InFlight job = std::move(inflight_.front());
      inflight_.pop_front();
      ++busy_;
      struct Done {  // also when evaluate throws
        Loop& loop;
        GpuSlot& slot;
        Clock::time_point t0 = Clock::now();
        ~Done() {
          --loop.busy_;
          slot.busy_ms += seconds_since(t0) * 1000;
          slot.state = "idle";
          loop.cv_.notify_all();
        }
      } done{*this, slot};
      evaluate(job, slot);
    }
  }

  /// Logs one finished iteration: DB (one transaction), iters.tsv, search state, progress line.
  void finish(IterationRecord& it, const Config& cfg, GpuSlot& slot) {
    SearchState& st = search_.state(it.template_name);  // looked up now: a proposal may have added a template
    db_.finish_iteration(it);
    ++slot.iterations;
    std::string tsv_note;
    if (tsv_.write(*db_.iteration(it.iter), tsv_note) != ItersTsvWriter::Outcome::appended) spdlog::warn("{}", tsv_note);
    st.record(cfg, outcome_of(it));
    if (it.fidelity == Fidelity::screen && it.status == IterationStatus::discard) ++screened_out_;
    if (it.fidelity == Fidelity::full && it.geomean_ms && it.status != IterationStatus::crash) ++full_evals_;
    if (it.geomean_ms && it.status != IterationStatus::crash) {
      const auto champ = st.champion();
      if (!champ || *it.geomean_ms < champ->score_ms) st.set_champion(cfg);
    }
    if (proposal_of_.count(it.template_name)) retire_if_broken(it.template_name, st);
    ++summary_.iterations;
    const double rate = summary_.iterations / std::max(1e-9, seconds_since(started_)) * 3600;
    const auto& best = champions_.overall();
    const double hours = std::max(1e-9, seconds_since(started_)) / 3600;
    say(fmt::format("iter {:>4} {:<11} {:>8} ms  best {:>8} ms  {:>5.0f} it/h (screened out {:.0f}/h, full {:.0f}/h)  {} {}  {}",
                    it.iter, it.fidelity == Fidelity::screen ? "screened" : to_string(it.status),
                    format_ms(it.geomean_ms ? it.geomean_ms : it.screen_ms),
                    best ? format_ms(best->measured.score_ms) : "-", rate, screened_out_ / hours, full_evals_ / hours,
                    it.template_name, it.params, it.description));
  }

  /// The SM clock an iteration was timed at: the median of its cases' clocks (the hello's when none said).
  static void note_sm_clock(IterationRecord& it, const EvalResponse& r) {
    std::vector<unsigned> mhz;
    for (const auto& c : r.cases)
      if (c.timed && c.sm_clock_mhz) mhz.push_back(c.sm_clock_mhz);
    if (mhz.empty()) return;
    std::nth_element(mhz.begin(), mhz.begin() + std::ptrdiff_t(mhz.size() / 2), mhz.end());
    it.sm_clock_mhz = mhz[mhz.size() / 2];
  }

  /// A champion's cubin compiled again from its config (a DB resumed on a machine without the cubin: the
  /// cache is per machine), so that A/B/A can re-time it; "" when it does not compile. Without this, the
  /// first challenger of a resumed run won on one look (seen 2026-11-24 on the H100, docs/results.md).
  std::string rebuild_champion(const Contender& c) {
    const CompiledVariant cv = compiler_.compile(compile_request(c.template_name, c.config));
    if (!cv.ok || cv.cubin_path.empty()) {
      spdlog::warn("champion iter {}: its cubin is missing and compiling it again failed ({}): it cannot be re-timed",
                   c.iter, compile_error_line(cv.log));
      return "";
    }
    say(fmt::format("champion iter {}: cubin compiled again ({}) for the A/B/A re-timings", c.iter, cv.hash.substr(0, 8)));
    return cv.cubin_path;
  }

  /// The NVRTC request of `cfg` of template `tname` (its source and kernel as loaded).
  CompileRequest compile_request(const std::string& tname, const Config& cfg) const {
    return {sources_.at(tname), kernels_.at(tname), cfg, {}};
  }

  void evaluate(InFlight& job, GpuSlot& slot) {
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
    if (db_.has_evaluated(tname, it.params_json, suite_label_)) {  // another daemon on this DB got there first
      search_.state(tname).record(cfg, Outcome::failed(-1, "evaluated in an earlier run"));
      return;
    }
    it.iter = db_.begin_iteration(it);
    slot.state = fmt::format("evaluating iter {}", it.iter);
    write_status(slots_.size() > 1 ? fmt::format("iter {} on GPU {}: {} {}", it.iter, slot.gpu.index, tname, config_to_compact(cfg))
                                   : fmt::format("iter {}: {} {}", it.iter, tname, config_to_compact(cfg)));

    CompiledVariant cv = unlocked(mu_, [&] { return job.compiled.get(); });
    // A header that could not be read is the file system's fault, not the config's: compile again a few
    // times (an editor or a sync rewriting the folder), then stop the run with the reason; the config
    // stays unevaluated, so a resumed run takes it up.
    if (!cv.ok && cv.transient)
      cv = unlocked(mu_, [&] {
        return compiler_.retry_transient(std::move(cv), compile_request(tname, cfg), [&](int attempt, const auto& last) {
          spdlog::warn("iter {}: {}; compiling again in {} s ({}/{})", it.iter, compile_error_line(last.log),
                       Compiler::kTransientWait.count(), attempt, Compiler::kTransientRetries);
        });
      });
    if (!cv.ok && cv.transient)
      throw std::runtime_error(fmt::format("template {}: {} (after {} retries; restore the file and resume with the "
                                           "same command)", tname, compile_error_line(cv.log), Compiler::kTransientRetries));
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
      return finish(it, cfg, slot);
    }
    if (cv.cubin_path.empty()) {  // compiled, but the cubin could not be stored (full disk?): not the config's fault
      it.status = IterationStatus::interrupted;
      it.failure_kind = FailureKind::interrupted;
      it.description = head + "; interrupted: the compiled cubin could not be written to the cache";
      finish(it, cfg, slot);
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
    if (screen_) {  // the ladder's first rung: the screen cases, few samples
      const EvalRequest req{cv.cubin_path, kernels_.at(tname), screen_timing(o_.timing, o_.ladder), true, true,
                            screen_->case_ids};
      r = unlocked(mu_, [&] { return slot.worker->eval(req, deadline); });
      note_sm_clock(it, r);
      const double ms = r.wall_ms > 0 ? r.wall_ms : seconds_since(t0) * 1000;
      *it.gpu_ms += ms;
      screen_ms_ += ms;
      if (r.status.ok() && r.score_ms > 0 && !stop_.abandoning()) {
        it.screen_ms = r.score_ms;
        const ScreenVerdict v = judge_screen(r.score_ms, best_screen_ms_, o_.ladder.cutoff);
        if (!best_screen_ms_ || r.score_ms < *best_screen_ms_) best_screen_ms_ = r.score_ms;
        const std::string what = fmt::format("screened on {} with {} samples: {:.4f} ms, {}", screen_->describe(),
                                             o_.ladder.screen_max_samples, r.score_ms, v.reason);
        if (!v.promote) {
          it.status = IterationStatus::discard;
          it.fidelity = Fidelity::screen;
          for (const auto& c : r.cases) it.cases.push_back(to_record(c));
          it.description = fmt::format("{}; {}: not evaluated in full; {}", head, what, resources_text(cv));
          return finish(it, cfg, slot);
        }
        screen_note = what + ": evaluated in full; ";
      }
    }
    // The whole suite: without the ladder, or for a contender of the screen (a failure there ends here).
    it.fidelity = screen_ && !it.screen_ms ? Fidelity::screen : Fidelity::full;
    if (it.fidelity == Fidelity::full) {
      t0 = Clock::now();
      const EvalRequest req{cv.cubin_path, kernels_.at(tname), o_.timing, true, true};
      r = unlocked(mu_, [&] { return slot.worker->eval(req, deadline); });
      note_sm_clock(it, r);
      const double ms = r.wall_ms > 0 ? r.wall_ms : seconds_since(t0) * 1000;
      *it.gpu_ms += ms;
      eval_ms_ += ms;
    }
    for (const auto& c : r.cases) it.cases.push_back(to_record(c));

    if (stop_.abandoning()) {
      it.status = IterationStatus::interrupted;
      it.failure_kind = FailureKind::interrupted;
      it.description = head + "; interrupted: stop requested twice, evaluation abandoned";
      it.cases.clear();
      slot.ready = false;
      return finish(it, cfg, slot);
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
      it.description = fmt::format("{}; {}{}: {}; {}", head, screen_note, r.status.name(), what, resources_text(cv));
      if (r.status.failure == FailureKind::fault || r.status.failure == FailureKind::hang ||
          r.status.failure == FailureKind::worker_died || r.status.rejected) {
        restart_worker(slot);  // a fresh worker on this GPU for its next iteration; the other GPUs go on
      }
      return finish(it, cfg, slot);
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
    finish(it, cfg, slot);
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
    if (o_.shard) space.restrict_to_shard(o_.shard->index, o_.shard->count);
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
    GpuSlot& slot = *challenge_slot_;
    ensure_cases(slot);
    const EvalRequest req{c.cubin_path, c.kernel, o_.timing, false, true};
    const auto deadline = eval_deadline();
    const EvalResponse r = unlocked(mu_, [&] { return slot.worker->eval(req, deadline); });
    if (!r.status.ok() || !(r.score_ms > 0)) {
      if (!r.status.ok() && !r.status.rejected && r.status.failure != FailureKind::device_limit) restart_worker(slot);
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
    const double hours = std::max(wall, 1e-9) / 3600;
    say(fmt::format("configs: {} screened out ({:.0f}/h), {} evaluated on the whole suite ({:.0f}/h)", screened_out_,
                    screened_out_ / hours, full_evals_, full_evals_ / hours));
    say(fmt::format("time: case building {:.1f} s, screening {:.1f} s, whole-suite evaluation (validation + timing) "
                    "{:.1f} s, champion re-timing {:.1f} s, held-out checks {:.1f} s, NVRTC {:.1f} s over {} compile "
                    "threads (overlapped with the GPU)",
                    prepare_ms_ / 1000, screen_ms_ / 1000, eval_ms_ / 1000, retime_ms_ / 1000, holdout_ms_ / 1000,
                    compile_ms_ / 1000, pool_.threads()));
  }
};

}  // namespace

std::string suite_label(const RunOptions& o) {
  return o.manifest.empty() ? o.suite : std::filesystem::path(o.manifest).stem().string();
}

std::string tsv_path_of(const RunOptions& o) {
  return o.tsv_path.empty() ? (std::filesystem::path(o.db_path).parent_path() / "iters.tsv").string() : o.tsv_path;
}

RunSummary run_tuning_loop(const RunOptions& options, StopRequest& stop) {
  Loop loop(options, stop);
  return loop.run();
}

}  // namespace attn
