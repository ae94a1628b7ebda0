// `attn-tuner export` end to end: a temporary experiment DB with champions, exported through the CLI
// and build_export_plan, then checked statically (python3, no torch); and the error paths, each of
// which must leave nothing at --out.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "export/plan_from_db.hpp"
#include "export/shape_rules.hpp"
#include "gpu/compiler.hpp"
#include "tests/export/export_db.hpp"
#include "tests/export/helpers.hpp"
#include "tests/test_support.hpp"
#include "tuner/space.hpp"
#include "workload/layout.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

using test::fake_cubin;
using test::with;
using DbFixture = test::ExportDb;

using test::export_cli;
nlohmann::json check_dir(const std::string& dir, const std::string& decoded_dir) {
  return test::check_submission_dir(dir, decoded_dir);
}

TEST(ExportFromDb, ChampionsOfFullBecomeASubmissionThatDispatchesEachFamilyToItsChampion) {
  if (!test::python3_available()) GTEST_SKIP() << "python3 not available";
  const Config base = test::fa2_mma_default_config();
  const Config cfg_b = with(base, {{"BLOCK_M", 64}});   // global champion
  const Config cfg_c = with(base, {{"BLOCK_N", 32}});   // retrieval champion
  DbFixture f;
  const auto iter_a = f.add_iteration(base, test::fa2_mma_cubin(base), [](const CaseSpec&) { return 1.0; });
  const auto iter_b = f.add_iteration(cfg_b, test::fa2_mma_cubin(cfg_b), [](const CaseSpec& c) {
    return c.family == Family::sliding_window_global ? 0.8 : 1.2;
  });
  const auto iter_c = f.add_iteration(cfg_c, test::fa2_mma_cubin(cfg_c), [](const CaseSpec& c) {
    if (c.case_id == "full-window-2") return 0.5;  // beats the window champion by far more than 3 %
    return c.family == Family::sliding_window_retrieval ? 0.7 : 1.5;
  });
  f.champion(ChampionScope::overall, iter_a);
  f.champion(ChampionScope::sliding_window, iter_a);
  f.champion(ChampionScope::sliding_window_global, iter_b);
  f.champion(ChampionScope::sliding_window_retrieval, iter_c);

  const std::string out = test::temp_dir("export-out") + "/submission";
  const auto r = export_cli("--db " + shell_quote(f.path()) + " --out " + shell_quote(out));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string a = "fa2_mma_i" + std::to_string(iter_a), b = "fa2_mma_i" + std::to_string(iter_b),
                    c = "fa2_mma_i" + std::to_string(iter_c);
  EXPECT_NE(r.output.find("3 variant(s)"), std::string::npos) << r.output;

  const std::string decoded = test::temp_dir("export-decoded");
  const auto report = check_dir(out, decoded);
  EXPECT_TRUE(report["problems"].empty()) << report.dump(2);
  EXPECT_EQ(report["manifest"], nlohmann::json::parse(fmt::format(R"([
      {{"name": "{}", "families": ["sliding_window"]}},
      {{"name": "{}", "families": ["sliding_window_global"]}},
      {{"name": "{}", "families": ["sliding_window_retrieval"]}}])", a, b, c)));
  EXPECT_EQ(report["variants"], nlohmann::json::array({a, b, c}));
  for (const auto& [name, config] : {std::pair{a, base}, std::pair{b, cfg_b}, std::pair{c, cfg_c}}) {
    const std::string bytes = test::read_file(decoded + "/" + name + ".bin");
    EXPECT_EQ(std::vector<std::uint8_t>(bytes.begin(), bytes.end()), test::fa2_mma_cubin(config)) << name;
  }
  const auto summary = nlohmann::json::parse(test::read_file(out + "/export_plan.json"));
  EXPECT_EQ(summary["default_variant"], a);
  EXPECT_EQ(summary["provenance"]["case_variants"]["full-window-2"], c);
  EXPECT_EQ(summary["provenance"]["case_variants"]["full-window-1"], a);
  EXPECT_EQ(summary["provenance"]["case_variants"]["full-global-1"], b);
  EXPECT_EQ(summary["variants"][1]["provenance"]["iteration"], iter_b);
  EXPECT_EQ(summary["variants"][1]["defines"]["BLOCK_M"], 64);

  // The Python dispatch on sampled layouts of every case (other seeds than the tuned ones) gives the
  // rule's variant: the case's own choice where only that case's col_width range holds the width,
  // else one of the choices of the cases whose ranges hold it (full's families overlap in width).
  // global-3 and retrieval-3 have one and the same width and go to the variant with the least summed
  // latency over both (b: 0.8 + 1.2 < c: 1.5 + 0.7).
  const ExportPlan plan = build_export_plan(f.db(), {});
  nlohmann::json shapes = nlohmann::json::array(), expected = nlohmann::json::array();
  const std::map<std::string, int> chosen = {
      {"full-window-1", 0}, {"full-window-2", 2},    {"full-window-3", 0},    {"full-global-1", 1},
      {"full-global-2", 1}, {"full-global-3", 1},    {"full-retrieval-1", 2}, {"full-retrieval-2", 2},
      {"full-retrieval-3", 1}};
  const std::vector<CaseSpec> suite = builtin_suite("full", 4242);
  int sole = 0;
  for (const CaseSpec& spec : suite) {
    for (std::int64_t seed = 1; seed <= 4; ++seed) {
      CaseSpec s = spec;
      s.seed = spec.seed + seed;
      const int width = build_layout(s).col_width;
      shapes.push_back({s.batch_size, s.num_heads, s.t_max, width});
      const int want = pick_variant(plan, s.batch_size, s.num_heads, s.t_max, width);
      expected.push_back(want);
      std::set<int> allowed;
      for (const CaseSpec& other : suite) {
        const ColWidthRange range = col_width_range(other);
        if (range.min <= width && width <= range.max) allowed.insert(chosen.at(other.case_id));
      }
      EXPECT_TRUE(allowed.count(want)) << spec.case_id << " width " << width << " picked " << want;
      if (allowed.size() == 1) {
        ++sole;
        EXPECT_EQ(want, chosen.at(spec.case_id)) << spec.case_id;
      }
      if (spec.case_id == "full-global-3" || spec.case_id == "full-retrieval-3") {
        EXPECT_EQ(want, 1) << spec.case_id;
      }
      if (spec.case_id == "full-window-3") {
        EXPECT_EQ(want, 0) << spec.case_id;
      }
    }
  }
  EXPECT_GE(sole, 8);  // window-3, global-3 and retrieval-3 at least
  shapes.push_back({1, 16, 4096, 250});  // a quick-suite shape: never tuned -> default
  expected.push_back(0);
  EXPECT_EQ(nlohmann::json::parse(test::dispatch_picks(out, shapes.dump())), expected);

  // A second export into the same folder needs --force.
  const auto again = export_cli("--db " + shell_quote(f.path()) + " --out " + shell_quote(out));
  EXPECT_EQ(again.status, 2) << again.output;
  EXPECT_NE(again.output.find("--force"), std::string::npos) << again.output;
  EXPECT_EQ(export_cli("--db " + shell_quote(f.path()) + " --out " + shell_quote(out) + " --force").status, 0);
}

TEST(ExportFromDb, OneOverallChampionIsACatchAllAndAMissingCubinIsRebuilt) {
  const Config base = test::fa2_mma_default_config();
  DbFixture f;
  const auto iter = f.add_iteration(base, {}, [](const CaseSpec&) { return 1.0; });  // no cubin file
  f.champion(ChampionScope::overall, iter);
  const ExportPlan plan = build_export_plan(f.db(), {});
  ASSERT_EQ(plan.variants.size(), 1u);
  EXPECT_EQ(plan.variants[0].cubin, test::fa2_mma_cubin(base));
  EXPECT_EQ(plan.variants[0].provenance["cubin"], "recompiled (cubin_path missing)");
  EXPECT_EQ(plan.variants[0].nvrtc_options, (std::vector<std::string>{"-std=c++17"}));
  EXPECT_EQ(variant_manifest(plan), (std::vector<ManifestEntry>{{"fa2_mma_i" + std::to_string(iter), {}}}));
  // Every case of the suite has a rule, all to the only variant.
  EXPECT_FALSE(plan.rules.empty());
  for (const ShapeRule& r : plan.rules) EXPECT_EQ(r.variant, 0);
}

/// Runs the CLI and expects exit code 2 with `message` in the output, and nothing at the --out path.
void expect_cli_error(const std::string& args, const std::string& out, const std::string& message) {
  const auto r = export_cli(args + " --out " + shell_quote(out));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << "expected '" << message << "' in: " << r.output;
  EXPECT_FALSE(fs::exists(out)) << out;
  for (const auto& e : fs::directory_iterator(fs::path(out).parent_path()))
    EXPECT_EQ(e.path().filename().string().find("export-tmp"), std::string::npos) << e.path();
}

TEST(ExportFromDb, BadInputIsAClearErrorAndWritesNothing) {
  const std::string out = test::temp_dir("export-out") + "/submission";
  const std::string scratch = test::temp_dir("export-scratch");
  expect_cli_error("--db " + shell_quote(scratch + "/none.db"), out, "no experiment DB at");
  test::write_file(scratch + "/empty.db", "");
  expect_cli_error("--db " + shell_quote(scratch + "/empty.db"), out, "cannot read the experiment DB");
  test::write_file(scratch + "/text.db", "this is not sqlite, just some text long enough to have a header....");
  expect_cli_error("--db " + shell_quote(scratch + "/text.db"), out, "cannot read the experiment DB");

  DbFixture f;  // a DB with a run and no champion
  expect_cli_error("--db " + shell_quote(f.path()), out, "no champions yet");
  const auto iter = f.add_iteration(test::fa2_mma_default_config(), fake_cubin(1), [](const CaseSpec&) { return 1.0; });
  f.champion(ChampionScope::sliding_window, iter);  // a family champion but no overall one
  expect_cli_error("--db " + shell_quote(f.path()), out, "no overall champion for suite 'full'");
  f.champion(ChampionScope::overall, iter);
  expect_cli_error("--db " + shell_quote(f.path()) + " --suite quick", out,
                   "has no run of suite quick (suites there: full (run 1))");
  expect_cli_error("--db " + shell_quote(f.path()) + " --templates " + shell_quote(scratch), out,
                   "template 'fa2_mma' not usable");
  // The non-empty --out check comes first, before the DB is read.
  fs::create_directories(scratch + "/busy");
  test::write_file(scratch + "/busy/x.txt", "x");
  const auto busy = export_cli("--db " + shell_quote(f.path()) + " --out " + shell_quote(scratch + "/busy"));
  EXPECT_EQ(busy.status, 2);
  EXPECT_NE(busy.output.find("not empty"), std::string::npos) << busy.output;
  EXPECT_EQ(test::read_file(scratch + "/busy/x.txt"), "x");
}

TEST(ExportFromDb, ChampionsThatCannotBeExportedAreRefused) {
  const Config base = test::fa2_mma_default_config();
  {  // The template changed since the variant was compiled (its hash is another): refused unless allowed.
    DbFixture f;
    const auto iter =
        f.add_iteration(base, fake_cubin(2), [](const CaseSpec&) { return 1.0; }, std::string(32, 'a'));
    f.champion(ChampionScope::overall, iter);
    EXPECT_THROW(
        {
          try {
            build_export_plan(f.db(), {});
          } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("--allow-stale-source"), std::string::npos) << e.what();
            throw;
          }
        },
        std::invalid_argument);
    DbExportOptions allow;
    allow.allow_stale_source = true;
    const ExportPlan plan = build_export_plan(f.db(), allow);
    EXPECT_EQ(plan.variants[0].cubin, fake_cubin(2));
    EXPECT_EQ(plan.variants[0].provenance["source_matches_cubin"], false);
    // Stale and no cubin: nothing to export.
    fs::remove(f.dir() + "/" + std::string(32, 'a') + ".cubin");
    EXPECT_THROW(build_export_plan(f.db(), allow), std::invalid_argument);
  }
  {  // A champion whose variant failed to compile.
    DbFixture f;
    const auto iter =
        f.add_iteration(base, fake_cubin(3), [](const CaseSpec&) { return 1.0; }, std::string(32, 'b'), false);
    f.champion(ChampionScope::overall, iter);
    EXPECT_THROW(build_export_plan(f.db(), {}), std::invalid_argument);
  }
  {  // Champions for two suites and no --suite: the latest run's suite (db/suite_choice.hpp), as every read command.
    DbFixture f;
    const auto iter = f.add_iteration(base, fake_cubin(4), [](const CaseSpec&) { return 1.0; });
    f.champion(ChampionScope::overall, iter);
    RunRecord run;
    run.suite = "quick";
    run.suite_json = suite_to_manifest_json(builtin_suite("quick"));
    run.strategy = "test";
    IterationRecord it;
    it.run_id = f.db().begin_run(run);
    it.suite = "quick";
    it.template_name = "fa2_mma";
    it.params_json = config_to_json(base);
    it.iter = f.db().begin_iteration(it);
    it.status = IterationStatus::keep;
    it.geomean_ms = 1.0;
    f.db().finish_iteration(it);
    f.db().set_champion({"quick", ChampionScope::overall, it.iter, 1.0, ""});
    try {  // quick, the latest run's: its champion has no variant
      build_export_plan(f.db(), {});
      ADD_FAILURE() << "expected an error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("champion 'overall' of suite 'quick'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("no compiled variant"), std::string::npos) << e.what();
    }
    DbExportOptions quick;
    quick.suite = "quick";
    try {  // that quick champion has no variant
      build_export_plan(f.db(), quick);
      ADD_FAILURE() << "expected an error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("no compiled variant"), std::string::npos) << e.what();
    }
    DbExportOptions full;
    full.suite = "full";
    EXPECT_EQ(build_export_plan(f.db(), full).variants.size(), 1u);
  }
}

}  // namespace
}  // namespace attn
