// Running as a daemon: stop requests from signals, the pid file next to the DB, and detaching.
#pragma once
#include <sys/types.h>

#include <array>
#include <atomic>
#include <optional>
#include <string>
#include <thread>

#include "daemon/pid_lock.hpp"

namespace attn {

/// How far a stop has been asked for. 0: run on; 1: finish the iteration in flight, then stop;
/// 2 or more: abandon the iteration in flight (it is recorded as interrupted) and stop now.
struct StopRequest {
  std::atomic<int> level{0};
  /// The worker process to kill on an abandon (0: none); the loop keeps it current.
  std::atomic<pid_t> worker_pid{0};
  /// With one worker per GPU (--gpus), the workers of GPU slots 1.. (slot 0 is worker_pid); 0 = none.
  static constexpr int kMaxExtraWorkers = 63;
  std::array<std::atomic<pid_t>, kMaxExtraWorkers> extra_worker_pids{};
  bool stopping() const { return level.load() >= 1; }
  bool abandoning() const { return level.load() >= 2; }
};

/// Blocks SIGINT and SIGTERM in the calling thread (call before any other thread starts, so every later
/// thread inherits the mask) and handles them on a dedicated thread: each signal raises
/// `request.level` by one; on the second it also SIGKILLs request.worker_pid's process group.
class SignalWatcher {
 public:
  explicit SignalWatcher(StopRequest& request);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  StopRequest& request_;
  std::thread thread_;
};

/// Files of a daemon working on `db_path` besides "<db>.pid" (daemon/pid_lock.hpp): "<db>.log" and
/// "<db>.status.json" (live progress: what is in flight and the run's limits; the DB holds everything else).
std::string log_file_for(const std::string& db_path);
std::string status_file_for(const std::string& db_path);

/// Forks; the parent returns the child's pid, the child (returns 0) starts a new session, and sends
/// stdin to /dev/null and stdout/stderr to `log_path` (appending). Call before starting any thread.
/// Throws std::runtime_error when fork or the log file fails.
pid_t detach_to_background(const std::string& log_path);

}  // namespace attn
