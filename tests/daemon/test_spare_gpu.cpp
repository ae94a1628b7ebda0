// Spare GPU time (docs/daemon.md): a GPU that no compiled config waits for evaluates the best screened-out near miss
// on the whole suite; such an evaluation is its own row of spare_evaluations, counts apart from the run's configs,
// and shows in the end summary and `status` with each GPU's busy share. CPU only: the fake worker, with compiles
// slowed down (ATTN_COMPILE_WORKER_SLEEP) or taken from a warm cache.
#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "daemon/db_merge.hpp"
#include "daemon/next_job.hpp"
#include "db/store.hpp"
#include "tests/test_support.hpp"
#include "tests/daemon/daemon_harness.hpp"

namespace attn {
namespace {

using test::DaemonFixture;

// The rule: a compiled config waiting for a GPU goes first, in queue order; spare work only when none is compiled.
TEST(NextJob, ACompiledConfigAlwaysGoesBeforeSpareWork) {
  using K = NextJob::Kind;
  EXPECT_EQ(next_job({true, false}, true), (NextJob{K::compiled, 0}));
  EXPECT_EQ(next_job({false, false, true}, true), (NextJob{K::compiled, 2}));  // not behind the front's compile
  EXPECT_EQ(next_job({false, true, true}, false), (NextJob{K::compiled, 1}));
  EXPECT_EQ(next_job({false, false}, true), (NextJob{K::spare, 0}));
  EXPECT_EQ(next_job({false, false}, false), (NextJob{K::wait, 0}));
}

// The compile pool's queue: its threads kept compiling while compiled configs wait for a GPU, up to 4 per thread.
TEST(NextJob, CompilesStartUntilEveryThreadRunsOneWithinTheBacklog) {
  EXPECT_EQ(compiles_to_start(0, 0, 16), 16u);  // an empty queue: one compile per thread
  EXPECT_EQ(compiles_to_start(10, 0, 16), 6u);
  EXPECT_EQ(compiles_to_start(16, 0, 16), 0u);  // every thread busy
  EXPECT_EQ(compiles_to_start(0, 40, 16), 16u);  // configs waiting for a GPU do not stop the pool...
  EXPECT_EQ(compiles_to_start(0, 60, 16), 4u);   // ...until the backlog (64) is full
  EXPECT_EQ(compiles_to_start(4, 60, 16), 0u);
  EXPECT_EQ(compiles_to_start(0, 64, 16), 0u);
  EXPECT_EQ(compiles_to_start(0, 100, 16), 0u);
  EXPECT_EQ(compiles_to_start(1, 0, 2), 1u);
  EXPECT_EQ(kCompiledBacklogPerThread, 4u);
}

/// `run` on the full suite (the ladder screens 3 of its 9 cases) of fake_wide, one fake GPU.
std::string spare_args(DaemonFixture& f, const std::string& extra) {
  f.suite = "full";
  return f.args("--gpus 0 " + extra, "random", "fake_wide");
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(SpareGpu, SlowCompilesLeaveGpuTimeThatEvaluatesNearMissesOnTheWholeSuite) {
  DaemonFixture f;
  const std::string env = "ATTN_TUNER_FAKE_GPUS=1 ATTN_COMPILE_WORKER_SLEEP='block_sparse_attn_fwd:0.4' FAKE_WORKER_DELAY=0.05";
  const test::Output out = test::run_tuner(spare_args(f, "--iterations 24"), env);
  ASSERT_EQ(out.code, 0) << out.text;

  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto spares = db.spare_evaluations();
  ASSERT_FALSE(spares.empty()) << out.text;
  std::map<std::int64_t, IterationRecord> by_iter;
  for (const auto& it : db.iterations()) by_iter[it.iter] = it;
  EXPECT_EQ(by_iter.size(), 24u + spares.size());  // --iterations counts configs; spare evaluations come on top
  std::size_t full_cases = 0;
  for (const auto& [iter, it] : by_iter)
    if (it.fidelity == Fidelity::full && it.status != IterationStatus::crash) full_cases = db.case_results(iter).size();
  for (const auto& [iter, screened_iter] : spares) {
    const IterationRecord& spare = by_iter.at(iter);
    const IterationRecord& screened = by_iter.at(screened_iter);
    EXPECT_LT(screened_iter, iter);
    EXPECT_EQ(spare.params, screened.params);  // the same config, measured again on purpose
    EXPECT_EQ(spare.template_name, screened.template_name);
    EXPECT_EQ(screened.fidelity, Fidelity::screen);
    EXPECT_EQ(screened.status, IterationStatus::discard);
    EXPECT_EQ(spare.fidelity, Fidelity::full);
    ASSERT_TRUE(spare.geomean_ms) << spare.description;
    EXPECT_EQ(db.case_results(iter).size(), full_cases);  // the whole suite, not the screen's cases
    EXPECT_NE(spare.description.find("spare GPU time: the whole suite for iter " + std::to_string(screened_iter)),
              std::string::npos) << spare.description;
    // A near miss: within the spare cut-off (30 %) of the best screen before it.
    double best = 1e9;
    for (const auto& [j, it] : by_iter)
      if (j < iter && it.screen_ms) best = std::min(best, *it.screen_ms);
    ASSERT_TRUE(screened.screen_ms);
    EXPECT_LE(*screened.screen_ms, best * 1.3 + 1e-12) << screened.params;
  }
  // No config's spare evaluation twice.
  std::set<std::int64_t> of;
  for (const auto& s : spares) EXPECT_TRUE(of.insert(s.second).second) << "iteration " << s.second << " twice";
  EXPECT_NE(out.text.find("run 1 ended: 24 iterations"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("spare GPU time: " + std::to_string(spares.size()) + " whole-suite evaluations"),
            std::string::npos) << out.text;
  EXPECT_EQ(count_of(out.text, " spare discard ") + count_of(out.text, " spare keep ") +
                count_of(out.text, " spare crash "),
            int(spares.size()));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out.text, m, std::regex(R"(GPU busy \([^)]*\): GPU 0 ([0-9.]+) % \(([0-9.]+) s, spare ([0-9.]+) s\))")))
      << out.text;
  EXPECT_GT(std::stod(m[3]), 0.0);
  EXPECT_LE(std::stod(m[3]), std::stod(m[2]));

  const test::Output status = test::run_tuner("status --db '" + f.db + "'");
  ASSERT_EQ(status.code, 0) << status.text;
  EXPECT_NE(status.text.find("spare GPU time: " + std::to_string(spares.size()) + " whole-suite evaluations"),
            std::string::npos) << status.text;
  EXPECT_NE(status.text.find("GPU 0 (GPU-fake-0): stopped, 24 iterations"), std::string::npos) << status.text;
  EXPECT_TRUE(std::regex_search(status.text, std::regex(R"(busy [0-9.]+ % \([0-9]+ s\))"))) << status.text;
}

TEST(SpareGpu, OffWithTheOption) {
  DaemonFixture f;
  const std::string env = "ATTN_TUNER_FAKE_GPUS=1 ATTN_COMPILE_WORKER_SLEEP='block_sparse_attn_fwd:0.4' FAKE_WORKER_DELAY=0.01";
  const test::Output out = test::run_tuner(spare_args(f, "--iterations 16 --no-spare-evals"), env);
  ASSERT_EQ(out.code, 0) << out.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  EXPECT_TRUE(db.spare_evaluations().empty());
  EXPECT_EQ(db.iterations().size(), 16u);
  EXPECT_EQ(out.text.find("spare GPU time"), std::string::npos) << out.text;
  EXPECT_EQ(out.text.find(" spare "), std::string::npos) << out.text;
}

TEST(SpareGpu, FastCompilesLeaveNoSpareTime) {
  DaemonFixture f;
  // Every cubin in the cache first: a compile is a cache hit, far quicker than an evaluation.
  ASSERT_NO_FATAL_FAILURE(f.warm_cache("fake_healthy"));
  f.suite = "full";
  const test::Output out =
      test::run_tuner(f.args("--gpus 0", "random", "fake_healthy"), "ATTN_TUNER_FAKE_GPUS=1 FAKE_WORKER_DELAY=0.1");
  ASSERT_EQ(out.code, 0) << out.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  EXPECT_EQ(db.iterations().size(), 18u);
  EXPECT_TRUE(db.spare_evaluations().empty()) << out.text;
  EXPECT_NE(out.text.find("spare GPU time: 0 whole-suite evaluations"), std::string::npos) << out.text;
}

TEST(SpareGpu, MergeCopiesSpareEvaluationsWithTheIterationsNewIds) {
  // Two DBs each with a screen iteration and its spare evaluation; merged, each spare row names the merged
  // iterations of the same configs.
  const std::string dir = test::temp_dir("spare-merge");
  std::vector<std::string> inputs;
  for (const std::string c : {"1", "2"}) {
    inputs.push_back(dir + "/in" + c + ".db");
    auto db = ExperimentDb::open(inputs.back());
    const auto run = test::begin_test_run(db, "full", "fake_wide");
    const auto [it, v] = test::test_iteration(run, "full", "fake_wide", R"({"A":4,"B":2,"C":)" + c + R"(,"F":0})",
                                              std::string(31, '0') + c);
    const auto [screened, vid] = db.begin_iteration_with_variant(it, v);
    db.begin_iteration_with_variant(it, v, screened);
    db.end_run(run, RunStatus::finished);
  }
  merge_experiment_dbs(dir + "/merged.db", inputs, false);
  auto db = ExperimentDb::open(dir + "/merged.db", ExperimentDb::Mode::read_only);
  const auto spares = db.spare_evaluations();
  ASSERT_EQ(spares.size(), 2u);
  std::set<std::string> configs;
  for (const auto& [iter, screened] : spares) {
    EXPECT_NE(iter, screened);
    EXPECT_EQ(db.iteration(iter)->params, db.iteration(screened)->params);
    configs.insert(db.iteration(iter)->params);
  }
  EXPECT_EQ(configs, (std::set<std::string>{"A=4,B=2,C=1,F=0", "A=4,B=2,C=2,F=0"}));
}

}  // namespace
}  // namespace attn
