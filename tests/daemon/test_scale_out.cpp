// Scale-out on the CPU (docs/scale-out.md): --shard runs of the real daemon merged with `db merge`, and one
// fake worker per GPU with --gpus (tests/daemon/fake_worker.py plays the GPU that CUDA_VISIBLE_DEVICES names and
// logs every eval with its GPU and times, FAKE_WORKER_GPU_LOG).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "daemon/gpu_set.hpp"
#include "db/schema.hpp"
#include "daemon/stale_worker.hpp"
#include "daemon/supervise.hpp"
#include "db/store.hpp"
#include "export/plan_from_db.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using test::DaemonFixture;
using test::Output;
using test::run;
using test::GpuEval;
using test::read_gpu_log;
using test::by_gpu_without_overlap;

std::string sql_text(const std::string& db, const std::string& sql) {
  auto d = ExperimentDb::open(db, ExperimentDb::Mode::read_only);
  const auto r = d.sql_readonly(sql);
  std::string out;
  for (const auto& row : r.rows) {
    for (const auto& v : row) out += v.value_or("NULL") + "|";
    out += "\n";
  }
  return out;
}

/// Configs per hour of a DB's last run, from its iterations' own times (first start to last finish), so
/// that the daemon's start-up does not count.
double configs_per_hour(const std::string& db) {
  const std::string r = sql_text(db, "SELECT count(*) * 3600.0 / ((julianday(max(finished_at)) - julianday(min(started_at)))"
                                     " * 86400.0) FROM iterations WHERE run_id = (SELECT max(id) FROM runs)");
  return std::stod(r);
}

TEST(ScaleOut, ShardRunsMergeIntoOneDbWithNothingLostOrDoubled) {
  // Two shards of the healthy fake space, and a small unsharded run whose configs both shards also hold
  // (its variants are the same compiles: one row each after the merge).
  DaemonFixture s0, s1, extra;
  const std::string opts = "--fidelity full";
  ASSERT_EQ(run(s0.args(opts + " --shard 0/2", "exhaustive", "fake_healthy")).code, 0);
  ASSERT_EQ(run(s1.args(opts + " --shard 1/2", "exhaustive", "fake_healthy")).code, 0);
  const Output e = run(extra.args(opts + " --iterations 3", "exhaustive", "fake_healthy"));
  ASSERT_EQ(e.code, 0) << e.text;
  const auto i0 = s0.iterations(), i1 = s1.iterations(), i2 = extra.iterations();
  ASSERT_FALSE(i0.empty());
  ASSERT_FALSE(i1.empty());
  EXPECT_EQ(i0.size() + i1.size(), 18u);  // disjoint shards that cover the space
  std::set<std::string> shard_configs;
  for (const auto* its : {&i0, &i1})
    for (const auto& it : *its) EXPECT_TRUE(shard_configs.insert(it.params).second) << it.params << " in both shards";

  const std::string out = s0.dir + "/merged.db";
  const std::string inputs = "'" + s0.db + "' '" + s1.db + "' '" + extra.db + "'";
  const Output m = run("db merge '" + out + "' " + inputs);
  ASSERT_EQ(m.code, 0) << m.text;
  EXPECT_NE(m.text.find("merged 3 DB(s)"), std::string::npos) << m.text;

  auto db = ExperimentDb::open(out, ExperimentDb::Mode::read_only);
  // Nothing lost, nothing doubled: every source iteration once, with its provenance and its case results.
  const auto merged = db.iterations();
  ASSERT_EQ(merged.size(), i0.size() + i1.size() + i2.size());
  std::map<std::pair<std::string, std::int64_t>, IterationRecord> sources;
  for (const auto& [path, its] : {std::pair{s0.db, &i0}, std::pair{s1.db, &i1}, std::pair{extra.db, &i2}})
    for (const auto& it : *its) sources[{fs::absolute(path).lexically_normal().string(), it.iter}] = it;
  auto& conn = db.connection();
  std::set<std::pair<std::string, std::int64_t>> matched;
  for (const auto& it : merged) {
    auto st = conn.prepare("SELECT source_db, source_iteration_id, source_run_id, host FROM iteration_sources WHERE iteration_id = ?");
    st.bind(1, it.iter);
    ASSERT_TRUE(st.step()) << "iter " << it.iter << " has no provenance";
    const auto key = std::make_pair(st.column_text(0), st.column_int64(1));
    ASSERT_TRUE(sources.count(key)) << key.first << " iter " << key.second;
    EXPECT_TRUE(matched.insert(key).second) << "source row copied twice";
    const IterationRecord& src = sources.at(key);
    EXPECT_EQ(it.params, src.params);
    EXPECT_EQ(it.geomean_ms, src.geomean_ms);
    EXPECT_EQ(it.status, src.status);
    EXPECT_EQ(it.gpu_uuid, src.gpu_uuid);
    EXPECT_EQ(st.column_int64(2), src.run_id);
    EXPECT_FALSE(st.column_text(3).empty());
    const auto full = db.iteration(it.iter);
    EXPECT_EQ(full->cases.size(), ExperimentDb::open(key.first, ExperimentDb::Mode::read_only).iteration(key.second)->cases.size());
    ASSERT_TRUE(it.variant_id);
    EXPECT_EQ(db.variant(*it.variant_id)->params, it.params);
  }
  // Variants: one per content hash (the extra run's three are the shards' compiles).
  std::set<std::string> hashes;
  for (const auto& path : {s0.db, s1.db, extra.db})
    for (const auto& row : ExperimentDb::open(path, ExperimentDb::Mode::read_only).sql_readonly("SELECT content_hash FROM variants").rows)
      hashes.insert(*row[0]);
  EXPECT_EQ(sql_text(out, "SELECT count(*), count(DISTINCT content_hash) FROM variants"),
            std::to_string(hashes.size()) + "|" + std::to_string(hashes.size()) + "|\n");
  EXPECT_EQ(hashes.size(), 18u);
  EXPECT_EQ(sql_text(out, "SELECT count(*) FROM runs"), "3|\n");
  EXPECT_EQ(sql_text(out, "PRAGMA integrity_check"), "ok|\n");
  EXPECT_EQ(sql_text(out, "SELECT count(*) FROM pragma_foreign_key_check"), "0|\n");

  // The champion, recomputed from the inputs' champions: the best config, which one shard found.
  const auto champ = db.champion("smoke", ChampionScope::overall);
  ASSERT_TRUE(champ);
  EXPECT_EQ(db.iteration(champ->iteration_id)->params, "A=4,B=2,F=0");
  const auto history = db.champion_history("smoke");
  ASSERT_FALSE(history.empty());
  EXPECT_NE(history.back().aba_json.find("db merge"), std::string::npos) << history.back().aba_json;

  // Export plans the merged champions.
  DbExportOptions eo;
  eo.templates_dir = test::data_dir() + "/fake_templates";
  const ExportPlan plan = build_export_plan(db, eo);
  ASSERT_FALSE(plan.variants.empty());
  EXPECT_EQ(plan.variants[0].template_name, "fake_healthy");

  // Refusals, each naming the problem: OUT exists, an input twice, a run merged already, another version.
  const Output again = run("db merge '" + out + "' '" + s0.db + "'");
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.text.find("exists"), std::string::npos) << again.text;
  const Output twice = run("db merge '" + s1.dir + "/m2.db' '" + s0.db + "' '" + s0.db + "'");
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.text.find("given twice"), std::string::npos) << twice.text;
  // A run in two inputs (a merged DB and one of its parts; two copies of one DB) is refused before OUT is made,
  // exit 2 as every bad input (issue 42: it used to copy for a minute first, then exit 1).
  const Output doubled = run("db merge '" + s1.dir + "/m3.db' '" + out + "' '" + s0.db + "'");
  EXPECT_EQ(doubled.code, 2);
  EXPECT_NE(doubled.text.find("is also run 1 of " + out), std::string::npos) << doubled.text;
  EXPECT_NE(doubled.text.find("of " + s0.db), std::string::npos) << doubled.text;
  EXPECT_FALSE(fs::exists(s1.dir + "/m3.db"));
  const std::string copy = s1.dir + "/copy.db";
  fs::copy_file(s0.db, copy);
  const Output copies = run("db merge '" + s1.dir + "/m4.db' '" + s0.db + "' '" + copy + "'");
  EXPECT_EQ(copies.code, 2);
  EXPECT_NE(copies.text.find("the inputs hold the same run (copies of one DB"), std::string::npos) << copies.text;
  EXPECT_FALSE(fs::exists(s1.dir + "/m4.db"));
  const std::string old = s1.dir + "/v3.db";
  fs::copy_file(s1.db, old);
  {
    auto c = sqlite::Connection::open(old, sqlite::OpenMode::read_write);
    c.exec(fmt::format("DELETE FROM schema_version WHERE version = {}", db::kSchemaVersion));  // one version older
  }
  const Output version = run("db merge --force '" + out + "' '" + s0.db + "' '" + old + "'");
  EXPECT_EQ(version.code, 2);
  EXPECT_NE(version.text.find(fmt::format("{} has schema version {}, this attn-tuner merges version {} only", old,
                                          db::kSchemaVersion - 1, db::kSchemaVersion)),
            std::string::npos)
      << version.text;
  EXPECT_TRUE(fs::exists(out));  // --force replaces OUT only once the inputs are checked
}

// The idea queue (docs/ideas.md) on a fake space of 18 healthy configs: one run folder with templates, a queue
// holding one idea that wins (FAST scales the fake worker's score to 80 %), the DB.
struct IdeaShard {
  std::string dir = test::temp_dir("merge_ideas");
  std::string tpl = dir + "/templates", queue = dir + "/queue", db = dir + "/runs/t.db";
  IdeaShard() {
    fs::create_directories(tpl);
    fs::create_directories(queue);
    fs::copy_file(test::data_dir() + "/fake_templates/fake.cu", tpl + "/fake.cu");
    test::write_text(tpl + "/fake.json", R"({"name": "fake", "source": "fake.cu", "kernel": "block_sparse_attn_fwd",
  "parameters": {"A": {"values": [1, 2, 3, 4, 5, 6]}, "B": {"values": [1, 2, 3]}, "F": {"values": [0]}},
  "default": {"A": 1, "B": 1, "F": 0}}
)");
    test::write_text(queue + "/fast.idea", test::fake_axis_idea("a faster path behind FAST", "", "FAST", "FAST",
                                                                "extern \"C\" __device__ int fake_speed_pct_80 = 1;"));

  }
  std::string args() const {
    return "run --db '" + db + "' --suite smoke --templates '" + tpl + "' --template fake --strategy local --worker-exe '" +
           test::fake_worker_path() + "' --cache '" + dir + "/cache' --jobs 2 --watchdog-min 0.5 --watchdog-cap 2 --ideas '" +
           queue + "' --idea-budget 4 --idea-poll 0.2";
  }
};

TEST(ScaleOut, MergeKeepsEveryIdeaVerdictAndHarnessCheckWithRemappedIds) {
  // Two daemons each judge the same idea (a win) on their own machine: both inputs hold an idea, its proposal
  // template of the same name (the second is renamed in the merge), and a harness check of their champion and
  // the idea's best iteration. A third input, an older DB (schema 7, no ideas table) migrated, has no idea.
  IdeaShard a, b;
  for (const auto* s : {&a, &b}) {
    const Output o = run(s->args());
    ASSERT_EQ(o.code, 0) << o.text;
  }
  std::vector<std::vector<IdeaRecord>> ideas;
  for (const auto* s : {&a, &b}) {
    auto d = ExperimentDb::open(s->db);
    ideas.push_back(d.ideas());
    ASSERT_EQ(ideas.back().size(), 1u);
    const IdeaRecord& i = ideas.back()[0];
    ASSERT_EQ(i.verdict, IdeaVerdict::win) << i.reason;
    ASSERT_TRUE(i.best_iteration_id && i.parent_iteration_id && i.proposal_id) << i.reason;
    const auto champ = d.champion("smoke", ChampionScope::overall);
    ASSERT_TRUE(champ);
    HarnessCheckRecord h;
    h.suite = "smoke";
    h.export_suite = "smoke";
    h.valid = true;
    h.score_ms = 0.08;
    h.submission_dir = s->dir + "/submission";
    h.iterations_json = nlohmann::json::array({{{"variant", "fake_i" + std::to_string(champ->iteration_id)},
                                                {"template", d.iteration(champ->iteration_id)->template_name},
                                                {"iteration", champ->iteration_id}},
                                               {{"variant", "fake_i" + std::to_string(*i.best_iteration_id)},
                                                {"template", i.template_name},
                                                {"iteration", *i.best_iteration_id}}})
                            .dump();
    d.add_harness_check(h);
    HarnessCheckRecord none = h;  // an export of nothing: stays []
    none.valid = false;
    none.score_ms.reset();
    none.iterations_json = "[]";
    d.add_harness_check(none);
  }
  ASSERT_EQ(ideas[0][0].template_name, ideas[1][0].template_name);  // the clash the merge renames

  DaemonFixture old;
  const Output e = run(old.args("--fidelity full --iterations 3", "exhaustive", "fake_healthy"));
  ASSERT_EQ(e.code, 0) << e.text;
  {  // an input without ideas (schema 10 cannot be faked back to 7 by dropping a table: 9 -> 10 rebuilds iterations)
    auto c = sqlite::Connection::open(old.db, sqlite::OpenMode::read_write);
    c.exec("DELETE FROM ideas");
  }
  const Output mig = run("db migrate '" + old.db + "'");
  ASSERT_EQ(mig.code, 0) << mig.text;

  const std::string out = a.dir + "/merged.db";
  const Output m = run("db merge '" + out + "' '" + a.db + "' '" + b.db + "' '" + old.db + "'");
  ASSERT_EQ(m.code, 0) << m.text;
  EXPECT_NE(m.text.find("2 ideas, 4 harness checks"), std::string::npos) << m.text;

  auto db = ExperimentDb::open(out, ExperimentDb::Mode::read_only);
  const auto merged = db.ideas();
  ASSERT_EQ(merged.size(), 2u);
  // The merged iteration that came from iteration `iter` of `src`, checked against the source row.
  const auto merged_iter = [&](const std::string& src, std::int64_t iter) -> std::int64_t {
    const auto r = db.sql_readonly(fmt::format("SELECT iteration_id FROM iteration_sources WHERE source_db = '{}' AND "
                                               "source_iteration_id = {}",
                                               fs::absolute(src).lexically_normal().string(), iter));
    EXPECT_EQ(r.rows.size(), 1u) << src << " iter " << iter;
    if (r.rows.size() != 1) return -1;
    return std::stoll(*r.rows[0][0]);
  };
  const auto same_iteration = [&](const std::string& src, std::int64_t src_iter, std::int64_t out_iter) {
    auto s = ExperimentDb::open(src, ExperimentDb::Mode::read_only);
    const auto si = s.iteration(src_iter), mi = db.iteration(out_iter);
    ASSERT_TRUE(si && mi) << src << " iter " << src_iter << " -> " << out_iter;
    EXPECT_EQ(mi->params_json, si->params_json) << out_iter;
    EXPECT_EQ(mi->geomean_ms, si->geomean_ms) << out_iter;
    EXPECT_EQ(merged_iter(src, src_iter), out_iter);
  };
  std::set<std::string> templates;
  for (std::size_t k = 0; k < 2; ++k) {
    const std::string& src_db = k == 0 ? a.db : b.db;
    auto s = ExperimentDb::open(src_db, ExperimentDb::Mode::read_only);
    const IdeaRecord& si = ideas[k][0];
    const std::string started = s.run(si.run_id)->started_at;
    std::vector<IdeaRecord> found;
    for (const auto& i : merged)
      if (db.run(i.run_id) && db.run(i.run_id)->started_at == started) found.push_back(i);
    ASSERT_EQ(found.size(), 1u) << "the idea of input " << k << " (run started " << started << ")";
    const IdeaRecord& mi = found[0];
    EXPECT_EQ(mi.file, si.file);
    EXPECT_EQ(mi.idea_hash, si.idea_hash);
    EXPECT_EQ(mi.verdict, si.verdict);
    EXPECT_EQ(mi.status, si.status);
    EXPECT_EQ(mi.reason, si.reason);
    EXPECT_EQ(mi.delta_pct, si.delta_pct);
    EXPECT_EQ(mi.parent_template, "fake");
    ASSERT_TRUE(mi.best_iteration_id && mi.parent_iteration_id && mi.proposal_id);
    same_iteration(src_db, *si.best_iteration_id, *mi.best_iteration_id);
    same_iteration(src_db, *si.parent_iteration_id, *mi.parent_iteration_id);
    // Its proposal: the merged one of its template (the second input's renamed), which its iterations follow.
    const auto mp = db.proposal(*mi.proposal_id);
    ASSERT_TRUE(mp);
    EXPECT_EQ(mp->template_name, mi.template_name);
    EXPECT_EQ(db.iteration(*mi.best_iteration_id)->template_name, mi.template_name);
    EXPECT_EQ(mp->started_at, s.proposal(*si.proposal_id)->started_at);
    if (k == 0)
      EXPECT_EQ(mi.template_name, si.template_name);
    else
      EXPECT_EQ(mi.template_name, fmt::format("fake_p{}", *mi.proposal_id));
    templates.insert(mi.template_name);
    // The A/B/A's iteration ids name the merged iterations.
    const auto sj = nlohmann::json::parse(si.aba_json), mj = nlohmann::json::parse(mi.aba_json);
    for (const char* key : {"parent_iter", "idea_iter"})
      same_iteration(src_db, sj.at(key).get<std::int64_t>(), mj.at(key).get<std::int64_t>());
    ASSERT_EQ(mj.at("looks").size(), sj.at("looks").size());
    for (std::size_t l = 0; l < sj.at("looks").size(); ++l) {
      same_iteration(src_db, sj["looks"][l].at("iter").get<std::int64_t>(), mj["looks"][l].at("iter").get<std::int64_t>());
      EXPECT_EQ(mj["looks"][l].at("ms"), sj["looks"][l].at("ms"));
    }
    EXPECT_EQ(mj.at("a1_ms"), sj.at("a1_ms"));
    EXPECT_EQ(mj.at("judged"), sj.at("judged"));

    // Its harness checks: the exported iterations remapped, templates renamed with their proposal.
    const auto sh = s.harness_checks();
    ASSERT_EQ(sh.size(), 2u);
    std::vector<HarnessCheckRecord> mh;
    for (const auto& h : db.harness_checks())
      if (h.submission_dir == sh[0].submission_dir) mh.push_back(h);
    ASSERT_EQ(mh.size(), 2u);
    EXPECT_EQ(mh[1].iterations_json, "[]");
    EXPECT_EQ(mh[0].score_ms, sh[0].score_ms);
    EXPECT_EQ(mh[0].ran_at, sh[0].ran_at);
    const auto se = nlohmann::json::parse(sh[0].iterations_json), me = nlohmann::json::parse(mh[0].iterations_json);
    ASSERT_EQ(me.size(), se.size());
    for (std::size_t v = 0; v < se.size(); ++v) {
      const std::int64_t it = me[v].at("iteration").get<std::int64_t>();
      same_iteration(src_db, se[v].at("iteration").get<std::int64_t>(), it);
      EXPECT_EQ(me[v].at("template"), db.iteration(it)->template_name);
      EXPECT_EQ(me[v].at("variant"), se[v].at("variant"));  // the folder's name in submission_dir
    }
    EXPECT_EQ(me[1].at("iteration").get<std::int64_t>(), *mi.best_iteration_id);
  }
  EXPECT_EQ(templates.size(), 2u);
  EXPECT_EQ(sql_text(out, "SELECT count(*) FROM pragma_foreign_key_check"), "0|\n");

  // query ideas lists both, each with its verdict and template.
  const Output q = run("query ideas --db '" + out + "' --format json");
  ASSERT_EQ(q.code, 0) << q.text;
  const auto qj = nlohmann::json::parse(q.text);
  ASSERT_EQ(qj.size(), 2u) << q.text;
  std::set<std::string> listed;
  for (const auto& i : qj) {
    EXPECT_EQ(i.at("verdict"), "win") << q.text;
    EXPECT_EQ(i.at("file"), "fast.idea") << q.text;
    listed.insert(i.at("template").get<std::string>());
  }
  EXPECT_EQ(listed, templates);
}

TEST(ScaleOut, TwoFakeGpusEvaluateAtOnceNeverOverlapOnOneGpuAndRetimeOnOne) {
  // The same healthy space on one GPU (the default: one worker, no --gpus) and on two.
  // Configs are listed best first, so champion challenges (serialised over the GPUs, docs/scale-out.md) are
  // rare, as in a real night; both runs read one cubin cache compiled beforehand, so NVRTC does not count.
  DaemonFixture one, two;
  two.cache = one.cache;
  const Output warm = run("compile --all --template fake_healthy --templates '" + test::data_dir() +
                          "/fake_templates' --cache '" + one.cache + "'");
  ASSERT_EQ(warm.code, 0) << warm.text;
  const std::string opts = "--fidelity full";
  const std::string log1 = one.dir + "/gpu.log", log2 = two.dir + "/gpu.log";
  const Output r1 = run(one.args(opts, "exhaustive", "fake_healthy"), "FAKE_WORKER_DELAY=0.12 FAKE_WORKER_GPU_LOG=" + log1);
  ASSERT_EQ(r1.code, 0) << r1.text;
  const Output r2 = run(two.args(opts + " --gpus 0,1", "exhaustive", "fake_healthy"),
                        "FAKE_WORKER_DELAY=0.12 FAKE_WORKER_GPU_LOG=" + log2);
  ASSERT_EQ(r2.code, 0) << r2.text;
  ASSERT_EQ(one.iterations().size(), 18u);
  ASSERT_EQ(two.iterations().size(), 18u);
  EXPECT_TRUE(test::census(two.iterations()).duplicated.empty());

  const double rate1 = configs_per_hour(one.db), rate2 = configs_per_hour(two.db);
  RecordProperty("configs_per_hour_1gpu", int(rate1));
  RecordProperty("configs_per_hour_2gpu", int(rate2));
  // The rate itself is a benchmark figure (printed; the H200 pair's is in docs/results.md), not asserted:
  // a loaded CI machine moves it. What makes it double is asserted below: the two GPUs evaluate at once.
  std::printf("fake-worker rate: 1 GPU %.0f configs/h, 2 GPUs %.0f configs/h (x%.2f)\n", rate1, rate2, rate2 / rate1);

  // The default run: GPU 0, no CUDA_VISIBLE_DEVICES, every eval on one GPU.
  for (const auto& it : one.iterations()) EXPECT_EQ(it.gpu_index, 0);
  const auto gpus = by_gpu_without_overlap(read_gpu_log(log2));
  ASSERT_EQ(gpus.size(), 2u) << "both GPUs evaluated";
  by_gpu_without_overlap(read_gpu_log(log1));
  std::size_t concurrent = 0;  // GPU 1 evals that overlap in time with a GPU 0 eval
  for (const auto& e1 : gpus.at(1))
    concurrent += std::any_of(gpus.at(0).begin(), gpus.at(0).end(),
                              [&](const GpuEval& e0) { return e0.start < e1.end && e1.start < e0.end; });
  EXPECT_GE(2 * concurrent, gpus.at(1).size()) << "the GPUs took turns instead of evaluating at once";

  // Each iteration records its GPU, and its whole-suite eval ran on that GPU.
  auto db = ExperimentDb::open(two.db, ExperimentDb::Mode::read_only);
  std::map<std::pair<int, int>, int> gpu_of_config;  // (A, B) -> GPU of its validated eval
  for (const auto& [gpu, evals] : gpus)
    for (const auto& e : evals)
      if (e.validate) gpu_of_config[{e.a, e.b}] = gpu;
  for (const auto& it : db.iterations()) {
    ASSERT_TRUE(it.gpu_index) << it.iter;
    EXPECT_EQ(it.gpu_uuid, "GPU-fake-" + std::to_string(*it.gpu_index));
    EXPECT_EQ(it.sm_clock_mhz, 1980);
    const Config c = config_from_json(it.params_json);
    EXPECT_EQ(gpu_of_config.at({int(c.at("A")), int(c.at("B"))}), *it.gpu_index) << it.params;
  }
  // status shows each GPU: its state, iterations and rate.
  const Output st = run("status --json --db '" + two.db + "'");
  ASSERT_EQ(st.code, 0) << st.text;
  const auto sj = nlohmann::json::parse(st.text);
  ASSERT_EQ(sj.at("gpus").size(), 2u) << st.text;
  int sum = 0;
  for (const auto& g : sj.at("gpus")) {
    EXPECT_GT(g.at("iterations").get<int>(), 0);
    EXPECT_GT(g.at("rate_per_hour").get<double>(), 0);
    EXPECT_EQ(g.at("state"), "stopped");
    sum += g.at("iterations").get<int>();
  }
  EXPECT_EQ(sum, 18);
  const Output text = run("status --db '" + two.db + "'");
  EXPECT_NE(text.text.find("GPU 1 (GPU-fake-1)"), std::string::npos) << text.text;
}

TEST(ScaleOut, AWorkerThatDiesOrHangsIsRestartedOnItsGpuAndTheOthersGoOn) {
  // The fake space with every fault kind, on two pretend GPUs found by `--gpus all`.
  DaemonFixture f;
  const std::string log = f.dir + "/gpu.log";
  const Output out = run(f.args("--gpus all"), std::string(kFakeGpusEnv) + "=2 FAKE_WORKER_GPU_LOG=" + log);
  ASSERT_EQ(out.code, 0) << out.text;
  const auto its = f.iterations();
  const auto c = test::census(its);
  EXPECT_EQ(c.evaluated.size(), test::kFakeSpace);
  EXPECT_TRUE(c.duplicated.empty());
  EXPECT_EQ(c.interrupted, 0);
  std::map<std::string, int> kinds;
  std::map<std::int64_t, int> per_gpu;
  for (const auto& it : its) {
    kinds[to_string(it.failure_kind)]++;
    if (it.gpu_index) per_gpu[*it.gpu_index]++;
  }
  for (const char* k : {"compile", "hang", "fault", "wrong_result", "worker_died"}) EXPECT_EQ(kinds[k], 3) << k;
  EXPECT_EQ(per_gpu.size(), 2u);  // both GPUs took configs (the eval log lists only finished evals)
  const auto gpus = by_gpu_without_overlap(read_gpu_log(log));
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  // Restarts: 9 workers were killed or died (hang, fault, dead). A worker killed by its GPU's last config
  // needs no successor, so at least 9 - (number of GPUs) restarts.
  const auto status = nlohmann::json::parse(test::read_text(status_file_for(f.db)));
  int restarts = 0;
  for (const auto& g : status.at("gpus")) restarts += g.at("restarts").get<int>();
  EXPECT_GE(restarts, 9 - 2);
  // Which GPU meets a worker-killing config depends on which was idle; a fresh worker went on evaluating on
  // a GPU after a kill (a second pid in that GPU's eval log; only finished evals are logged, so a GPU
  // whose last configs killed its workers shows one pid).
  std::size_t fresh = 0;
  for (const auto& [gpu, evals] : gpus) {
    std::set<long> own;
    for (const auto& e : evals) own.insert(e.pid);
    fresh += own.size() > 1;
  }
  EXPECT_GE(fresh, 1u) << "no GPU evaluated with a fresh worker";
  // A/B/A of every promotion: the incumbent, the challenger and the incumbent again, back to back on the challenger's GPU.
  int abas = 0;
  for (const auto& p : db.champion_history("smoke")) {
    const auto j = nlohmann::json::parse(p.aba_json);
    if (!j.contains("a1_ms")) continue;
    const auto ch = db.iteration(p.champion.iteration_id);
    const auto inc = db.iteration(j.at("incumbent_iter").get<std::int64_t>());
    EXPECT_EQ(j.at("gpu_index").get<int>(), *ch->gpu_index);
    const Config cc = config_from_json(ch->params_json), ic = config_from_json(inc->params_json);
    const auto& evals = gpus.at(int(*ch->gpu_index));
    const auto is = [](const GpuEval& e, const Config& c) { return !e.validate && e.a == c.at("A") && e.b == c.at("B"); };
    bool found = false;  // A (incumbent), B (challenger), A: consecutive re-timings on that one GPU
    for (std::size_t i = 1; i + 1 < evals.size(); ++i)
      found = found || (is(evals[i - 1], ic) && is(evals[i], cc) && is(evals[i + 1], ic));
    EXPECT_TRUE(found) << "no A/B/A of iter " << ch->iter << " against iter " << inc->iter << " on GPU " << *ch->gpu_index;
    ++abas;
  }
  EXPECT_GT(abas, 0) << "no A/B/A promotion to check";

  // Every worker group of the run was recorded for the next daemon's reaping.
  EXPECT_EQ(load_worker_records(f.db).size(), 2u);

  // Under a scheduler (Slurm sets CUDA_VISIBLE_DEVICES), --gpus all is the daemon's own list: one worker per
  // entry, given that entry.
  DaemonFixture sched;
  const Output s = run(sched.args("--iterations 4 --fidelity full --gpus all", "exhaustive", "fake_healthy"),
                       "CUDA_VISIBLE_DEVICES=3,5 FAKE_WORKER_DELAY=0.1");
  ASSERT_EQ(s.code, 0) << s.text;
  for (const auto& it : sched.iterations()) EXPECT_TRUE(it.gpu_index == 3 || it.gpu_index == 5) << it.iter;
  const auto sj = nlohmann::json::parse(test::read_text(status_file_for(sched.db))).at("gpus");
  ASSERT_EQ(sj.size(), 2u);
  EXPECT_EQ(sj[0].at("index"), 3);
  EXPECT_EQ(sj[0].at("uuid"), "GPU-fake-3");
  EXPECT_EQ(sj[1].at("index"), 5);
  EXPECT_EQ(sj[1].at("uuid"), "GPU-fake-5");

  // Bad --gpus and --shard values are refused before anything runs.
  const Output twice = run(f.args("--gpus 0,0"));
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.text.find("GPU 0 is named twice"), std::string::npos) << twice.text;
  const Output none = run(f.args("--gpus 2"), std::string(kFakeGpusEnv) + "=2");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.text.find("there is no GPU 2"), std::string::npos) << none.text;
  const Output shard = run(f.args("--shard 2/2"));
  EXPECT_EQ(shard.code, 2);
  EXPECT_NE(shard.text.find("i must be below N"), std::string::npos) << shard.text;
}

}  // namespace
}  // namespace attn
