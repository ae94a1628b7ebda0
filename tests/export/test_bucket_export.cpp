// Bucket champions in the export (docs/export.md, "Bucket champions"): a config fastest on one
// (family, t_max, batch*heads) bucket by more than the margin becomes a variant and serves that bucket's
// shapes; one faster only within the margin does not; the 16-variant cap keeps the largest weighted gains;
// a bucket whose cases are not all measured has no champion.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/shape_buckets.hpp"
#include "export/plan_from_db.hpp"
#include "export/shape_rules.hpp"
#include "tests/export/export_db.hpp"
#include "tests/export/helpers.hpp"
#include "tests/test_support.hpp"
#include "workload/layout.hpp"

namespace attn {
namespace {
using test::fake_cubin;
using test::shell_quote;
using test::with;

std::string name_of(std::int64_t iter) { return "fa2_mma_i" + std::to_string(iter); }

/// The row of export_plan provenance "buckets" whose label is `label`.
nlohmann::json bucket_row(const ExportPlan& plan, const std::string& label) {
  for (const auto& b : plan.provenance["buckets"])
    if (b["bucket"] == label) return b;
  ADD_FAILURE() << "no bucket " << label << " in " << plan.provenance["buckets"].dump(1);
  return nullptr;
}

int variant_index(const ExportPlan& plan, const std::string& name) {
  for (std::size_t i = 0; i < plan.variants.size(); ++i)
    if (plan.variants[i].name == name) return static_cast<int>(i);
  return -1;
}

/// broad: every case is a bucket of its own. a = every champion (1.0 ms everywhere); b is 10 % faster on
/// broad-window-2 (the bucket sliding_window t_max 8192, B·H 32), c 1 % faster on broad-global-2.
struct BroadDb {
  test::ExportDb f{"broad"};
  std::int64_t a = 0, b = 0, c = 0;
  BroadDb() {
    const Config base = test::fa2_mma_default_config();
    a = f.add_iteration(base, fake_cubin(1), [](const CaseSpec&) { return 1.0; });
    b = f.add_iteration(with(base, {{"BLOCK_N", 32}}), fake_cubin(2),
                        [](const CaseSpec& s) { return s.case_id == "broad-window-2" ? 0.9 : 1.3; });
    c = f.add_iteration(with(base, {{"BLOCK_M", 64}}), fake_cubin(3), [](const CaseSpec& s) {
      return s.case_id == "broad-global-2" ? 0.99 : 1.3;
    }, "", true, IterationStatus::discard);
    for (ChampionScope s : {ChampionScope::overall, ChampionScope::sliding_window, ChampionScope::sliding_window_global,
                            ChampionScope::sliding_window_retrieval})
      f.champion(s, a);
  }
};

TEST(ExportBuckets, TenPercentFasterOnABucketIsExportedAndRoutedOnePercentIsNot) {
  BroadDb d;
  const ExportPlan plan = build_export_plan(d.f.db(), {});
  ASSERT_EQ(plan.variants.size(), 2u);
  EXPECT_EQ(plan.variants[0].name, name_of(d.a));
  EXPECT_EQ(plan.variants[1].name, name_of(d.b));
  EXPECT_EQ(plan.variants[1].provenance["buckets"], nlohmann::json::array({"sliding_window t_max 8192, B·H 32"}));
  EXPECT_EQ(plan.variants[1].provenance["scopes"], nlohmann::json::array({"bucket"}));

  const auto win = bucket_row(plan, "sliding_window t_max 8192, B·H 32");
  EXPECT_EQ(win["status"], "exported");
  EXPECT_EQ(win["champion_iter"], d.b);
  EXPECT_EQ(win["reference"], name_of(d.a));
  EXPECT_EQ(win["note"], "");  // it serves some of its shapes
  EXPECT_NEAR(win["gain"].get<double>(), 0.10, 1e-9);
  EXPECT_NEAR(win["champion_ms"].get<double>(), 0.9, 1e-9);
  EXPECT_NEAR(win["reference_ms"].get<double>(), 1.0, 1e-9);
  const auto glob = bucket_row(plan, "sliding_window_global t_max 8192, B·H 64");
  EXPECT_EQ(glob["status"], "below margin");
  EXPECT_EQ(glob["champion_iter"], d.c);  // a discard iteration counts too
  EXPECT_NEAR(glob["gain"].get<double>(), 0.01, 1e-9);
  EXPECT_EQ(glob["variant"], nullptr);
  EXPECT_EQ(bucket_row(plan, "sliding_window t_max 4096, B·H 16")["status"], "same variant");
  EXPECT_EQ(plan.provenance["buckets"].size(), 9u);

  EXPECT_EQ(plan.provenance["case_variants"]["broad-window-2"], name_of(d.b));
  EXPECT_EQ(plan.provenance["case_variants"]["broad-global-2"], name_of(d.a));
  // The shapes broad-window-2's seq_lens can produce go to b where no other case of its (batch, heads,
  // t_max) shares the col_width, and never to b for a shape of another bucket alone.
  const CaseSpec* w2 = nullptr;
  for (const CaseSpec& s : d.f.cases())
    if (s.case_id == "broad-window-2") w2 = &s;
  ASSERT_NE(w2, nullptr);
  const ColWidthRange range = col_width_range(*w2);
  int sole = 0;
  for (int width = range.min; width <= range.max; ++width) {
    bool shared = false;
    for (const CaseSpec& o : d.f.cases()) {
      const ColWidthRange r = col_width_range(o);
      shared |= o.case_id != w2->case_id && o.batch_size == w2->batch_size && o.num_heads == w2->num_heads &&
                o.t_max == w2->t_max && r.min <= width && width <= r.max;
    }
    if (shared) continue;
    ++sole;
    EXPECT_EQ(pick_variant(plan, w2->batch_size, w2->num_heads, w2->t_max, width), 1) << width;
  }
  EXPECT_GT(sole, 0);
  for (const CaseSpec& o : d.f.cases())
    if (o.case_id != "broad-window-2") {
      const ColWidthRange r = col_width_range(o);
      EXPECT_EQ(pick_variant(plan, o.batch_size, o.num_heads, o.t_max, r.min), 0) << o.case_id;
    }

  // The noise guard: at a 15 % margin b's 10 % is noise; --no-buckets exports the champions only.
  DbExportOptions strict;
  strict.bucket_margin = 0.15;
  const ExportPlan guarded = build_export_plan(d.f.db(), strict);
  EXPECT_EQ(guarded.variants.size(), 1u);
  EXPECT_EQ(bucket_row(guarded, "sliding_window t_max 8192, B·H 32")["status"], "below margin");
  DbExportOptions off;
  off.buckets = false;
  const ExportPlan plain = build_export_plan(d.f.db(), off);
  EXPECT_EQ(plain.variants.size(), 1u);
  EXPECT_TRUE(plain.provenance["buckets"].empty());
  DbExportOptions bad;
  bad.bucket_margin = 1.0;
  EXPECT_THROW(build_export_plan(d.f.db(), bad), std::invalid_argument);
}

TEST(ExportBuckets, TheCliPrintsEveryBucketAndTheSubmissionDispatchesTheBucketInPython) {
  if (!test::python3_available()) GTEST_SKIP() << "python3 not available";
  BroadDb d;
  const std::string out = test::temp_dir("export-out") + "/submission";
  const auto r = test::export_cli("--db " + shell_quote(d.f.path()) + " --out " + shell_quote(out));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 variant(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(fmt::format("sliding_window t_max 8192, B·H 32: iter {} 0.9000 ms vs {} 1.0000 ms (gain "
                                      "10.0%), exported -> {}",
                                      d.b, name_of(d.a), name_of(d.b))),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(fmt::format("sliding_window_global t_max 8192, B·H 64: iter {} 0.9900 ms vs {} 1.0000 ms "
                                      "(gain 1.0%), below margin",
                                      d.c, name_of(d.a))),
            std::string::npos)
      << r.output;

  const auto report = test::check_submission_dir(out);
  EXPECT_TRUE(report["problems"].empty()) << report.dump(2);
  EXPECT_EQ(report["variants"], nlohmann::json::array({name_of(d.a), name_of(d.b)}));
  // The bucket variant serves no family as a whole: the manifest is the champion's catch-all.
  EXPECT_EQ(report["manifest"], nlohmann::json::parse(fmt::format(R"([{{"name": "{}"}}])", name_of(d.a))));
  const auto summary = nlohmann::json::parse(test::read_file(out + "/export_plan.json"));
  EXPECT_EQ(summary["provenance"]["bucket_margin"], 0.03);
  EXPECT_NE(test::read_file(out + "/README.md").find("bucket sliding_window t_max 8192, B·H 32"), std::string::npos);

  // attn_tuner_dispatch.py on every col_width each case's seq_lens can produce: what the C++ rule picks,
  // b for the widths of broad-window-2 that no other case of its (batch, heads, t_max) shares.
  const ExportPlan plan = build_export_plan(d.f.db(), {});
  nlohmann::json shapes = nlohmann::json::array(), expected = nlohmann::json::array();
  int to_bucket = 0;
  for (const CaseSpec& s : d.f.cases()) {
    const ColWidthRange range = col_width_range(s);
    for (int width = range.min; width <= range.max; ++width) {
      shapes.push_back({s.batch_size, s.num_heads, s.t_max, width});
      const int want = pick_variant(plan, s.batch_size, s.num_heads, s.t_max, width);
      expected.push_back(want);
      to_bucket += want == 1;
    }
  }
  EXPECT_GT(to_bucket, 0);
  EXPECT_EQ(nlohmann::json::parse(test::dispatch_picks(out, shapes.dump())), expected);

  const auto plain = test::export_cli("--db " + shell_quote(d.f.path()) + " --out " + shell_quote(out) +
                                      " --force --no-buckets");
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_NE(plain.output.find("1 variant(s)"), std::string::npos) << plain.output;
  EXPECT_NE(plain.output.find("bucket champions: off"), std::string::npos) << plain.output;
  const auto refused = test::export_cli("--db " + shell_quote(d.f.path()) + " --out " + shell_quote(out) +
                                        " --force --bucket-margin 2");
  EXPECT_EQ(refused.status, 2) << refused.output;
}

/// 20 window cases, each its own bucket (t_max x batch), for the cap.
std::vector<CaseSpec> twenty_buckets() {
  std::vector<CaseSpec> out;
  for (int t_max : {1024, 2048, 4096, 8192})
    for (int batch = 1; batch <= 5; ++batch) {
      CaseSpec c;
      c.case_id = fmt::format("w-{}-{}", t_max, batch);
      c.family = Family::sliding_window;
      c.batch_size = batch;
      c.num_heads = 8;
      c.t_max = t_max;
      c.window_blocks = 4;
      c.seed = static_cast<std::int64_t>(out.size()) + 1;
      out.push_back(c);
    }
  return out;
}

TEST(ExportBuckets, TheSixteenVariantCapKeepsTheLargestGains) {
  test::ExportDb f("twenty", twenty_buckets());
  const Config base = test::fa2_mma_default_config();
  const auto champ = f.add_iteration(base, fake_cubin(0), [](const CaseSpec&) { return 1.0; });
  f.champion(ChampionScope::overall, champ);
  f.champion(ChampionScope::sliding_window, champ);
  // Config k wins bucket k by 4 + k percent and is slower elsewhere.
  std::vector<std::int64_t> iters;
  for (int k = 0; k < 20; ++k) {
    const std::string id = f.cases()[static_cast<std::size_t>(k)].case_id;
    const double ms = 1.0 - (0.04 + 0.01 * k);
    iters.push_back(f.add_iteration(with(base, {{"BLOCK_N", 200 + k}}), fake_cubin(10 + k),
                                    [id, ms](const CaseSpec& c) { return c.case_id == id ? ms : 1.5; }));
  }
  const ExportPlan plan = build_export_plan(f.db(), {});
  ASSERT_EQ(static_cast<int>(plan.variants.size()), kMaxExportVariants);
  // 15 slots beside the champion: buckets 5..19 (the largest gains) are exported, 0..4 dropped.
  for (int k = 0; k < 20; ++k) {
    const CaseSpec& c = f.cases()[static_cast<std::size_t>(k)];
    const auto row = bucket_row(plan, fmt::format("sliding_window t_max {}, B·H {}", c.t_max, c.batch_size * 8));
    EXPECT_EQ(row["champion_iter"], iters[static_cast<std::size_t>(k)]) << k;
    EXPECT_EQ(row["status"], k < 5 ? "dropped (16-variant cap)" : "exported") << k;
    EXPECT_EQ(variant_index(plan, name_of(iters[static_cast<std::size_t>(k)])) >= 0, k >= 5) << k;
    EXPECT_EQ(plan.provenance["case_variants"][c.case_id], k < 5 ? name_of(champ) : name_of(iters[static_cast<std::size_t>(k)]))
        << k;
  }
  // Larger weighted gains first: the variant order follows the gains, largest first.
  EXPECT_EQ(plan.variants[1].name, name_of(iters[19]));
  EXPECT_EQ(plan.variants[15].name, name_of(iters[5]));
}

TEST(ExportBuckets, ABucketWhoseCasesAreNotAllMeasuredHasNoChampionFromThatIteration) {
  // Two buckets of two cases each (same t_max and batch*heads: 2 x 16 and 1 x 32).
  std::vector<CaseSpec> cases;
  for (const auto& [id, t_max, batch, heads] :
       {std::tuple{"a1", 4096, 2, 16}, std::tuple{"a2", 4096, 1, 32}, std::tuple{"b1", 8192, 2, 16},
        std::tuple{"b2", 8192, 1, 32}}) {
    CaseSpec c;
    c.case_id = id;
    c.family = Family::sliding_window;
    c.batch_size = batch;
    c.num_heads = heads;
    c.t_max = t_max;
    c.window_blocks = 4;
    c.seed = 7;
    cases.push_back(c);
  }
  test::ExportDb f("pairs", cases);
  const Config base = test::fa2_mma_default_config();
  // The champion failed b2: its bucket cannot be compared with it.
  const auto champ = f.add_iteration(base, fake_cubin(0), [](const CaseSpec& c) -> std::optional<double> {
    if (c.case_id == "b2") return std::nullopt;
    return 1.0;
  });
  f.champion(ChampionScope::overall, champ);
  // 20 % faster on a1 and a2 but failed a2: not a champion of bucket a; 20 % faster on all of b.
  const auto partial = f.add_iteration(with(base, {{"BLOCK_N", 32}}), fake_cubin(1),
                                       [](const CaseSpec& c) -> std::optional<double> {
                                         if (c.case_id == "a2") return std::nullopt;
                                         return 0.8;
                                       });
  // 5 % faster on the whole of bucket a.
  const auto whole = f.add_iteration(with(base, {{"BLOCK_M", 64}}), fake_cubin(2),
                                     [](const CaseSpec& c) { return c.case_id[0] == 'a' ? 0.95 : 1.2; });
  const ExportPlan plan = build_export_plan(f.db(), {});
  const auto a = bucket_row(plan, "sliding_window t_max 4096, B·H 32");
  EXPECT_EQ(a["champion_iter"], whole);
  EXPECT_EQ(a["status"], "exported");
  const auto b = bucket_row(plan, "sliding_window t_max 8192, B·H 32");
  EXPECT_EQ(b["champion_iter"], partial);
  EXPECT_EQ(b["reference_ms"], nullptr);
  EXPECT_EQ(b["status"], "reference not measured on every case");
  EXPECT_EQ(variant_index(plan, name_of(partial)), -1);
  EXPECT_EQ(plan.variants.size(), 2u);
  EXPECT_EQ(plan.provenance["case_variants"]["a1"], name_of(whole));
  EXPECT_EQ(plan.provenance["case_variants"]["a2"], name_of(whole));
  EXPECT_EQ(plan.provenance["case_variants"]["b1"], name_of(champ));

  // Without any iteration that passed every case of a bucket there is no champion.
  std::vector<IterationRecord> its;
  for (std::int64_t iter : {champ, partial}) its.push_back(*f.db().iteration(iter));
  const auto best = bucket_champions(its, shape_buckets(cases, true));
  ASSERT_EQ(best.size(), 2u);
  ASSERT_TRUE(best[0].has_value());
  EXPECT_EQ(best[0]->iter, champ);  // partial failed a2
  ASSERT_TRUE(best[1].has_value());
  EXPECT_EQ(best[1]->iter, partial);  // champ failed b2
  its.pop_back();
  EXPECT_FALSE(bucket_champions(its, shape_buckets(cases, true))[1].has_value());
}

}  // namespace
}  // namespace attn
