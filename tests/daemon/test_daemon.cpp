// The daemon end to end on the CPU: the real binary, real NVRTC compiles of a test template, a real SQLite
// DB and iters.tsv, and tests/daemon/fake_worker.py standing in for the GPU worker (it scores configs and
// injects every fault kind: compile error, hang, fault, wrong result, dead worker).
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "daemon/supervise.hpp"
#include "db/iters_tsv.hpp"
#include "db/store.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using test::Output;
using Fixture = test::DaemonFixture;

using test::kFakeSpace;
using test::read_file;
using test::run;

TEST(Daemon, ExhaustiveRunSurvivesEveryFaultKindAndLosesNoRow) {
  Fixture f;
  const Output out = run(f.args());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("search space exhausted"), std::string::npos) << out.text;

  const auto its = f.iterations();
  ASSERT_EQ(its.size(), kFakeSpace);
  std::map<std::string, int> kinds;
  std::set<std::string> params;
  for (const auto& it : its) {
    EXPECT_TRUE(is_finished(it.status)) << it.iter;
    kinds[to_string(it.failure_kind)]++;
    EXPECT_TRUE(params.insert(it.params).second) << "config evaluated twice: " << it.params;
    EXPECT_FALSE(it.description.empty());
  }
  for (const char* k : {"compile", "hang", "fault", "wrong_result", "worker_died"}) EXPECT_EQ(kinds[k], 3) << k;
  EXPECT_EQ(kinds["none"], 18);
  const int injected = 15, survived = int(kinds["compile"] + kinds["hang"] + kinds["fault"] + kinds["wrong_result"] +
                                          kinds["worker_died"]);
  RecordProperty("faults_injected", injected);
  RecordProperty("faults_survived", survived);
  RecordProperty("rows_lost", int(kFakeSpace) - int(its.size()));

  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto champ = db.champion("smoke", ChampionScope::overall);
  ASSERT_TRUE(champ);
  EXPECT_EQ(db.iteration(champ->iteration_id)->params, "A=4,B=2,F=0");
  EXPECT_NEAR(champ->score_ms, 0.1, 1e-9);
  EXPECT_EQ(read_file(f.tsv), render_all(its));  // iters.tsv is exactly the DB's rendering
  const auto runs = db.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RunStatus::finished);
  EXPECT_EQ(runs[0].gpu_name, "FakeGPU");
}

TEST(Daemon, KilledDaemonResumesWithoutLosingOrDuplicatingAnIteration) {
  Fixture f;
  const Output bg = run(f.args("--detach"), "FAKE_WORKER_DELAY=0.15");
  ASSERT_EQ(bg.code, 0) << bg.text;
  ASSERT_GE(f.wait_finished(6, 60), 6u);
  const auto pid = running_daemon(f.db);
  ASSERT_TRUE(pid);
  ASSERT_EQ(::kill(*pid, SIGKILL), 0);
  for (int i = 0; i < 100 && ::kill(*pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::size_t before = f.iterations().size();

  const Output again = run(f.args());
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_NE(again.text.find("marked interrupted"), std::string::npos) << again.text;
  const auto its = f.iterations();
  const test::Census c = test::census(its);
  EXPECT_TRUE(c.running.empty()) << c.running.size() << " iteration(s) left running";
  EXPECT_TRUE(c.duplicated.empty()) << "config evaluated twice: " << c.duplicated.front();
  EXPECT_EQ(c.evaluated.size(), kFakeSpace);                  // nothing lost
  EXPECT_LE(c.interrupted, 1);                                 // at most the one in flight
  EXPECT_GE(its.size(), before);                               // nothing logged before the kill vanished
  EXPECT_EQ(read_file(f.tsv), render_all(its));
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto runs = db.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].status, RunStatus::interrupted);
  EXPECT_EQ(runs[1].status, RunStatus::finished);
}

// A DB resumed on another machine (the GPU legs of an overnight run) finds no cubin of its champion there:
// the cache is per machine. The champion is compiled again, and a challenger must still beat it in A/B/A,
// not on one look (2026-11-24: a resumed leg promoted a config on one look; docs/results.md).
TEST(Daemon, ResumedOnAnotherMachineTheChampionIsCompiledAgainAndReTimed) {
  Fixture f;
  ASSERT_EQ(run(f.args("--iterations 1")).code, 0);
  fs::remove_all(f.cache);  // the other machine's empty cache
  const Output again = run(f.args());
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_NE(again.text.find("champion iter 1: cubin compiled again"), std::string::npos) << again.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  std::size_t against_first = 0;
  for (const auto& p : db.champion_history("smoke")) {
    if (p.previous_iteration_id != 1) continue;
    ++against_first;
    EXPECT_NE(p.aba_json.find("\"a1_ms\""), std::string::npos) << p.aba_json;
    EXPECT_EQ(p.aba_json.find("cannot be re-timed"), std::string::npos) << p.aba_json;
  }
  EXPECT_GE(against_first, 1u);  // iter 1 (A=1, B=1) is beaten in the resumed run
  EXPECT_EQ(db.iteration(db.champion("smoke", ChampionScope::overall)->iteration_id)->params, "A=4,B=2,F=0");
}

// A template that gained a parameter (G, default 0) since the DB was recorded: an old row is its config completed
// with the JSON default (TemplateSpace::complete), G 0. The resumed run evaluates only the new configs (G 1), and
// the champion, recorded without G and missing its cubin, is compiled again at G 0 (compile_request completes it).
TEST(Daemon, ResumedAfterTheTemplateGainedAParameterEvaluatesOnlyTheNewConfigs) {
  Fixture f;
  const std::string templates = f.dir + "/templates";
  fs::create_directories(templates);
  fs::copy_file(test::data_dir() + "/fake_templates/fake.cu", templates + "/grow.cu");
  auto write_template = [&](const std::string& extra_param, const std::string& extra_default) {
    std::ofstream(templates + "/grow.json")
        << R"({"name": "grow", "source": "grow.cu", "kernel": "block_sparse_attn_fwd",
               "parameters": {"A": {"values": [1, 2, 3, 4, 5, 6]}, "B": {"values": [1, 2, 3]})"
        << extra_param << R"(}, "default": {"A": 1, "B": 1)" << extra_default << "}}\n";
  };
  std::string args = f.args("", "exhaustive", "grow");
  const std::string fake_dir = test::data_dir() + "/fake_templates";
  args.replace(args.find(fake_dir), fake_dir.size(), templates);

  write_template("", "");  // 18 configs, no faults (F stays at fake.cu's 0)
  const Output first = run(args);
  ASSERT_EQ(first.code, 0) << first.text;
  const auto before = f.iterations();
  ASSERT_EQ(before.size(), 18u);
  for (const auto& it : before) EXPECT_EQ(it.params.find("G="), std::string::npos) << it.params;

  write_template(R"(, "G": {"values": [0, 1]})", R"(, "G": 0)");  // 36 configs now
  fs::remove_all(f.cache);
  const Output again = run(args);
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_NE(again.text.find("18 config(s) already evaluated"), std::string::npos) << again.text;
  EXPECT_NE(again.text.find("search space exhausted: all 36 valid configs evaluated"), std::string::npos) << again.text;
  EXPECT_NE(again.text.find("cubin compiled again"), std::string::npos) << again.text;  // the old champion's
  const auto its = f.iterations();
  ASSERT_EQ(its.size(), 36u);  // not 54: the 18 configs at G 0 are the old rows
  std::set<std::string> added;
  for (std::size_t i = before.size(); i < its.size(); ++i) {
    EXPECT_TRUE(is_finished(its[i].status) && its[i].status != IterationStatus::interrupted) << its[i].iter;
    EXPECT_NE(its[i].params.find(",G=1"), std::string::npos) << "evaluated again: " << its[i].params;
    added.insert(its[i].params);
  }
  EXPECT_EQ(added.size(), 18u);
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto champ = db.iteration(db.champion("smoke", ChampionScope::overall)->iteration_id);
  EXPECT_EQ(champ->params.rfind("A=4,B=2", 0), 0u) << champ->params;  // the best score (A 4, B 2), with G or without
}

TEST(Daemon, StopFinishesTheIterationInFlightAndStatusReportsIt) {
  Fixture f;
  ASSERT_EQ(run(f.args("--detach"), "FAKE_WORKER_DELAY=0.3").code, 0);
  ASSERT_GE(f.wait_finished(2, 60), 2u);
  const Output st = run("status --db '" + f.db + "'");
  EXPECT_EQ(st.code, 0) << st.text;
  EXPECT_NE(st.text.find("(running)"), std::string::npos) << st.text;
  EXPECT_NE(st.text.find("champion: iter"), std::string::npos) << st.text;
  const Output stop = run("stop --db '" + f.db + "'");
  ASSERT_EQ(stop.code, 0) << stop.text;
  const auto its = f.iterations();
  for (const auto& it : its) EXPECT_NE(it.status, IterationStatus::running);
  for (const auto& it : its) EXPECT_NE(it.status, IterationStatus::interrupted);  // finished, not abandoned
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  EXPECT_EQ(db.runs().back().status, RunStatus::stopped);
  EXPECT_EQ(db.runs().back().stop_reason, "stopped on request");
  EXPECT_LT(its.size(), kFakeSpace);
  EXPECT_FALSE(running_daemon(f.db));
}

TEST(Daemon, StatusOfACollectedDbWithoutItsStatusFileReportsTheRunsRate) {
  // A DB brought back from the GPU machine comes without <db>.status.json: the rate then comes from the
  // run's start and end (it read 0 configs/hour before, 2026-11-25).
  Fixture f;
  const Output r = run(f.args(), "FAKE_WORKER_DELAY=0.05");
  ASSERT_EQ(r.code, 0) << r.text;
  fs::remove(f.db + ".status.json");
  const Output st = run("status --db '" + f.db + "' --json");
  ASSERT_EQ(st.code, 0) << st.text;
  const auto j = nlohmann::json::parse(st.text);
  EXPECT_GT(j.at("rate_per_hour").get<double>(), 0.0) << st.text;
  const Output text = run("status --db '" + f.db + "'");
  ASSERT_EQ(text.code, 0) << text.text;
  EXPECT_EQ(text.text.find("; 0 configs/hour"), std::string::npos) << text.text;
}

TEST(Daemon, BadInputIsAClearErrorAndWritesNothing) {
  Fixture f;
  Output o = run(f.args("", "annealing"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("unknown 'annealing'"), std::string::npos) << o.text;
  o = run(f.args("--manifest /nonexistent/m.json"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("no such file"), std::string::npos) << o.text;
  o = run(f.args("--budget 8x"));
  EXPECT_EQ(o.code, 2);
  EXPECT_FALSE(fs::exists(f.db));
  { std::ofstream(f.db) << "not a database\n"; }
  o = run(f.args());
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.text.find(f.db), std::string::npos) << o.text;
  EXPECT_EQ(read_file(f.db), "not a database\n");
  o = run("stop --db '" + f.dir + "/none.db'");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("no daemon is running"), std::string::npos) << o.text;
}

TEST(Daemon, LocalSearchFindsTheOptimumAndNeverRepeats) {
  Fixture f;
  const Output out = run(f.args("--iterations 20", "local"));
  ASSERT_EQ(out.code, 0) << out.text;
  const auto its = f.iterations();
  ASSERT_EQ(its.size(), 20u);
  std::set<std::string> params;
  for (const auto& it : its) EXPECT_TRUE(params.insert(it.params).second) << it.params;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  EXPECT_EQ(db.iteration(db.champion("smoke", ChampionScope::overall)->iteration_id)->params, "A=4,B=2,F=0");
}

}  // namespace
}  // namespace attn
