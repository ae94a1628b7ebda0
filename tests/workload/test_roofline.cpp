// case_work counts and the harness's suite score.
#include <gtest/gtest.h>

#include <cmath>

#include "workload/roofline.hpp"

namespace attn {
namespace {

CaseSpec spec_of(Family f, int batch, int heads, int t_max, int w, int g, int r, std::int64_t seed) {
  CaseSpec c;
  c.case_id = "roofline-test";
  c.family = f;
  c.batch_size = batch;
  c.num_heads = heads;
  c.t_max = t_max;
  c.window_blocks = w;
  c.global_blocks = g;
  c.retrieval_blocks = r;
  c.seed = seed;
  return c;
}

TEST(Roofline, HandCheckedSmallCase) {
  // One head, t_max 256, seq_len 200, window 2: rows {0} and {0, 1}; q_block 1 has 72 valid queries.
  const auto L = build_layout(spec_of(Family::sliding_window, 1, 1, 256, 2, 0, 0, 1), {200});
  const CaseWork w = case_work(L, 256);
  EXPECT_EQ(w.kv_block_pairs, 3);
  // pairs: (0,0) causal 128*129/2 = 8256; (1,0) 72*128 = 9216; (1,1) causal 72*73/2 = 2628.
  const double pairs = 8256 + 9216 + 2628;
  EXPECT_DOUBLE_EQ(w.flops, 4.0 * 128 * pairs);
  // q: 200 rows * 256 B; k, v: blocks 0 (128 tokens) and 1 (72 tokens) * 256 B * 2;
  // o + lse: 256 rows * (256 + 4) B; row_ptr 3 + col_idx 3 + seq_lens 1 int32.
  EXPECT_DOUBLE_EQ(w.bytes, 200 * 256 + 2 * 200 * 256 + 256 * 260 + 7 * 4);
  const Ceilings c{1e12, 1e11};
  EXPECT_DOUBLE_EQ(w.floor_s(c), std::max(w.flops / 1e12, w.bytes / 1e11));
  EXPECT_TRUE(w.compute_bound(c));  // 10.3 MFLOP / 1e12 = 10.3 us > 220 KB / 1e11 = 2.2 us
  EXPECT_NEAR(w.floor_s(c), 10.29e-6, 0.01e-6);
  EXPECT_FALSE(w.compute_bound(Ceilings{1e13, 1e11}));  // 1.03 us < 2.2 us
  EXPECT_NEAR(w.floor_s(Ceilings{1e13, 1e11}), 2.20188e-6, 1e-11);
}

// The pair count equals a brute-force count over tokens of the CSR's token mask.
TEST(Roofline, PairCountEqualsBruteForceTokenCount) {
  for (Family f : kAllFamilies) {
    const auto spec = spec_of(f, 3, 2, 1024, 2, 2, 3, 17);
    auto s = spec;
    s.seq_len_min_ratio = 0.2;
    const auto L = build_layout(s);
    std::int64_t pairs = 0, blocks = 0;
    for (int b = 0; b < 3; ++b) {
      const int seq = L.seq_lens[b];
      for (int h = 0; h < 2; ++h)
        for (int q = 0; q < L.q_blocks; ++q)
          for (int i = L.row_begin(b, h, q); i < L.row_end(b, h, q); ++i) {
            ++blocks;
            const int c = L.col(b, h, i);
            for (int t = q * 128; t < q * 128 + 128; ++t)
              for (int u = c * 128; u < c * 128 + 128; ++u) pairs += t < seq && u < seq && u <= t;
          }
    }
    const auto w = case_work(L, 1024);
    EXPECT_EQ(w.kv_block_pairs, blocks);
    EXPECT_EQ(w.kv_block_pairs, L.allowed_pairs());
    EXPECT_DOUBLE_EQ(w.flops, 512.0 * double(pairs)) << family_name(f);
  }
}

TEST(Roofline, RejectsABrokenLayout) {
  auto L = build_layout(spec_of(Family::sliding_window, 1, 1, 256, 2, 0, 0, 1), {256});
  L.col_idx[0] = 5;
  EXPECT_THROW(case_work(L, 256), std::invalid_argument);
}

TEST(SuiteScore, MedianPerFamilyThenGeomean) {
  using F = Family;
  const std::vector<F> fams = {F::sliding_window, F::sliding_window, F::sliding_window_global,
                               F::sliding_window_retrieval, F::sliding_window_retrieval, F::sliding_window_retrieval};
  // window: even count -> mean of the middle two (2 and 4) = 3; global: 5; retrieval: median of {1, 9, 2} = 2.
  const auto s = suite_score(fams, {4, 2, 5, 1, 9, 2});
  EXPECT_DOUBLE_EQ(s.family_median.at(F::sliding_window), 3.0);
  EXPECT_DOUBLE_EQ(s.family_median.at(F::sliding_window_global), 5.0);
  EXPECT_DOUBLE_EQ(s.family_median.at(F::sliding_window_retrieval), 2.0);
  EXPECT_NEAR(s.geomean, std::cbrt(3.0 * 5.0 * 2.0), 1e-12);
  // Only the families present count.
  const auto one = suite_score({F::sliding_window_global, F::sliding_window_global}, {1.0, 4.0});
  EXPECT_EQ(one.family_median.size(), 1u);
  EXPECT_DOUBLE_EQ(one.geomean, 2.5);
}

TEST(SuiteScore, ErrorsAndEmptyInput) {
  EXPECT_TRUE(std::isnan(suite_score({}, {}).geomean));
  EXPECT_THROW(suite_score({Family::sliding_window}, {}), std::invalid_argument);
  EXPECT_THROW(suite_score({Family::sliding_window}, {0.0}), std::invalid_argument);
  EXPECT_THROW(suite_score({Family::sliding_window}, {-1.0}), std::invalid_argument);
  EXPECT_THROW(suite_score({Family::sliding_window}, {std::nan("")}), std::invalid_argument);
}

TEST(Roofline, QuickSuiteFloorIsTensOfMicroseconds) {
  // DESIGN.md: the floor on H100 datasheet rates is ~17 us for quick (geomean of family medians).
  std::vector<Family> fams;
  std::vector<double> floors;
  for (const auto& c : builtin_suite("quick")) {
    const auto w = case_work(build_layout(c), c.t_max);
    fams.push_back(c.family);
    floors.push_back(w.floor_s(Ceilings{}));
  }
  const double us = suite_score(fams, floors).geomean * 1e6;
  EXPECT_GT(us, 10);
  EXPECT_LT(us, 30);
}

}  // namespace
}  // namespace attn
