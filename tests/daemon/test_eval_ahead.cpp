// Screens sent ahead (docs/daemon.md): while a GPU times one config's screen, the next compiled config's screen is
// written to its worker, which starts it the moment it answers. CPU only, the fake worker: every fault still lands
// on its own config, the iteration limit holds on two GPUs, no GPU times two configs at once, and a screen sent
// against cases a seed rotation replaced is timed again on the new ones.
#include <map>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "daemon/worker_answers.hpp"
#include "db/store.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/test_support.hpp"
#include "workload/case_spec.hpp"

namespace attn {
namespace {

using test::DaemonFixture;

// The rule a screen's answer is read with (and an iteration's failure recorded with): the worker is restarted after
// a fault, a hang, its death or a rejected request, never after a result check or a device limit.
TEST(EvalAhead, TheWorkerEndsWithAFaultAHangADeathOrARejectionOnly) {
  for (std::size_t k = 0; k < std::size(kFailureKindNames); ++k) {
    const auto kind = FailureKind(k);
    const bool ends = kind == FailureKind::fault || kind == FailureKind::hang || kind == FailureKind::worker_died;
    EXPECT_EQ(tuning::ends_worker(ReplyStatus{kind, false, ""}), ends) << kFailureKindNames[k];
  }
  EXPECT_TRUE(tuning::ends_worker(ReplyStatus{FailureKind::none, true, "unknown case"}));
  EXPECT_FALSE(tuning::ends_worker(ReplyStatus{}));
}

/// "screens sent ahead: N" of the run's end summary; -1 when the line is missing.
long sent_ahead(const std::string& text) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(R"(screens sent ahead: ([0-9]+))")) ? std::stol(m[1]) : -1;
}

/// Per config ("A=..,B=..,F=.."): its failure kind when it crashed, else its screen score.
std::map<std::string, std::string> outcomes(const std::vector<IterationRecord>& its) {
  std::map<std::string, std::string> out;
  for (const auto& it : its)
    out[it.params] = it.status == IterationStatus::crash ? std::string("crash ") + to_string(it.failure_kind)
                                                         : fmt::format("screen {:.6f}", it.screen_ms.value_or(-1));
  return out;
}

// The fake template's 33 configs, faults at A = 1 (hang, fault, wrong result, dying worker, compile error), on the
// full suite (the ladder screens 3 of 9 cases), one GPU: with screens sent ahead a fault may sit behind the config
// being timed, or its worker may die with a healthy config's screen queued behind it. Each config's outcome must be
// what it is without sending ahead.
TEST(EvalAhead, EveryFaultLandsOnItsOwnConfigAsWithout) {
  DaemonFixture on, off;
  on.suite = off.suite = "full";
  ASSERT_NO_FATAL_FAILURE(on.warm_cache("fake", 1));
  ASSERT_NO_FATAL_FAILURE(off.warm_cache("fake", 1));
  const std::string log = on.dir + "/gpu.log", env = "ATTN_TUNER_FAKE_GPUS=1 FAKE_WORKER_DELAY=0.03 ";
  const test::Output a = test::run_tuner(on.args("--gpus 0 --no-holdout --no-spare-evals"), env + "FAKE_WORKER_GPU_LOG=" + log);
  ASSERT_EQ(a.code, 0) << a.text;
  const test::Output b = test::run_tuner(off.args("--gpus 0 --no-holdout --no-spare-evals --no-eval-ahead"), env);
  ASSERT_EQ(b.code, 0) << b.text;

  const auto with = on.iterations(), without = off.iterations();
  ASSERT_EQ(with.size(), test::kFakeSpace) << a.text;
  ASSERT_EQ(without.size(), test::kFakeSpace) << b.text;
  const test::Census c = test::census(with);
  EXPECT_TRUE(c.duplicated.empty());
  EXPECT_EQ(c.interrupted, 0);
  EXPECT_TRUE(c.running.empty());
  const auto got = outcomes(with);
  EXPECT_EQ(got, outcomes(without));
  const std::map<int, std::string> kind = {{1, "crash hang"}, {2, "crash fault"}, {3, "crash wrong_result"},
                                           {4, "crash worker_died"}, {5, "crash compile"}};
  for (int f = 1; f <= 5; ++f)
    for (int bb = 1; bb <= 3; ++bb) EXPECT_EQ(got.at(fmt::format("A=1,B={},F={}", bb, f)), kind.at(f)) << f;

  EXPECT_GT(sent_ahead(a.text), 0) << a.text;
  EXPECT_EQ(sent_ahead(b.text), -1) << b.text;  // off: no such line
  test::by_gpu_without_overlap(test::read_gpu_log(log));
}

// Two GPUs, each with a screen sent ahead: --iterations counts them as in flight, so the run ends at the limit
// exactly, no config twice, no two evals of one GPU at once.
TEST(EvalAhead, TheIterationLimitHoldsOnTwoGpus) {
  DaemonFixture f;
  f.suite = "full";
  ASSERT_NO_FATAL_FAILURE(f.warm_cache("fake_healthy"));
  const std::string log = f.dir + "/gpu.log";
  const test::Output out = test::run_tuner(f.args("--gpus 0,1 --iterations 14 --no-spare-evals", "random", "fake_healthy"),
                                           "ATTN_TUNER_FAKE_GPUS=2 FAKE_WORKER_DELAY=0.03 FAKE_WORKER_GPU_LOG=" + log);
  ASSERT_EQ(out.code, 0) << out.text;
  const auto its = f.iterations();
  EXPECT_EQ(its.size(), 14u);
  EXPECT_NE(out.text.find("run 1 ended: 14 iterations"), std::string::npos) << out.text;
  const test::Census c = test::census(its);
  EXPECT_TRUE(c.duplicated.empty());
  EXPECT_TRUE(c.running.empty());
  EXPECT_GT(sent_ahead(out.text), 0) << out.text;
  const auto gpus = test::by_gpu_without_overlap(test::read_gpu_log(log));
  EXPECT_EQ(gpus.size(), 2u);
  // status says it too, from the status file the run left.
  const test::Output status = test::run_tuner("status --db '" + f.db + "'");
  ASSERT_EQ(status.code, 0) << status.text;
  EXPECT_EQ(sent_ahead(status.text), sent_ahead(out.text)) << status.text;
  const test::Output json = test::run_tuner("status --json --db '" + f.db + "'");
  ASSERT_EQ(json.code, 0) << json.text;
  EXPECT_EQ(nlohmann::json::parse(json.text.substr(json.text.find('{'))).value("screens_sent_ahead", -1),
            sent_ahead(out.text)) << json.text;
}

// --rotate-seeds every 3 configs: a screen sent ahead on one round's cases whose turn comes in the next round is
// timed again on the new cases. Every screened iteration's eval used case seeds of its own round's suite.
TEST(EvalAhead, AScreenSentBeforeASeedRotationIsTimedOnTheNewCases) {
  DaemonFixture f;
  f.suite = "full";
  ASSERT_NO_FATAL_FAILURE(f.warm_cache("fake_healthy"));
  const std::string evals = f.dir + "/evals.log";
  const test::Output out = test::run_tuner(
      f.args("--gpus 0 --rotate-seeds --round 3 --iterations 12 --root-seed 5 --no-holdout --no-spare-evals", "random",
             "fake_healthy"),
      "ATTN_TUNER_FAKE_GPUS=1 FAKE_WORKER_DELAY=0.03 FAKE_WORKER_LOG='" + evals + "'");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_GT(sent_ahead(out.text), 0) << out.text;
  const auto its = f.iterations();
  ASSERT_EQ(its.size(), 12u);
  // The seeds of each config's last screen eval (3 cases, validated): a stale one timed again comes after it.
  std::map<std::string, std::vector<std::int64_t>> screen_seeds;
  for (const auto& e : test::read_eval_log(evals))
    if (e.validate && e.cases == 3) screen_seeds[fmt::format("A={},B={}", e.a, e.b)] = e.seeds;
  for (const auto& it : its) {
    ASSERT_TRUE(it.root_seed) << it.iter;
    std::set<std::int64_t> round_seeds;
    for (const auto& cs : builtin_suite("full", *it.root_seed)) round_seeds.insert(cs.seed);
    const auto key = it.params.substr(0, it.params.find(",F="));
    ASSERT_TRUE(screen_seeds.count(key)) << it.params;
    for (const std::int64_t s : screen_seeds.at(key)) EXPECT_TRUE(round_seeds.count(s)) << it.params << " seed " << s;
  }
}

}  // namespace
}  // namespace attn
