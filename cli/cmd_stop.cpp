// `attn-tuner stop`: asks the daemon working on a DB to stop (SIGTERM: it finishes the iteration in
// flight; --now: a second signal abandons it, recorded as interrupted) and waits for it to exit.
#include <signal.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "daemon/supervise.hpp"

namespace attn {

void add_stop_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("stop", "stop the daemon working on a DB, cleanly");
  auto db = std::make_shared<std::string>("runs/attn-tuner.db");
  auto now = std::make_shared<bool>(false);
  auto wait_s = std::make_shared<double>(600);
  cmd->add_option("--db", *db, "experiment DB of the daemon")->capture_default_str();
  cmd->add_flag("--now", *now, "abandon the iteration in flight instead of finishing it");
  cmd->add_option("--wait", *wait_s, "seconds to wait for the daemon to exit")->capture_default_str();
  cmd->callback([db, now, wait_s] {
    const auto pid = running_daemon(*db);
    if (!pid) throw CliError("no daemon is running on " + *db + " (no process holds " + pid_file_for(*db) + ")");
    if (*pid <= 0) throw CliError("the daemon holding " + *db + " has not written its pid yet; try again");
    ::kill(*pid, SIGTERM);
    if (*now) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ::kill(*pid, SIGTERM);
    }
    fmt::print("asked daemon {} to stop ({})\n", *pid, *now ? "abandoning the iteration in flight" : "after the iteration in flight");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(*wait_s);
    while (running_daemon(*db) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (running_daemon(*db)) throw CliError(fmt::format("daemon {} still running after {:.0f} s", *pid, *wait_s));
    fmt::print("daemon {} stopped\n", *pid);
  });
}

}  // namespace attn
