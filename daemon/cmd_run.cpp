// `attn-tuner run`: the tuning daemon, in the foreground (a progress line per iteration) or detached.
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "daemon/commands.hpp"
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
  auto proposer = std::make_shared<ProposerCli>();
  cmd->add_option("--suite", o->suite, "built-in suite: smoke, local-dev, quick, full, broad")->capture_default_str();
  cmd->add_option("--manifest", o->manifest, "suite manifest JSON (harness format) instead of --suite");
  cmd->add_option("--root-seed", o->root_seed, "root seed of the quick/full/broad case seeds")->capture_default_str();
  cmd->add_option("--template", o->templates, "template name (repeatable); default: every kernels_templates/*.json");
  cmd->add_option("--templates", o->templates_dir, "templates folder (default: $ATTN_TUNER_TEMPLATES or the source tree)");
  cmd->add_option("--strategy", o->strategy, "exhaustive | random | local | evolutionary")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the search strategy")->capture_default_str();
  cmd->add_option("--budget", *budget, "wall-clock budget, e.g. 8h, 90m, 600s");
  cmd->add_option("--iterations", *iterations, "stop after N iterations");
  cmd->add_option("--db", o->db_path, "experiment DB (SQLite)")->capture_default_str();
  cmd->add_option("--tsv", o->tsv_path, "iters.tsv to append to (default: beside the DB)");
  cmd->add_option("--jobs", o->compile_jobs, "NVRTC compile threads (default: all cores)");
  cmd->add_option("--cache", o->cache_dir, "cubin cache folder (default: $ATTN_TUNER_CACHE or ~/.cache/attn-tuner)");
  cmd->add_option("--min-samples", o->timing.min_samples, "timing: fewest samples per case")->capture_default_str();
  cmd->add_option("--max-samples", o->timing.max_samples, "timing: most samples per case")->capture_default_str();
  cmd->add_option("--target-spread", o->timing.target_spread, "timing: stop once IQR/median is below this")->capture_default_str();
  cmd->add_option("--watchdog-factor", o->watchdog_factor, "hang = no answer within this many champion evaluations")->capture_default_str();
  cmd->add_option("--watchdog-min", o->watchdog_min_s, "hang deadline floor, seconds")->capture_default_str();
  cmd->add_option("--watchdog-cap", o->watchdog_cap_s, "hang deadline cap, seconds")->capture_default_str();
  proposer->add(cmd, o->proposer);
  cmd->add_option("--worker-exe", *worker_exe, "program to run as the GPU worker (tests); default: this binary")->group("");
  cmd->add_flag("--detach", *detach, "run in the background: pid file <db>.pid, log <db>.log");
  cmd->callback([o, budget, iterations, detach, worker_exe, proposer] {
    if (!budget->empty()) o->budget_s = parse_duration(*budget);
    proposer->apply(o->proposer);
    if (*iterations < 0) throw CliError("--iterations must be positive");
    if (*iterations > 0) o->max_iterations = *iterations;
    if (!o->manifest.empty() && !std::filesystem::exists(o->manifest))
      throw CliError("--manifest: no such file " + o->manifest);
    const auto& names = strategy_names();
    if (std::find(names.begin(), names.end(), o->strategy) == names.end())
      throw CliError("--strategy: unknown '" + o->strategy + "' (exhaustive, random, local, evolutionary)");
    if (!worker_exe->empty()) o->worker = WorkerCommand{*worker_exe, {}};
    if (auto other = running_daemon(o->db_path))
      throw CliError(fmt::format("a daemon (pid {}) is already running on {}", *other, o->db_path));
    if (*detach) {
      const std::string log = log_file_for(o->db_path);
      if (pid_t child = detach_to_background(log); child > 0) {
        fmt::print("attn-tuner running in the background: pid {}, log {}, stop with `attn-tuner stop --db {}`\n",
                   child, log, o->db_path);
        return;
      }
    }
    StopRequest stop;
    SignalWatcher signals(stop);  // before any other thread starts
    PidFile pid(o->db_path);
    const RunSummary s = run_tuning_loop(*o, stop);
    fmt::print("run {}: {} iterations, {}; best {} ms\n", s.run_id, s.iterations, s.stop_reason,
               s.best_ms ? fmt::format("{:.4f}", *s.best_ms) : std::string("-"));
  });
}

}  // namespace attn
