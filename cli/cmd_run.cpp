// `attn-tuner run`: the tuning daemon, in the foreground (a progress line per iteration) or detached.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/run_preflight.hpp"
#include "daemon/stale_worker.hpp"
#include "daemon/storage_checks.hpp"
#include "daemon/supervise.hpp"
#include "daemon/tuning_loop.hpp"
#include "tuner/strategy.hpp"

namespace attn {
namespace {

/// "8h", "90m", "45s", "3600" (seconds) -> seconds. Throws CliError naming the option and the bad value.
double parse_duration(const std::string& text, const std::string& option = "--budget") {
  if (text.empty()) throw CliError(option + ": empty duration");
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw CliError(option + ": '" + text + "' is not a duration (examples: 8h, 90m, 45s)");
  }
  const std::string unit = text.substr(used);
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (scale < 0 || v <= 0) throw CliError(option + ": '" + text + "' is not a positive duration (units s, m, h)");
  return v * scale;
}

/// --proposer and its options (docs/proposer.md); the callback checks them.
struct ProposerCli {
  std::int64_t every = 0, when_stalled = 0;
  std::string timeout;
  void add(CLI::App* cmd, ProposerOptions& o) {
    cmd->add_option("--proposer", o.command,
                    "proposer hook: a command (run with sh -c in its own working directory) that writes a new "
                    "kernel template; see docs/proposer.md");
    auto* e = cmd->add_option("--propose-every", every, "call the proposer after every N iterations (default 10)");
    auto* w = cmd->add_option("--propose-when-stalled", when_stalled,
                              "call the proposer after M iterations without a new overall champion");
    e->excludes(w);
    cmd->add_option("--proposer-timeout", timeout, "wall-clock limit of one proposer call, e.g. 90s, 10m (default 10m)");
  }
  void apply(ProposerOptions& o) const {
    if (o.command.empty()) {
      if (every || when_stalled || !timeout.empty())
        throw CliError("--propose-every, --propose-when-stalled and --proposer-timeout need --proposer CMD");
      return;
    }
    if (every < 0 || when_stalled < 0) throw CliError("--propose-every / --propose-when-stalled must be positive");
    o.every = every;
    o.when_stalled = when_stalled;
    if (!every && !when_stalled) o.every = 10;
    if (!timeout.empty()) o.timeout_s = parse_duration(timeout, "--proposer-timeout");
  }
};

}  // namespace

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "run the tuning loop: propose, compile, verify, time, keep the best");
  auto o = std::make_shared<RunOptions>();
  auto budget = std::make_shared<std::string>();
  auto iterations = std::make_shared<std::int64_t>(0);
  auto detach = std::make_shared<bool>(false);
  auto worker_exe = std::make_shared<std::string>();
  auto compile_procs = std::make_shared<int>(-1);  // -1: RunOptions' default
  auto proposer = std::make_shared<ProposerCli>();
  auto gpus = std::make_shared<std::string>();
  auto shard = std::make_shared<std::string>();
  cmd->add_option("--suite", o->suite, "built-in suite: smoke, local-dev, quick, full, broad")->capture_default_str();
  cmd->add_option("--manifest", o->manifest, "suite manifest JSON (harness format) instead of --suite");
  cmd->add_option("--root-seed", o->root_seed, "root seed of the quick/full/broad case seeds")->capture_default_str();
  cmd->add_option("--template", o->templates, "template name (repeatable); default: every kernels_templates/*.json");
  cmd->add_option("--templates", o->templates_dir, "templates folder (default: $ATTN_TUNER_TEMPLATES or the source tree)");
  cmd->add_option("--strategy", o->strategy, "exhaustive | random | local | evolutionary | model")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the search strategy")->capture_default_str();
  cmd->add_option("--budget", *budget, "wall-clock budget, e.g. 8h, 90m, 600s");
  cmd->add_option("--iterations", *iterations, "stop after N iterations");
  cmd->add_option("--db", o->db_path, "experiment DB (SQLite)")->capture_default_str();
  cmd->add_option("--tsv", o->tsv_path, "the DB's log of iterations (default: beside the DB, named after it: "
                                       "runs/attn-tuner.iters.tsv); another DB's log is refused");
  cmd->add_option("--jobs", o->compile_jobs, "NVRTC compile threads (default: all cores)");
  cmd->add_option("--compile-procs", *compile_procs,
                  "NVRTC in N compile worker processes (default: one per core; 0: in the daemon's process)");
  cmd->add_option("--cache", o->cache_dir, "cubin cache folder (default: $ATTN_TUNER_CACHE or ~/.cache/attn-tuner)");
  cmd->add_option("--min-samples", o->timing.min_samples, "timing: fewest samples per case")->capture_default_str();
  cmd->add_option("--max-samples", o->timing.max_samples, "timing: most samples per case")->capture_default_str();
  cmd->add_option("--target-spread", o->timing.target_spread, "timing: stop once IQR/median is below this")->capture_default_str();
  cmd->add_option("--watchdog-factor", o->watchdog_factor, "hang = no answer within this many champion evaluations")->capture_default_str();
  cmd->add_option("--watchdog-min", o->watchdog_min_s, "hang deadline floor, seconds")->capture_default_str();
  cmd->add_option("--watchdog-cap", o->watchdog_cap_s, "hang deadline cap, seconds")->capture_default_str();
  auto fidelity = std::make_shared<std::string>(to_string(o->fidelity));
  auto no_holdout = std::make_shared<bool>(false);
  cmd->add_option("--fidelity", *fidelity, "ladder (screen one case per family, whole suite for contenders) | full")
      ->capture_default_str();
  cmd->add_option("--screen-cutoff", o->ladder.cutoff,
                  "ladder: evaluate the whole suite when the screen is within this fraction of the best screen")
      ->capture_default_str();
  cmd->add_option("--screen-samples", o->ladder.screen_max_samples, "ladder: timing samples per screened case")
      ->capture_default_str();
  cmd->add_flag("--rotate-seeds", o->rotate_seeds, "draw the suite's case seeds from a new root seed every round");
  cmd->add_option("--round", o->round_configs, "configs per round of --rotate-seeds")->capture_default_str();
  cmd->add_option("--holdout-seed", o->holdout_seed, "held-out root seed (never tuned on) that confirms champions")
      ->capture_default_str();
  cmd->add_flag("--no-holdout", *no_holdout, "promote champions without the held-out check");
  auto no_spare = std::make_shared<bool>(false);
  cmd->add_flag("--no-spare-evals", *no_spare,
                "give a GPU that no compiled config waits for nothing to do, rather than whole-suite evaluations of "
                "the best screened-out configs (docs/daemon.md)");
  auto no_ahead = std::make_shared<bool>(false);
  cmd->add_flag("--no-eval-ahead", *no_ahead,
                "write a GPU's next screen only after the loop recorded its last, rather than while the GPU times it "
                "(docs/daemon.md)");
  cmd->add_option("--spare-cutoff", o->spare_cutoff,
                  "spare evaluations: screened-out configs within this fraction of the best screen")
      ->capture_default_str();
  proposer->add(cmd, o->proposer);
  cmd->add_option("--ideas", o->ideas.dir,
                  "idea queue: a folder the daemon watches for *.idea files (a diff of the templates + a one-line "
                  "description); each is applied to its parent, checked, tuned, judged A/B/A; see docs/ideas.md");
  cmd->add_option("--idea-budget", o->ideas.budget, "configs tuned per idea (the parent's best first)")
      ->capture_default_str();
  cmd->add_option("--idea-top", o->ideas.top, "the parent's best configs an idea tries first")->capture_default_str();
  cmd->add_option("--idea-poll", o->ideas.poll_s, "seconds between looks at the idea queue folder")->capture_default_str();
  cmd->add_option("--idea-agent", o->idea_agent.command,
                  "a command (sh -c) that writes *.idea files: while the idea queue holds fewer than --idea-agent-min "
                  "ideas it runs beside the tuning in a fresh kit (`idea context`), its ideas go into the queue "
                  "(needs --ideas; docs/ideas.md)");
  cmd->add_option("--idea-agent-min", o->idea_agent.min_queued, "ideas waiting in the queue below which the agent is "
                                                                  "called")->capture_default_str();
  cmd->add_option("--idea-agent-timeout", o->idea_agent.timeout_s, "seconds an agent call may run")->capture_default_str();
  cmd->add_option("--idea-agent-retry", o->idea_agent.retry_s, "seconds before the next call after one that queued "
                                                                 "no idea")->capture_default_str();
  cmd->add_option("--idea-agent-parallel", o->idea_agent.parallel,
                  "agent calls at once, each in a kit of its own (with --idea-agent-min about as many, new calls start "
                  "while the last ideas are judged)")
      ->capture_default_str();
  cmd->add_option("--gpus", *gpus,
                  "one worker per GPU: all (every GPU NVML sees) or indices such as 0,1 (default: one worker, GPU 0)");
  cmd->add_option("--shard", *shard,
                  "tune only shard i of N of every template's configs, e.g. 0/4 (Slurm job arrays; docs/scale-out.md)");
  auto db_sync = std::make_shared<std::string>("normal");
  cmd->add_option("--db-sync", *db_sync,
                  "normal: the DB syncs its log at checkpoints (a killed daemon loses no finished iteration, a power "
                  "loss may lose the last ones) | full: a sync at every commit, two an iteration (docs/daemon.md)")
      ->check(CLI::IsMember({"normal", "full"}))
      ->capture_default_str();
  cmd->add_option("--worker-exe", *worker_exe, "program to run as the GPU worker (tests); default: this binary")->group("");
  cmd->add_flag("--detach", *detach, "run in the background: pid file <db>.pid, log <db>.log");
  cmd->callback([o, budget, iterations, detach, worker_exe, compile_procs, fidelity, no_holdout, proposer, gpus, shard,
                 db_sync, no_spare, no_ahead] {
    o->db_sync_full = *db_sync == "full";
    o->spare_evals = !*no_spare;
    o->eval_ahead = !*no_ahead;
    try {
      if (!gpus->empty()) o->gpus = parse_gpus(*gpus);
      if (!shard->empty()) o->shard = parse_shard(*shard);
    } catch (const std::invalid_argument& e) {
      throw CliError(e.what());
    }
    try {
      o->fidelity = parse_fidelity_mode(*fidelity);
    } catch (const std::invalid_argument& e) {
      throw CliError(std::string("--fidelity: ") + e.what());
    }
    o->holdout = !*no_holdout;
    if (!budget->empty()) o->budget_s = parse_duration(*budget);
    proposer->apply(o->proposer);
    if (*iterations != 0) o->max_iterations = *iterations;  // 0: no limit
    try {
      validate_run_options(*o);
    } catch (const std::invalid_argument& e) {
      throw CliError(e.what());
    }
    o->ladder.screen_min_samples = std::min(o->ladder.screen_min_samples, o->ladder.screen_max_samples);
    if (o->ideas.enabled())
      o->ideas.dir = std::filesystem::absolute(o->ideas.dir).lexically_normal().string();  // --detach changes the cwd
    if (*compile_procs < -1) throw CliError("--compile-procs must be 0 (NVRTC in the daemon) or more");
    if (*compile_procs >= 0) o->compile_procs = unsigned(*compile_procs);
    if (o->idea_agent.enabled()) {
      if (!o->ideas.enabled()) throw CliError("--idea-agent needs --ideas DIR (the queue its ideas go into)");
      if (o->idea_agent.min_queued < 1) throw CliError("--idea-agent-min must be at least 1");
      if (!(o->idea_agent.timeout_s > 0)) throw CliError("--idea-agent-timeout must be positive");
      if (!(o->idea_agent.retry_s >= 0)) throw CliError("--idea-agent-retry must be >= 0");
      if (o->idea_agent.parallel < 1) throw CliError("--idea-agent-parallel must be at least 1");
    }
    if (!worker_exe->empty()) o->worker = WorkerCommand{*worker_exe, {}};
    // Before any work: a GPU that answers, and a log that is this DB's (cli/run_preflight.hpp).
    require_gpu(*o);
    require_own_tsv(*o);
    // A read-only DB or folder, an unwritable iters.tsv or cache: a clear error before anything is logged.
    check_run_storage(o->db_path, tsv_path_of(*o), o->cache_dir);
    // The DB's lock first, atomically (a second `run` gets DaemonRunning, exit 1, naming the holder), and
    // before detaching, so that the error reaches the terminal; a detached child inherits the lock.
    PidFile pid(o->db_path);
    if (auto note = reap_stale_worker(o->db_path)) {  // only while holding the DB: never a live daemon's worker
      fmt::print("{}\n", *note);
      spdlog::warn("{}", *note);
      o->stale_worker_note = *note;
    }
    if (*detach) {
      const std::string log = log_file_for(o->db_path);
      std::fflush(stdout);
      if (pid_t child = detach_to_background(log); child > 0) {
        pid.hand_over();
        fmt::print("attn-tuner running in the background: pid {}, log {}, stop with `attn-tuner stop --db {}`\n",
                   child, log, o->db_path);
        return;
      }
      pid.set_holder(::getpid());
    }
    StopRequest stop;
    SignalWatcher signals(stop);  // before any other thread starts
    const RunSummary s = run_tuning_loop(*o, stop);
    fmt::print("run {}: {} iterations, {}; best {} ms\n", s.run_id, s.iterations, s.stop_reason,
               s.best_ms ? fmt::format("{:.4f}", *s.best_ms) : std::string("-"));
    if (s.failed) throw std::runtime_error(fmt::format("run {} {}", s.run_id, s.stop_reason));  // exit code 1
  });
}

}  // namespace attn
