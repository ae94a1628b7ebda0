// `attn-tuner export --harness DIR`: after the submission is written, run the official challenge harness
// (paradigmxyz/attention-kernel-challenge, a checkout the user points to; never vendored) on it the way the
// hosted evaluation does, parse the JSON summary it prints, and record each run in the DB's
// `harness_checks` table (docs/export.md, "Checking with the official harness").
//
//   cd DIR && PYTHONPATH=[ENV_DIR:]DIR python3 -m attention_kernel_challenge.cli eval-submission
//       --submission-dir SUB --suite S --backend local --device cuda --serverlike --emit-json [extra args]
//
// The harness runs in a process group of its own under a wall-clock limit (the whole group is killed).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attn {

/// The harness's built-in suite names.
bool is_harness_suite(const std::string& name);
/// The suite to run when none is given: the export's suite when it is a harness suite, else "quick".
std::string default_harness_suite(const std::string& export_suite);

/// Throws std::invalid_argument naming DIR unless DIR holds the harness's package
/// (DIR/attention_kernel_challenge/cli.py).
void require_harness_dir(const std::string& dir);
/// The python3 on PATH; std::invalid_argument when there is none.
std::string find_python3();
/// HEAD of DIR when DIR is the top of a git checkout (not merely inside another repository); nullopt
/// otherwise or without git.
std::optional<std::string> harness_commit(const std::string& dir);
/// ATTENTION_KERNEL_CHALLENGE_PUBLIC_SUITE_ROOT_SEED as an integer; nullopt when unset or not a number.
std::optional<std::int64_t> harness_root_seed_from_env();

/// One call of the harness.
struct HarnessInvocation {
  std::string python;            ///< python3 executable
  std::string harness_dir;       ///< checkout (the working directory, on PYTHONPATH)
  std::string submission_dir;    ///< absolute
  std::string suite;             ///< harness suite
  std::vector<std::string> extra_args;  ///< appended after ours (argparse: a later option wins)
  std::string env_dir;           ///< "" or a folder put first on PYTHONPATH (sitecustomize.py); also CC=/usr/bin/gcc
  double timeout_s = 1800;
  std::string log_dir;           ///< where stdout / stderr go (run-<n>.stdout / .stderr)
  int index = 1;                 ///< run number, for the log names
};

/// The argument list after the python executable ("-m", "attention_kernel_challenge.cli", ...).
std::vector<std::string> harness_argv(const HarnessInvocation& inv);
/// The official harness's command as a person runs it in a checkout of the harness (the export's README.md,
/// docs/export.md): "python -m attention_kernel_challenge.cli eval-submission --submission-dir DIR --suite S
/// --device cuda --serverlike". harness_argv runs it with --backend local and --emit-json (the summary it reads).
std::string harness_command(const std::string& submission_dir, const std::string& suite);

/// What one harness run gave.
struct HarnessRunResult {
  bool has_summary = false;       ///< it printed its JSON summary (valid or not)
  bool valid = false;             ///< overall_valid
  std::optional<double> score_ms; ///< geometric_mean_family_latency_ms
  nlohmann::json family_ms = nlohmann::json::object();  ///< family -> median case latency (ms)
  std::optional<std::string> failure_reason;  ///< the harness's failure_reason
  std::optional<int> exit_code;   ///< when it exited by itself
  bool timed_out = false;
  double wall_s = 0;
  std::string stdout_path, stderr_path;
  std::string error;              ///< when !has_summary: the cause, with the harness's last output lines
};

/// The harness's JSON summary in `out` (its stdout): the last top-level JSON object, starting at a line
/// start, that has "overall_valid"; nullopt when there is none.
std::optional<nlohmann::json> find_harness_summary(const std::string& out);
/// Family -> median latency_ms of its cases (as the harness scores them), from "case_results".
nlohmann::json harness_family_medians(const nlohmann::json& summary);
/// Fills has_summary..failure_reason from the output, or `error` when there is no summary.
void interpret_harness_output(const std::string& out, const std::string& err, HarnessRunResult& r, double timeout_s);

/// Runs the harness once and waits (at most inv.timeout_s; then SIGTERM to its process group, 5 s of grace,
/// SIGKILL). Throws std::runtime_error when it cannot be started.
HarnessRunResult run_harness_once(const HarnessInvocation& inv);

/// Last `n` non-empty lines of `text`, each indented by `indent`.
std::string last_lines(const std::string& text, std::size_t n, const std::string& indent = "    ");

}  // namespace attn
