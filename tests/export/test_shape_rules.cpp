// col_width bounds of a case shape against the workload's CSR generator, and the disjoint dispatch rules.
#include <gtest/gtest.h>

#include <random>

#include "export/shape_rules.hpp"
#include "workload/layout.hpp"

namespace attn {
namespace {

CaseSpec make_case(Family f, int batch, int heads, int t_max, int w, int g, int r, double ratio, const char* id = "c") {
  CaseSpec c;
  c.case_id = id;
  c.family = f;
  c.batch_size = batch;
  c.num_heads = heads;
  c.t_max = t_max;
  c.window_blocks = w;
  c.global_blocks = g;
  c.retrieval_blocks = r;
  c.seq_len_min_ratio = ratio;
  return c;
}

TEST(ExportShapeRules, KvBlocksPerHeadEqualsTheGeneratedCsrWidth) {
  // For each family and many seq_lens, the generator's col_width (max nnz over heads) equals the
  // formula at the largest valid block count.
  std::mt19937 rng(5);
  int checked = 0;
  for (Family f : kAllFamilies)
    for (int w : {1, 2, 4, 7})
      for (int extra : {0, 1, 3, 9})
        for (int t_max : {128, 640, 2048}) {
          CaseSpec c = make_case(f, 2, 3, t_max, w, f == Family::sliding_window_global ? extra : 0,
                                 f == Family::sliding_window_retrieval ? extra : 0, 0.625);
          c.retrieval_local_bias = 0.5;
          for (int trial = 0; trial < 3; ++trial) {
            c.seed = rng();
            std::vector<std::int32_t> seq_lens;
            int max_valid = 0;
            for (int b = 0; b < c.batch_size; ++b) {
              const int len = std::uniform_int_distribution<int>(1, t_max)(rng);
              seq_lens.push_back(len);
              max_valid = std::max(max_valid, (len + kBlockSize - 1) / kBlockSize);
            }
            const BlockSparseLayout layout = build_layout(c, seq_lens);
            EXPECT_EQ(layout.col_width, std::max<std::int64_t>(1, kv_blocks_per_head(c, max_valid)))
                << family_name(f) << " w=" << w << " extra=" << extra << " t_max=" << t_max;
            ++checked;
          }
        }
  EXPECT_EQ(checked, 3 * 4 * 4 * 3 * 3);
  EXPECT_THROW(kv_blocks_per_head(make_case(Family::sliding_window, 1, 1, 256, 2, 0, 0, 1.0), 3), std::invalid_argument);
  EXPECT_THROW(kv_blocks_per_head(make_case(Family::sliding_window, 1, 1, 256, 2, 0, 0, 1.0), 0), std::invalid_argument);
}

TEST(ExportShapeRules, ColWidthRangeHoldsEverySampledLayoutOfTheBuiltinSuites) {
  for (const char* suite : {"smoke", "local-dev", "quick", "full"}) {
    for (const CaseSpec& base : builtin_suite(suite)) {
      const ColWidthRange range = col_width_range(base);
      ASSERT_LE(range.min, range.max) << base.case_id;
      int lowest = 1 << 30, highest = 0;
      for (std::int64_t seed = 1; seed <= 12; ++seed) {
        CaseSpec c = base;
        c.seed = seed * 7919;
        const int width = build_layout(c).col_width;
        EXPECT_GE(width, range.min) << base.case_id;
        EXPECT_LE(width, range.max) << base.case_id;
        lowest = std::min(lowest, width), highest = std::max(highest, width);
      }
      if (base.seq_len_min_ratio == 1.0) {
        EXPECT_EQ(range.min, range.max) << base.case_id;
        EXPECT_EQ(lowest, range.min) << base.case_id;  // the only width such a case can have
      }
    }
  }
  // A hand-checked value: window 4 over 64 valid blocks = 1+2+3 + 61*4 = 250; q_blocks 64.
  EXPECT_EQ(col_width_range(make_case(Family::sliding_window, 2, 16, 8192, 4, 0, 0, 1.0)), (ColWidthRange{250, 250}));
  // Global 1 adds one block to every row past the window: rows 4..63 -> 60 more.
  EXPECT_EQ(col_width_range(make_case(Family::sliding_window_global, 2, 16, 8192, 4, 1, 0, 1.0)),
            (ColWidthRange{310, 310}));
  // ratio 0.625: min_len 5120 -> 40 valid blocks: 6 + 37*4 = 154.
  EXPECT_EQ(col_width_range(make_case(Family::sliding_window, 2, 16, 8192, 4, 0, 0, 0.625)), (ColWidthRange{154, 250}));
}

TEST(ExportShapeRules, RulesAreDisjointAndSendEachTunedShapeToItsVariant) {
  const std::vector<CaseSpec> suite = builtin_suite("full");
  std::vector<CaseAssignment> cases;
  for (const CaseSpec& c : suite) {
    CaseAssignment a;
    a.spec = c;
    a.variant = static_cast<int>(c.family);  // window 0, global 1, retrieval 2
    cases.push_back(a);
  }
  const auto rules = build_shape_rules(cases);
  ExportPlan plan;
  plan.rules = rules;
  plan.default_variant = 9;
  for (std::size_t i = 0; i < rules.size(); ++i)
    for (std::size_t j = i + 1; j < rules.size(); ++j) {
      const ShapeRule &a = rules[i], &b = rules[j];
      const bool same_shape = a.min_batch_size == b.min_batch_size && a.min_num_heads == b.min_num_heads &&
                              a.min_t_max == b.min_t_max;
      EXPECT_FALSE(same_shape && a.min_col_width <= b.max_col_width && b.min_col_width <= a.max_col_width)
          << a.label << " overlaps " << b.label;
    }
  // Every sampled layout of a case whose range is not shared with another family lands on its family.
  for (const CaseSpec& base : suite) {
    for (std::int64_t seed = 1; seed <= 6; ++seed) {
      CaseSpec c = base;
      c.seed = seed;
      const int width = build_layout(c).col_width;
      const int picked = pick_variant(plan, c.batch_size, c.num_heads, c.t_max, width);
      EXPECT_NE(picked, 9) << c.case_id << " width " << width << " fell through to the default";
      // Window cases come first in the suite, so with no latencies they win every overlap.
      if (base.case_id == "full-window-1" || base.case_id == "full-window-2") {
        EXPECT_EQ(picked, 0) << c.case_id << " width " << width;
      }
    }
  }
  // Never-tuned shapes fall through.
  EXPECT_EQ(pick_variant(plan, 1, 16, 4096, 250), 9);
  EXPECT_EQ(pick_variant(plan, 2, 16, 8192, 10000), 9);
}

TEST(ExportShapeRules, OverlapsGoToTheVariantWithLeastMeasuredLatencyElseTheFirstCase) {
  // Same shape, same widths: global w7 g4 and retrieval w7 r4 cannot be told apart by shape.
  const CaseSpec g = make_case(Family::sliding_window_global, 2, 16, 8192, 7, 4, 0, 1.0, "g");
  const CaseSpec r = make_case(Family::sliding_window_retrieval, 2, 16, 8192, 7, 0, 4, 1.0, "r");
  ASSERT_EQ(col_width_range(g), col_width_range(r));
  CaseAssignment a{g, 0, {1.0, 1.5}}, b{r, 1, {1.2, 0.6}};
  auto rules = build_shape_rules({a, b});
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].variant, 1);  // 1.5 + 0.6 < 1.0 + 1.2
  EXPECT_EQ(rules[0].label, "g+r");
  b.latency_ms = {1.2, std::nullopt};  // not every candidate measured: first case wins
  rules = build_shape_rules({a, b});
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].variant, 0);

  // Partial overlap: only the shared widths are contested; the rest keeps each case's variant.
  const CaseSpec w1 = make_case(Family::sliding_window, 1, 1, 8192, 4, 0, 0, 0.625, "w1");  // 154..250
  const CaseSpec w2 = make_case(Family::sliding_window, 1, 1, 8192, 5, 0, 0, 1.0, "w2");    // 310
  const CaseSpec w3 = make_case(Family::sliding_window, 1, 1, 8192, 3, 0, 0, 1.0, "w3");    // 189
  // At width 189 (w1 and w3): variant 0 sums 1.0 + 1.0, variant 1 sums 1.1 + 0.5 -> variant 1.
  rules = build_shape_rules({{w1, 0, {1.0, 1.1}}, {w2, 1, {}}, {w3, 1, {1.0, 0.5}}});
  std::vector<std::vector<int>> got;
  std::vector<std::string> labels;
  for (const ShapeRule& rule : rules) {
    got.push_back({rule.min_col_width, rule.max_col_width, rule.variant});
    labels.push_back(rule.label);
  }
  EXPECT_EQ(got, (std::vector<std::vector<int>>{{154, 188, 0}, {189, 189, 1}, {190, 250, 0}, {310, 310, 1}}));
  EXPECT_EQ(labels, (std::vector<std::string>{"w1", "w1+w3", "w1", "w2"}));
  // Adjacent pieces of one variant merge: with variant 0 winning at 189 there is one rule for w1.
  rules = build_shape_rules({{w1, 0, {1.0, 2.0}}, {w2, 1, {}}, {w3, 1, {1.0, 0.5}}});
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ((std::vector<int>{rules[0].min_col_width, rules[0].max_col_width, rules[0].variant}),
            (std::vector<int>{154, 250, 0}));
  EXPECT_EQ(rules[0].label, "w1+w3");
}

}  // namespace
}  // namespace attn
