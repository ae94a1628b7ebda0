// Migration of a version-1 experiment DB (tests/data/db/schema_v1.sql, frozen) to the fidelity-ladder
// schema: every row kept with its values, old iterations read as fidelity `full` with no root seed, the
// new columns and the holdout_checks table usable, the iter counter continued.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "db/schema.hpp"
#include "db/store.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

/// A version-1 file as the previous attn-tuner left it: a finished run with a keep, a discard (with case
/// results), a compile crash and an interrupted iteration, a champion and its history.
std::string make_v1_db() {
  const std::string path = test::temp_dir("db-migrate-fid") + "/v1.db";
  auto conn = test::create_v1_db(path);
  conn.exec(R"sql(
    INSERT INTO schema_version (version) VALUES (1);
    INSERT INTO runs (suite, suite_json, strategy, templates, gpu_name, status, stop_reason, ended_at)
      VALUES ('full', '[]', 'local', '["wgmma_fa"]', 'NVIDIA H100', 'finished', 'budget', '2026-11-20T01:00:00.000Z');
    INSERT INTO variants (template, params_json, params, content_hash, compile_ok, compile_ms, registers, smem_bytes,
                          spill_bytes, cubin_path)
      VALUES ('wgmma_fa', '{"BLOCK_N":64}', 'BLOCK_N=64', 'h1', 1, 150.0, 168, 0, 0, '/c/h1.cubin'),
             ('wgmma_fa', '{"BLOCK_N":128}', 'BLOCK_N=128', 'h2', 1, 160.0, 236, 0, 0, '/c/h2.cubin'),
             ('wgmma_fa', '{"BLOCK_N":32}', 'BLOCK_N=32', 'h3', 0, 90.0, NULL, NULL, NULL, NULL);
    INSERT INTO iterations (run_id, variant_id, suite, template, params_json, params, status, failure_kind,
                            geomean_ms, delta_ms, window_ms, global_ms, retrieval_ms, description, finished_at,
                            gpu_ms, compile_ms)
      VALUES (1, 1, 'full', 'wgmma_fa', '{"BLOCK_N":64}', 'BLOCK_N=64', 'keep', 'none', 0.30, NULL, 0.25, 0.30,
              0.36, 'first', '2026-11-20T00:10:00.000Z', 2700.5, 150.0),
             (1, 2, 'full', 'wgmma_fa', '{"BLOCK_N":128}', 'BLOCK_N=128', 'discard', 'none', 0.33, 0.03, 0.27, 0.33,
              0.40, 'slower', '2026-11-20T00:11:00.000Z', 2750.0, 160.0),
             (1, 3, 'full', 'wgmma_fa', '{"BLOCK_N":32}', 'BLOCK_N=32', 'crash', 'compile', NULL, NULL, NULL, NULL,
              NULL, 'compile error: x', '2026-11-20T00:12:00.000Z', NULL, 90.0),
             (1, NULL, 'full', 'wgmma_fa', '{"BLOCK_N":256}', 'BLOCK_N=256', 'interrupted', 'interrupted', NULL, NULL,
              NULL, NULL, NULL, 'killed', '2026-11-20T00:13:00.000Z', NULL, NULL);
    INSERT INTO case_results (iteration_id, case_id, family, median_ms, spread, samples, sm_clock_mhz,
                              o_max_abs_diff, lse_max_abs_diff, passed)
      VALUES (2, 'full-window-1', 'sliding_window', 0.27, 0.004, 20, 1980, 0.0078, 1e-6, 1),
             (2, 'full-global-1', 'sliding_window_global', 0.33, 0.005, 20, 1980, 0.0078, 1e-6, 1),
             (2, 'full-retrieval-1', 'sliding_window_retrieval', 0.40, 0.006, 20, 1980, 0.0078, 1e-6, 1);
    INSERT INTO champions (suite, scope, iteration_id, score_ms) VALUES ('full', 'overall', 1, 0.301);
    INSERT INTO champion_history (suite, scope, iteration_id, score_ms, aba_json)
      VALUES ('full', 'overall', 1, 0.301, '{"reason":"first valid variant"}');
  )sql");
  return path;
}

/// Begins a running wgmma_fa iteration of suite full with the given config and root seed.
IterationRecord begin_wgmma_iteration(ExperimentDb& db, std::int64_t run_id, const std::string& params_json,
                                      std::optional<std::int64_t> root_seed) {
  IterationRecord it;
  it.run_id = run_id;
  it.suite = "full";
  it.template_name = "wgmma_fa";
  it.params_json = params_json;
  it.root_seed = root_seed;
  it.iter = db.begin_iteration(it);
  return it;
}

TEST(MigrationFidelity, VersionOneFileKeepsEveryRowAndReadsAsFullFidelity) {
  const std::string path = make_v1_db();
  std::map<std::string, std::string> before;
  const std::pair<const char*, std::string> tables[] = {
      {"runs", "*"},          {"variants", test::kV1VariantColumns},  {"iterations", test::kV1IterationColumns}, {"case_results", "*"},
      {"champions", "*"},     {"champion_history", "*"}};
  {
    auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
    for (const auto& [t, cols] : tables) before[t] = test::dump_rows(conn, cols, t, "1, 2");
  }
  {
    auto db = ExperimentDb::open(path);  // migrates
    EXPECT_EQ(db::read_schema_version(db.connection()), db::kSchemaVersion);
    for (const auto& [t, cols] : tables) EXPECT_EQ(test::dump_rows(db.connection(), cols, t, "1, 2"), before[t]) << t;
    EXPECT_EQ(test::dump_rows(db.connection(), "count(*)", "iterations", "1"), "4|\n");
    // Old rows: whole-suite evaluations, root seed unknown, no screen score.
    for (const auto& it : db.iterations()) {
      EXPECT_EQ(it.fidelity, Fidelity::full) << it.iter;
      EXPECT_FALSE(it.root_seed) << it.iter;
      EXPECT_FALSE(it.screen_ms) << it.iter;
    }
    const auto kept = db.iteration(2);
    ASSERT_TRUE(kept);
    EXPECT_EQ(kept->cases.size(), 3u);
    EXPECT_DOUBLE_EQ(*kept->geomean_ms, 0.33);
    EXPECT_TRUE(db.holdout_checks().empty());
    EXPECT_EQ(db.run_progress(1).full_evaluations, 2);
    EXPECT_EQ(db.run_progress(1).screened_out, 0);
  }
  // The migrated file takes new rows of every new kind; the iter counter goes on after 4.
  auto db = ExperimentDb::open(path);
  const auto run_id = db.begin_run(test::sample_run("full"));
  IterationRecord it = begin_wgmma_iteration(db, run_id, R"({"BLOCK_N":96})", 7);
  EXPECT_EQ(it.iter, 5);
  it.status = IterationStatus::discard;
  it.fidelity = Fidelity::screen;
  it.screen_ms = 0.41;
  it.description = "screened out";
  db.finish_iteration(it);
  const auto back = db.iteration(5);
  EXPECT_EQ(back->fidelity, Fidelity::screen);
  EXPECT_EQ(back->root_seed, 7);
  EXPECT_DOUBLE_EQ(*back->screen_ms, 0.41);
  EXPECT_FALSE(back->geomean_ms);

  HoldoutCheckRecord h;
  h.run_id = run_id;
  h.iteration_id = 1;
  h.suite = "full";
  h.root_seed = 999;
  h.role = HoldoutRole::champion;
  h.ok = true;
  h.score_ms = 0.305;
  h.tuned_ms = 0.301;
  h.verdict = "holds";
  db.add_holdout_check(h);
  const auto checks = db.holdout_checks(1);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].root_seed, 999);
  EXPECT_EQ(checks[0].role, HoldoutRole::champion);
  EXPECT_DOUBLE_EQ(*checks[0].score_ms, 0.305);
  auto fk = db.connection().prepare("PRAGMA foreign_key_check");
  EXPECT_FALSE(fk.step());
  auto ic = db.connection().prepare("PRAGMA integrity_check");
  ASSERT_TRUE(ic.step());
  EXPECT_EQ(ic.column_text(0), "ok");
}

TEST(MigrationFidelity, StoreRulesForTheNewColumns) {
  auto db = ExperimentDb::open(test::temp_dir("db-fid") + "/t.db");
  const auto run_id = db.begin_run(test::sample_run("full"));
  IterationRecord it = begin_wgmma_iteration(db, run_id, R"({"BLOCK_N":64})", std::nullopt);
  // A screened-only config is never kept.
  it.status = IterationStatus::keep;
  it.fidelity = Fidelity::screen;
  it.geomean_ms = 0.3;
  try {
    db.finish_iteration(it);
    ADD_FAILURE() << "a screen-fidelity keep was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("keep needs fidelity full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(db.iteration(it.iter)->status, IterationStatus::running);
  // A held-out check names a real iteration of its suite and has a JSON list of cases.
  HoldoutCheckRecord h;
  h.run_id = run_id;
  h.iteration_id = it.iter;
  h.suite = "quick";
  EXPECT_THROW(db.add_holdout_check(h), std::invalid_argument);
  h.suite = "full";
  h.cases_json = "{";
  EXPECT_THROW(db.add_holdout_check(h), std::invalid_argument);
  h.cases_json = "[]";
  h.iteration_id = 999;
  EXPECT_THROW(db.add_holdout_check(h), std::invalid_argument);
  EXPECT_TRUE(db.holdout_checks().empty());
}

}  // namespace
}  // namespace attn
