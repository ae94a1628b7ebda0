// `attn-tuner status`: progress of the daemon on a DB (read concurrently, read-only): the latest run of the
// suite (db/suite_choice.hpp: --suite, else the only one, else the latest run's, said on the first line), the
// iteration in flight, counts by status, rate, champion and an ETA. `--watch [N]` redraws it every N s
// (default 5) until Ctrl-C: the live view during a run.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/read_suite.hpp"
#include "daemon/stale_worker.hpp"
#include "daemon/supervise.hpp"
#include "db/champion_score.hpp"
#include "db/iters_tsv.hpp"
#include "db/store.hpp"

namespace attn {

namespace {

/// Seconds from `from` to `to`, both ISO-8601 UTC timestamps as the DB writes them
/// ("2026-11-25T00:45:42.373Z"); nullopt when either does not parse.
std::optional<double> seconds_between(const std::string& from, const std::string& to) {
  auto parse = [](const std::string& t) -> std::optional<double> {
    std::tm tm{};
    double frac = 0;
    char z = 0;
    if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                    &tm.tm_min, &frac, &z) != 7 || z != 'Z')
      return std::nullopt;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_sec = 0;
    return double(timegm(&tm)) + frac;
  };
  const auto a = parse(from), b = parse(to);
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

/// One status view of the DB at `db_path` (text, or JSON with as_json) for `suite` ("": the rule of
/// db/suite_choice.hpp). Throws CliError when there is no DB, no run yet or no run of the suite.
void print_status(const std::string& db_path, const std::string& suite, bool as_json) {
  if (!std::filesystem::exists(db_path)) throw CliError("no experiment DB at " + db_path);
  auto db = ExperimentDb::open(db_path, ExperimentDb::Mode::read_only);
  const std::string chosen = choose_read_suite(db, suite, as_json).suite;
  const auto runs = db.runs();
  RunRecord run;
  for (const auto& r : runs)
    if (r.suite == chosen) run = r;  // ordered by id: the suite's latest
  const auto pid = running_daemon(db_path);
  nlohmann::json live;
  if (std::ifstream in(status_file_for(db_path)); in) {
    try {
      in >> live;
    } catch (const std::exception&) {
      live = nlohmann::json();
    }
  }
  const bool live_ok = live.is_object() && live.value("run_id", std::int64_t(-1)) == run.id;
  // A worker killed by a daemon at its start (that run's status file says so), or one alive right now
  // although no daemon runs (the next `run` kills it).
  const std::string stale_killed = live_ok ? live.value("stale_worker", "") : "";
  std::string stale_alive;
  if (!pid)
    if (const auto s = find_stale_worker(db_path))
      stale_alive = fmt::format("stale {} is alive although no daemon runs: the next `run` kills it (or kill -KILL -{})",
                                s->describe(), s->record.pgid);
  const RunProgress p = db.run_progress(run.id);
  // The rate's time: the live status file's, else (a DB collected from another machine, no status file) the
  // run's start to its end.
  double elapsed = live_ok ? live.value("elapsed_s", 0.0) : 0.0;
  if (!live_ok && !run.ended_at.empty()) elapsed = seconds_between(run.started_at, run.ended_at).value_or(0.0);
  const double rate_h = elapsed > 0 ? p.iterations / elapsed * 3600 : 0;
  std::optional<double> eta_s;
  if (live_ok && rate_h > 0 && run.status == RunStatus::running) {
    const double per_it = 3600 / rate_h;
    if (live["budget_s"].is_number()) eta_s = live["budget_s"].get<double>() - elapsed;
    if (live["max_iterations"].is_number()) {
      const double left = (live["max_iterations"].get<double>() - p.iterations) * per_it;
      eta_s = eta_s ? std::min(*eta_s, left) : left;
    }
    const double space_left = (live.value("space_total", 0.0) - live.value("space_seen", 0.0)) * per_it;
    eta_s = eta_s ? std::min(*eta_s, space_left) : space_left;
  }
  const auto champ = db.champion(run.suite, ChampionScope::overall);
  std::optional<IterationRecord> champ_it;
  if (champ) champ_it = db.iteration(champ->iteration_id);
  if (as_json) {
    nlohmann::json j = {{"run", run}, {"daemon_pid", pid ? nlohmann::json(*pid) : nlohmann::json()},
                        {"progress", p}, {"rate_per_hour", rate_h},
                        {"screened_out_per_hour", elapsed > 0 ? p.screened_out / elapsed * 3600 : 0.0},
                        {"full_evaluations_per_hour", elapsed > 0 ? p.full_evaluations / elapsed * 3600 : 0.0},
                        {"fidelity", live_ok ? live.value("fidelity", "") : ""},
                        {"eta_s", eta_s ? nlohmann::json(*eta_s) : nlohmann::json()},
                        {"current", live_ok ? live.value("current", "") : ""},
                        {"stale_worker_killed", stale_killed}, {"stale_worker_alive", stale_alive},
                        {"champion", champ_it ? nlohmann::json(*champ_it) : nlohmann::json()},
                        {"shard", live_ok ? live.value("shard", nlohmann::json()) : nlohmann::json()},
                        {"gpus", live_ok && live.contains("gpus") ? live["gpus"] : nlohmann::json::array()},
                        {"spare_evaluations", live_ok ? live.value("spare_evaluations", 0) : 0},
                        {"spare_gpu_s", live_ok ? live.value("spare_gpu_s", 0.0) : 0.0},
                        {"screens_sent_ahead", live_ok ? live.value("screens_sent_ahead", 0) : 0},
                        {"compile_pool", live_ok ? live.value("compile_pool", nlohmann::json()) : nlohmann::json()},
                        {"idea", live_ok ? live.value("idea", nlohmann::json()) : nlohmann::json()},
                        {"idea_queue", live_ok ? live.value("idea_queue", "") : ""},
                        {"proposer", live_ok ? live.value("proposer", "") : ""}};
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("run {} ({}): {} on {}, suite {}, strategy {}, started {}\n", run.id, to_string(run.status),
             pid ? fmt::format("daemon pid {}", *pid) : std::string("no daemon running"), run.gpu_name, run.suite,
             run.strategy, run.started_at);
  if (run.status != RunStatus::running) fmt::print("ended {}: {}\n", run.ended_at, run.stop_reason);
  if (live_ok && run.status == RunStatus::running) fmt::print("in flight: {}\n", live.value("current", "-"));
  if (!stale_killed.empty()) fmt::print("{}\n", stale_killed);
  if (!stale_alive.empty()) fmt::print("warning: {}\n", stale_alive);
  fmt::print("iterations {}: keep {}, discard {}, crash {}, interrupted {}; {:.0f} configs/hour; GPU {:.0f} s, NVRTC {:.0f} s\n",
             p.iterations, p.keep, p.discard, p.crash, p.interrupted, rate_h, p.gpu_ms / 1000, p.compile_ms / 1000);
  if (p.screened_out > 0 || (live_ok && live.value("fidelity", "") == "ladder"))
    fmt::print("configs: {} screened out ({:.0f}/hour), {} evaluated on the whole suite ({:.0f}/hour)\n",
               p.screened_out, elapsed > 0 ? p.screened_out / elapsed * 3600 : 0.0, p.full_evaluations,
               elapsed > 0 ? p.full_evaluations / elapsed * 3600 : 0.0);
  if (live_ok && live.value("spare_evals_on", false))
    fmt::print("spare GPU time: {} whole-suite evaluations of screened-out near misses, {:.0f} s of GPU time, {} kept\n",
               live.value("spare_evaluations", 0), live.value("spare_gpu_s", 0.0), live.value("spare_kept", 0));
  if (live_ok && live.value("screens_sent_ahead", 0) > 0)
    fmt::print("screens sent ahead: {} (written to a GPU's worker while it timed the config before)\n",
               live.value("screens_sent_ahead", 0));
  if (live_ok && live.contains("gpus")) {  // each GPU's worker (one per GPU with --gpus)
    for (const auto& g : live["gpus"]) {
      const std::string uuid = g.value("uuid", "");
      fmt::print("GPU {}{}: {}, {} iterations ({:.0f} configs/hour), busy {:.1f} % ({:.0f} s), {} worker restart(s)\n",
                 g.value("index", 0), uuid.empty() ? "" : " (" + uuid + ")", g.value("state", "?"),
                 g.value("iterations", 0), g.value("rate_per_hour", 0.0), 100 * g.value("busy_share", 0.0),
                 g.value("busy_s", 0.0), g.value("restarts", 0));
    }
  }
  if (const auto pool = live_ok ? live.value("compile_pool", nlohmann::json()) : nlohmann::json();
      pool.is_object() && pool.value("procs", 0) > 0)  // NVRTC in compile workers (run --compile-procs)
    fmt::print("compile pool: {} worker processes ({} running, {} busy), {} compiles, {} failed, {} restart(s)\n",
               pool.value("procs", 0), pool.value("processes", 0), pool.value("busy", 0), pool.value("compiles", 0),
               pool.value("failures", 0), pool.value("restarts", 0));
  if (live_ok && run.status == RunStatus::running && !live.value("idea_queue", "").empty()) {
    const auto idea = live.value("idea", nlohmann::json());
    if (idea.is_object())
      fmt::print("idea {} ({}): {}, template {}, {} configs so far; queue {}\n", idea.value("id", 0),
                 idea.value("file", "?"), idea.value("status", "?"), idea.value("template", "-"),
                 idea.value("configs", 0), live.value("idea_queue", ""));
    else
      fmt::print("idea queue {}: waiting for an idea\n", live.value("idea_queue", ""));
  }
  if (live_ok && run.status == RunStatus::running && !live.value("proposer", "").empty())
    fmt::print("proposer: {}\n", live.value("proposer", ""));
  if (live_ok && live.value("shard", nlohmann::json()).is_string())
    fmt::print("shard {} of the search space\n", live["shard"].get<std::string>());
  if (eta_s) fmt::print("ETA {:.0f} min (budget, iteration limit or search space, whichever ends first)\n", *eta_s / 60);
  if (champ_it)  // its score by the one rule of db/champion_score.hpp (the number `query best` shows)
    fmt::print("champion: iter {} {} ms ({} {}), window {} global {} retrieval {} ms\n", champ_it->iter,
               format_ms(champion_score_ms(ChampionScope::overall, *champ_it)), champ_it->template_name, champ_it->params,
               format_ms(champ_it->window_ms), format_ms(champ_it->global_ms), format_ms(champ_it->retrieval_ms));
  else
    fmt::print("champion: none yet\n");
}

/// Redraws print_status every `every_s` seconds until SIGINT or SIGTERM (exit code 0). A missing DB
/// or a DB without runs is shown as such and watched on: the daemon may be about to create it.
void watch_status(const std::string& db_path, const std::string& suite, double every_s) {
  StopRequest stop;
  SignalWatcher signals(stop);
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  while (!stop.stopping()) {
    const std::time_t now = std::time(nullptr);
    char clock[16];
    std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&now));
    if (tty) fmt::print("\033[H\033[2J");
    fmt::print("--- {} status of {}, every {:g} s (Ctrl-C to stop)\n", clock, db_path, every_s);
    try {
      print_status(db_path, suite, false);
    } catch (const std::exception& e) {  // not there yet, or being created: say so and keep watching
      fmt::print("{}\n", e.what());
    }
    std::fflush(stdout);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(every_s);
    while (!stop.stopping() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

void add_status_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("status", "show the progress of the daemon working on a DB");
  auto db_path = std::make_shared<std::string>("runs/attn-tuner.db");
  auto as_json = std::make_shared<bool>(false);
  auto watch_s = std::make_shared<double>(0);
  auto suite = std::make_shared<std::string>();
  cmd->add_option("--db", *db_path, "experiment DB")->capture_default_str();
  cmd->add_option("--suite", *suite, "the suite whose latest run to show (default: the only one, else the latest "
                                     "run's, said on the first line)");
  auto* json = cmd->add_flag("--json", *as_json, "machine-readable output");
  auto* watch = cmd->add_option("--watch", *watch_s, "redraw every N seconds until Ctrl-C (N default 5)")
                    ->expected(0, 1)
                    ->default_str("5");
  watch->excludes(json);
  cmd->callback([db_path, suite, as_json, watch_s, watch] {
    if (watch->count() == 0) return print_status(*db_path, *suite, *as_json);
    if (!(*watch_s > 0))
      throw CliError(fmt::format("--watch: the period must be a positive number of seconds, got {}", *watch_s));
    watch_status(*db_path, *suite, *watch_s);
  });
}

}  // namespace attn
