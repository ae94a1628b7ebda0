// Reading other processes from /proc (Linux): what the daemon needs to find and verify a worker process
// group that outlived its daemon without ever killing an unrelated process that got a recycled pid.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace attn {

/// One process as /proc/<pid>/stat and /proc/<pid>/cmdline describe it.
struct ProcessInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;                    ///< process group id
  char state = '?';                  ///< R, S, D, Z (zombie), ...
  unsigned long long start_ticks = 0;  ///< start time after boot, clock ticks (field 22 of stat)
  std::string cmdline;               ///< argv joined by single spaces
};

/// The process `pid`, or nullopt when there is none (gone) or it is a zombie (dead, not yet reaped).
std::optional<ProcessInfo> process_info(pid_t pid);

/// Every live (non-zombie) process whose process group is `pgid`, in /proc order.
std::vector<ProcessInfo> process_group_members(pid_t pgid);

}  // namespace attn
