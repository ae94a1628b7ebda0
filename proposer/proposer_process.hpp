// Running the proposer command (untrusted, docs/proposer.md): `/bin/sh -c CMD` in its working directory,
// in a process group of its own, stdin from /dev/null, stdout and stderr into one log file, under a
// wall-clock limit. On the limit, a crash or a stop request the whole group is killed; the daemon goes on.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attn {

/// How one proposer call went.
struct ProposerExit {
  std::optional<int> exit_code;  ///< set when it exited by itself
  std::optional<int> signal;     ///< set when a signal ended it (ours on a timeout or stop, or its own crash)
  bool timed_out = false;        ///< killed at the wall-clock limit
  bool stopped = false;          ///< killed because the daemon was asked to stop
  double wall_ms = 0;
  std::string status;            ///< for people: "exited with code 0", "killed after the 30 s limit", ...
  bool ok() const { return exit_code == 0 && !timed_out && !stopped; }
};

/// Runs `command` with /bin/sh -c in `workdir` and waits for it, at most `timeout_s` seconds:
/// - its own process group (setpgid), so that a kill reaches everything it started; after it ends, by
///   itself or not, whatever is left of the group is killed too;
/// - on the limit, or when `should_stop` (polled every 20 ms) returns true: SIGTERM to the group, 2 s of
///   grace, then SIGKILL;
/// - `env`: the whole environment it gets ("NAME=value"); stdout and stderr go to `log_path` (truncated).
/// Throws std::runtime_error when the shell cannot be started or the log file not opened.
ProposerExit run_proposer_command(const std::string& command, const std::string& workdir, const std::string& log_path,
                                  const std::vector<std::string>& env, double timeout_s,
                                  const std::function<bool()>& should_stop);

/// This process's environment without the variables that point into attn-tuner's own files
/// (ATTN_TUNER_*: DB, cache, templates), plus `extra` ("NAME=value").
std::vector<std::string> proposer_environment(const std::vector<std::string>& extra = {});

/// The last `max_bytes` of the file at `path` ("" when unreadable), prefixed with a note when cut.
std::string file_tail(const std::string& path, std::size_t max_bytes);

}  // namespace attn
