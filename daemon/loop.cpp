// The tuning loop of one run (daemon/loop.hpp): its parts made, the run (start, its threads, the end and its
// throughput lines), and the status file.
#include "daemon/loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/templates_dir.hpp"
#include "daemon/storage_checks.hpp"
#include "tuner/strategy.hpp"

namespace attn {
namespace tuning {
namespace {

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

/// The daemon's compiler: its cache, and NVRTC in --compile-procs processes (default: one per hardware thread).
CompilerOptions compiler_options(const RunOptions& o) {
  CompilerOptions c;
  c.cache_dir = o.cache_dir;
  c.procs.procs = o.compile_procs.value_or(std::max(1u, std::thread::hardware_concurrency()));
  return c;
}

}  // namespace

Loop::Loop(const RunOptions& o, StopRequest& stop)
    : o_(o),
      stop_(stop),
      suite_(suite_label(o)),
      templates_dir_(o.templates_dir.empty() ? default_templates_dir() : o.templates_dir),
      db_(o.db_path, tsv_path_of(o), o.db_sync_full),
      compiler_(compiler_options(o)),
      pool_(compiler_, o.compile_jobs ? o.compile_jobs : std::max(1u, std::thread::hardware_concurrency())),
      rounds_(o, o.manifest.empty() ? builtin_suite(o.suite, o.root_seed) : suite_from_manifest_file(o.manifest)),
      search_(o.shard, o.proposer.retire_after_crashes),
      scheduler_(search_, compiler_, pool_, stop, RunLimits{o.budget_s, o.max_iterations}),
      screens_(o.ladder.cutoff, o.spare_evals, o.spare_cutoff),
      champions_(WatchdogOptions{o.watchdog_factor, o.watchdog_min_s, o.watchdog_cap_s}),
      seat_(o.timing, rounds_.holdout(), stats_,
            [this](const Contender& c, double wall_ms) { champions_.evaluated(c, wall_ms); }),
      holdout_(rounds_.holdout().empty() ? nullptr : std::make_unique<HoldoutChecker>(db_, suite_, o.holdout_seed)),
      records_(o.db_path, o.gpus.empty() ? 1 : o.gpus.size()),
      status_(status_file_for(o.db_path)),
      bench_(o, suite_,
             IdeaBench::Env{db_, search_, scheduler_, champions_, seat_, holdout_.get(), compiler_,
                            [this](const std::string& l) { say(l); }, [this](const std::string& c) { write_status(c); }}),
      agents_(o, suite_, templates_dir_,
              IdeaAgents::Env{bench_, champions_, scheduler_, compiler_, stop, [this](const std::string& l) { say(l); }}),
      proposer_(o, suite_, templates_dir_,
                ProposerCalls::Env{db_, search_, scheduler_, champions_, stats_, compiler_, stop,
                                   [this](const std::string& l) { say(l); }}),
      iterations_(IterationRunner::Env{o, suite_, db_, search_, scheduler_, screens_, rounds_, champions_, seat_,
                                       holdout_.get(), stats_, compiler_, stop, started_,
                                       [this](const std::string& l) { say(l); },
                                       [this](const std::string& c) { write_status(c); }}) {
  make_slots();
  load_templates();
}

void Loop::make_slots() {
  const WorkerCommand base = o_.worker ? *o_.worker : default_worker_command();
  const std::vector<GpuSpec> gpus = o_.gpus.empty() ? std::vector<GpuSpec>{GpuSpec{}} : o_.gpus;
  if (gpus.size() > std::size_t(StopRequest::kMaxExtraWorkers) + 1)
    throw std::invalid_argument(fmt::format("--gpus: at most {} GPUs", StopRequest::kMaxExtraWorkers + 1));
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    WorkerCommand cmd = base;
    if (!o_.gpus.empty()) cmd.env = worker_env_for(gpus[i]);  // the worker's only device is ordinal 0
    GpuSlot::Env env;
    env.cases = [this] { return rounds_.now(); };
    env.deadline = [this] { return champions_.deadline(); };
    env.prepare_timeout = milliseconds(std::int64_t(o_.prepare_timeout_s * 1000));
    env.prepared = [this](double ms) { stats_.add([&](RunCounters& c) { c.prepare_ms += ms; }); };
    env.lost = [this](InFlight&& job) { scheduler_.put_back(std::move(job)); };
    env.started = [this, i, exe = cmd.exe](pid_t pid) {
      (i == 0 ? stop_.worker_pid : stop_.extra_worker_pids[i - 1]) = pid;
      records_.started(int(i), pid, exe);
    };
    env.one_of_several = gpus.size() > 1;
    slots_.push_back(std::make_unique<GpuSlot>(int(i), gpus[i], std::move(cmd), std::move(env)));
  }
}

RunSummary Loop::run() {
  resume();
  slots_[0]->start();  // fails before the run is logged when there is no usable GPU
  const HelloResponse& hello = slots_[0]->hello();
  RunRecord rr;
  rr.suite = suite_;
  rr.suite_json = suite_to_manifest_json(rounds_.now()->cases);
  rr.strategy = o_.strategy;
  rr.templates = search_.names();
  rr.gpu_name = hello.gpu_name;
  rr.driver = std::to_string(hello.driver_version);
  if (hello.sm_clock_mhz) rr.sm_clock_mhz = hello.sm_clock_mhz;
  rr.git_commit = git_commit();
  rr.host = host_name();
  run_id_ = db_.with([&](ExperimentDb& db) { return db.begin_run(rr); });
  if (holdout_) holdout_->set_run(run_id_);
  bench_.set_run(run_id_);
  agents_.set_run(run_id_);
  proposer_.set_run(run_id_);
  iterations_.set_run(run_id_);
  introduce(hello, rr.templates);
  RunSummary summary;
  summary.run_id = run_id_;
  RunStatus status = RunStatus::finished;
  write_status("starting");
  try {
    loop();
    if (stop_.stopping()) status = RunStatus::stopped;
    if (holdout_ && !stop_.abandoning()) {  // before export: every champion confirmed on held-out seeds, on GPU 0
      Challenge seat = seat_.take(*slots_[0]);
      for (const auto& note : champions_.confirm(seat, *holdout_)) say("held-out check: " + note);
    }
    summary.stop_reason = scheduler_.reason();
  } catch (const std::exception& e) {
    status = RunStatus::failed;
    summary.failed = true;
    summary.stop_reason = std::string("failed: ") + explain_run_failure(e, o_.db_path);
    spdlog::error("run {} {}", run_id_, summary.stop_reason);
  }
  proposer_.finish();
  agents_.finish();
  scheduler_.drop_queue();
  bench_.interrupt("the run ended before its verdict (" + summary.stop_reason + "); queued again, it runs from the start");
  try {
    db_.with([&](ExperimentDb& db) { db.end_run(run_id_, status, summary.stop_reason); });
  } catch (const std::exception& e) {  // e.g. the disk is still full: the next start marks it interrupted
    throw std::runtime_error(fmt::format("run {} {}; its end could not be recorded ({}), so the next start marks it "
                                         "interrupted",
                                         run_id_, summary.stop_reason, e.what()));
  }
  for (auto& slot : slots_) slot->set_state("stopped");
  write_status(std::string("ended: ") + summary.stop_reason);
  summary.iterations = scheduler_.iterations();
  const double wall = seconds_since(started_);
  say(fmt::format("run {} ended: {} iterations in {:.0f} s ({:.0f} configs/hour); {}", run_id_, summary.iterations, wall,
                  summary.iterations / std::max(wall, 1e-9) * 3600, summary.stop_reason));
  const bool screened = rounds_.now()->screen.has_value();
  std::vector<GpuBusy> busy;
  for (const auto& s : slots_) {
    const SlotStatus st = s->status();
    busy.push_back({st.index, st.busy_ms / 1000, st.spare_ms / 1000});
  }
  for (const auto& line : throughput_lines(stats_.now(), wall, pool_.threads(),
                                           compiler_.procs_stats() ? compiler_.procs_stats()->procs : 0,
                                           o_.spare_evals && screened, o_.spare_cutoff, o_.eval_ahead && screened, busy))
    say(line);
  if (const auto best = db_.with([&](ExperimentDb& db) { return db.best(suite_); })) summary.best_ms = best->geomean_ms;
  return summary;
}

void Loop::introduce(const HelloResponse& hello, const std::vector<std::string>& templates) {
  const auto cases = rounds_.now();
  say(fmt::format("run {} on {} ({} SMs): suite {} ({} cases), templates {}, strategy {}, db {}, tsv {}", run_id_,
                  hello.gpu_name, hello.sm_count, suite_, cases->cases.size(), fmt::join(templates, ","), o_.strategy,
                  o_.db_path, db_.tsv_path()));
  if (!o_.gpus.empty() || o_.shard) {
    std::vector<std::string> gpus;
    for (const auto& s : slots_)
      gpus.push_back(s->gpu().uuid.empty() ? std::to_string(s->gpu().index)
                                           : fmt::format("{} ({})", s->gpu().index, s->gpu().uuid));
    say(fmt::format("{} worker(s), one per GPU: {}; {}", slots_.size(), fmt::join(gpus, ", "),
                    o_.shard ? fmt::format("shard {} of the space: {} valid configs", o_.shard->text(),
                                           search_.space_counts().first)
                             : std::string("the whole space")));
  }
  say(fmt::format("fidelity {}{}; case seeds {}; held-out check {}", to_string(o_.fidelity),
                  cases->screen ? fmt::format(" (screen: {}, {} samples, cut-off {:g}%)", cases->screen->describe(),
                                              o_.ladder.screen_max_samples, o_.ladder.cutoff * 100)
                  : o_.fidelity == FidelityMode::ladder ? " (one case per family: every config is evaluated in full)"
                                                        : "",
                  !cases->root_seed ? "fixed by the suite"
                  : o_.rotate_seeds ? fmt::format("root seed {}, a new one every {} configs", *cases->root_seed,
                                                  o_.round_configs)
                                    : fmt::format("root seed {}", *cases->root_seed),
                  holdout_ ? fmt::format("on (root seed {})", holdout_->root_seed()) : std::string("off")));
}

void Loop::loop() {
  const auto drive = [this](GpuSlot& slot) {
    try {
      gpu_loop(slot);
    } catch (...) {
      scheduler_.fail(std::current_exception());
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < slots_.size(); ++i)
    threads.emplace_back([this, i, drive] {
      GpuSlot& slot = *slots_[i];
      drive(slot);
      slot.stop();  // its worker would die with this thread (PR_SET_PDEATHSIG): it ends cleanly first
    });
  drive(*slots_[0]);
  for (auto& t : threads) t.join();
  if (const auto failure = scheduler_.failure()) std::rethrow_exception(failure);
}

void Loop::gpu_loop(GpuSlot& slot) {
  for (;;) {
    if (auto why = scheduler_.stop_reason(slot.has_ahead() ? 1 : 0)) {
      scheduler_.end(*why);
      if (slot.take_ahead()) Scheduler::Ticket dropped = scheduler_.ticket();  // its screen is dropped with the run
      return;
    }
    if (auto round = rounds_.rotate(scheduler_.iterations(), run_id_)) say(*round);
    bench_.poll(slot);
    agents_.poll();
    proposer_.poll();
    std::optional<InFlight> job = slot.take_ahead();  // its screen is on this GPU already; counted on a GPU since
    if (job) {
      scheduler_.refill();
    } else {
      Scheduler::Next next = scheduler_.next(o_.spare_evals && screens_.spare_due());
      if (next.kind == Scheduler::Next::Kind::again) continue;
      if (next.kind == Scheduler::Next::Kind::idle) {
        if (wait_when_idle(slot)) continue;
        return;
      }
      if (next.kind == Scheduler::Next::Kind::spare) {
        job = screens_.take_spare();
        if (!job) {
          Scheduler::Ticket none = scheduler_.ticket();  // another GPU took it
          continue;
        }
      } else {
        job = std::move(next.job);
      }
    }
    Scheduler::Ticket ticket = scheduler_.ticket();
    struct Idle {  // also when the iteration throws
      GpuSlot& slot;
      ~Idle() { slot.set_state("idle"); }
    } idle{slot};
    iterations_.run(*job, slot, ticket);
  }
}

bool Loop::wait_when_idle(GpuSlot& slot) {
  if (scheduler_.stop_reason()) return true;  // the top of the loop ends it
  slot.set_state("idle");
  // A proposer call may bring a template (with nothing else to tune it is asked once); with an idea agent its calls
  // may bring ideas until the budget ends; an idea's check may be running: wait for them rather than end.
  if (proposer_.when_idle() || agents_.enabled() || bench_.in_progress()) {
    scheduler_.wait_for(milliseconds(200));
    return true;
  }
  if (bench_.enabled()) {  // the queue may still hold ideas: look once more before the end
    bench_.look_now();
    bench_.poll(slot, true);
    if (bench_.in_progress()) return true;
  }
  const auto [total, seen] = search_.space_counts();
  return !scheduler_.end_if_idle(fmt::format("search space exhausted: all {} valid configs evaluated", total),
                                 bench_.in_progress());
}

void Loop::write_status(const std::string& current) {
  const auto [total, seen] = search_.space_counts();
  const RunCounters c = stats_.now();
  const auto cases = rounds_.now();
  nlohmann::json gpus = nlohmann::json::array();
  const double elapsed = std::max(1e-9, seconds_since(started_));
  for (const auto& slot : slots_) {
    const SlotStatus s = slot->status();
    gpus.push_back({{"index", s.index},
                    {"uuid", s.uuid},
                    {"pid", s.pid},
                    {"state", s.state},
                    {"iterations", s.iterations},
                    {"rate_per_hour", s.iterations / (elapsed / 3600)},
                    {"restarts", s.restarts},
                    {"busy_s", s.busy_ms / 1000},
                    {"spare_s", s.spare_ms / 1000},
                    {"busy_share", s.busy_ms / 1000 / elapsed}});
  }
  nlohmann::json pool = {{"threads", pool_.threads()}, {"processes", 0}, {"procs", 0}};
  if (const auto p = compiler_.procs_stats())
    pool.update({{"procs", p->procs}, {"processes", p->processes}, {"busy", p->busy}, {"restarts", p->restarts},
                 {"compiles", p->compiles}, {"failures", p->failures}, {"pids", p->pids}});
  const auto or_null = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  status_.write({{"pid", ::getpid()},
                 {"run_id", run_id_},
                 {"suite", suite_},
                 {"elapsed_s", seconds_since(started_)},
                 {"iterations", scheduler_.iterations()},
                 {"budget_s", or_null(o_.budget_s)},
                 {"max_iterations", or_null(o_.max_iterations)},
                 {"space_total", total},
                 {"space_seen", seen},
                 {"current", current},
                 {"stale_worker", o_.stale_worker_note},
                 {"fidelity", cases->screen ? "ladder" : "full"},  // what runs: no screen on one case per family
                 {"screened_out", c.screened_out},
                 {"full_evaluations", c.full_evals},
                 {"spare_evaluations", c.spare_evals},
                 {"spare_kept", c.spare_kept},
                 {"spare_gpu_s", c.spare_ms / 1000},
                 {"spare_evals_on", o_.spare_evals && cases->screen.has_value()},
                 {"screens_sent_ahead", c.sent_ahead},
                 {"root_seed", or_null(cases->root_seed)},
                 {"holdout_seed", holdout_ ? nlohmann::json(holdout_->root_seed()) : nlohmann::json()},
                 {"shard", o_.shard ? nlohmann::json(o_.shard->text()) : nlohmann::json()},
                 {"gpus", gpus},
                 {"compile_pool", pool},
                 {"idea", bench_.status()},
                 {"idea_queue", o_.ideas.dir},
                 {"proposer", proposer_.running() ? "running beside the tuning" : ""},
                 {"updated_unix",
                  std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()}});
}

void Loop::say(const std::string& line) const {
  if (o_.progress) fmt::print("{}\n", line);
  std::fflush(stdout);
  spdlog::debug("{}", line);
}

}  // namespace tuning

RunSummary run_tuning_loop(const RunOptions& options, StopRequest& stop) {
  validate_run_options(options);
  tuning::Loop loop(options, stop);
  return loop.run();
}

}  // namespace attn
