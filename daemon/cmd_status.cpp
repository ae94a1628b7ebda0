// `attn-tuner status`: progress of the daemon on a DB (read concurrently, read-only): its run, the
// iteration in flight, counts by status, rate, champion and an ETA.
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "daemon/commands.hpp"
#include "daemon/supervise.hpp"
#include "db/iters_tsv.hpp"
#include "db/store.hpp"

namespace attn {

void add_status_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("status", "show the progress of the daemon working on a DB");
  auto db_path = std::make_shared<std::string>("runs/attn-tuner.db");
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("--db", *db_path, "experiment DB")->capture_default_str();
  cmd->add_flag("--json", *as_json, "machine-readable output");
  cmd->callback([db_path, as_json] {
    if (!std::filesystem::exists(*db_path)) throw CliError("no experiment DB at " + *db_path);
    auto db = ExperimentDb::open(*db_path, ExperimentDb::Mode::read_only);
    const auto runs = db.runs();
    if (runs.empty()) throw CliError(*db_path + " has no runs yet");
    const RunRecord& run = runs.back();
    const auto pid = running_daemon(*db_path);
    nlohmann::json live;
    if (std::ifstream in(status_file_for(*db_path)); in) {
      try {
        in >> live;
      } catch (const std::exception&) {
        live = nlohmann::json();
      }
    }
    const bool live_ok = live.is_object() && live.value("run_id", std::int64_t(-1)) == run.id;
    const RunProgress p = db.run_progress(run.id);
    const double elapsed = live_ok ? live.value("elapsed_s", 0.0) : 0.0;
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
    if (*as_json) {
      nlohmann::json j = {{"run", run}, {"daemon_pid", pid ? nlohmann::json(*pid) : nlohmann::json()},
                          {"progress", p}, {"rate_per_hour", rate_h},
                          {"screened_out_per_hour", elapsed > 0 ? p.screened_out / elapsed * 3600 : 0.0},
                          {"full_evaluations_per_hour", elapsed > 0 ? p.full_evaluations / elapsed * 3600 : 0.0},
                          {"fidelity", live_ok ? live.value("fidelity", "") : ""},
                          {"eta_s", eta_s ? nlohmann::json(*eta_s) : nlohmann::json()},
                          {"current", live_ok ? live.value("current", "") : ""},
                          {"champion", champ_it ? nlohmann::json(*champ_it) : nlohmann::json()}};
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("run {} ({}): {} on {}, suite {}, strategy {}, started {}\n", run.id, to_string(run.status),
               pid ? fmt::format("daemon pid {}", *pid) : std::string("no daemon running"), run.gpu_name, run.suite,
               run.strategy, run.started_at);
    if (run.status != RunStatus::running) fmt::print("ended {}: {}\n", run.ended_at, run.stop_reason);
    if (live_ok && run.status == RunStatus::running) fmt::print("in flight: {}\n", live.value("current", "-"));
    fmt::print("iterations {}: keep {}, discard {}, crash {}, interrupted {}; {:.0f} configs/hour; GPU {:.0f} s, NVRTC {:.0f} s\n",
               p.iterations, p.keep, p.discard, p.crash, p.interrupted, rate_h, p.gpu_ms / 1000, p.compile_ms / 1000);
    if (p.screened_out > 0 || (live_ok && live.value("fidelity", "") == "ladder"))
      fmt::print("configs: {} screened out ({:.0f}/hour), {} evaluated on the whole suite ({:.0f}/hour)\n",
                 p.screened_out, elapsed > 0 ? p.screened_out / elapsed * 3600 : 0.0, p.full_evaluations,
                 elapsed > 0 ? p.full_evaluations / elapsed * 3600 : 0.0);
    if (eta_s) fmt::print("ETA {:.0f} min (budget, iteration limit or search space, whichever ends first)\n", *eta_s / 60);
    if (champ_it)
      fmt::print("champion: iter {} {} ms ({} {}), window {} global {} retrieval {} ms\n", champ_it->iter,
                 format_ms(champ_it->geomean_ms), champ_it->template_name, champ_it->params,
                 format_ms(champ_it->window_ms), format_ms(champ_it->global_ms), format_ms(champ_it->retrieval_ms));
    else
      fmt::print("champion: none yet\n");
  });
}

}  // namespace attn
