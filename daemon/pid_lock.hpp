// One daemon per DB, race-free: the daemon holds an exclusive lock on "<db>.pid" for its whole run and
// writes its pid into it. The lock is taken in one atomic step by the kernel (no check-then-write), and
// the kernel drops it when the holder dies, SIGKILL included, so a stale file never blocks a new daemon.
#pragma once
#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>

namespace attn {

/// "<db>.pid".
std::string pid_file_for(const std::string& db_path);

/// Another daemon holds the DB. what(): "another attn-tuner daemon (pid N) is running on DB; stop it
/// with `attn-tuner stop --db DB`".
struct DaemonRunning : std::runtime_error {
  DaemonRunning(const std::string& db_path, pid_t holder);
  pid_t holder;  ///< the holder's pid; 0 when it has not written it yet
};

/// The pid of the daemon holding `db_path`, or nullopt when no process holds the lock (a pid file left by
/// a killed daemon is ignored). Takes no lock itself, so it never gets in the way of a starting daemon.
/// Returns 0 (not nullopt) for a holder that has not written its pid within 1 s of taking the lock.
std::optional<pid_t> running_daemon(const std::string& db_path);

/// Holds "<db>.pid" for the daemon's lifetime: an exclusive open-file-description lock
/// (fcntl F_OFD_SETLK on the whole file; unlike flock and POSIX record locks it can be probed without
/// being taken, F_OFD_GETLK, and it conflicts between threads as between processes), then this
/// process's pid in the file. The descriptor is close-on-exec, so workers never inherit the lock.
class PidFile {
 public:
  /// Takes the lock (creating the file and its folder) or throws DaemonRunning; throws
  /// std::runtime_error naming the file when it cannot be created or locked.
  explicit PidFile(const std::string& db_path);
  /// The holder removes the file, then releases the lock (closing the descriptor).
  ~PidFile();
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;

  /// Writes `pid` as the holder (a detached daemon: the child's pid).
  void set_holder(pid_t pid);
  /// After fork, in the parent: closes this copy of the descriptor and leaves the file alone. The lock
  /// stays with the child, whose copy of the descriptor refers to the same open file description.
  void hand_over();

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace attn
