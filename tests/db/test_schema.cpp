// Schema creation, version check, migration hook, and the errors for files that are not our DB.
#include <gtest/gtest.h>

#include <fstream>
#include <filesystem>

#include <fmt/format.h>

#include "db/idea_repeats.hpp"
#include "db/schema.hpp"
#include "db/store.hpp"
#include "db/store_idea_agents.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

std::string single_text(sqlite::Connection& conn, const std::string& sql) {
  auto st = conn.prepare(sql);
  EXPECT_TRUE(st.step()) << sql;
  return st.column_text(0);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Schema, CreatesEveryTableAtTheCurrentVersionInWalMode) {
  auto dir = test::temp_dir("db-schema");
  const auto path = dir + "/sub/attn-tuner.db";  // the folder is created too
  {
    auto db = ExperimentDb::open(path);
    auto& c = db.connection();
    EXPECT_EQ(single_text(c, "SELECT MAX(version) FROM schema_version"), std::to_string(db::kSchemaVersion));
    EXPECT_EQ(single_text(c, "PRAGMA journal_mode"), "wal");
    EXPECT_EQ(single_text(c, "PRAGMA foreign_keys"), "1");
    EXPECT_EQ(single_text(c, "PRAGMA synchronous"), "2");  // FULL
    auto st = c.prepare("SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master "
                        "WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name)");
    ASSERT_TRUE(st.step());
    EXPECT_EQ(st.column_text(0),
              "case_rows,cases,champion_history,champions,configs,gpus,harness_checks,holdout_checks,idea_agent_calls,"
              "idea_agent_ideas,idea_repeats,ideas,"
              "iteration_rows,iteration_sources,param_names,proposals,runs,schema_version,spare_evaluations,variant_rows");
    // Version 10: the rows of version 8's iterations, variants and case_results are read through views of those names.
    EXPECT_EQ(single_text(c, "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE type = 'view' "
                             "ORDER BY name)"),
              "case_results,iterations,variants");
    EXPECT_EQ(db::read_schema_version(c), db::kSchemaVersion);
  }
  // A fresh file took every step of the chain (a row each); reopening neither recreates nor re-records one.
  auto db = ExperimentDb::open(path);
  EXPECT_EQ(single_text(db.connection(), "SELECT count(*) FROM schema_version"), std::to_string(db::kSchemaVersion));
  EXPECT_EQ(single_text(db.connection(), "SELECT min(version) FROM schema_version"), "1");
  auto ro = ExperimentDb::open(path, ExperimentDb::Mode::read_only);
  EXPECT_TRUE(ro.read_only());
  EXPECT_EQ(single_text(ro.connection(), "PRAGMA foreign_keys"), "1");
}

TEST(Schema, RefusesANewerSchemaVersionNamingTheFile) {
  auto path = test::temp_dir("db-schema") + "/future.db";
  { ExperimentDb::open(path); }
  {
    auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_write);
    conn.exec(fmt::format("INSERT INTO schema_version (version) VALUES ({})", db::kSchemaVersion + 1));
  }
  for (auto mode : {ExperimentDb::Mode::read_write, ExperimentDb::Mode::read_only}) {
    auto msg = error_of([&] { ExperimentDb::open(path, mode); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("schema version {}, newer than the {}", db::kSchemaVersion + 1, db::kSchemaVersion)),
              std::string::npos)
        << msg;
  }
  // Refusing did not touch the file.
  auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
  EXPECT_EQ(single_text(conn, "SELECT MAX(version) FROM schema_version"), std::to_string(db::kSchemaVersion + 1));
}

TEST(Schema, MigrationHookAppliesTheChainInOrderInsideTransactions) {
  auto path = test::temp_dir("db-schema") + "/migrate.db";
  { ExperimentDb::open(path); }
  auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_write);
  db::configure_connection(conn);
  const int v = db::kSchemaVersion;  // steps beyond this build's version, so the chain is ours alone
  std::vector<int> applied;
  std::vector<db::Migration> chain = {
      {v + 1, [&](sqlite::Connection& c) { applied.push_back(v + 1); c.exec("ALTER TABLE runs ADD COLUMN note2 TEXT"); }},
      {v, [&](sqlite::Connection& c) { applied.push_back(v); c.exec("ALTER TABLE runs ADD COLUMN note1 TEXT"); }},
  };
  db::ensure_schema(conn, v + 2, chain);
  EXPECT_EQ(applied, (std::vector<int>{v, v + 1}));
  EXPECT_EQ(db::read_schema_version(conn), v + 2);
  conn.prepare("SELECT note1, note2 FROM runs").run();  // both columns exist

  // A failing step leaves the version and the schema as they were.
  std::vector<db::Migration> broken = {
      {v + 2, [](sqlite::Connection& c) {
         c.exec("ALTER TABLE runs ADD COLUMN note3 TEXT");
         throw std::runtime_error("step failed");
       }}};
  EXPECT_THROW(db::ensure_schema(conn, v + 3, broken), std::runtime_error);
  EXPECT_EQ(db::read_schema_version(conn), v + 2);
  EXPECT_THROW(conn.prepare("SELECT note3 FROM runs"), sqlite::Error);

  // No step from v + 2 to v + 3 known: a clear error.
  auto msg = error_of([&] { db::ensure_schema(conn, v + 3, chain); });
  EXPECT_NE(msg.find("no migration to " + std::to_string(v + 3)), std::string::npos) << msg;
  // And this build now refuses the file.
  EXPECT_THROW(ExperimentDb::open(path), std::runtime_error);
}

TEST(Schema, OlderVersionCannotBeMigratedReadOnly) {
  auto path = test::temp_dir("db-schema") + "/old.db";
  { ExperimentDb::open(path); }
  auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
  db::configure_connection(conn);
  const int v = db::kSchemaVersion;
  std::vector<db::Migration> chain = {{v, [](sqlite::Connection&) {}}};
  auto msg = error_of([&] { db::ensure_schema(conn, v + 1, chain); });
  EXPECT_NE(msg.find("needs migrating to " + std::to_string(v + 1)), std::string::npos) << msg;
}

TEST(Schema, AStepThatOnlyAddsTablesIsReadWithoutMigrating) {
  // A step marked readable_without (6 -> 7 harness_checks, 7 -> 8 ideas): a read-only connection reads the file
  // as it is, and its version stays.
  auto path = test::temp_dir("db-schema") + "/readable.db";
  { ExperimentDb::open(path); }
  auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
  db::configure_connection(conn);
  const int v = db::kSchemaVersion;
  std::vector<db::Migration> chain = {{v, [](sqlite::Connection& c) { c.exec("CREATE TABLE later (a)"); }, false, true}};
  db::ensure_schema(conn, v + 1, chain);
  EXPECT_EQ(db::read_schema_version(conn), v);
}

TEST(Schema, AVersionSixFileNeedsMigratingAndAWriterMigratesIt) {
  // 6 -> 7, 7 -> 8 and 8 -> 9 only add tables, but 9 -> 10 rebuilds iterations and variants (configs stored once): a
  // read-only open of a version-6 file says to migrate it; a read-write open migrates it.
  auto path = test::temp_dir("db-schema") + "/v6.db";
  test::create_db_at_version(path, 6);
  auto msg = error_of([&] { ExperimentDb::open(path, ExperimentDb::Mode::read_only); });
  EXPECT_NE(msg.find("has schema version 6 and needs migrating to " + std::to_string(db::kSchemaVersion)),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("attn-tuner db migrate"), std::string::npos) << msg;
  auto db = ExperimentDb::open(path);
  EXPECT_EQ(db::read_schema_version(db.connection()), db::kSchemaVersion);
  HarnessCheckRecord h;
  h.suite = "quick";
  h.export_suite = "full";
  h.valid = true;
  h.score_ms = 0.36;
  h.family_ms_json = R"({"sliding_window": 0.35})";
  h.submission_dir = "/tmp/sub";
  EXPECT_EQ(db.add_harness_check(h), 1);
  const auto checks = db.harness_checks();
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].export_suite, "full");
  EXPECT_EQ(checks[0].score_ms, std::optional<double>(0.36));
  EXPECT_FALSE(checks[0].root_seed);
  EXPECT_FALSE(checks[0].harness_commit);
  h.family_ms_json = "{not json";
  EXPECT_THROW(db.add_harness_check(h), std::invalid_argument);
}

TEST(Schema, IdeasAreStoredUpdatedAndInterruptedInAMigratedVersionSevenFile) {
  auto path = test::temp_dir("db-schema") + "/v7.db";
  test::create_db_at_version(path, 7);
  auto db = ExperimentDb::open(path);
  EXPECT_EQ(db::read_schema_version(db.connection()), db::kSchemaVersion);
  const auto run = test::begin_test_run(db, "smoke", "fake");
  IdeaRecord i;
  i.run_id = run;
  i.file = "a.idea";
  i.idea_hash = "h1";
  i.description = "one line";
  i.space_json = R"({"X": [0, 1]})";
  const auto id = db.add_idea(i);
  auto got = db.idea(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, IdeaStatus::checking);
  EXPECT_EQ(got->space_json, R"({"X": [0, 1]})");
  EXPECT_TRUE(got->finished_at.empty());
  got->status = IdeaStatus::tuning;
  got->configs = 3;
  db.update_idea(*got);
  i.file = "b.idea";
  i.idea_hash = "h2";
  const auto id2 = db.add_idea(i);
  auto second = *db.idea(id2);
  second.status = IdeaStatus::done;
  second.verdict = IdeaVerdict::slower;
  second.delta_pct = 4.5;
  db.update_idea(second);
  EXPECT_FALSE(db.idea(id2)->finished_at.empty());
  EXPECT_EQ(db.mark_interrupted_ideas(), std::vector<std::int64_t>{id});  // the done one stays done
  EXPECT_EQ(db.idea(id)->status, IdeaStatus::interrupted);
  EXPECT_EQ(db.idea(id)->configs, 3);
  EXPECT_EQ(db.idea(id2)->delta_pct, std::optional<double>(4.5));
  // Bad rows are refused, naming the problem.
  auto bad = second;
  bad.verdict = IdeaVerdict::none;
  EXPECT_THROW(db.update_idea(bad), std::invalid_argument);  // done without a verdict
  bad = second;
  bad.aba_json = "{";
  EXPECT_THROW(db.update_idea(bad), std::invalid_argument);
  bad = second;
  bad.id = 999;
  EXPECT_THROW(db.update_idea(bad), std::invalid_argument);
  bad = i;
  bad.run_id = 42;
  EXPECT_THROW(db.add_idea(bad), std::invalid_argument);
  EXPECT_EQ(db.ideas().size(), 2u);
  // Status, verdict and broken kind are stored by name; a name no build knows is an error naming it.
  EXPECT_EQ(*db.sql_readonly("SELECT status || ':' || verdict FROM ideas WHERE id = " + std::to_string(id2)).rows.at(0).at(0),
            "done:slower");
  db.connection().exec("UPDATE ideas SET broken_kind = 'gremlins' WHERE id = " + std::to_string(id2));
  EXPECT_NE(error_of([&] { db.idea(id2); }).find("unknown idea broken kind \"gremlins\""), std::string::npos);
}

TEST(Schema, NotASqliteFileIsAClearErrorNamingIt) {
  auto path = test::temp_dir("db-schema") + "/notes.txt";
  std::ofstream(path) << "iter\tgeomean_ms\n1\t0.5\n" << std::string(4096, 'x');
  for (auto mode : {ExperimentDb::Mode::read_write, ExperimentDb::Mode::read_only}) {
    auto msg = error_of([&] { ExperimentDb::open(path, mode); });
    EXPECT_NE(msg.find(path + " is not a SQLite database"), std::string::npos) << msg;
  }
}

TEST(Schema, ADatabaseOfAnotherSchemaIsAClearErrorNamingIt) {
  auto path = test::temp_dir("db-schema") + "/other.db";
  {
    auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_write_create);
    conn.exec("CREATE TABLE songs (title TEXT); CREATE TABLE albums (name TEXT)");
  }
  auto msg = error_of([&] { ExperimentDb::open(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("another schema"), std::string::npos) << msg;
  EXPECT_NE(msg.find("albums, songs"), std::string::npos) << msg;

  // A schema_version table alone does not make it ours either.
  auto path2 = test::temp_dir("db-schema") + "/lookalike.db";
  {
    auto conn = sqlite::Connection::open(path2, sqlite::OpenMode::read_write_create);
    conn.exec("CREATE TABLE schema_version (version INTEGER); INSERT INTO schema_version VALUES (1)");
  }
  msg = error_of([&] { ExperimentDb::open(path2); });
  EXPECT_NE(msg.find("lacks the table(s) runs, variants"), std::string::npos) << msg;
}

TEST(Schema, ReadOnlyOpenNeverCreatesAFile) {
  auto dir = test::temp_dir("db-schema");
  auto msg = error_of([&] { ExperimentDb::open(dir + "/missing.db", ExperimentDb::Mode::read_only); });
  EXPECT_NE(msg.find(dir + "/missing.db"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir + "/missing.db"));

  // An empty (zero-byte) file is a valid SQLite file but not an experiment DB.
  std::ofstream(dir + "/empty.db").close();
  msg = error_of([&] { ExperimentDb::open(dir + "/empty.db", ExperimentDb::Mode::read_only); });
  EXPECT_NE(msg.find("empty database"), std::string::npos) << msg;
  // Read-write turns it into one.
  EXPECT_NO_THROW(ExperimentDb::open(dir + "/empty.db"));
  EXPECT_NO_THROW(ExperimentDb::open(dir + "/empty.db", ExperimentDb::Mode::read_only));
}

TEST(Schema, IdeaAgentCallsAndTheirIdeasAreRecordedInAMigratedVersionEightFile) {
  // 8 -> 9 only adds the idea agent's tables, but 9 -> 10 rebuilds iterations: a read-only open of a version-8
  // file says to migrate it; a writer migrates it and records calls.
  auto path = test::temp_dir("db-schema") + "/v8.db";
  test::create_db_at_version(path, 8);
  const auto msg = error_of([&] { ExperimentDb::open(path, ExperimentDb::Mode::read_only); });
  EXPECT_NE(msg.find("has schema version 8 and needs migrating"), std::string::npos) << msg;
  auto db = ExperimentDb::open(path);
  EXPECT_EQ(db::read_schema_version(db.connection()), db::kSchemaVersion);
  const auto run = test::begin_test_run(db, "smoke", "fake");
  IdeaAgentCallRecord c;
  c.run_id = run;
  c.command = "agent.sh";
  c.id = begin_idea_agent_call(db, c);
  EXPECT_EQ(c.id, 1);
  c.context_json = R"({"IDEA.md": "rules"})";
  finish_idea_agent_call(db, c);  // the kit, recorded while it runs
  EXPECT_TRUE(idea_agent_calls(db).at(0).finished_at.empty());
  add_idea_agent_idea(db, {c.id, "a.idea", "agent1_a.idea", "h1", "Description: a\n"});
  EXPECT_THROW(add_idea_agent_idea(db, {c.id, "a.idea", "agent1_a.idea", "h1", "again"}), std::exception);
  const auto c2 = begin_idea_agent_call(db, c);
  c.status = "done";
  c.reason = "queued agent1_a.idea";
  c.agent_ms = 1500.0;
  finish_idea_agent_call(db, c);
  const auto calls = idea_agent_calls(db);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].status, "done");
  EXPECT_FALSE(calls[0].finished_at.empty());
  EXPECT_EQ(calls[0].context_json, R"({"IDEA.md": "rules"})");
  EXPECT_EQ(calls[0].agent_ms, std::optional<double>(1500.0));
  EXPECT_EQ(idea_agent_ideas(db, c.id).at(0).queued_as, "agent1_a.idea");
  EXPECT_TRUE(idea_agent_ideas(db, c2).empty());
  // A daemon killed while call 2 ran: the next start marks it interrupted.
  EXPECT_EQ(mark_interrupted_idea_agent_calls(db), std::vector<std::int64_t>{c2});
  EXPECT_EQ(idea_agent_calls(db).at(1).status, "interrupted");
  c.status = "bogus";
  EXPECT_THROW(finish_idea_agent_call(db, c), std::invalid_argument);
  c.status = "done";
  c.id = 99;
  EXPECT_THROW(finish_idea_agent_call(db, c), std::invalid_argument);
  c.run_id = 42;
  EXPECT_THROW(begin_idea_agent_call(db, c), std::invalid_argument);
}

TEST(Schema, AVersionElevenFileReadsWithoutRepeatedJudgmentsAndAWriterAddsThem) {
  // 11 -> 12 only adds idea_repeats: a read-only open reads a version-11 file as it is (none repeated).
  auto path = test::temp_dir("db-schema") + "/v11.db";
  std::int64_t first = 0, second = 0;
  {
    auto db = ExperimentDb::open(path);
    const auto run = test::begin_test_run(db, "full", "fa3_tma");
    IdeaRecord i;
    i.run_id = run;
    i.file = "a.idea";
    i.idea_hash = "h";
    i.status = IdeaStatus::done;
    i.verdict = IdeaVerdict::no_gain;
    first = db.add_idea(i);
    second = db.add_idea(i);
    db.connection().exec("DROP TABLE idea_repeats");
    db.connection().exec("DELETE FROM schema_version WHERE version > 11");
  }
  {
    auto ro = ExperimentDb::open(path, ExperimentDb::Mode::read_only);
    EXPECT_EQ(db::read_schema_version(ro.connection()), 11);
    EXPECT_TRUE(idea_repeats(ro).empty());
  }
  auto db = ExperimentDb::open(path);
  EXPECT_EQ(db::read_schema_version(db.connection()), db::kSchemaVersion);
  add_idea_repeat(db, second, first);
  EXPECT_EQ(idea_repeats(db), (std::map<std::int64_t, std::int64_t>{{second, first}}));
  EXPECT_THROW(add_idea_repeat(db, second, second), std::invalid_argument);
  EXPECT_THROW(add_idea_repeat(db, second, 99), std::invalid_argument);
}

TEST(Schema, AVersionTenFileReadsWithoutSpareEvaluationsAndAWriterAddsThem) {
  // 10 -> 11 only adds spare_evaluations: a read-only open reads a version-10 file as it is (none).
  auto path = test::temp_dir("db-schema") + "/v10.db";
  {
    auto db = ExperimentDb::open(path);
    db.connection().exec("DROP TABLE spare_evaluations");
    db.connection().exec("DROP TABLE idea_repeats");
    db.connection().exec("DELETE FROM schema_version WHERE version > 10");
  }
  {
    auto ro = ExperimentDb::open(path, ExperimentDb::Mode::read_only);
    EXPECT_EQ(db::read_schema_version(ro.connection()), 10);
    EXPECT_TRUE(ro.spare_evaluations().empty());
  }
  auto db = ExperimentDb::open(path);
  EXPECT_EQ(db::read_schema_version(db.connection()), db::kSchemaVersion);
  const auto run = test::begin_test_run(db, "full", "fa3_tma");
  const auto [it, v] =
      test::test_iteration(run, "full", "fa3_tma", R"({"BLOCK_N":64})", "00112233445566778899aabbccddeeff");
  const auto [screened, vid] = db.begin_iteration_with_variant(it, v);
  const auto [spare, vid2] = db.begin_iteration_with_variant(it, v, screened);
  EXPECT_EQ(vid, vid2);
  EXPECT_EQ(db.spare_evaluations(), (std::vector<std::pair<std::int64_t, std::int64_t>>{{spare, screened}}));
  EXPECT_THROW(db.begin_iteration_with_variant(it, v, 999), std::invalid_argument);  // no such screen iteration
  EXPECT_EQ(db.iterations().size(), 2u);
}

}  // namespace
}  // namespace attn
