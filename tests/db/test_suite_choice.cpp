// The suite of a read command (db/suite_choice.hpp; README.md "The suite of a read command"): the rule as a pure
// function, and status, query top, query proposals and query csv on a DB with two suites, each applying it the
// same way (the first line names the pick and the other suites; --suite wins; JSON stays parseable).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "db/suite_choice.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

RunRecord run_of(std::int64_t id, const std::string& suite) {
  RunRecord r;
  r.id = id;
  r.suite = suite;
  return r;
}

TEST(SuiteChoice, OneSuiteIsUsedWithoutANote) {
  const auto c = resolve_suite({run_of(1, "full"), run_of(2, "full")}, "");
  EXPECT_EQ(c.suite, "full");
  EXPECT_EQ(c.note, "");
}

TEST(SuiteChoice, SeveralSuitesPickTheLatestRunsAndNameTheOthersWithTheirRuns) {
  std::vector<RunRecord> runs;
  for (int i = 1; i <= 7; ++i) runs.push_back(run_of(i, "full"));
  runs.push_back(run_of(8, "quick"));
  runs.push_back(run_of(10, "smoke"));
  runs.push_back(run_of(9, "full"));  // any order: the latest is the highest id
  const auto c = resolve_suite(runs, "");
  EXPECT_EQ(c.suite, "smoke");
  EXPECT_EQ(c.note, "suite smoke (the latest run's, run 10); also in this DB: full (runs 1-7, 9), quick (run 8); "
                    "--suite picks another");
}

TEST(SuiteChoice, AnExplicitSuiteWinsAndMustHaveARun) {
  const std::vector<RunRecord> runs = {run_of(1, "full"), run_of(2, "quick")};
  const auto c = resolve_suite(runs, "full");
  EXPECT_EQ(c.suite, "full");
  EXPECT_EQ(c.note, "");
  try {
    resolve_suite(runs, "broad");
    ADD_FAILURE() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "the DB has no run of suite broad (suites there: full (run 1), quick (run 2))");
  }
  EXPECT_THROW(resolve_suite(std::vector<RunRecord>{}, ""), std::invalid_argument);
  EXPECT_THROW(resolve_suite(std::vector<RunRecord>{}, "full"), std::invalid_argument);
}

/// Run 1 on full (scores ~0.07 ms), run 2 on quick (~0.02 ms: a quick score would top any ranking across
/// suites), a proposal with iterations on both.
class TwoSuites : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::temp_dir("two-suites");
    db_ = dir_ + "/t.db";
    auto db = ExperimentDb::open(db_);
    const auto full = db.begin_run(test::sample_run("full"));
    const auto quick = db.begin_run(test::sample_run("quick"));
    for (const auto& [run, scale, n] : {std::tuple{full, 1.0, 64}, std::tuple{full, 1.1, 128},
                                        std::tuple{quick, 0.3, 64}, std::tuple{quick, 0.35, 128}}) {
      auto v = test::sample_variant(n, 4, 2);
      full_iters_.push_back(test::add_scored_iteration(db, run, v, db.upsert_variant(v), scale, IterationStatus::keep,
                                                       "it"));
    }
    for (const auto& [suite, i] : {std::pair{"full", 0}, std::pair{"quick", 2}})
      db.set_champion({suite, ChampionScope::overall, full_iters_[i], *db.iteration(full_iters_[i])->geomean_ms, ""});
  }
  static test::CommandOutput run(const std::string& args) {
    return test::run_binary(args + " --db '" + db_ + "'");
  }
  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
  static inline std::string dir_, db_;
  static inline std::vector<std::int64_t> full_iters_;
};

const std::string kNote = "suite quick (the latest run's, run 2); also in this DB: full (run 1); --suite picks another";

TEST_F(TwoSuites, EveryReadCommandPicksTheLatestRunsSuiteAndSaysSoFirst) {
  for (const std::string& cmd : std::vector<std::string>{"status", "query top 10", "query proposals",
                                                         "query csv --out '" + dir_ + "/q.csv'"}) {
    const auto r = run(cmd);
    ASSERT_EQ(r.code, 0) << cmd << "\n" << r.text;
    EXPECT_EQ(first_line(r.text), kNote) << cmd << "\n" << r.text;
  }
  // Ranked within quick only: no full row among them (the note, first, names full).
  const auto top = run("query top 10");
  const std::string rows = top.text.substr(top.text.find('\n') + 1);
  EXPECT_EQ(rows.find(" full "), std::string::npos) << top.text;
  EXPECT_NE(rows.find(" quick "), std::string::npos) << top.text;
  const auto status = run("status");
  EXPECT_NE(status.text.find("run 2 (running)"), std::string::npos) << status.text;
  EXPECT_NE(status.text.find("suite quick"), std::string::npos) << status.text;
  const auto csv = test::read_text(dir_ + "/q.csv");
  EXPECT_NE(csv.find("t4096"), std::string::npos);
}

TEST_F(TwoSuites, AnExplicitSuiteWinsWithoutANote) {
  const auto top = run("query top 10 --suite full");
  ASSERT_EQ(top.code, 0) << top.text;
  EXPECT_EQ(top.text.rfind("rank ", 0), 0u) << top.text;
  EXPECT_EQ(top.text.find(" quick "), std::string::npos) << top.text;
  EXPECT_NE(top.text.find(" full "), std::string::npos) << top.text;
  const auto status = run("status --suite full");
  ASSERT_EQ(status.code, 0) << status.text;
  EXPECT_EQ(status.text.rfind("run 1 (running)", 0), 0u) << status.text;
  const auto none = run("query top 10 --suite broad");
  EXPECT_EQ(none.code, 2) << none.text;
  EXPECT_NE(none.text.find("has no run of suite broad (suites there: full (run 1), quick (run 2))"), std::string::npos)
      << none.text;
}

TEST_F(TwoSuites, MachineReadableOutputKeepsTheNoteOnStderr) {
  const auto r = test::run_binary("query --db '" + db_ + "' --format json top 10 2>/dev/null; true");
  const auto j = nlohmann::json::parse(r.text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.text;
  ASSERT_EQ(j.size(), 2u);
  for (const auto& row : j) EXPECT_EQ(row["suite"], "quick");
  const auto err = test::run_binary("query --db '" + db_ + "' --format json top 10 2>&1 >/dev/null; true");
  EXPECT_EQ(first_line(err.text), kNote);
}

}  // namespace
}  // namespace attn
