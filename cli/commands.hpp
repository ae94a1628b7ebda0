// The subcommands of `attn-tuner`, one file each (cli/cmd_<name>.cpp). Each adds itself to the app;
// its callback runs the command and throws attn::CliError (exit code 2, message to stderr) on bad input.
#pragma once
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace attn {

/// The exit codes of every command (docs/cli.md): 0 done, 1 the work failed (a run that ended failed, a config that
/// does not compile, an invalid harness run, a bug), 2 bad usage or bad input (CLI11's parse errors and CliError);
/// `idea check` adds its own codes for its findings (CliExit).
inline constexpr int kBadUsageExit = 2;

/// A user error: printed as "attn-tuner: <message>" with exit code 2, no stack of logs.
struct CliError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Ends a command with exit code `code` after it printed its account: findings, not an error (`idea check`).
struct CliExit {
  int code = 0;
};

void add_suites_command(CLI::App& app);   // workload: print a suite with work and roofline floor
void add_query_command(CLI::App& app);    // db: best | top N | history | show ITER | sql | tsv | proposals
void add_compile_command(CLI::App& app);  // gpu: NVRTC-compile a template's configs (no GPU needed)
void add_worker_command(CLI::App& app);   // gpu: the isolated GPU worker (JSON lines on stdin/stdout)
void add_compile_worker_command(CLI::App& app);  // gpu: one process of the compile pool (NVRTC jobs as JSON lines)
void add_bench_command(CLI::App& app);    // gpu: time one config on a suite, print per case and score
void add_trace_command(CLI::App& app);    // gpu: a trace build of one config on one case: cycles per step of each role
void add_run_command(CLI::App& app);      // daemon: the tuning loop
void add_status_command(CLI::App& app);   // daemon: progress of a running daemon
void add_stop_command(CLI::App& app);     // daemon: stop a running daemon cleanly
void add_export_command(CLI::App& app);   // export: write a challenge submission directory
void add_report_command(CLI::App& app);   // report: the morning report (HTML + PNG) from the DB
void add_space_command(CLI::App& app);    // tuner: valid configs and parameters of each template
void add_replay_command(CLI::App& app);   // tuner: replay a strategy against a finished DB (no GPU)
void add_db_command(CLI::App& app);       // db: merge DBs (Slurm shards), migrate a DB, record cubin hashes
void add_idea_command(CLI::App& app);     // proposer: idea check FILE, idea context (the author's kit)

}  // namespace attn
