// Migration of a version-1 experiment DB (tests/data/db/schema_v1.sql, frozen) to the current schema:
// every row kept with its id, foreign keys intact, the iter counter continued, the new columns usable.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "db/schema.hpp"
#include "db/store.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

/// A version-1 file as an older attn-tuner left it: two runs, variants, iterations of every status with
/// case results, champions and their history; iteration 5 was deleted by hand (the counter is at 6).
std::string make_v1_db() {
  const std::string path = test::temp_dir("db-migrate") + "/v1.db";
  auto conn = test::create_v1_db(path);
  conn.exec(R"sql(
    INSERT INTO schema_version (version) VALUES (1);
    INSERT INTO runs (suite, suite_json, strategy, templates, gpu_name, status, stop_reason, ended_at)
      VALUES ('quick', '[]', 'local', '["fa2_mma"]', 'NVIDIA H200', 'finished', 'budget', '2026-11-20T01:00:00.000Z');
    INSERT INTO runs (suite, suite_json, strategy, status) VALUES ('full', '[]', 'random', 'interrupted');
    INSERT INTO variants (template, params_json, params, content_hash, compile_ok, compile_ms, registers, cubin_path)
      VALUES ('fa2_mma', '{"BLOCK_N":64}', 'BLOCK_N=64', 'h1', 1, 150.0, 128, '/c/h1.cubin'),
             ('fa2_mma', '{"BLOCK_N":128}', 'BLOCK_N=128', 'h2', 0, 90.0, NULL, NULL);
    INSERT INTO iterations (run_id, variant_id, suite, template, params_json, params, status, failure_kind,
                            geomean_ms, delta_ms, window_ms, global_ms, retrieval_ms, description, finished_at,
                            gpu_ms, compile_ms)
      VALUES (1, 1, 'quick', 'fa2_mma', '{"BLOCK_N":64}', 'BLOCK_N=64', 'keep', 'none', 0.08, NULL, 0.07, 0.08,
              0.09, 'first', '2026-11-20T00:10:00.000Z', 1200.5, 150.0),
             (1, 2, 'quick', 'fa2_mma', '{"BLOCK_N":128}', 'BLOCK_N=128', 'crash', 'compile', NULL, NULL, NULL,
              NULL, NULL, 'compile error: x', '2026-11-20T00:11:00.000Z', NULL, 90.0),
             (1, 1, 'quick', 'fa2_mma', '{"BLOCK_N":64,"x":1}', 'BLOCK_N=64,x=1', 'discard', 'none', 0.09, 0.01,
              0.08, 0.09, 0.1, 'slower', '2026-11-20T00:12:00.000Z', 900.0, 0.0),
             (2, NULL, 'full', 'fa2_mma', '{"BLOCK_N":32}', 'BLOCK_N=32', 'interrupted', 'interrupted', NULL,
              NULL, NULL, NULL, NULL, 'killed', '2026-11-20T02:00:00.000Z', NULL, NULL),
             (2, NULL, 'full', 'fa2_mma', '{"BLOCK_N":16}', 'BLOCK_N=16', 'running', 'none', NULL,
              NULL, NULL, NULL, NULL, 'deleted below', NULL, NULL, NULL),
             (2, 1, 'full', 'fa2_mma', '{"BLOCK_N":64}', 'BLOCK_N=64', 'keep', 'none', 0.3, NULL, 0.2, 0.3,
              0.4, 'full first', '2026-11-20T02:10:00.000Z', 5000.0, 0.0);
    DELETE FROM iterations WHERE id = 5;
    INSERT INTO case_results (iteration_id, case_id, family, median_ms, spread, samples, passed)
      VALUES (1, 'w-1', 'sliding_window', 0.07, 0.004, 20, 1), (1, 'g-1', 'sliding_window_global', 0.08, 0.003, 20, 1),
             (3, 'w-1', 'sliding_window', 0.08, 0.005, 20, 1), (6, 'w-9', 'sliding_window', 0.2, 0.01, 12, 1);
    INSERT INTO champions (suite, scope, iteration_id, score_ms) VALUES ('quick', 'overall', 1, 0.079),
                                                                        ('full', 'overall', 6, 0.3);
    INSERT INTO champion_history (suite, scope, iteration_id, score_ms, previous_iteration_id, previous_score_ms,
                                  aba_json)
      VALUES ('quick', 'overall', 3, 0.09, NULL, NULL, '{}'), ('quick', 'overall', 1, 0.079, 3, 0.09, '{"a":[1]}');
  )sql");
  return path;
}

TEST(Migration, VersionOneFileKeepsEveryRowAndGainsProposals) {
  const std::string path = make_v1_db();
  std::string before_iterations, before_cases, before_champions, before_history, before_variants, before_runs;
  {
    auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
    before_iterations = test::dump_rows(conn, test::kV1IterationColumns, "iterations", "id");
    before_cases = test::dump_rows(conn, "*", "case_results", "iteration_id, case_id");
    before_champions = test::dump_rows(conn, "*", "champions", "suite, scope");
    before_history = test::dump_rows(conn, "*", "champion_history", "id");
    before_variants = test::dump_rows(conn, test::kV1VariantColumns, "variants", "id");
    before_runs = test::dump_rows(conn, "*", "runs", "id");
  }
  EXPECT_EQ(before_iterations.find("deleted below"), std::string::npos);  // row 5 is gone

  auto db = ExperimentDb::open(path);  // migrates
  auto& c = db.connection();
  EXPECT_EQ(db::read_schema_version(c), db::kSchemaVersion);
  std::string versions;  // one row per step: 1, 2, 3, 4, ... kSchemaVersion
  for (int v = 1; v <= db::kSchemaVersion; ++v) versions += std::to_string(v) + "|\n";
  EXPECT_EQ(test::dump_rows(c, "version", "schema_version", "version"), versions);
  EXPECT_EQ(test::dump_rows(c, test::kV1IterationColumns, "iterations", "id"), before_iterations);
  EXPECT_EQ(test::dump_rows(c, "*", "case_results", "iteration_id, case_id"), before_cases);
  EXPECT_EQ(test::dump_rows(c, "*", "champions", "suite, scope"), before_champions);
  EXPECT_EQ(test::dump_rows(c, "*", "champion_history", "id"), before_history);
  EXPECT_EQ(test::dump_rows(c, test::kV1VariantColumns, "variants", "id"), before_variants);
  EXPECT_EQ(test::dump_rows(c, "count(*)", "variants WHERE cubin_hash IS NOT NULL", "1"), "0|\n");  // unknown until back-filled
  EXPECT_EQ(test::dump_rows(c, "*", "runs", "id"), before_runs);
  EXPECT_EQ(test::dump_rows(c, "count(*)", "iterations WHERE proposal_id IS NOT NULL", "1"), "0|\n");
  EXPECT_EQ(test::dump_rows(c, "*", "pragma_foreign_key_check", "1"), "");
  EXPECT_EQ(test::dump_rows(c, "foreign_keys", "pragma_foreign_keys", "1"), "1|\n");  // back on after the rebuild
  EXPECT_EQ(test::dump_rows(c, "name", "sqlite_master WHERE type = 'index' AND tbl_name = 'iteration_rows'", "name"),
            "iterations_by_config|\niterations_by_proposal|\niterations_by_run|\niterations_by_suite|\n");
  // Version 9: one configs row per distinct (template, config) of iterations and variants; the views show them.
  EXPECT_EQ(test::dump_rows(c, "count(*)", "configs", "1"), "4|\n");  // BLOCK_N 64, 128, 32 and 64 with x
  EXPECT_EQ(test::dump_rows(c, "type", "sqlite_master WHERE name IN ('iterations', 'variants')", "name"), "view|\nview|\n");

  // The API reads the old rows; the iter counter goes on after the deleted 5 and 6 (never reused).
  const auto it1 = db.iteration(1);
  ASSERT_TRUE(it1);
  EXPECT_EQ(it1->status, IterationStatus::keep);
  EXPECT_EQ(it1->cases.size(), 2u);
  EXPECT_FALSE(it1->proposal_id);
  auto run = test::sample_run("quick");
  const auto run_id = db.begin_run(run);
  ProposalRecord p;
  p.run_id = run_id;
  p.command = "python3 mutate.py";
  p.parent_template = "fa2_mma";
  p.parent_iteration_id = 1;
  const auto pid = db.begin_proposal(p);
  IterationRecord it;
  it.run_id = run_id;
  it.suite = "quick";
  it.template_name = "fa2_mma_p1";
  it.params_json = "{}";
  it.proposal_id = pid;
  it.iter = db.begin_iteration(it);
  EXPECT_EQ(it.iter, 7);
  it.status = IterationStatus::crash;
  it.failure_kind = FailureKind::proposal;  // the new kind passes the rebuilt CHECK
  it.description = "proposal 1: rejected";
  db.finish_iteration(it);
  EXPECT_EQ(db.iteration(7)->proposal_id, pid);
  EXPECT_EQ(db.iteration(7)->failure_kind, FailureKind::proposal);
  // Foreign keys are enforced again.
  EXPECT_THROW(c.exec("INSERT INTO case_rows (iteration_id, case_key, passed) VALUES (99, 1, 1)"), sqlite::Error);
}

TEST(Migration, VersionFourColumnsOfAMigratedFileMatchAFreshOne) {
  // 3 -> 4 appends iterations.gpu_index / gpu_uuid / sm_clock_mhz: a migrated file has a fresh file's
  // column order in every table, and the new provenance table; old rows read NULL there.
  const std::string migrated = make_v1_db();
  const std::string fresh = test::temp_dir("fresh_v4") + "/fresh.db";
  auto m = ExperimentDb::open(migrated);
  auto f = ExperimentDb::open(fresh);
  for (const char* table : {"runs", "variants", "iterations", "case_results", "champions", "champion_history",
                            "holdout_checks", "proposals", "iteration_sources", "harness_checks"}) {
    const std::string cols = std::string("pragma_table_info('") + table + "')";
    EXPECT_EQ(test::dump_rows(m.connection(), "name, type", cols, "cid"), test::dump_rows(f.connection(), "name, type", cols, "cid")) << table;
  }
  EXPECT_NE(test::dump_rows(f.connection(), "name", "pragma_table_info('iterations')", "cid").find("proposal_id|\ngpu_index|\ngpu_uuid|\nsm_clock_mhz|\n"),
            std::string::npos);
  const auto it1 = m.iteration(1);
  ASSERT_TRUE(it1);
  EXPECT_FALSE(it1->gpu_index);
  EXPECT_EQ(it1->gpu_uuid, "");
  EXPECT_FALSE(it1->sm_clock_mhz);
}

TEST(Migration, AFailingRebuildLeavesTheVersionOneFileAsItWas) {
  const std::string path = make_v1_db();
  std::string before;
  {
    auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
    before = test::dump_rows(conn, test::kV1IterationColumns, "iterations", "id");
  }
  auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_write);
  db::configure_connection(conn);
  // The built-in step, then a dangling reference: foreign_key_check refuses the commit.
  std::vector<db::Migration> chain = {{1,
                                       [](sqlite::Connection& c) {
                                         db::builtin_migrations().front().apply(c);
                                         c.exec("UPDATE case_results SET iteration_id = 99 WHERE iteration_id = 3");
                                       },
                                       true}};
  try {
    db::ensure_schema(conn, db::kSchemaVersion, chain);
    ADD_FAILURE() << "a broken foreign key was committed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("broke a foreign key (table case_results"), std::string::npos) << e.what();
  }
  EXPECT_EQ(db::read_schema_version(conn), 1);
  EXPECT_EQ(test::dump_rows(conn, test::kV1IterationColumns, "iterations", "id"), before);
  EXPECT_EQ(test::dump_rows(conn, "count(*)", "sqlite_master WHERE name = 'proposals'", "1"), "0|\n");
  EXPECT_EQ(test::dump_rows(conn, "foreign_keys", "pragma_foreign_keys", "1"), "1|\n");
}

}  // namespace
}  // namespace attn
