// The overnight-search features end to end on the CPU, with the real binary, real NVRTC compiles and
// tests/daemon/fake_worker.py as the GPU: the fidelity ladder (screened configs never reach the whole
// suite, contenders do, fidelity recorded), seed rotation (new root seed per round, recorded, the worker
// sees the seeds), the held-out gate (an overfit champion is refused), `space`, and `replay` on a DB the
// daemon generated.
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "daemon/seed_rounds.hpp"
#include "db/iters_tsv.hpp"
#include "db/store.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/test_support.hpp"
#include "tuner/fidelity.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

using test::run_binary;
using test::read_text;

using EvalLine = test::EvalLine;
const auto read_log = test::read_eval_log;

/// A templates folder with `healthy`: the fake template's A (1..6) and B (1..3), no faults: 18 configs,
/// score 0.1 + 0.01 ((A - 4)^2 + (B - 2)^2) ms on every case (fake_worker.py).
struct Fixture {
  std::string dir = test::temp_dir("search9");
  std::string db = dir + "/t.db", tsv = dir + "/iters.tsv", log = dir + "/evals.log", templates = dir + "/templates";
  Fixture() {
    fs::create_directories(templates);
    fs::copy_file(test::data_dir() + "/fake_templates/fake.cu", templates + "/healthy.cu");
    std::ofstream(templates + "/healthy.json") << R"({"name": "healthy", "source": "healthy.cu",
      "kernel": "block_sparse_attn_fwd", "description": "fake.cu without faults",
      "parameters": {"A": {"values": [1, 2, 3, 4, 5, 6]}, "B": {"values": [1, 2, 3]}},
      "default": {"A": 1, "B": 1}})";
  }
  std::string args(const std::string& extra) const {
    const std::string src = fs::path(test::data_dir()).parent_path().parent_path().string();
    return "run --db '" + db + "' --tsv '" + tsv + "' --templates '" + templates + "' --template healthy --worker-exe '" +
           src + "/tests/daemon/fake_worker.py' --cache '" + dir + "/cache' --jobs 2 --strategy exhaustive " + extra;
  }
  std::string env(const std::string& extra = "") const { return "FAKE_WORKER_LOG='" + log + "' " + extra; }
};

double fake_score(const Config& c) {
  const double a = double(c.at("A")), b = double(c.at("B"));
  return 0.1 + 0.01 * ((a - 4) * (a - 4) + (b - 2) * (b - 2));
}

TEST(SearchIssue, LadderScreensOutWeakConfigsAndEvaluatesContendersInFull) {
  Fixture f;
  // The ladder's rule alone: spare GPU time would evaluate screened-out near misses in full later (SpareGpu.*).
  const auto out =
      run_binary(f.args("--suite full --fidelity ladder --screen-cutoff 0.05 --no-holdout --no-spare-evals"), f.env());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("fidelity ladder (screen: 3 of 9 cases"), std::string::npos) << out.text;

  const auto screen_ids = plan_screen(builtin_suite("full")).case_ids;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto its = db.iterations();
  ASSERT_EQ(its.size(), 18u);
  // Replay the rule on the recorded screen scores, in iteration order.
  std::optional<double> best_screen;
  std::set<std::string> screened, full;
  for (const auto& row : its) {
    const auto it = *db.iteration(row.iter);
    const Config c = config_from_json(it.params_json);
    ASSERT_TRUE(it.screen_ms) << it.params;
    EXPECT_NEAR(*it.screen_ms, fake_score(c), 1e-9) << it.params;
    const bool promote = !best_screen || *it.screen_ms <= *best_screen * 1.05;
    best_screen = std::min(best_screen.value_or(1e9), *it.screen_ms);
    if (!promote) {
      screened.insert(it.params);
      EXPECT_EQ(it.fidelity, Fidelity::screen) << it.params;
      EXPECT_EQ(it.status, IterationStatus::discard) << it.params;
      EXPECT_FALSE(it.geomean_ms) << it.params;
      ASSERT_EQ(it.cases.size(), 3u) << it.params;
      for (const auto& cr : it.cases) {
        EXPECT_NE(std::find(screen_ids.begin(), screen_ids.end(), cr.case_id), screen_ids.end()) << cr.case_id;
        EXPECT_EQ(cr.samples, 5);  // the screen's sample budget
      }
      EXPECT_NE(it.description.find("screened out on 3 of 9 cases"), std::string::npos) << it.description;
    } else {
      full.insert(it.params);
      EXPECT_EQ(it.fidelity, Fidelity::full) << it.params;
      ASSERT_TRUE(it.geomean_ms) << it.params;
      EXPECT_NEAR(*it.geomean_ms, fake_score(c), 1e-9);
      EXPECT_EQ(it.cases.size(), 9u) << it.params;
      EXPECT_EQ(it.cases.front().samples, 20);
      EXPECT_NE(it.description.find("evaluated in full"), std::string::npos) << it.description;
    }
  }
  EXPECT_EQ(screened.size(), 10u);
  EXPECT_EQ(full.size(), 8u);
  // The worker's view: a screened-out config was never run on the whole suite; a contender was, after
  // its screen.
  std::map<std::string, std::vector<std::size_t>> cases_per_eval;
  for (const auto& e : read_log(f.log))
    cases_per_eval[fmt::format("A={},B={}", e.a, e.b)].push_back(e.validate ? e.cases : 100 + e.cases);
  for (const auto& p : screened) EXPECT_EQ(cases_per_eval[p], (std::vector<std::size_t>{3})) << p;
  for (const auto& p : full) {
    ASSERT_GE(cases_per_eval[p].size(), 2u) << p;
    EXPECT_EQ(cases_per_eval[p][0], 3u) << p;
    EXPECT_EQ(cases_per_eval[p][1], 9u) << p;
  }
  const auto champ = db.champion("full", ChampionScope::overall);
  ASSERT_TRUE(champ);
  EXPECT_EQ(db.iteration(champ->iteration_id)->params, "A=4,B=2");
  const auto p = db.run_progress(db.runs().back().id);
  EXPECT_EQ(p.screened_out, 10);
  EXPECT_EQ(p.full_evaluations, 8);
  EXPECT_NE(out.text.find("configs: 10 screened out"), std::string::npos) << out.text;
  // iters.tsv keeps its columns and is the DB's rendering; screened rows say what was screened.
  const std::string tsv = read_text(f.tsv);
  EXPECT_EQ(tsv, render_all(its));
  EXPECT_EQ(tsv.substr(0, tsv.find('\n')),
            "iter\tgeomean_ms\tdelta_ms\twindow_ms\tglobal_ms\tretrieval_ms\tstatus\tparams\tdescription");
  const auto status = run_binary("status --db '" + f.db + "'");
  EXPECT_NE(status.text.find("10 screened out"), std::string::npos) << status.text;
}

TEST(SearchIssue, RotatedSeedsAreRecordedAndReachTheWorker) {
  Fixture f;
  const auto out =
      run_binary(f.args("--suite full --fidelity full --rotate-seeds --round 4 --iterations 12 --root-seed 5"), f.env());
  ASSERT_EQ(out.code, 0) << out.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto its = db.iterations();
  ASSERT_EQ(its.size(), 12u);
  const std::int64_t run_id = db.runs().back().id;
  std::vector<std::int64_t> roots;
  for (std::size_t i = 0; i < its.size(); ++i) {
    ASSERT_TRUE(its[i].root_seed) << its[i].iter;
    EXPECT_EQ(*its[i].root_seed, round_root_seed(5, run_id, std::int64_t(i / 4), kDefaultHoldoutSeed)) << i;
    EXPECT_NE(*its[i].root_seed, kDefaultHoldoutSeed);
    if (i % 4 == 0) roots.push_back(*its[i].root_seed);
  }
  EXPECT_EQ(roots.front(), 5);
  EXPECT_EQ(std::set<std::int64_t>(roots.begin(), roots.end()).size(), 3u);  // a new root seed per round
  // The worker timed each config on its round's case seeds.
  std::map<std::string, std::vector<std::int64_t>> seeds_of;
  for (const auto& e : read_log(f.log))
    if (e.validate && e.cases == 9 && !seeds_of.count(fmt::format("A={},B={}", e.a, e.b)))
      seeds_of[fmt::format("A={},B={}", e.a, e.b)] = e.seeds;
  for (const auto& it : its) {
    std::vector<std::int64_t> expected;
    for (const auto& c : builtin_suite("full", *it.root_seed)) expected.push_back(c.seed);
    EXPECT_EQ(seeds_of[it.params], expected) << it.params;
  }
  // Every promotion passed the held-out check, on the held-out seeds.
  std::vector<std::int64_t> holdout_seeds;
  for (const auto& c : builtin_suite("full", kDefaultHoldoutSeed)) holdout_seeds.push_back(c.seed);
  bool saw_holdout_eval = false;
  for (const auto& e : read_log(f.log)) saw_holdout_eval = saw_holdout_eval || e.seeds == holdout_seeds;
  EXPECT_TRUE(saw_holdout_eval);
  const auto checks = db.holdout_checks();
  ASSERT_FALSE(checks.empty());
  for (const auto& h : checks) EXPECT_EQ(h.root_seed, kDefaultHoldoutSeed);
  for (const auto& p : db.champion_history("full")) {
    bool allowed = false;
    for (const auto& h : db.holdout_checks(p.champion.iteration_id))
      allowed = allowed || (h.role == HoldoutRole::challenger && h.ok && h.verdict.rfind("allowed", 0) == 0);
    EXPECT_TRUE(allowed) << "promotion of iter " << p.champion.iteration_id << " without a held-out check";
  }
}

TEST(SearchIssue, HeldOutCheckRefusesAChampionThatDoesNotHoldOnUnseenSeeds) {
  Fixture f;
  // A=3,B=2 is the fastest config on every tuning seed (0.05 ms) but the slowest on the held-out seeds.
  const std::int64_t holdout_case_seed = builtin_suite("full", kDefaultHoldoutSeed).front().seed;
  const auto out = run_binary(f.args("--suite full --fidelity full"),
                             f.env(fmt::format("FAKE_WORKER_OVERFIT=3,2,{}", holdout_case_seed)));
  ASSERT_EQ(out.code, 0) << out.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  std::optional<IterationRecord> overfit;
  for (const auto& it : db.iterations())
    if (it.params == "A=3,B=2") overfit = it;
  ASSERT_TRUE(overfit);
  EXPECT_NEAR(*overfit->geomean_ms, 0.05, 1e-9);  // it won on the tuning seeds...
  EXPECT_EQ(overfit->status, IterationStatus::discard) << overfit->description;  // ...and was not kept
  EXPECT_NE(overfit->description.find("does not hold on held-out root seed 1000003"), std::string::npos)
      << overfit->description;
  const auto checks = db.holdout_checks(overfit->iter);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].role, HoldoutRole::challenger);
  EXPECT_TRUE(checks[0].ok);
  EXPECT_NEAR(*checks[0].score_ms, 0.5, 1e-9);
  EXPECT_NEAR(*checks[0].tuned_ms, 0.05, 1e-9);
  EXPECT_EQ(checks[0].verdict.rfind("refused", 0), 0u) << checks[0].verdict;
  const auto champ = db.champion("full", ChampionScope::overall);
  ASSERT_TRUE(champ);
  EXPECT_EQ(db.iteration(champ->iteration_id)->params, "A=4,B=2");
  for (const auto& p : db.champion_history("full")) EXPECT_NE(p.champion.iteration_id, overfit->iter);

  // Export reports the held-out score beside the tuned one.
  const auto ex = run_binary("export --db '" + f.db + "' --out '" + f.dir + "/sub' --templates '" + f.templates + "'");
  ASSERT_EQ(ex.code, 0) << ex.text;
  EXPECT_NE(ex.text.find("tuned 0.1000 ms (root seed 0), held-out 0.1000 ms (root seed 1000003, +0.0%)"),
            std::string::npos)
      << ex.text;
}

TEST(SearchIssue, SpaceCountsValidConfigsAndListsParameters) {
  const auto out = run_binary("space --templates '" + test::data_dir() + "/fake_templates'");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("fake: 33 valid configs (raw product 108, 1 constraint)"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("  A  1 2 3 4 5 6"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("default 0  0 none, 1 hang"), std::string::npos) << out.text;
  // Every real template: a count after constraints.
  const auto real = run_binary("space");
  ASSERT_EQ(real.code, 0) << real.text;
  for (const auto& e : fs::directory_iterator(fs::path(test::data_dir()).parent_path().parent_path() / "kernels_templates"))
    if (e.path().extension() == ".json") {
      EXPECT_NE(real.text.find(e.path().stem().string() + ": "), std::string::npos) << e.path();
    }
  const auto bad = run_binary("space --template nope --templates '" + test::data_dir() + "/fake_templates'");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("no file"), std::string::npos) << bad.text;
}

TEST(SearchIssue, CompileAllCompilesEveryValidConfigAndSaysWhatFailed) {
  // Issue 8's `compile --all` without a GPU: every valid config of the space goes through NVRTC, the exit
  // code says whether any failed, and a summary line counts them; a second run answers from the cache.
  const fs::path cache = test::temp_dir("attn-compile-all");
  const std::string cmd = "compile --all --template fake --templates '" + test::data_dir() +
                          "/fake_templates' --cache '" + cache.string() + "' -j 2";
  const auto first = run_binary(cmd);
  EXPECT_EQ(first.code, 1) << first.text;  // F=5 is a compile error by design (fake.cu): A=1 x B=1..3
  EXPECT_NE(first.text.find("summary: 33 config(s), 30 ok, 3 failed, 0 from the cache"), std::string::npos)
      << first.text;
  EXPECT_NE(first.text.find("compile: 3 of 33 config(s) failed"), std::string::npos) << first.text;
  const auto second = run_binary(cmd);
  EXPECT_EQ(second.code, 1);
  EXPECT_NE(second.text.find("summary: 33 config(s), 30 ok, 3 failed, 33 from the cache"), std::string::npos)
      << second.text;
  // --shard K/N: the partition of `run --shard`; the shards together are the --all list, each config once.
  int total = 0, total_failed = 0;
  for (int k = 0; k < 4; ++k) {
    const auto part = run_binary(cmd + fmt::format(" --shard {}/4", k));
    int n = 0, ok = 0, failed = 0;
    ASSERT_EQ(std::sscanf(part.text.substr(part.text.find("summary: ")).c_str(),
                          "summary: %d config(s), %d ok, %d failed", &n, &ok, &failed), 3) << part.text;
    EXPECT_EQ(part.code, failed ? 1 : 0) << part.text;
    total += n;
    total_failed += failed;
  }
  EXPECT_EQ(total, 33);
  EXPECT_EQ(total_failed, 3);
  const auto bad = run_binary(cmd + " --shard 4/4");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("--shard '4/4'"), std::string::npos) << bad.text;
}

TEST(SearchIssue, ReplayOnAGeneratedDbFindsTheBestAtItsPositionFromDbAndCsv) {
  Fixture f;
  // As scripts/device/step_replay_db.sh: every config screened (a cut-off nobody fails) and evaluated in full.
  ASSERT_EQ(run_binary(f.args("--suite full --fidelity ladder --screen-cutoff 1e9 --no-holdout")).code, 0);
  {
    auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
    for (const auto& it : db.iterations()) {
      EXPECT_EQ(it.fidelity, Fidelity::full) << it.params;
      EXPECT_TRUE(it.screen_ms && it.geomean_ms) << it.params;
    }
  }
  // Exhaustive: the odometer reaches A=4,B=2 at evaluation (4 - 1) * 3 + 2 = 11 of 18.
  const std::string common = "--templates '" + f.templates + "' --within 0 --within 0.05 --seeds 4 ";
  const auto r = run_binary("replay --db '" + f.db + "' " + common +
                           "--strategy exhaustive --strategy random --max-evaluations 18");
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("18 configs (18 with a whole-suite score, 0 failed), best 0.1000 ms"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("within 0%: median 11 evaluations (61.1% of the space), p25 11, p75 11"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("strategy random, fidelity full, 4 seeds"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("per seed: 18.0 configs proposed"), std::string::npos) << r.text;  // the whole space
  // The CSV export replays the same.
  const std::string csv = f.dir + "/full.csv";
  const auto q = run_binary("query --db '" + f.db + "' csv --out '" + csv + "'");
  ASSERT_EQ(q.code, 0) << q.text;
  EXPECT_NE(q.text.find("wrote 18 iterations of suite full"), std::string::npos) << q.text;
  const auto rc = run_binary("replay --csv '" + csv + "' " + common + "--strategy exhaustive --fidelity ladder --cutoff 0.05");
  ASSERT_EQ(rc.code, 0) << rc.text;
  EXPECT_NE(rc.text.find("within 0%: median 11 evaluations"), std::string::npos) << rc.text;
  EXPECT_NE(rc.text.find("fidelity ladder (cut-off 5%"), std::string::npos) << rc.text;
  const auto bad = run_binary("replay --db '" + f.dir + "/none.db' " + common);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("no experiment DB"), std::string::npos) << bad.text;
}

}  // namespace
}  // namespace attn
