// attn-tuner: autotuning daemon for block-sparse causal attention forward kernels.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
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
