// ExperimentDb: round trips of every record, the iteration life cycle, champions, read-only SQL.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

ChampionRecord champ(const std::string& suite, ChampionScope scope, std::int64_t iter, double score_ms) {
  ChampionRecord c;
  c.suite = suite;
  c.scope = scope;
  c.iteration_id = iter;
  c.score_ms = score_ms;
  return c;
}

IterationQuery query(std::optional<std::string> suite, IterationQuery::Order order,
                     std::vector<IterationStatus> statuses = {}, std::optional<std::int64_t> limit = {}) {
  IterationQuery q;
  q.suite = std::move(suite);
  q.order = order;
  q.statuses = std::move(statuses);
  q.limit = limit;
  return q;
}

class Store : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::temp_dir("db-store") + "/attn-tuner.db";
    db_.emplace(ExperimentDb::open(path_));
  }
  ExperimentDb& db() { return *db_; }
  std::int64_t count(const std::string& table) {
    auto st = db().connection().prepare("SELECT count(*) FROM " + table);
    st.step();
    return st.column_int64(0);
  }
  /// A running iteration of `v` in run `run_id`.
  std::int64_t begin(std::int64_t run_id, const VariantRecord& v, std::optional<std::int64_t> variant_id = {}) {
    IterationRecord it;
    it.run_id = run_id;
    it.suite = db().run(run_id)->suite;
    it.template_name = v.template_name;
    it.params_json = v.params_json;
    it.variant_id = variant_id;
    it.description = "try " + v.content_hash;
    return db().begin_iteration(it);
  }

  std::string path_;
  std::optional<ExperimentDb> db_;
};

TEST_F(Store, RunRoundTripAndEnd) {
  auto in = test::sample_run("full");
  auto id = db().begin_run(in);
  auto out = db().run(id);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->id, id);
  EXPECT_FALSE(out->started_at.empty());
  EXPECT_TRUE(out->ended_at.empty());
  EXPECT_EQ(out->status, RunStatus::running);
  in.id = id;
  in.started_at = out->started_at;
  EXPECT_EQ(*out, in);

  db().end_run(id, RunStatus::stopped, "attn-tuner stop");
  out = db().run(id);
  EXPECT_EQ(out->status, RunStatus::stopped);
  EXPECT_EQ(out->stop_reason, "attn-tuner stop");
  EXPECT_GE(out->ended_at, out->started_at);
  EXPECT_THROW(db().end_run(id, RunStatus::finished), std::invalid_argument);  // already ended
  EXPECT_THROW(db().end_run(id + 1, RunStatus::finished), std::invalid_argument);
  EXPECT_EQ(db().run(id + 1), std::nullopt);

  auto second = db().begin_run(test::sample_run("quick"));
  EXPECT_GT(second, id);
  EXPECT_EQ(db().mark_interrupted_runs(), (std::vector<std::int64_t>{second}));
  EXPECT_EQ(db().run(second)->status, RunStatus::interrupted);
  EXPECT_EQ(db().runs().size(), 2u);
}

TEST_F(Store, VariantUpsertByContentHash) {
  auto v = test::sample_variant(64, 8, 2);
  auto id = db().upsert_variant(v);
  auto out = db().find_variant_by_hash(v.content_hash);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->id, id);
  EXPECT_EQ(out->params_json, R"({"BLOCK_N":64,"num_warps":8,"stages":2})");  // canonical: sorted keys
  EXPECT_EQ(out->params, "BLOCK_N=64,num_warps=8,stages=2");
  VariantRecord expected = v;
  expected.id = id;
  expected.params_json = out->params_json;
  expected.params = out->params;
  expected.created_at = out->created_at;
  EXPECT_EQ(*out, expected);
  EXPECT_EQ(db().variant(id), out);

  // Same hash again (say, a recompile after the cubin cache was cleared): same row, new results.
  v.registers = 168;
  v.spill_bytes = 24;
  v.cubin_path = "";
  v.params_json = R"({"num_warps":8,"BLOCK_N":64,"stages":2})";
  EXPECT_EQ(db().upsert_variant(v), id);
  out = db().variant(id);
  EXPECT_EQ(out->registers, 168);
  EXPECT_EQ(out->spill_bytes, 24);
  EXPECT_EQ(out->cubin_path, "");
  EXPECT_EQ(count("variants"), 1);

  // The same hash for another config is a bug upstream: refused, row unchanged.
  auto other = test::sample_variant(128, 8, 2);
  other.content_hash = v.content_hash;
  EXPECT_THROW(db().upsert_variant(other), std::invalid_argument);
  EXPECT_EQ(db().variant(id)->params, "BLOCK_N=64,num_warps=8,stages=2");

  // A failed compile keeps its log and no resources.
  VariantRecord bad = test::sample_variant(256, 4, 3);
  bad.compile_ok = false;
  bad.compile_log = "error: too much shared data (0x30000 bytes)";
  bad.registers = bad.smem_bytes = bad.spill_bytes = std::nullopt;
  bad.cubin_path = "";
  auto bad_id = db().upsert_variant(bad);
  EXPECT_NE(bad_id, id);
  EXPECT_FALSE(db().variant(bad_id)->compile_ok);
  EXPECT_EQ(db().variant(bad_id)->compile_log, bad.compile_log);
  EXPECT_EQ(db().find_variant_by_hash("nope"), std::nullopt);
  EXPECT_THROW(db().upsert_variant(VariantRecord{}), std::invalid_argument);
}

// The tuning loop begins an iteration once its config compiled: the variant and the running iteration in one
// commit, so that a failure of either writes neither (the loop's two commits an iteration, docs/daemon.md).
TEST_F(Store, BeginIterationWithVariantIsOneTransaction) {
  const auto run = db().begin_run(test::sample_run("quick"));
  const auto v = test::sample_variant(64, 8, 2);
  IterationRecord it;
  it.run_id = run;
  it.suite = "quick";
  it.template_name = v.template_name;
  it.params_json = v.params_json;
  it.description = "compiled";
  const auto [iter, vid] = db().begin_iteration_with_variant(it, v);
  const auto running = db().iteration(iter);
  ASSERT_TRUE(running);
  EXPECT_EQ(running->status, IterationStatus::running);
  EXPECT_EQ(running->variant_id, std::optional<std::int64_t>(vid));
  EXPECT_EQ(db().variant(vid)->content_hash, v.content_hash);

  // A bad iteration (an ended run) leaves no new variant behind; a bad variant leaves no iteration.
  const auto other = test::sample_variant(128, 8, 2);
  const auto ended = db().begin_run(test::sample_run("quick"));
  db().end_run(ended, RunStatus::stopped);
  IterationRecord late = it;
  late.run_id = ended;
  EXPECT_THROW(db().begin_iteration_with_variant(late, other), std::invalid_argument);
  EXPECT_EQ(db().find_variant_by_hash(other.content_hash), std::nullopt);
  auto clash = other;
  clash.content_hash = v.content_hash;  // the hash of another config: refused
  EXPECT_THROW(db().begin_iteration_with_variant(it, clash), std::invalid_argument);
  EXPECT_EQ(count("iterations"), 1);
  EXPECT_EQ(count("variants"), 1);
}

TEST_F(Store, IterationRoundTripWithCaseResults) {
  auto run = db().begin_run(test::sample_run("quick"));
  auto v = test::sample_variant(64, 8, 2);
  auto vid = db().upsert_variant(v);
  auto iter = begin(run, v);
  auto running = db().iteration(iter);
  ASSERT_TRUE(running);
  EXPECT_EQ(running->status, IterationStatus::running);
  EXPECT_EQ(running->variant_id, std::nullopt);  // not compiled yet
  EXPECT_EQ(running->params, "BLOCK_N=64,num_warps=8,stages=2");
  EXPECT_TRUE(running->finished_at.empty());
  db().set_iteration_variant(iter, vid);

  IterationRecord done = *running;
  done.variant_id = vid;
  done.status = IterationStatus::keep;
  done.cases = test::sample_cases(1.0);
  done.window_ms = 0.07;
  done.global_ms = 0.077;
  done.retrieval_ms = 0.084;
  done.geomean_ms = std::cbrt(0.07 * 0.077 * 0.084);
  done.delta_ms = -0.0021;
  done.description = "BLOCK_N 64, 8 warps";
  done.gpu_ms = 2400.25;
  done.compile_ms = 151.5;
  db().finish_iteration(done);

  auto out = db().iteration(iter);
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->finished_at.empty());
  done.finished_at = out->finished_at;
  // Cases come back ordered by case_id.
  std::sort(done.cases.begin(), done.cases.end(),
            [](const auto& a, const auto& b) { return a.case_id < b.case_id; });
  EXPECT_EQ(*out, done);
  EXPECT_EQ(db().case_results(iter), done.cases);
  EXPECT_EQ(count("case_results"), 3);

  // Lists do not carry case results.
  auto listed = db().iterations();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].cases.empty());
  EXPECT_EQ(listed[0].geomean_ms, done.geomean_ms);

  // Finishing twice is refused.
  EXPECT_THROW(db().finish_iteration(done), std::invalid_argument);
  EXPECT_THROW(db().set_iteration_variant(iter, vid), std::invalid_argument);
  EXPECT_EQ(db().iteration(iter + 100), std::nullopt);
}

TEST_F(Store, BeginIterationChecksItsReferences) {
  auto run = db().begin_run(test::sample_run());
  auto v = test::sample_variant(64, 8, 2);
  IterationRecord it;
  it.run_id = run + 1;
  it.suite = "quick";
  it.template_name = v.template_name;
  it.params_json = v.params_json;
  EXPECT_THROW(db().begin_iteration(it), std::invalid_argument);  // no such run
  it.run_id = run;
  it.variant_id = 42;
  EXPECT_THROW(db().begin_iteration(it), std::invalid_argument);  // no such variant
  it.variant_id.reset();
  it.params_json = "[1, 2]";
  EXPECT_THROW(db().begin_iteration(it), std::invalid_argument);  // not a JSON object
  it.params_json = v.params_json;
  db().end_run(run, RunStatus::finished);
  EXPECT_THROW(db().begin_iteration(it), std::invalid_argument);  // run has ended
  EXPECT_EQ(count("iterations"), 0);
}

TEST_F(Store, FinishIterationEnforcesStatusRules) {
  auto run = db().begin_run(test::sample_run());
  auto v = test::sample_variant(64, 8, 2);
  auto iter = begin(run, v);
  IterationRecord r = *db().iteration(iter);
  auto expect_refused = [&](IterationStatus s, FailureKind k, std::optional<double> geomean) {
    r.status = s;
    r.failure_kind = k;
    r.geomean_ms = geomean;
    EXPECT_THROW(db().finish_iteration(r), std::invalid_argument) << to_string(s) << "/" << to_string(k);
  };
  expect_refused(IterationStatus::running, FailureKind::none, 0.1);
  expect_refused(IterationStatus::keep, FailureKind::none, std::nullopt);
  expect_refused(IterationStatus::keep, FailureKind::hang, 0.1);
  expect_refused(IterationStatus::discard, FailureKind::wrong_result, 0.1);
  expect_refused(IterationStatus::crash, FailureKind::none, std::nullopt);
  expect_refused(IterationStatus::crash, FailureKind::interrupted, std::nullopt);
  expect_refused(IterationStatus::interrupted, FailureKind::fault, std::nullopt);
  EXPECT_EQ(db().iteration(iter)->status, IterationStatus::running);

  r.status = IterationStatus::crash;
  r.failure_kind = FailureKind::compile;
  r.geomean_ms.reset();
  r.description = "ptxas: too many resources";
  db().finish_iteration(r);
  auto out = db().iteration(iter);
  EXPECT_EQ(out->status, IterationStatus::crash);
  EXPECT_EQ(out->failure_kind, FailureKind::compile);
  EXPECT_EQ(out->variant_id, std::nullopt);
  EXPECT_TRUE(out->cases.empty());
}

TEST_F(Store, FinishIterationIsAtomic) {
  auto run = db().begin_run(test::sample_run());
  auto v = test::sample_variant(64, 8, 2);
  auto vid = db().upsert_variant(v);
  auto iter = begin(run, v);
  IterationRecord r = *db().iteration(iter);
  r.variant_id = vid;
  r.status = IterationStatus::discard;
  r.geomean_ms = 0.09;
  r.description = "would be written";
  r.cases = test::sample_cases(1.1);
  r.cases.push_back(r.cases[1]);  // the 4th insert violates PRIMARY KEY (iteration_id, case_id)
  try {
    db().finish_iteration(r);
    FAIL() << "duplicate case_id accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(r.cases[1].case_id), std::string::npos) << e.what();
  }
  // Nothing of it was written: the UPDATE and the first three inserts were rolled back.
  auto out = db().iteration(iter);
  EXPECT_EQ(out->status, IterationStatus::running);
  EXPECT_EQ(out->geomean_ms, std::nullopt);
  EXPECT_EQ(out->variant_id, std::nullopt);
  EXPECT_EQ(out->description, "try " + v.content_hash);
  EXPECT_EQ(count("case_results"), 0);
  EXPECT_TRUE(db().connection().autocommit());

  // A non-finite latency in the last case: same, nothing written.
  r.cases.pop_back();
  r.cases.back().median_ms = std::nan("");
  EXPECT_THROW(db().finish_iteration(r), std::invalid_argument);
  EXPECT_EQ(db().iteration(iter)->status, IterationStatus::running);
  EXPECT_EQ(count("case_results"), 0);

  // The corrected record goes through.
  r.cases.back().median_ms = 0.1;
  db().finish_iteration(r);
  EXPECT_EQ(db().iteration(iter)->status, IterationStatus::discard);
  EXPECT_EQ(count("case_results"), 3);
}

TEST_F(Store, HasEvaluatedCountsFinishedOutcomesPerSuiteIgnoringKeyOrder) {
  auto run = db().begin_run(test::sample_run("quick"));
  auto v = test::sample_variant(64, 8, 2);
  auto vid = db().upsert_variant(v);
  const std::string reordered = R"({"num_warps": 8, "stages": 2, "BLOCK_N": 64})";
  EXPECT_FALSE(db().has_evaluated("fa2_mma", reordered, "quick"));
  auto iter = begin(run, v);
  EXPECT_FALSE(db().has_evaluated("fa2_mma", reordered, "quick"));  // running does not count
  db().mark_interrupted_iterations();
  EXPECT_FALSE(db().has_evaluated("fa2_mma", reordered, "quick"));  // interrupted does not count
  test::add_scored_iteration(db(), run, v, vid, 1.0, IterationStatus::discard, "d");
  EXPECT_TRUE(db().has_evaluated("fa2_mma", reordered, "quick"));
  EXPECT_FALSE(db().has_evaluated("fa2_mma", reordered, "full"));
  EXPECT_FALSE(db().has_evaluated("wgmma_tma", reordered, "quick"));
  EXPECT_FALSE(db().has_evaluated("fa2_mma", R"({"num_warps": 4, "stages": 2, "BLOCK_N": 64})", "quick"));

  // A crash (before any compile) counts too: the same config would crash again.
  auto v2 = test::sample_variant(128, 4, 3);
  auto iter2 = begin(run, v2);
  IterationRecord crash = *db().iteration(iter2);
  crash.status = IterationStatus::crash;
  crash.failure_kind = FailureKind::worker_died;
  db().finish_iteration(crash);
  EXPECT_TRUE(db().has_evaluated("fa2_mma", v2.params_json, "quick"));
  EXPECT_THROW(db().has_evaluated("fa2_mma", "not json", "quick"), std::invalid_argument);
  (void)iter;
}

TEST_F(Store, MarkInterruptedIterationsAfterARestart) {
  auto run = db().begin_run(test::sample_run());
  auto v = test::sample_variant(64, 8, 2);
  auto vid = db().upsert_variant(v);
  auto kept = test::add_scored_iteration(db(), run, v, vid, 1.0, IterationStatus::keep, "k");
  auto a = begin(run, test::sample_variant(128, 8, 2));
  auto b = begin(run, test::sample_variant(64, 4, 2), vid);
  db_.reset();  // the daemon dies; a new one opens the file
  db_.emplace(ExperimentDb::open(path_));
  auto marked = db().mark_interrupted_iterations();
  ASSERT_EQ(marked.size(), 2u);
  EXPECT_EQ(marked[0].iter, a);
  EXPECT_EQ(marked[1].iter, b);
  for (const auto& it : marked) {
    EXPECT_EQ(it.status, IterationStatus::interrupted);
    EXPECT_EQ(it.failure_kind, FailureKind::interrupted);
    EXPECT_FALSE(it.finished_at.empty());
    EXPECT_EQ(db().iteration(it.iter)->status, IterationStatus::interrupted);
  }
  EXPECT_EQ(marked[1].variant_id, vid);
  EXPECT_EQ(db().iteration(kept)->status, IterationStatus::keep);
  EXPECT_TRUE(db().mark_interrupted_iterations().empty());
  auto p = db().run_progress(run);
  EXPECT_EQ(p.iterations, 3);
  EXPECT_EQ(p.keep, 1);
  EXPECT_EQ(p.interrupted, 2);
  EXPECT_EQ(p.running, 0);
}

TEST_F(Store, IterationQueriesBestAndProgress) {
  auto quick = db().begin_run(test::sample_run("quick"));
  auto full = db().begin_run(test::sample_run("full"));
  std::vector<std::int64_t> vids;
  std::vector<VariantRecord> vs;
  for (int i = 0; i < 4; ++i) {
    vs.push_back(test::sample_variant(64 * (i + 1), 8, 2));
    vids.push_back(db().upsert_variant(vs.back()));
  }
  // quick: scales 1.2 (keep), 0.9 (discard), 1.0 (keep), crash; full: 0.5 (keep).
  auto i1 = test::add_scored_iteration(db(), quick, vs[0], vids[0], 1.2, IterationStatus::keep, "a");
  auto i2 = test::add_scored_iteration(db(), quick, vs[1], vids[1], 0.9, IterationStatus::discard, "b");
  auto i3 = test::add_scored_iteration(db(), quick, vs[2], vids[2], 1.0, IterationStatus::keep, "c");
  auto i4 = begin(quick, vs[3]);
  IterationRecord crash = *db().iteration(i4);
  crash.status = IterationStatus::crash;
  crash.failure_kind = FailureKind::hang;
  crash.gpu_ms = 10000;
  db().finish_iteration(crash);
  auto i5 = test::add_scored_iteration(db(), full, vs[0], vids[0], 0.5, IterationStatus::keep, "e");

  auto ids = [](const std::vector<IterationRecord>& rows) {
    std::vector<std::int64_t> out;
    for (const auto& r : rows) out.push_back(r.iter);
    return out;
  };
  using O = IterationQuery::Order;
  EXPECT_EQ(ids(db().iterations()), (std::vector<std::int64_t>{i1, i2, i3, i4, i5}));
  EXPECT_EQ(ids(db().iterations(query("quick", O::iter_desc))),
            (std::vector<std::int64_t>{i4, i3, i2, i1}));
  EXPECT_EQ(ids(db().iterations(query("quick", O::geomean_asc))),
            (std::vector<std::int64_t>{i2, i3, i1, i4}));  // no geomean last
  EXPECT_EQ(ids(db().iterations(
                query("quick", O::geomean_asc, {IterationStatus::keep, IterationStatus::discard}, 2))),
            (std::vector<std::int64_t>{i2, i3}));
  IterationQuery by_run;
  by_run.run_id = full;
  EXPECT_EQ(ids(db().iterations(by_run)), (std::vector<std::int64_t>{i5}));

  // best: the fastest keep, not the faster discard.
  ASSERT_TRUE(db().best("quick"));
  EXPECT_EQ(db().best("quick")->iter, i3);
  EXPECT_EQ(db().best("full")->iter, i5);
  EXPECT_EQ(db().best("broad"), std::nullopt);

  auto p = db().run_progress(quick);
  EXPECT_EQ(p.iterations, 4);
  EXPECT_EQ(p.keep, 2);
  EXPECT_EQ(p.discard, 1);
  EXPECT_EQ(p.crash, 1);
  EXPECT_DOUBLE_EQ(p.gpu_ms, 3 * 1234.5 + 10000);
  EXPECT_DOUBLE_EQ(p.compile_ms, 3 * 151.5);
  EXPECT_EQ(p.best_geomean_ms, db().iteration(i3)->geomean_ms);
  EXPECT_EQ(db().run_progress(full + 1), RunProgress{});
}

TEST_F(Store, ChampionsAndTheirHistory) {
  auto run = db().begin_run(test::sample_run("quick"));
  auto v1 = test::sample_variant(64, 8, 2), v2 = test::sample_variant(128, 8, 2);
  auto id1 = db().upsert_variant(v1), id2 = db().upsert_variant(v2);
  auto i1 = test::add_scored_iteration(db(), run, v1, id1, 1.0, IterationStatus::keep, "first");
  auto i2 = test::add_scored_iteration(db(), run, v2, id2, 0.9, IterationStatus::keep, "second");
  EXPECT_EQ(db().champion("quick", ChampionScope::overall), std::nullopt);

  db().set_champion(champ("quick", ChampionScope::overall, i1, 0.08));
  db().set_champion(
      champ("quick", ChampionScope::sliding_window, i1, 0.07));
  const std::string aba = R"({"A":[0.0801,0.0803],"B":[0.0722]})";
  db().set_champion(champ("quick", ChampionScope::overall, i2, 0.072),
                    aba);

  auto c = db().champion("quick", ChampionScope::overall);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->iteration_id, i2);
  EXPECT_DOUBLE_EQ(c->score_ms, 0.072);
  EXPECT_FALSE(c->promoted_at.empty());
  auto all = db().champions();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].scope, ChampionScope::overall);  // scope order, not alphabetical
  EXPECT_EQ(all[1].scope, ChampionScope::sliding_window);
  EXPECT_TRUE(db().champions(std::string("full")).empty());

  auto h = db().champion_history("quick");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].champion.iteration_id, i1);
  EXPECT_EQ(h[0].previous_iteration_id, std::nullopt);
  EXPECT_EQ(h[0].aba_json, "{}");
  EXPECT_EQ(h[2].champion, *c);
  EXPECT_EQ(h[2].previous_iteration_id, i1);
  EXPECT_EQ(h[2].previous_score_ms, 0.08);
  EXPECT_EQ(nlohmann::json::parse(h[2].aba_json), nlohmann::json::parse(aba));

  // Refused promotions leave champions and history unchanged.
  auto refused = [&](ChampionRecord r, const std::string& aba_json = "{}") {
    EXPECT_THROW(db().set_champion(r, aba_json), std::invalid_argument);
  };
  refused(champ("full", ChampionScope::overall, i1, 0.08));
  refused(champ("quick", ChampionScope::overall, 999, 0.08));
  refused(champ("quick", ChampionScope::overall, i1, 0));
  refused(champ("quick", ChampionScope::overall, i1, 0.08), "{oops");
  auto running = begin(run, test::sample_variant(256, 8, 2));
  refused(champ("quick", ChampionScope::overall, running, 0.05));
  EXPECT_EQ(db().champion("quick", ChampionScope::overall), c);
  EXPECT_EQ(db().champion_history().size(), 3u);
}

TEST_F(Store, SqlReadonlyReturnsRowsAndRefusesWrites) {
  auto run = db().begin_run(test::sample_run("quick"));
  auto v = test::sample_variant(64, 8, 2);
  auto vid = db().upsert_variant(v);
  auto iter = test::add_scored_iteration(db(), run, v, vid, 1.0, IterationStatus::keep, "k");

  auto r = db().sql_readonly("SELECT id, params, geomean_ms, variant_id IS NULL AS no_variant, NULL AS empty "
                             "FROM iterations");
  EXPECT_EQ(r.columns, (std::vector<std::string>{"id", "params", "geomean_ms", "no_variant", "empty"}));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0][0], std::to_string(iter));
  EXPECT_EQ(r.rows[0][1], "BLOCK_N=64,num_warps=8,stages=2");
  EXPECT_NEAR(std::stod(*r.rows[0][2]), *db().iteration(iter)->geomean_ms, 1e-12);
  EXPECT_EQ(r.rows[0][3], "0");
  EXPECT_EQ(r.rows[0][4], std::nullopt);

  for (const char* write : {"DELETE FROM iteration_rows", "UPDATE runs SET status = 'failed'",
                            "DROP TABLE champions", "CREATE TEMP TABLE x (a)", "PRAGMA journal_mode = DELETE",
                            "INSERT INTO schema_version (version) VALUES (2)"}) {
    try {
      db().sql_readonly(write);
      ADD_FAILURE() << "accepted: " << write;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("refusing a statement that writes"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(db().sql_readonly("SELECT 1; DELETE FROM runs"), sqlite::Error);
  EXPECT_THROW(db().sql_readonly("SELECT no_such_column FROM runs"), sqlite::Error);
  EXPECT_EQ(count("iterations"), 1);
  EXPECT_EQ(db().run(run)->status, RunStatus::running);
  EXPECT_EQ(db().sql_readonly("SELECT count(*) FROM case_results").rows[0][0], "3");
}

TEST_F(Store, ReadOnlyStoreReadsWhileAWriterHoldsTheFile) {
  auto run = db().begin_run(test::sample_run("quick"));
  auto v = test::sample_variant(64, 8, 2);
  auto vid = db().upsert_variant(v);
  auto iter = test::add_scored_iteration(db(), run, v, vid, 1.0, IterationStatus::keep, "k");
  auto ro = ExperimentDb::open(path_, ExperimentDb::Mode::read_only);
  EXPECT_EQ(ro.iteration(iter), db().iteration(iter));
  EXPECT_THROW(ro.begin_run(test::sample_run()), std::logic_error);
  EXPECT_EQ(ro.sql_readonly("SELECT count(*) FROM iterations").rows[0][0], "1");
}

TEST(Records, JsonAndEnumSpellings) {
  EXPECT_EQ(parse_failure_kind("device_limit"), FailureKind::device_limit);
  EXPECT_STREQ(to_string(ChampionScope::sliding_window_retrieval), "sliding_window_retrieval");
  EXPECT_EQ(champion_scope_of(Family::sliding_window_global), ChampionScope::sliding_window_global);
  try {
    parse_iteration_status("kept");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"kept\" (expected one of: running, keep, discard"), std::string::npos);
  }
  EXPECT_EQ(compact_params(R"({"b":2,"a":"x","c":true})"), "a=x,b=2,c=1");
  EXPECT_EQ(canonical_params_json(R"({ "b" : 2, "a" : 1 })"), R"({"a":1,"b":2})");
  EXPECT_THROW(canonical_params_json(R"({"a":[1]})"), std::invalid_argument);
  EXPECT_THROW(canonical_params_json(R"({"a":1e309})"), std::invalid_argument);  // json out_of_range, not escaping

  IterationRecord it;
  it.iter = 3;
  it.params_json = R"({"a":1})";
  it.geomean_ms = 0.5;
  it.cases = test::sample_cases(1.0);
  nlohmann::json j = it;
  EXPECT_EQ(j["iter"], 3);
  EXPECT_EQ(j["status"], "running");
  EXPECT_TRUE(j["delta_ms"].is_null());
  EXPECT_EQ(j["params_json"]["a"], 1);
  EXPECT_EQ(j["cases"].size(), 3u);
  EXPECT_EQ(j["cases"][1]["family"], "sliding_window_global");
}

}  // namespace
}  // namespace attn
