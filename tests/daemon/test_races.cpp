// Races of the daemon's threads, found by ThreadSanitizer (the build in build/tsan, ctest label tsan: CMakeLists.txt).
// The loop runs in this process (run_tuning_loop, NVRTC in-process, the fake worker as every GPU), so that the sanitizer
// sees every thread of the daemon; in the plain build these are functional tests of the same runs.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "daemon/supervise.hpp"
#include "daemon/tuning_loop.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

/// A run of fake.json's 33 configs (9 of which end their worker: 3 hang, 3 fault, 3 die) on two fake GPUs, in this
/// process: NVRTC in the daemon's process (compile workers would be this test binary), cubins compiled first.
RunOptions two_gpu_run(const test::DaemonFixture& f) {
  RunOptions o;
  o.db_path = f.db;
  o.tsv_path = f.tsv;
  o.suite = "smoke";
  o.templates_dir = test::data_dir() + "/fake_templates";
  o.templates = {"fake"};
  o.strategy = "exhaustive";
  o.cache_dir = f.cache;
  o.compile_jobs = 2;
  o.compile_procs = 0;
  o.watchdog_min_s = 0.5;
  o.watchdog_cap_s = 2;
  o.progress = false;
  o.worker = WorkerCommand{test::fake_worker_path(), {}};
  o.gpus = {GpuSpec{0, "", ""}, GpuSpec{1, "", ""}};
  return o;
}

// The status file lists every GPU's worker pid. Writing it on one GPU's thread while another GPU's thread restarts its
// worker (a fault, a hang, a death) read the worker's process object while it was replaced: a data race (issue 47).
TEST(Races, StatusListsEveryWorkerWhileAnotherGpuRestartsItsOwn) {
  test::DaemonFixture f;
  f.warm_cache("fake", 1);
  const RunOptions o = two_gpu_run(f);
  StopRequest stop;
  const RunSummary s = run_tuning_loop(o, stop);
  EXPECT_FALSE(s.failed) << s.stop_reason;
  EXPECT_EQ(s.iterations, std::int64_t(test::kFakeSpace)) << s.stop_reason;
  const auto status = nlohmann::json::parse(test::read_text(status_file_for(o.db_path)));
  ASSERT_EQ(status["gpus"].size(), 2u) << status.dump(2);
  std::int64_t restarts = 0;
  for (const auto& g : status["gpus"]) restarts += g["restarts"].get<std::int64_t>();
  EXPECT_GE(restarts, 6) << "the faults, hangs and deaths of fake.json restart workers: " << status.dump(2);
}

}  // namespace
}  // namespace attn
