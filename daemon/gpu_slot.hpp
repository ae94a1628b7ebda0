// One GPU of a run and its isolated worker (docs/scale-out.md): the worker's life (start, cases, restarts under the one
// rule of daemon/worker_answers.hpp), its requests (screens sent ahead, whole-suite evaluations, re-timings) and what it
// did (iterations, busy time), which the status file reads from other threads.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/case_rounds.hpp"
#include "daemon/gpu_set.hpp"
#include "daemon/job.hpp"
#include "daemon/stale_worker.hpp"
#include "gpu/worker_client.hpp"

namespace attn::tuning {

/// What a GPU slot shows the status file: its GPU, worker pid, what it does, iterations finished on it, worker
/// restarts, busy time (its worker evaluating) and the spare evaluations' share of it.
struct SlotStatus {
  int index = 0;
  std::string uuid;
  pid_t pid = 0;
  std::string state = "starting";
  std::int64_t iterations = 0, restarts = 0;
  double busy_ms = 0, spare_ms = 0;
};

/// One GPU and its worker. Only the thread that runs this slot calls its members, except status() (any thread): so no
/// two configs are ever timed on one GPU at once, and the worker's process object has one owner. The one lock guards
/// the status.
class GpuSlot {
 public:
  /// What a slot reads from, and tells, the rest of the run.
  struct Env {
    std::function<std::shared_ptr<const CaseSet>()> cases;  ///< the tuning cases now
    std::function<milliseconds()> deadline;                 ///< the watchdog's deadline of one evaluation
    milliseconds prepare_timeout{900'000};                  ///< building a suite's cases in a worker
    std::function<void(double ms)> prepared;                ///< case building time, for the run's counts
    /// Takes back the job sent ahead whose screen a worker that ended never answered (to the queue's front).
    std::function<void(InFlight&& job)> lost;
    /// Called on this slot's thread with each new worker's pid (= its process group).
    std::function<void(pid_t pid)> started;
    bool one_of_several = false;  ///< the run has several GPUs: errors name this one
  };
  /// Slot `index` (0 runs on the daemon's main thread) of `gpu`, its workers started with `command`.
  GpuSlot(int index, GpuSpec gpu, WorkerCommand command, Env env);
  GpuSlot(const GpuSlot&) = delete;
  GpuSlot& operator=(const GpuSlot&) = delete;

  int index() const { return index_; }
  /// Its GPU: index, and the UUID (from the worker's hello when NVML did not say).
  const GpuSpec& gpu() const { return gpu_; }
  /// The last hello of its worker.
  const HelloResponse& hello() const { return hello_; }
  /// Started, its hello answered and the tuning cases prepared; false after a restart until the next use.
  bool ready() const { return ready_; }
  /// Whether its worker holds the cases of generation `gen` (CaseSet::gen).
  bool holds(std::int64_t gen) const { return ready_ && cases_gen_ == gen; }

  /// Starts the worker (again, after a restart) and prepares the tuning cases, unless it is ready. Throws
  /// std::runtime_error when the worker does not start or cannot build the cases.
  void start();
  /// Started and holding the current tuning cases (after a seed rotation or a held-out check it prepares them again);
  /// the cases it holds.
  std::shared_ptr<const CaseSet> ensure_cases();
  /// The worker given other cases (the held-out ones: ensure_cases() brings the tuning cases back); false (and a
  /// fresh worker next time) when it could not build them.
  bool prepare_other(const std::vector<CaseSpec>& cases);
  /// `req` on this GPU, under the watchdog's deadline: the screens sent ahead are read first (the worker answers in
  /// order), and an answer that ends the worker restarts it. Its wall time counts as the GPU's busy time.
  EvalResponse eval(const EvalRequest& req);
  /// `job`'s screen `req`: the answer to its request sent ahead when that was made against the cases the worker holds
  /// now, else written now; while it is on the way, `send_next()` may write the next config's screen (the send
  /// ahead). An answer that ended the worker has restarted it. A screen that could not be written (the worker had
  /// ended) is written again to a fresh worker, up to kUnsentRetries times; then its worker_died is the answer.
  EvalResponse screen(InFlight& job, const EvalRequest& req, const std::function<void()>& send_next);
  static constexpr int kUnsentRetries = 3;
  /// Writes `req` to the worker without waiting; a write that fails (the worker had ended) is the reply, worker_died
  /// with SentScreen::unsent, and restarts nothing: the answer in flight before it, or screen()'s retry, does.
  std::shared_ptr<SentScreen> send_screen(const EvalRequest& req);
  /// The job whose screen was sent ahead: this slot's next job (busy from then on: its scheduler counts it).
  void set_ahead(InFlight job);
  std::optional<InFlight> take_ahead();
  bool has_ahead() const { return ahead_.has_value(); }
  /// Kills the worker (it died, hung or faulted); the next use starts a fresh one on the same GPU. Screens it had not
  /// answered are lost: the job sent ahead goes back through Env::lost.
  void restart();
  /// The end of this slot's thread: its worker ends cleanly (it would die with the thread: PR_SET_PDEATHSIG).
  void stop();

  void set_state(std::string state);
  /// An iteration finished on this GPU: one of the run's configs (`counted`), or a spare evaluation whose `spare_ms`
  /// of busy time count apart.
  void count(bool counted, double spare_ms = 0);
  /// Its status now (any thread).
  SlotStatus status() const;

 private:
  const int index_;
  GpuSpec gpu_;
  Env env_;
  std::unique_ptr<WorkerClient> worker_;
  HelloResponse hello_;
  bool ready_ = false;
  std::int64_t cases_gen_ = -1;  // the generation of the tuning cases its worker holds (-1: none, or other cases)
  std::optional<InFlight> ahead_;
  std::deque<std::shared_ptr<SentScreen>> unanswered_;  // screens written and not yet read, oldest first
  Clock::time_point answered_at_;                       // when the worker last answered
  mutable std::mutex status_mu_;                        // guards status_
  SlotStatus status_;

  /// The cases `cases` prepared on the worker (started), after the screens sent ahead were answered.
  bool prepare(const std::vector<CaseSpec>& cases);
  /// Reads the answer to the oldest unanswered screen.
  void receive_front();
  void drain();
  /// The one rule after each answer (ends_worker): a worker that ended is restarted.
  void answered(const ReplyStatus& s);
  void busy_for(Clock::time_point from, Clock::time_point to);
};

/// The worker records of every slot (<db>.worker: docs/daemon.md, "No worker outlives its daemon"), written whenever a
/// slot starts a worker. Thread-safe (one lock, held while the file is written).
class WorkerRecords {
 public:
  WorkerRecords(std::string db_path, std::size_t slots);
  /// Slot `slot` started worker `pid` of program `exe`: the file lists every slot's current worker.
  void started(int slot, pid_t pid, const std::string& exe);

 private:
  const std::string db_path_;
  std::mutex mu_;
  std::vector<WorkerRecord> records_;
};

}  // namespace attn::tuning
