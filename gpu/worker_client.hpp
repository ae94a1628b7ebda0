// The daemon's side of the worker: starts `attn-tuner worker` (Boost.Process), sends request lines and reads
// their response lines, in order, each under a deadline; an eval may be sent ahead of the answer to the one
// before it (the worker reads its next line as soon as it has answered: no GPU idle time in between). A watchdog thread SIGKILLs the worker's process group when the
// deadline passes (-> FailureKind::hang); EOF or exit without a response -> worker_died (or fault when the
// worker said so); garbage on its stdout -> worker_died with the offending text. Nothing a worker does
// makes this class throw: every outcome is a ReplyStatus.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <deque>
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
  std::vector<std::pair<std::string, std::string>> env{};
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
  /// Throws std::logic_error when a request sent ahead (send) is still unanswered.
  WorkerReply request(const nlohmann::json& request, std::chrono::milliseconds deadline);
  /// Sends `request` as one line without waiting (starting the worker as request() does); its answer is the
  /// receive() after those of the requests sent before it. Not ok (worker_died) when the worker is dead or cannot
  /// start.
  ReplyStatus send(const nlohmann::json& request);
  /// The answer to the oldest request sent and not yet received, waiting until `deadline` (from this call) as
  /// request() does: a hang kills the worker; the requests behind it then receive worker_died. Throws
  /// std::logic_error when none is pending.
  WorkerReply receive(std::chrono::milliseconds deadline);
  /// Requests sent and not yet received.
  std::size_t pending() const { return pending_.size(); }

  HelloResponse hello(std::chrono::milliseconds deadline);
  /// `evict`: the worker frees cached cases of neither this nor the previous suite (PrepareRequest).
  PrepareResponse prepare(const std::vector<CaseSpec>& cases, std::chrono::milliseconds deadline,
                          bool evict = false);
  EvalResponse eval(const EvalRequest& request, std::chrono::milliseconds deadline);
  /// send() of an eval request; receive_eval() reads its answer.
  ReplyStatus send_eval(const EvalRequest& request);
  EvalResponse receive_eval(std::chrono::milliseconds deadline);

  /// Kills the current worker (if any) and forgets the requests it had not answered; the next request starts
  /// a fresh one, which knows no cases: the caller prepares again.
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
  std::deque<std::string> pending_;  // the cmd of each request sent and not yet received, oldest first

  ReplyStatus start();
  /// An eval's reply parsed (a malformed body kills the worker: worker_died).
  EvalResponse eval_response_of(const WorkerReply& r);
  /// Waits up to `grace` for the worker to exit, then SIGKILLs its process group; records last_exit_.
  void reap(std::chrono::milliseconds grace);
  void kill_group();
};

}  // namespace attn
