// `attn-tuner compile-worker`: one compile worker of the daemon's compile pool (gpu/compile_procs.hpp). NVRTC jobs
// as JSON lines on stdin, one answer per line on stdout; logs on stderr. Started by Compiler (CompilerOptions::procs).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <ext/stdio_filebuf.h>
#include <iostream>

#include "cli/commands.hpp"
#include "gpu/compile_procs.hpp"

namespace attn {

void add_compile_worker_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile-worker", "one process of the compile pool: NVRTC jobs as JSON lines on "
                                                   "stdin, one answer per line on stdout (started by run and "
                                                   "compile --compile-procs; see docs/gpu.md)");
  cmd->callback([] {
    errno = 0;
    if (::nice(kCompileWorkerNice) == -1 && errno != 0)
      std::fprintf(stderr, "attn-tuner compile-worker: cannot lower its priority: %s\n", std::strerror(errno));
    // The protocol gets a private copy of stdout; fd 1 then points at stderr, so that anything else that prints
    // to stdout cannot corrupt the answer stream.
    const int proto_fd = ::dup(STDOUT_FILENO);
    if (proto_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      std::fprintf(stderr, "attn-tuner compile-worker: cannot set up the protocol stream\n");
      std::exit(1);
    }
    __gnu_cxx::stdio_filebuf<char> buf(proto_fd, std::ios::out);
    std::ostream proto(&buf);
    const int code = run_compile_worker_loop(std::cin, proto);
    proto.flush();
    std::exit(code);
  });
}

}  // namespace attn
