// The compile workers: NVRTC serialises inside one process (threads wait on each other: docs/results.md), so
// Compiler::compile hands each NVRTC run (an NvrtcJob, the bytes it read) to one of N `attn-tuner compile-worker`
// processes over pipes, JSON lines (gpu/nvrtc_job.hpp). Each process is driven by a thread of its own that lives as
// long as the pool, so the death signal (PR_SET_PDEATHSIG, gpu/worker_client.hpp) ties the workers to the pool's
// owner: they die with the daemon, SIGKILL included. A worker that dies or hangs fails that job (worker_died / hang)
// and is replaced; it never takes the daemon down.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/nvrtc_job.hpp"
#include "gpu/failure.hpp"

namespace attn {

/// How much lower a compile worker's CPU priority is than its daemon's (nice(2) increment; `attn-tuner compile-worker`
/// applies it at its start). With a worker per core, NVRTC would otherwise delay the GPU workers and the tuning loop
/// that keep the GPUs fed; lowered, it gets every cycle they leave (docs/daemon.md "Screens sent ahead").
inline constexpr int kCompileWorkerNice = 10;

/// How many compile workers, which program, and how long one job may take.
struct CompileProcsOptions {
  unsigned procs = 0;  ///< worker processes; 0 = none (NVRTC in the caller's process)
  /// The program started as `<exe> compile-worker`: "" = this executable (/proc/self/exe).
  std::string exe;
  /// Environment variables set for the workers on top of this process's own.
  std::vector<std::pair<std::string, std::string>> env;
  /// A worker that answers no job within this is killed (the job fails as a hang) and replaced.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

/// What `status` shows of the pool: worker processes running, jobs running, workers replaced after a hang or
/// a death, jobs answered (ok or not) and jobs failed by their worker.
struct CompileProcsStats {
  unsigned procs = 0, processes = 0, busy = 0;
  std::int64_t restarts = 0, compiles = 0, failures = 0;
  std::vector<pid_t> pids;  ///< of the worker processes running now
};

/// N compile workers behind one queue. Thread-safe. The workers start on their first job; destruction
/// asks each to quit, kills it after 2 s, and fails jobs not started yet (worker_died, "shutting down").
class CompileProcs {
 public:
  /// Throws std::invalid_argument when options.procs is 0.
  explicit CompileProcs(CompileProcsOptions options);
  ~CompileProcs();
  CompileProcs(const CompileProcs&) = delete;
  CompileProcs& operator=(const CompileProcs&) = delete;

  /// One job's outcome: status ok and NVRTC's output, or the worker's failure (hang: killed at the timeout;
  /// worker_died: it exited, was killed, or broke the protocol; the message says which, with its pid) and the
  /// wall time until then (ms).
  struct Result {
    FailureKind failure = FailureKind::none;  ///< none, hang or worker_died
    std::string message;                      ///< why it failed, naming the worker's pid
    NvrtcOutput output;
    double ms = 0;
    bool ok() const { return failure == FailureKind::none; }
  };
  /// Runs `job` on the next free worker; blocks until it answers. Never throws but std::bad_alloc.
  Result run(const NvrtcJob& job);
  CompileProcsStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The compile worker's request loop (`attn-tuner compile-worker`): one JSON request line in, one answer line out,
/// flushed. {"cmd":"compile",...} runs NVRTC (gpu/nvrtc_job.hpp); {"cmd":"quit"} answers and returns 0; a line
/// it cannot read is answered "rejected". Returns 0 at the end of input. Test hook: with
/// ATTN_COMPILE_WORKER_SLEEP="<text>:<seconds>" it sleeps that long before each job whose source contains <text>.
int run_compile_worker_loop(std::istream& in, std::ostream& out);

}  // namespace attn
