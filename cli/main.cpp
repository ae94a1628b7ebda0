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
    return app.exit(e);
  } catch (const attn::CliExit& e) {
    return e.code;
  } catch (const attn::CliError& e) {
    std::fprintf(stderr, "attn-tuner: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attn-tuner: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
