// A worker that outlives its daemon (the daemon was SIGKILLed while the worker hung) keeps the GPU busy and
// silently skews every later timing. The worker is started with PR_SET_PDEATHSIG (gpu/worker_client), and,
// as a second line of defence, the daemon records each worker it starts in "<db>.worker"; the next daemon
// on that DB finds the recorded process group still alive, verifies that it really is that worker (so a
// recycled pid is never killed), and kills it before it starts its own.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "daemon/processes.hpp"

namespace attn {

/// The worker a daemon started, as written to "<db>.worker" (one JSON object).
struct WorkerRecord {
  pid_t daemon_pid = 0;
  unsigned long long daemon_start_ticks = 0;  ///< /proc start time of the daemon (tells a recycled pid)
  pid_t pgid = 0;                             ///< the worker's pid, which is its process group id
  unsigned long long worker_start_ticks = 0;  ///< /proc start time of the worker
  std::string exe;                            ///< the worker command's program (its cmdline contains it)
};

/// "<db>.worker".
std::string worker_record_file_for(const std::string& db_path);

/// The record of worker `worker_pid`, started by this process with program `exe`.
WorkerRecord make_worker_record(pid_t worker_pid, const std::string& exe);
/// Writes the record (temporary file + rename). Returns false when the file cannot be written.
bool save_worker_record(const std::string& db_path, const WorkerRecord& record);
/// The record, or nullopt when there is none or it is unreadable (the first one when there are several).
std::optional<WorkerRecord> load_worker_record(const std::string& db_path);
/// One worker per GPU (--gpus): every worker group of the daemon, as {"workers": [record, ...]} (temporary
/// file + rename). Returns false when the file cannot be written.
bool save_worker_records(const std::string& db_path, const std::vector<WorkerRecord>& records);
/// Every recorded worker (a file of one record, as older daemons wrote it, gives one); unreadable or
/// implausible ones (group id <= 1) are left out.
std::vector<WorkerRecord> load_worker_records(const std::string& db_path);

/// A recorded worker group that is still alive although its daemon is gone.
struct StaleWorker {
  WorkerRecord record;
  std::vector<ProcessInfo> members;  ///< the live processes of the group
  /// "worker group 4242 (2 processes: /path/attn-tuner worker --device 0, ...) left by daemon 4200".
  std::string describe() const;
};

/// The recorded worker group of `db_path`, when it is alive and its daemon is not (this process and a
/// live daemon with the recorded start time count as alive). The group must be the recorded one: when its
/// leader still runs, the leader's start time must equal the record's and its cmdline must contain the
/// recorded program; when the leader is gone, the kernel does not reuse a group id that live processes
/// still carry, so the members are the worker's children. Anything else is left alone.
std::optional<StaleWorker> find_stale_worker(const std::string& db_path);
/// find_stale_worker for every recorded worker group (one per GPU of a --gpus daemon).
std::vector<StaleWorker> find_stale_workers(const std::string& db_path);

/// SIGKILLs the stale group and waits up to `wait` for its members to be gone. True when none is left.
bool kill_stale_worker(const StaleWorker& stale, std::chrono::milliseconds wait = std::chrono::seconds(5));

/// find_stale_workers + kill_stale_worker for each, then forgets the records. Returns a one-line note for the
/// log and `attn-tuner status` ("stale worker group 4242 ... found alive at start and killed"; several groups
/// joined by "; "), or nullopt.
std::optional<std::string> reap_stale_worker(const std::string& db_path);

}  // namespace attn
