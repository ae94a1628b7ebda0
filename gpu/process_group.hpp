// A Boost.Process initializer that puts the child in a process group of its own (setpgid(0, 0) between
// fork and exec), so that kill(-pid, ...) reaches everything it starts: the GPU worker (a shell standing in
// for it in tests, its children) and the proposer command (docs/proposer.md).
#pragma once
#include <unistd.h>

#include <boost/process/extend.hpp>

namespace attn {

struct NewProcessGroup : boost::process::extend::handler {
  template <class Executor>
  void on_exec_setup(Executor&) const {
    ::setpgid(0, 0);
  }
};

}  // namespace attn
