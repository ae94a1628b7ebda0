// attn-tuner: autotuning daemon for block-sparse causal attention forward kernels.
#include <cstdio>
#include <ctime>
#include <exception>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  // spdlog's registry is made on first use; made here, before any thread starts, every thread's log call happens after
  // it (libspdlog is not built with ThreadSanitizer, which otherwise sees the registry's construction on one thread
  // race with a log call on another: build/tsan, ctest label tsan).
  spdlog::default_logger();
  // The time zone read once, here: glibc's localtime (spdlog's time stamps, NVRTC) reads it on first use under a lock
  // of glibc's own that ThreadSanitizer does not see; read before any thread, later calls find it unchanged.
  tzset();
  CLI::App app{"attn-tuner: tune block-sparse causal attention forward kernels on the GPU"};
  app.require_subcommand(1);
  attn::add_suites_command(app);
  attn::add_query_command(app);
  attn::add_compile_command(app);
  attn::add_worker_command(app);
  attn::add_compile_worker_command(app);
  attn::add_bench_command(app);
  attn::add_trace_command(app);
  attn::add_run_command(app);
  attn::add_status_command(app);
  attn::add_stop_command(app);
  attn::add_export_command(app);
  attn::add_report_command(app);
  attn::add_space_command(app);
  attn::add_replay_command(app);
  attn::add_db_command(app);
  attn::add_idea_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the help (--help: exit 0) or the problem; bad usage exits 2 like every CliError (docs/cli.md),
    // not CLI11's own codes (105, 109, ...).
    return app.exit(e) == 0 ? 0 : attn::kBadUsageExit;
  } catch (const attn::CliExit& e) {
    return e.code;
  } catch (const attn::CliError& e) {
    std::fprintf(stderr, "attn-tuner: %s\n", e.what());
    return attn::kBadUsageExit;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attn-tuner: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
