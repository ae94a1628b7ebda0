// The 9 -> 10 migration (configs, cases and GPUs stored once: issue 38) on a file the daemon wrote at schema 9:
// tests/data/db/schema_v9_idea_agent.db.xz, written by attn-tuner at main d9d80bb with the fake worker on the
// fake template (suite smoke, 54 iterations), `--ideas` and a scripted `--idea-agent` (32 calls; the first wrote a
// winning idea and a file that is not an idea, which the queue judged win and broken), then VACUUMed. Every row of
// every table comes through, read through the views with the old columns; the idea agent's rows keep their
// champion iteration, whose foreign key now points at iteration_rows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "db/schema.hpp"
#include "db/store.hpp"
#include "db/store_idea_agents.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

std::string schema9_file() {
  const std::string path = test::temp_dir("db-migrate-v10") + "/v9.db";
  const std::string cmd = "xz -dc '" + test::data_dir() + "/db/schema_v9_idea_agent.db.xz' > '" + path + "'";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cannot run: " + cmd);
  return path;
}

std::string columns_of(sqlite::Connection& conn, const std::string& table) {
  auto st = conn.prepare("SELECT group_concat(name, ', ') FROM pragma_table_info(?)");
  st.bind(1, table);
  st.step();
  return st.column_text(0);
}

std::string single(sqlite::Connection& conn, const std::string& sql) {
  auto st = conn.prepare(sql);
  return st.step() ? st.column_opt_text(0).value_or("NULL") : "";
}

// Each table of version 9 with the order its rows are compared in; iterations, variants and case_results are
// views after the step.
const std::vector<std::pair<std::string, std::string>> kTables = {
    {"runs", "id"},
    {"variants", "id"},
    {"iterations", "id"},
    {"case_results", "iteration_id, case_id"},
    {"champions", "suite, scope"},
    {"champion_history", "id"},
    {"holdout_checks", "id"},
    {"proposals", "id"},
    {"iteration_sources", "iteration_id"},
    {"harness_checks", "id"},
    {"ideas", "id"},
    {"idea_agent_calls", "id"},
    {"idea_agent_ideas", "call_id, file"},
};

TEST(MigrationV10, ADaemonsSchemaNineFileKeepsEveryRowItsIdeasAndItsIdeaAgentCalls) {
  const std::string path = schema9_file();
  std::vector<std::string> columns, before;
  std::string sequences;
  {
    auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
    ASSERT_EQ(db::read_schema_version(conn), 9);
    // The fixture has what the test is about.
    ASSERT_EQ(single(conn, "SELECT count(*) FROM iterations"), "54");
    ASSERT_EQ(single(conn, "SELECT count(*) FROM idea_agent_calls"), "32");
    ASSERT_EQ(single(conn, "SELECT count(*) FROM idea_agent_ideas"), "2");
    ASSERT_EQ(single(conn, "SELECT group_concat(verdict, ',') FROM (SELECT verdict FROM ideas ORDER BY id)"),
              "win,broken");
    ASSERT_EQ(single(conn, "SELECT count(*) FROM idea_agent_calls WHERE champion_iteration_id IS NOT NULL"), "32");
    for (const auto& [table, order] : kTables) {
      columns.push_back(columns_of(conn, table));
      before.push_back(test::dump_rows(conn, columns.back(), table, order));
    }
    sequences = test::dump_rows(conn, "name, seq", "sqlite_sequence", "name");
  }

  auto db = ExperimentDb::open(path);  // migrates 9 -> 10 (the rebuild) and on
  auto& c = db.connection();
  EXPECT_EQ(db::read_schema_version(c), db::kSchemaVersion);
  EXPECT_EQ(single(c, "SELECT count(*) FROM schema_version WHERE version = 10"), "1");
  for (std::size_t i = 0; i < kTables.size(); ++i)
    EXPECT_EQ(test::dump_rows(c, columns[i], kTables[i].first, kTables[i].second), before[i]) << kTables[i].first;
  EXPECT_EQ(single(c, "SELECT type FROM sqlite_master WHERE name = 'iterations'"), "view");
  // Configs stored once: one row per distinct (template, params_json) of the file; cases and GPUs likewise.
  EXPECT_EQ(single(c, "SELECT count(*) FROM configs"),
            single(c, "SELECT count(*) FROM (SELECT template, params_json FROM iterations UNION SELECT template, "
                      "params_json FROM variants)"));
  EXPECT_EQ(single(c, "SELECT count(*) FROM cases"),
            single(c, "SELECT count(*) FROM (SELECT DISTINCT case_id, family FROM case_results)"));
  // The idea agent's champion iteration points at the stored rows, and every foreign key holds.
  EXPECT_EQ(single(c, "SELECT \"table\" FROM pragma_foreign_key_list('idea_agent_calls') WHERE \"from\" = "
                      "'champion_iteration_id'"),
            "iteration_rows");
  EXPECT_EQ(single(c, "SELECT count(*) FROM pragma_foreign_key_check"), "0");
  EXPECT_EQ(single(c, "SELECT count(*) FROM idea_agent_calls a JOIN iterations i ON i.id = a.champion_iteration_id"),
            "32");
  // The AUTOINCREMENT counters carry over.
  EXPECT_EQ(test::dump_rows(c, "replace(replace(name, 'iteration_rows', 'iterations'), 'variant_rows', 'variants'), "
                               "seq", "sqlite_sequence", "replace(replace(name, 'iteration_rows', 'iterations'), "
                                                        "'variant_rows', 'variants')"),
            sequences);

  // Read through ExperimentDb as the commands read them.
  const auto calls = idea_agent_calls(db);
  ASSERT_EQ(calls.size(), 32u);
  EXPECT_EQ(calls[0].status, "done");
  EXPECT_NE(calls[0].reason.find("queued agent1_a_win.idea, agent1_b_bad.idea"), std::string::npos)
      << calls[0].reason;
  EXPECT_EQ(calls[0].parent_template, "fake");
  const auto written = idea_agent_ideas(db);
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0].queued_as, "agent1_a_win.idea");
  const auto ideas = db.ideas();
  ASSERT_EQ(ideas.size(), 2u);
  EXPECT_EQ(ideas[0].file, "agent1_a_win.idea");
  EXPECT_EQ(ideas[0].verdict, IdeaVerdict::win);
  EXPECT_EQ(ideas[1].verdict, IdeaVerdict::broken);
  const auto champ = db.champion("smoke", ChampionScope::overall);
  ASSERT_TRUE(champ);
  const auto it = db.iteration(champ->iteration_id);
  ASSERT_TRUE(it);
  EXPECT_EQ(it->params_json, single(c, "SELECT params_json FROM iterations WHERE id = " +
                                           std::to_string(champ->iteration_id)));
  EXPECT_EQ(it->cases.size(), std::stoul(single(c, "SELECT count(*) FROM case_results WHERE iteration_id = " +
                                                       std::to_string(champ->iteration_id))));

  // A new run's first iteration after the migration takes the next id.
  IterationRecord next;
  next.run_id = db.begin_run(test::sample_run("smoke"));
  next.suite = "smoke";
  next.template_name = "fake";
  next.params_json = R"({"A":6,"B":3,"F":0})";
  EXPECT_EQ(db.begin_iteration(next), 55);
}

}  // namespace
}  // namespace attn
