// Schema version 10 stores a config once (db/configs.hpp): names and values split, the views `iterations` and
// `variants` render params_json / params back exactly as canonical_params_json / compact_params write them, and
// a screened-out iteration of a realistic 16-parameter config costs at most 1 KB of the file (issue 38).
#include <gtest/gtest.h>

#include <random>

#include <fmt/format.h>

#include "db/configs.hpp"
#include "db/store.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

TEST(Configs, SplitSortsTheNamesAndKeepsTheValueTypes) {
  const auto sc = db::split_params(R"({"b":2,"a":"x y","c":true,"d":0.5,"e":-3})");
  EXPECT_EQ(sc.names_json, R"(["a","b","c","d","e"])");
  EXPECT_EQ(sc.values_json, R"(["x y",2,true,0.5,-3])");
  EXPECT_EQ(db::split_params("{}"), (db::StoredConfig{"[]", "[]"}));
  EXPECT_THROW(db::split_params("[1,2]"), std::invalid_argument);
  EXPECT_THROW(db::split_params(R"({"a":[1]})"), std::invalid_argument);
}

TEST(Configs, TheViewsRenderTheConfigAsTheCppRulesWriteIt) {
  auto db = ExperimentDb::open(test::temp_dir("configs-render") + "/t.db");
  const auto run_id = db.begin_run(test::sample_run("quick"));
  const std::vector<std::string> configs = {
      R"({"BLOCK_N":64,"STAGES":2})",       R"({"STAGES":2,"BLOCK_N":64})",   "{}",
      R"({"A":true,"B":false,"C":0.25})",   R"({"mode":"fast, \"exact\"","n":-1,"x":1e-05})",
      R"({"big":12345678901,"f":1.5e300})", R"({"s":"a=b"})"};
  for (std::size_t i = 0; i < configs.size(); ++i) {
    IterationRecord it;
    it.run_id = run_id;
    it.suite = "quick";
    it.template_name = "fa2_mma";
    it.params_json = configs[i];
    const auto iter = db.begin_iteration(it);
    const auto row = db.iteration(iter);
    ASSERT_TRUE(row);
    EXPECT_EQ(row->params_json, canonical_params_json(configs[i])) << configs[i];
    EXPECT_EQ(row->params, compact_params(configs[i])) << configs[i];
    VariantRecord v;
    v.template_name = "fa2_mma";
    v.params_json = configs[i];
    v.content_hash = fmt::format("h{}", i);
    v.compile_ok = true;
    const auto vid = db.upsert_variant(v);
    EXPECT_EQ(db.variant(vid)->params_json, canonical_params_json(configs[i]));
    EXPECT_EQ(db.variant(vid)->params, compact_params(configs[i]));
  }
  // One config row per (template, config), whatever the key order; the names once per name list.
  auto& c = db.connection();
  EXPECT_EQ(test::dump_rows(c, "count(*)", "configs", "1"), fmt::format("{}|\n", configs.size() - 1));
  EXPECT_EQ(test::dump_rows(c, "count(*)", "param_names WHERE names = '[\"BLOCK_N\",\"STAGES\"]'", "1"), "1|\n");
  // The same values under another template are another config; the lookup finds each.
  EXPECT_EQ(db::config_id(c, "wgmma_fa", R"({"BLOCK_N":64,"STAGES":2})", false), std::nullopt);
  const auto a = db::config_id(c, "fa2_mma", R"({"STAGES":2,"BLOCK_N":64})", false);
  const auto b = db::config_id(c, "wgmma_fa", R"({"BLOCK_N":64,"STAGES":2})", true);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(db::config_id(c, "wgmma_fa", R"({"STAGES":2,"BLOCK_N":64})", false), b);
  // has_evaluated goes by the config: key order does not matter, a config never stored is not evaluated.
  EXPECT_FALSE(db.has_evaluated("fa2_mma", R"({"BLOCK_N":64,"STAGES":2})", "quick"));  // still running
  EXPECT_FALSE(db.has_evaluated("fa2_mma", R"({"BLOCK_N":65,"STAGES":2})", "quick"));
}

TEST(Configs, AScreenedOutIterationCostsAtMostOneKilobyte) {
  // Screened-out iterations as the daemon writes them (fa3_tma's 17 parameters, a variant with its cubin path and
  // hash, three screen cases, the screen's description): the file's pages in use per iteration.
  auto db = ExperimentDb::open(test::temp_dir("configs-size") + "/t.db");
  auto& c = db.connection();
  c.exec("PRAGMA synchronous = OFF");
  const auto run_id = db.begin_run(test::sample_run("full"));
  auto used_bytes = [&] {
    auto st = c.prepare("SELECT (SELECT page_count FROM pragma_page_count) - (SELECT freelist_count FROM "
                        "pragma_freelist_count), (SELECT page_size FROM pragma_page_size)");
    st.step();
    return st.column_int64(0) * st.column_int64(1);
  };
  std::mt19937_64 rng(38);
  auto hex = [&] {
    std::string s;
    for (int i = 0; i < 32; ++i) s += "0123456789abcdef"[rng() % 16];
    return s;
  };
  const char* names[] = {"BLOCK_N", "CMEM_PARAMS", "CONSUMERS", "CONVERTERS", "CTAS_PER_SM", "EPILOGUE",
                         "KV_ORDER", "ORDER", "OVERLAP", "PINGPONG", "PRODUCER_REGS", "Q_BUFFERS",
                         "RESCALE_SKIP", "SCHEDULE", "SOFTMAX", "STAGES", "V_CONVERT"};
  const long n = 3000;
  long before = 0;
  for (long i = 0; i <= n; ++i) {
    if (i == 1) before = used_bytes();  // after the first: the tables' first pages are there
    std::string pj = "{";
    for (const char* name : names) pj += fmt::format("{}\"{}\":{}", pj.size() > 1 ? "," : "", name, 8 * (rng() % 6));
    pj += "}";
    auto [it, v] = test::test_iteration(run_id, "full", "fa3_tma", pj, hex());
    it.root_seed = 0;
    it.iter = db.begin_iteration(it);
    v.compile_ms = 493.373851;
    v.registers = 168;
    v.smem_bytes = 1024;
    v.spill_bytes = 0;
    v.cubin_path = "/tmp/attn-tuner-cache/" + v.content_hash + ".cubin";
    v.cubin_hash = hex();
    it.variant_id = db.upsert_variant(v);
    db.set_iteration_variant(it.iter, *it.variant_id);
    it.status = IterationStatus::discard;
    it.fidelity = Fidelity::screen;
    it.screen_ms = 0.417595839351058;
    it.gpu_ms = 13.480346;
    it.compile_ms = 493.120005;
    it.gpu_index = 0;
    it.gpu_uuid = "GPU-1d1ae532-afb5-c2d1-b12c-95d18fb57450";
    it.sm_clock_mhz = 1980;
    it.description = "random sample (no new valid child in 64 tries with up to 4 parameters moved) [fa3_tma]; "
                     "screened out on 3 of 9 cases with at most 5 samples: 0.4176 ms, 119.2% above the best screen "
                     "0.1905 ms (cut-off 10%); 232 regs";
    for (const char* cid : {"full-window-2", "full-global-2", "full-retrieval-2"}) {
      CaseResultRecord cr;
      cr.case_id = cid;
      cr.family = std::string(cid).find("global") != std::string::npos      ? Family::sliding_window_global
                  : std::string(cid).find("retrieval") != std::string::npos ? Family::sliding_window_retrieval
                                                                            : Family::sliding_window;
      cr.median_ms = 0.420543998479843;
      cr.spread = 0.000418499884665386;
      cr.samples = 3;
      cr.sm_clock_mhz = 1980;
      cr.o_max_abs_diff = 0.0078125;
      cr.lse_max_abs_diff = 2.86102294921875e-06;
      cr.passed = true;
      it.cases.push_back(cr);
    }
    db.finish_iteration(it);
  }
  const double per_iteration = static_cast<double>(used_bytes() - before) / n;
  EXPECT_LE(per_iteration, 1024) << per_iteration << " bytes per screened-out iteration";
  RecordProperty("bytes_per_screened_iteration", static_cast<int>(per_iteration));
  std::printf("bytes per screened-out iteration: %.0f\n", per_iteration);
}

}  // namespace
}  // namespace attn
