// The failure kinds of issue 30 (inconsistent, below_floor; docs/verification.md) in the experiment DB: a fresh
// file stores and reads them, a version-4 file refuses them until the 4 -> 5 migration rebuilds `iterations`
// with every row, id and the iter counter kept.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "db/schema.hpp"
#include "db/store.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

constexpr const char* kV4IterationColumns =
    "id, run_id, variant_id, suite, template, params_json, params, status, failure_kind, geomean_ms, delta_ms, "
    "window_ms, global_ms, retrieval_ms, description, started_at, finished_at, gpu_ms, compile_ms, fidelity, "
    "screen_ms, root_seed, proposal_id, gpu_index, gpu_uuid, sm_clock_mhz";

/// A crash iteration of template `template_name`, kind `kind`, with `cases`, on a new run of `db`; its iter.
std::int64_t add_crash(ExperimentDb& db, FailureKind kind, const std::string& description,
                       const std::string& template_name = "memo_o", std::vector<CaseResultRecord> cases = {}) {
  const auto run_id = db.begin_run(test::sample_run("quick"));
  IterationRecord it;
  it.run_id = run_id;
  it.suite = "quick";
  it.template_name = template_name;
  it.params_json = "{}";
  it.iter = db.begin_iteration(it);
  it.status = IterationStatus::crash;
  it.failure_kind = kind;
  it.description = description;
  it.cases = std::move(cases);
  db.finish_iteration(it);
  return it.iter;
}

TEST(VerificationKinds, AFreshFileStoresThem) {
  auto db = ExperimentDb::open(test::temp_dir("db-kinds") + "/fresh.db");
  EXPECT_EQ(db::read_schema_version(db.connection()), db::kSchemaVersion);
  const auto a = add_crash(db, FailureKind::inconsistent, "case quick-window-1: a timed launch on fresh inputs ...");
  const auto b = add_crash(db, FailureKind::below_floor, "case quick-window-1: 4.85 us is below its roofline floor");
  EXPECT_EQ(db.iteration(a)->failure_kind, FailureKind::inconsistent);
  EXPECT_EQ(db.iteration(b)->failure_kind, FailureKind::below_floor);
  // The CHECK still refuses a name that is not a kind.
  EXPECT_THROW(db.connection().exec("UPDATE iteration_rows SET failure_kind = 'cheat' WHERE id = " + std::to_string(a)),
               sqlite::Error);
}

TEST(VerificationKinds, AnInfiniteMaxDiffIsStoredAsNull) {
  // A kernel that leaves elements unwritten fails with o diff inf (the NaN poison against a finite
  // reference): the iteration is stored, its diffs NULL, instead of the DB refusing the row and the run.
  auto db = ExperimentDb::open(test::temp_dir("db-kinds") + "/inf.db");
  CaseResultRecord c;
  c.case_id = "quick-window-1";
  c.family = Family::sliding_window;
  c.o_max_abs_diff = std::numeric_limits<double>::infinity();
  c.lse_max_abs_diff = 0.5;
  c.passed = false;
  const auto iter = add_crash(db, FailureKind::wrong_result,
                              "wrong result on quick-window-1: o max diff inf, lse max diff inf", "sampled_rows", {c});
  const auto back = db.iteration(iter);
  ASSERT_EQ(back->cases.size(), 1u);
  EXPECT_FALSE(back->cases[0].o_max_abs_diff);
  EXPECT_EQ(back->cases[0].lse_max_abs_diff, 0.5);
  EXPECT_EQ(back->status, IterationStatus::crash);
}

TEST(VerificationKinds, VersionFourFileIsRebuiltWithEveryRow) {
  const std::string path = test::temp_dir("db-kinds") + "/v4.db";
  {
    // A version-4 file as the previous build left it: the frozen version-1 DDL and the built-in steps 1..3.
    auto conn = test::create_v1_db(path);
    conn.exec("INSERT INTO schema_version (version) VALUES (1)");
    conn.exec("PRAGMA foreign_keys = OFF");
    for (const auto& m : db::builtin_migrations())
      if (m.from_version < 4) {
        m.apply(conn);
        conn.prepare("INSERT INTO schema_version (version) VALUES (?)").bind(1, m.from_version + 1).run();
      }
    conn.exec("PRAGMA foreign_keys = ON");
    conn.exec(R"sql(
      INSERT INTO runs (suite, suite_json, strategy) VALUES ('quick', '[]', 'local');
      INSERT INTO variants (template, params_json, params, content_hash, compile_ok) VALUES ('fa2_mma', '{}', '', 'h', 1);
      INSERT INTO iterations (run_id, variant_id, suite, template, params_json, params, status, failure_kind,
                              geomean_ms, description, finished_at, fidelity, root_seed, gpu_index, gpu_uuid,
                              sm_clock_mhz)
        VALUES (1, 1, 'quick', 'fa2_mma', '{}', '', 'keep', 'none', 0.09, 'first', '2026-11-26T00:00:00.000Z', 'full',
                0, 0, 'GPU-1', 1980),
               (1, 1, 'quick', 'fa2_mma', '{"x":1}', 'x=1', 'crash', 'wrong_result', NULL, 'wrong', '2026-11-26T00:01:00.000Z',
                'screen', 0, 0, 'GPU-1', 1980),
               (1, NULL, 'quick', 'fa2_mma', '{"x":2}', 'x=2', 'crash', 'proposal', NULL, 'refused', NULL, 'full', NULL,
                NULL, NULL, NULL),
               (1, NULL, 'quick', 'fa2_mma', '{"x":3}', 'x=3', 'running', 'none', NULL, 'deleted below', NULL, 'full',
                NULL, NULL, NULL, NULL);
      DELETE FROM iterations WHERE id = 4;
      INSERT INTO case_results (iteration_id, case_id, family, median_ms, samples, passed)
        VALUES (1, 'quick-window-1', 'sliding_window', 0.09, 10, 1);
      INSERT INTO champions (suite, scope, iteration_id, score_ms) VALUES ('quick', 'overall', 1, 0.09);
      INSERT INTO iteration_sources (iteration_id, source_db, source_run_id, source_iteration_id)
        VALUES (2, '/a.db', 1, 7);
    )sql");
    // Version 4's CHECK does not know the new kinds: the migration is needed.
    EXPECT_THROW(conn.exec("UPDATE iterations SET failure_kind = 'inconsistent' WHERE id = 2"), sqlite::Error);
  }
  std::string before;
  {
    auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
    before = test::dump_rows(conn, kV4IterationColumns, "iterations", "id");
  }
  auto db = ExperimentDb::open(path);  // migrates 4 -> 5
  auto& c = db.connection();
  std::string versions;  // every step recorded, 5 and any later one
  for (int v = 1; v <= db::kSchemaVersion; ++v) versions += std::to_string(v) + "|\n";
  EXPECT_EQ(test::dump_rows(c, "version", "schema_version", "version"), versions);
  EXPECT_EQ(test::dump_rows(c, kV4IterationColumns, "iterations", "id"), before);
  EXPECT_EQ(test::dump_rows(c, "*", "pragma_foreign_key_check", "1"), "");
  EXPECT_EQ(test::dump_rows(c, "foreign_keys", "pragma_foreign_keys", "1"), "1|\n");
  EXPECT_EQ(test::dump_rows(c, "name", "sqlite_master WHERE type = 'index' AND tbl_name = 'iteration_rows'", "name"),
            "iterations_by_config|\niterations_by_proposal|\niterations_by_run|\niterations_by_suite|\n");
  EXPECT_EQ(db.iteration(1)->cases.size(), 1u);
  // The counter goes on after the deleted 4; the new kinds pass the rebuilt CHECK.
  const auto it = add_crash(db, FailureKind::below_floor, "case quick-window-1: below its floor");
  EXPECT_EQ(it, 5);
  EXPECT_EQ(db.iteration(it)->failure_kind, FailureKind::below_floor);
  EXPECT_EQ(add_crash(db, FailureKind::inconsistent, "x"), 6);
  // Foreign keys are enforced again.
  EXPECT_THROW(c.exec("INSERT INTO case_results (iteration_id, case_id, family, passed) VALUES (99, 'x', "
                      "'sliding_window', 1)"),
               sqlite::Error);
}

}  // namespace
}  // namespace attn
