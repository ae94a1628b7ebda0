// The daemon's side of the worker: starts `attn-tuner worker` (Boost.Process), sends one request line and
// reads one response line under a deadline. A watchdog thread SIGKILLs the worker's process group when the
// deadline passes (-> FailureKind::hang); EOF or exit without a response -> worker_died (or fault when the
// worker said so); garbage on its stdout -> worker_died with the offending text. Nothing a worker does
// makes this class throw: every outcome is a ReplyStatus.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/worker_protocol.hpp"

namespace attn {

/// The program and arguments that start a worker.
struct WorkerCommand {
  std::string exe;
  std::vector<std::string> args;
  /// Environment variables set for the worker on top of the daemon's own (e.g. CUDA_VISIBLE_DEVICES of
  /// its GPU, one worker per GPU); empty = the daemon's environment as it is.
  std::vector<std::pair<std::string, std::string>> env;
};

/// This executable (/proc/self/exe) with `worker --device N`, plus `extra` arguments.
WorkerCommand default_worker_command(int device = 0, const std::vector<std::string>& extra = {});

/// A response: its status and the whole JSON body (empty object when the worker gave none).
struct WorkerReply {
  ReplyStatus status;
  nlohmann::json body = nlohmann::json::object();
};

/// One worker process at a time. Not thread-safe: use from one thread. Construction ignores SIGPIPE for
/// the whole process (a write to a dead worker must fail, not kill the daemon).
///
/// The worker leads its own process group (its pid is the group id) and is started with
/// PR_SET_PDEATHSIG = SIGKILL: it is killed when the thread that started it ends, including by SIGKILL
/// of the whole daemon. So start workers from a thread that lives as long as the client (the daemon's
/// main thread), never from a short-lived one.
class WorkerClient {
 public:
  explicit WorkerClient(WorkerCommand command);
  /// Sends quit, waits up to 2 s, then kills the worker's process group.
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  /// Starts the worker when none was started yet (or after restart()); a worker that died stays dead
  /// (worker_died) until restart(). Sends `request` as one line and waits for one line until `deadline`.
  WorkerReply request(const nlohmann::json& request, std::chrono::milliseconds deadline);

  HelloResponse hello(std::chrono::milliseconds deadline);
  /// `evict`: the worker frees cached cases of neither this nor the previous suite (PrepareRequest).
  PrepareResponse prepare(const std::vector<CaseSpec>& cases, std::chrono::milliseconds deadline,
                          bool evict = false);
  EvalResponse eval(const EvalRequest& request, std::chrono::milliseconds deadline);

  /// Kills the current worker (if any); the next request starts a fresh one, which knows no cases:
  /// the caller prepares again.
  void restart();
  /// True while a started worker has not died or been killed.
  bool alive() const;
  /// The worker's pid, 0 when none runs.
  pid_t pid() const;
  /// Workers started so far.
  int starts() const { return starts_; }
  /// How the last worker ended ("exited with code 3", "killed by signal 9"), empty while it runs.
  const std::string& last_exit() const { return last_exit_; }
  /// The command that starts a worker.
  const WorkerCommand& command() const { return command_; }
  /// Called with the new worker's pid (= its process group id) right after each start, before any
  /// request is written (the daemon records it so that a later daemon can find a group that outlived it).
  void on_start(std::function<void(pid_t pid)> callback) { on_start_ = std::move(callback); }

 private:
  struct Proc;
  WorkerCommand command_;
  std::unique_ptr<Proc> proc_;
  bool dead_ = false;
  int starts_ = 0;
  std::string last_exit_;
  std::function<void(pid_t)> on_start_;

  ReplyStatus start();
  /// Waits up to `grace` for the worker to exit, then SIGKILLs its process group; records last_exit_.
  void reap(std::chrono::milliseconds grace);
  void kill_group();
};

}  // namespace attn
