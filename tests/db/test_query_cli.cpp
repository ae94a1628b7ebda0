// `attn-tuner query` end to end: the built binary against a DB this test fills.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "db/iters_tsv.hpp"
#include "db/store.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Runs `attn-tuner <args>` in `cwd`, capturing stdout, stderr and the exit code.
CliResult run_cli(const std::vector<std::string>& args, const std::string& cwd) {
  std::string cmd = "cd " + shell_quote(cwd) + " && " + shell_quote(test::binary_path());
  for (const auto& a : args) cmd += " " + shell_quote(a);
  const std::string out = cwd + "/.stdout", err = cwd + "/.stderr";
  cmd += " >" + shell_quote(out) + " 2>" + shell_quote(err);
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  return lines;
}

/// True when `text` has a line "<key><spaces><value>" (a field of `query show`).
bool has_field(const std::string& text, const std::string& key, const std::string& value) {
  for (const auto& l : lines_of(text)) {
    if (l.rfind(key + " ", 0) != 0) continue;
    auto start = l.find_first_not_of(' ', key.size());
    if (start != std::string::npos && l.substr(start) == value) return true;
  }
  return false;
}

class QueryCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::temp_dir("db-query-cli");
    db_path_ = dir_ + "/tuning.db";
    auto db = ExperimentDb::open(db_path_);
    auto run = db.begin_run(test::sample_run("quick"));
    const double scales[] = {1.2, 0.9, 1.0, 0.8};
    const IterationStatus statuses[] = {IterationStatus::keep, IterationStatus::discard, IterationStatus::keep,
                                        IterationStatus::keep};
    for (int i = 0; i < 4; ++i) {
      auto v = test::sample_variant(64 * (i + 1), 8, 2);
      auto vid = db.upsert_variant(v);
      iters_.push_back(test::add_scored_iteration(db, run, v, vid, scales[i], statuses[i],
                                                  "variant " + std::to_string(i) + (i == 1 ? "\twith tab" : "")));
    }
    // A compile crash with a failed variant.
    auto bad = test::sample_variant(512, 4, 4);
    bad.compile_ok = false;
    bad.compile_log = "error: out of shared memory";
    bad.registers = bad.smem_bytes = bad.spill_bytes = std::nullopt;
    auto bad_id = db.upsert_variant(bad);
    IterationRecord crash;
    crash.run_id = run;
    crash.suite = "quick";
    crash.template_name = bad.template_name;
    crash.params_json = bad.params_json;
    crash.iter = db.begin_iteration(crash);
    crash.variant_id = bad_id;
    crash.status = IterationStatus::crash;
    crash.failure_kind = FailureKind::compile;
    crash.description = "compile failed";
    db.finish_iteration(crash);
    iters_.push_back(crash.iter);

    db.set_champion({"quick", ChampionScope::overall, iters_[0], *db.iteration(iters_[0])->geomean_ms, ""});
    db.set_champion({"quick", ChampionScope::overall, iters_[3], *db.iteration(iters_[3])->geomean_ms, ""},
                    R"({"A":[0.1],"B":[0.08]})");
    db.set_champion({"quick", ChampionScope::sliding_window, iters_[2], 0.07, ""});
  }

  CliResult query(std::vector<std::string> args) {
    args.insert(args.begin(), {"query", "--db", db_path_});
    return run_cli(args, dir_);
  }

  static inline std::string dir_, db_path_;
  static inline std::vector<std::int64_t> iters_;
};

TEST_F(QueryCli, BestListsChampionsPerScope) {
  auto r = query({"best"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].rfind("suite  scope", 0), 0u) << lines[0];
  EXPECT_NE(lines[1].find("overall"), std::string::npos);
  EXPECT_NE(lines[1].find(" " + std::to_string(iters_[3]) + " "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("BLOCK_N=256,num_warps=8,stages=2"), std::string::npos);
  EXPECT_NE(lines[2].find("sliding_window"), std::string::npos);
  // Aligned: every line starts its second column at the same offset.
  EXPECT_EQ(lines[1].find("overall"), lines[0].find("scope"));

  r = query({"--format", "json", "best", "--suite", "quick"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["scope"], "overall");
  EXPECT_EQ(j[0]["iter"], iters_[3]);
  EXPECT_EQ(j[0]["params"], "BLOCK_N=256,num_warps=8,stages=2");

  r = query({"best", "--suite", "full"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no champions yet for suite full\n");
}

TEST_F(QueryCli, TopOrdersByGeomeanAndSkipsCrashes) {
  auto r = query({"--format", "json", "top", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  // scales 0.8 < 0.9 < 1.0: iterations 3, 1 (a discard), 2.
  EXPECT_EQ(j[0]["iter"], iters_[3]);
  EXPECT_EQ(j[1]["iter"], iters_[1]);
  EXPECT_EQ(j[1]["status"], "discard");
  EXPECT_EQ(j[2]["iter"], iters_[2]);
  EXPECT_LT(j[0]["geomean_ms"].get<double>(), j[1]["geomean_ms"].get<double>());

  r = query({"top", "10", "--format", "tsv"});  // --format after the subcommand works too
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;  // header + 4 scored, no crash
  EXPECT_EQ(lines[0].rfind("rank\titer\tsuite\tstatus\t", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("1\t" + std::to_string(iters_[3]) + "\tquick\tkeep\tnone\t", 0), 0u) << lines[1];
  EXPECT_NE(lines[2].find("variant 1 with tab"), std::string::npos) << lines[2];

  r = query({"top", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("N must be a positive count"), std::string::npos) << r.err;
}

TEST_F(QueryCli, HistoryShowsTheLastIterationsOldestFirst) {
  auto r = query({"--format", "json", "history", "--limit", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["iter"], iters_[3]);
  EXPECT_EQ(j[1]["iter"], iters_[4]);
  EXPECT_EQ(j[1]["failure_kind"], "compile");

  r = query({"history", "--limit", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), 6u) << r.out;
}

TEST_F(QueryCli, ShowPrintsVariantResourcesAndCases) {
  ExperimentDb db = ExperimentDb::open(db_path_, ExperimentDb::Mode::read_only);
  auto it = *db.iteration(iters_[2]);
  auto v = *db.variant(*it.variant_id);
  auto r = query({"show", std::to_string(iters_[2])});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_field(r.out, "params", it.params)) << r.out;
  EXPECT_TRUE(has_field(r.out, "geomean_ms", format_ms(it.geomean_ms))) << r.out;
  EXPECT_TRUE(has_field(r.out, "registers", std::to_string(*v.registers))) << r.out;
  EXPECT_TRUE(has_field(r.out, "smem_bytes", std::to_string(*v.smem_bytes))) << r.out;
  EXPECT_TRUE(has_field(r.out, "status", "keep")) << r.out;
  for (const auto& c : it.cases) {
    bool found = false;
    for (const auto& l : lines_of(r.out)) {
      if (l.rfind(c.case_id + " ", 0) == 0) {
        found = true;
        EXPECT_NE(l.find(family_name(c.family)), std::string::npos) << l;
        EXPECT_NE(l.find(format_ms(c.median_ms)), std::string::npos) << l;
      }
    }
    EXPECT_TRUE(found) << c.case_id << " missing in\n" << r.out;
  }

  r = query({"--format", "json", "show", std::to_string(iters_[2])});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["iteration"]["iter"], iters_[2]);
  EXPECT_EQ(j["variant"]["registers"], *v.registers);
  ASSERT_EQ(j["cases"].size(), it.cases.size());
  EXPECT_DOUBLE_EQ(j["cases"][0]["median_ms"].get<double>(), *it.cases[0].median_ms);

  r = query({"show", std::to_string(iters_[4])});  // the compile crash shows its log
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_field(r.out, "compile_ok", "no")) << r.out;
  EXPECT_NE(r.out.find("error: out of shared memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no case results"), std::string::npos) << r.out;

  r = query({"show", "9999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no iteration 9999"), std::string::npos) << r.err;
}

TEST_F(QueryCli, SqlReadsAndRefusesWrites) {
  auto r = query({"sql", "SELECT status, count(*) AS n FROM iterations GROUP BY status ORDER BY status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0], "status   n");
  EXPECT_EQ(lines[1], "crash    1");
  EXPECT_EQ(lines[2], "discard  1");
  EXPECT_EQ(lines[3], "keep     3");

  r = query({"--format", "json", "sql", "SELECT id, stop_reason FROM runs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["columns"], nlohmann::json({"id", "stop_reason"}));
  EXPECT_TRUE(j["rows"][0][1].is_null());

  r = query({"sql", "DELETE FROM iteration_rows"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("refusing a statement that writes"), std::string::npos) << r.err;
  r = query({"sql", "SELECT nope FROM iterations"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such column: nope"), std::string::npos) << r.err;
  EXPECT_EQ(ExperimentDb::open(db_path_, ExperimentDb::Mode::read_only).iterations().size(), 5u);
}

TEST_F(QueryCli, TsvRebuildsItersTsvFromTheDb) {
  ExperimentDb db = ExperimentDb::open(db_path_, ExperimentDb::Mode::read_only);
  const auto expected = render_all(db.iterations());
  auto r = query({"tsv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(lines_of(r.out).size(), 6u);

  const auto out = dir_ + "/rebuilt/iters.tsv";
  fs::create_directories(dir_ + "/rebuilt");
  r = query({"tsv", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(out), expected);
  EXPECT_NE(r.out.find("wrote 5 iterations"), std::string::npos) << r.out;
}

TEST_F(QueryCli, MissingOrForeignDbIsAClearErrorAndNothingIsCreated) {
  auto dir = test::temp_dir("db-query-cli");
  auto r = run_cli({"query", "best"}, dir);  // default runs/attn-tuner.db
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no experiment DB at runs/attn-tuner.db"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/runs"));

  std::ofstream(dir + "/junk.db") << std::string(2048, 'j');
  r = run_cli({"query", "--db", dir + "/junk.db", "history"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir + "/junk.db is not a SQLite database"), std::string::npos) << r.err;

  r = run_cli({"query", "--db", db_path_, "--format", "xml", "best"}, dir);
  EXPECT_NE(r.exit_code, 0);
  r = run_cli({"query", "--db", db_path_}, dir);  // no <what>
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace attn
