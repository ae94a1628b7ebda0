// Disk and file faults around a run: a read-only DB (or folder), a path that cannot be written, a disk
// that fills up while the daemon runs. The rule: a clear error naming the path, before anything is
// logged when possible; and never a lost row (SQLite commits are atomic; iters.tsv is rebuilt from the DB).
#pragma once
#include <exception>
#include <string>

namespace attn {

/// Before `run` logs anything: checks that it can write the DB file (when it exists) and its folder
/// (SQLite's -wal/-shm, the pid file), iters.tsv (its folder, and the file when it exists, which must be a
/// regular file: rebuilds replace it by rename) and the cubin
/// cache (created when missing). Throws std::runtime_error naming the first path that is not writable
/// and why (read-only file system, permission denied, ...); for the DB it adds that the read-only
/// commands (status, query, export) still work. `cache_dir` "" = gpu's default_cache_dir().
void check_run_storage(const std::string& db_path, const std::string& tsv_path, const std::string& cache_dir);

/// The message for a failure that ended a run. For a full disk or a failed write (SQLite's
/// SQLITE_FULL / SQLITE_IOERR, ENOSPC, EFBIG) it adds what is safe and how to go on: "... the disk holding
/// <db> is full or failed: every iteration finished so far is in the DB; free space and `run` again to
/// resume". Other failures: e.what() unchanged.
std::string explain_run_failure(const std::exception& e, const std::string& db_path);

}  // namespace attn
