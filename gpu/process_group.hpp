// Boost.Process initializers for the children the daemon starts (the GPU worker, the proposer command, patch,
// diff, the official harness): a process group of their own, and no inherited file descriptors but stdio.
#pragma once
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <boost/process/extend.hpp>

namespace attn {

/// Puts the child in a process group of its own (setpgid(0, 0) between fork and exec), so that kill(-pid, ...)
/// reaches everything it starts: the GPU worker (a shell standing in for it in tests, its children) and the
/// proposer command (docs/proposer.md).
struct NewProcessGroup : boost::process::extend::handler {
  template <class Executor>
  void on_exec_setup(Executor&) const {
    ::setpgid(0, 0);
  }
};

/// Between fork and exec (async-signal-safe calls only): every descriptor from 3 up becomes close-on-exec, so the
/// child keeps its stdin, stdout and stderr and nothing else, whatever another thread of the daemon had open at
/// the fork (a status or cubin-cache file without O_CLOEXEC; a descriptor the daemon itself inherited): a worker
/// holding a writable file on the DB's disk keeps a read-only remount of that disk from succeeding. Marking
/// instead of closing keeps Boost's own exec-error pipe, which is close-on-exec already, working.
/// close_range(CLOSE_RANGE_CLOEXEC) needs Linux 5.11; before that, a loop of fcntl over the descriptor limit
/// (at most 65,536).
struct InheritOnlyStdio : boost::process::extend::handler {
  template <class Executor>
  void on_exec_setup(Executor&) const {
#ifdef __NR_close_range
    constexpr unsigned kCloexec = 1u << 2;  // CLOSE_RANGE_CLOEXEC (linux/close_range.h)
    if (::syscall(__NR_close_range, 3u, ~0u, kCloexec) == 0) return;
#endif
    rlimit lim{};
    const long max_fd = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 ? long(std::min<rlim_t>(lim.rlim_cur, 65536)) : 1024;
    for (int fd = 3; fd < max_fd; ++fd) {
      const int flags = ::fcntl(fd, F_GETFD);
      if (flags >= 0 && !(flags & FD_CLOEXEC)) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
  }
};

}  // namespace attn
