// `attn-tuner worker`: the isolated GPU worker (gpu/worker.hpp). JSON requests on stdin, one JSON response
// per line on stdout; logs on stderr. Started by `run` and `bench` through gpu/worker_client.hpp.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ext/stdio_filebuf.h>
#include <iostream>
#include <memory>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "core/templates_dir.hpp"
#include "gpu/worker.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

struct WorkerCliOptions {
  int device = 0;
  std::string templates_dir, cache_dir;
};

[[noreturn]] void run_worker(const WorkerCliOptions& o) {
  // The protocol gets a private copy of stdout; fd 1 then points at stderr, so that anything else that
  // prints to stdout (device printf, a library) cannot corrupt the response stream.
  const int proto_fd = ::dup(STDOUT_FILENO);
  if (proto_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::fprintf(stderr, "attn-tuner worker: cannot set up the protocol stream\n");
    std::exit(1);
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt("worker"));
  __gnu_cxx::stdio_filebuf<char> buf(proto_fd, std::ios::out);
  std::ostream proto(&buf);

  WorkerOptions opts;
  opts.device = o.device;
  opts.compiler.cache_dir = o.cache_dir;
  opts.cases.templates_dir = o.templates_dir.empty() ? default_templates_dir() : o.templates_dir;
  const int code = run_worker_loop(std::cin, proto, opts);
  proto.flush();
  std::exit(code);
}

}  // namespace

void add_worker_command(CLI::App& app) {
  auto o = std::make_shared<WorkerCliOptions>();
  auto* cmd = app.add_subcommand(
      "worker", "isolated GPU worker: JSON requests on stdin, one JSON response per line on stdout "
                "(started by run and bench; see docs/gpu.md)");
  cmd->add_option("--device", o->device, "CUDA device ordinal")->check(CLI::NonNegativeNumber);
  cmd->add_option("--templates", o->templates_dir,
                  "folder with fill_normal.cu and reference_fp32.cu (default: $ATTN_TUNER_TEMPLATES or the "
                  "source tree's kernels_templates)");
  cmd->add_option("--cache", o->cache_dir, "compile cache folder (default: $ATTN_TUNER_CACHE or ~/.cache/attn-tuner)");
  cmd->callback([o] { run_worker(*o); });
}

}  // namespace attn
