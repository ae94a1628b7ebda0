// Shared test helpers: paths to test data and to the built binary, and the GPU-present check.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "db/store.hpp"
#include "workload/case_spec.hpp"

namespace attn::test {

/// tests/data in the source tree (golden files from the harness).
std::string data_dir();
/// The built attn-tuner binary.
std::string binary_path();
/// True when a CUDA device is usable (driver loads and reports >= 1 device). GPU tests GTEST_SKIP otherwise.
bool gpu_available();
/// A fresh empty directory under the system temp dir, unique per call.
std::string temp_dir(const std::string& prefix);
/// The whole file ("" when it cannot be read).
std::string read_text(const std::string& path);
/// Replaces the file with `text`, creating its folders.
void write_text(const std::string& path, const std::string& text);

/// A smoke retrieval case made harder for the GPU tests: two sequences of unequal lengths (batch 2, seq_len
/// ratio 0.3, so rows past seq_len exist), 3 heads, t_max 768, case seed `seed`, id `case_id`.
CaseSpec batched_case(const std::string& case_id, std::int64_t seed);

/// Begins a run (status running) in `db` of `suite`, strategy random, tuning `template_name`, with an empty suite
/// manifest; returns its id. For tests that need a run to hang rows on.
std::int64_t begin_test_run(ExperimentDb& db, const std::string& suite, const std::string& template_name);

/// An iteration of run `run_id` on `suite` of config `params_json` of `template_name`, and its variant (compiled,
/// content hash `content_hash`), as ExperimentDb::begin_iteration_with_variant takes them.
std::pair<IterationRecord, VariantRecord> test_iteration(std::int64_t run_id, const std::string& suite,
                                                         const std::string& template_name,
                                                         const std::string& params_json,
                                                         const std::string& content_hash);

/// Exit code (-1: no normal exit) and stdout + stderr of a command.
struct CommandOutput {
  int code = -1;
  std::string text;
};
/// Runs the built attn-tuner with `args` (shell words), `env` ("NAME=value ...") in front.
CommandOutput run_binary(const std::string& args, const std::string& env = "");

}  // namespace attn::test
