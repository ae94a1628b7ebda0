// Shared helpers of the daemon's CPU tests: run the real binary (to completion or in the background), a
// per-test folder with its DB, iters.tsv and cache, and the command line that drives the daemon with
// tests/daemon/fake_worker.py and tests/data/fake_templates.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "db/store.hpp"
#include "tests/test_support.hpp"

namespace attn::test {

/// Exit code (-1 when killed by a signal) and stdout+stderr of one command (tests/test_support.hpp).
using Output = CommandOutput;

/// Runs `attn-tuner <args>` to completion (`env`: "NAME=VALUE ..." put in front, through the shell).
inline Output run_tuner(const std::string& args, const std::string& env = "") { return run_binary(args, env); }

/// Starts `attn-tuner <args>` in the background (through `sh -c exec`, so the pid is the daemon's) with
/// stdout and stderr appended to `log_path`. `shell_prefix` runs in that shell first (e.g. "ulimit -f 64;").
/// Returns its pid; reap it with wait_exit().
pid_t spawn_tuner(const std::string& args, const std::string& env, const std::string& log_path,
                  const std::string& shell_prefix = "");

/// Waits for child `pid` to end; returns its wait status (-1 on error).
int wait_exit(pid_t pid);

/// One test's folder: DB, iters.tsv, cubin cache; the daemon on the fake template and worker.
struct DaemonFixture {
  std::string dir;
  std::string db, tsv;
  std::string cache;                                             ///< cubin cache folder (dir/cache)
  std::string watchdog = "--watchdog-min 0.5 --watchdog-cap 2";  ///< hang deadline options
  std::string suite = "smoke";  ///< one case per family: the ladder screens nothing (full: it screens 3 of 9 cases)
  DaemonFixture();
  /// `run` arguments: `suite`, the fake template, `strategy`, `watchdog`, then `extra`.
  std::string args(const std::string& extra = "", const std::string& strategy = "exhaustive",
                   const std::string& template_name = "fake") const;
  /// Compiles every config of fake template `template_name` into `cache` first (`compile --all`): a run's
  /// compiles are then cache hits, quicker than the fake worker's evaluations. Asserts compile's exit code
  /// `code` (1 when some config does not compile: fake's F = 5).
  void warm_cache(const std::string& template_name, int code = 0) const;
  std::vector<IterationRecord> iterations() const;
  /// Polls the DB until `n` iterations have finished or `timeout_s` passed (at least one look: with
  /// timeout 0 it counts once); the count last seen.
  std::size_t wait_finished(std::size_t n, double timeout_s) const;
};

/// What a DB's iterations say about a search: the configs evaluated ("template params" of keep, discard and
/// crash rows), those evaluated more than once, and the interrupted and still running iterations.
struct Census {
  std::set<std::string> evaluated;
  std::vector<std::string> duplicated;
  int interrupted = 0;
  std::vector<std::int64_t> running;
};
Census census(const std::vector<IterationRecord>& iterations);

/// One line of FAKE_WORKER_GPU_LOG (tests/daemon/fake_worker.py): an eval, its GPU, start and end (s), its config.
struct GpuEval {
  int gpu = 0;
  double start = 0, end = 0;
  int a = 0, b = 0, f = 0, cases = 0, validate = 0;
  long pid = 0;
};
/// Every eval of a FAKE_WORKER_GPU_LOG file.
std::vector<GpuEval> read_gpu_log(const std::string& path);
/// Each GPU's evals in start order; fails the test when two evals of one GPU overlap in time.
std::map<int, std::vector<GpuEval>> by_gpu_without_overlap(const std::vector<GpuEval>& log);

/// One line of FAKE_WORKER_LOG (tests/daemon/fake_worker.py): the config, how many cases, whether it validated,
/// the case seeds.
struct EvalLine {
  int a = 0, b = 0, f = 0;
  std::size_t cases = 0;
  bool validate = false;
  std::vector<std::int64_t> seeds;
};
/// Every eval of a FAKE_WORKER_LOG file, in the order written.
std::vector<EvalLine> read_eval_log(const std::string& path);

/// The names the report tests use (one fixture for every daemon test).
using Fixture = DaemonFixture;
inline Output run(const std::string& args, const std::string& env = "") { return run_tuner(args, env); }
inline std::string read_file(const std::string& path) { return read_text(path); }

/// fake.json: 18 healthy configs + 3 of each of 5 fault kinds.
inline constexpr std::size_t kFakeSpace = 33;

/// tests/daemon/fake_worker.py in the source tree.
std::string fake_worker_path();

/// An idea file (docs/ideas.md) for the fake template (tests/data/fake_templates/fake.cu): a new axis `axis` in
/// {0, 1}, default 0, and after fake.cu's config symbol the block `#if condition` / `line` / `#endif` (a
/// fake_speed_pct_<N> or fake_lucky_<N> symbol: what the fake worker reads as the idea's effect).
inline std::string fake_axis_idea(const std::string& description, const std::string& hypothesis,
                                  const std::string& axis, const std::string& condition, const std::string& line) {
  return "Description: " + description + "\n" + (hypothesis.empty() ? "" : "Hypothesis: " + hypothesis + "\n") +
         "Space: {\"" + axis + "\": [0, 1]}\nDefault: {\"" + axis + "\": 0}\n\n--- a/fake.cu\n+++ b/fake.cu\n"
         "@@ -18,6 +18,9 @@\n #define FAKE_MARK(a, b, f) FAKE_MARK_(a, b, f)\n \n"
         " extern \"C\" __device__ int FAKE_MARK(A, B, F) = 1;\n+#if " + condition + "\n+" + line + "\n+#endif\n"
         " extern \"C\" __device__ int attn_launch_info[4] = {128, 0, 128, 0};\n \n"
         " extern \"C\" __global__ void block_sparse_attn_fwd(const void* q, const void* k, const void* v, const int* row_ptr,\n";
}

}  // namespace attn::test
