// CSR generation: the structure and distribution of cases.py build_csr_metadata on many seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "workload/layout.hpp"

namespace attn {
namespace {

CaseSpec spec_of(Family f, int batch, int heads, int t_max, int w, int g, int r, double bias, double ratio,
                 std::int64_t seed) {
  CaseSpec c;
  c.case_id = "layout-test";
  c.family = f;
  c.batch_size = batch;
  c.num_heads = heads;
  c.t_max = t_max;
  c.window_blocks = w;
  c.global_blocks = g;
  c.retrieval_blocks = r;
  c.retrieval_local_bias = bias;
  c.seq_len_min_ratio = ratio;
  c.seed = seed;
  return c;
}

std::vector<int> row_of(const BlockSparseLayout& L, int b, int h, int q) {
  std::vector<int> v;
  for (int i = L.row_begin(b, h, q); i < L.row_end(b, h, q); ++i) v.push_back(L.col(b, h, i));
  return v;
}

std::vector<int> range(int lo, int hi) {  // [lo, hi)
  std::vector<int> v;
  for (int i = lo; i < hi; ++i) v.push_back(i);
  return v;
}

int valid_blocks(const BlockSparseLayout& L, int b) { return (L.seq_lens[b] + 127) / 128; }

TEST(SeqLens, RangeEdgesAndDeterminism) {
  // min_len = max(128, int(t_max * ratio)); all t_max once min_len reaches t_max.
  std::set<int> seen;
  for (std::int64_t seed = 0; seed < 200; ++seed) {
    const auto s = sample_seq_lens(spec_of(Family::sliding_window, 8, 1, 1024, 1, 0, 0, 0.7, 0.625, seed));
    ASSERT_EQ(s.size(), 8u);
    for (int x : s) {
      EXPECT_GE(x, 640);
      EXPECT_LE(x, 1024);
      seen.insert(x);
    }
  }
  EXPECT_TRUE(seen.count(640) && seen.count(1024)) << "both ends are reachable";
  EXPECT_GT(seen.size(), 300u);  // 385 values, 1600 draws
  const auto a = spec_of(Family::sliding_window, 4, 1, 2048, 1, 0, 0, 0.7, 0.3, 9);
  EXPECT_EQ(sample_seq_lens(a), sample_seq_lens(a));
  for (int x : sample_seq_lens(spec_of(Family::sliding_window, 16, 1, 2048, 1, 0, 0, 0.7, 1.0, 3))) EXPECT_EQ(x, 2048);
  // t_max 256, ratio 0.1: the floor is one block (128), not 25.
  for (std::int64_t seed = 0; seed < 50; ++seed)
    for (int x : sample_seq_lens(spec_of(Family::sliding_window, 4, 1, 256, 1, 0, 0, 0.7, 0.1, seed))) EXPECT_GE(x, 128);
}

TEST(SeqLens, UniformMean) {
  double sum = 0;
  int n = 0;
  for (std::int64_t seed = 0; seed < 100; ++seed)
    for (int x : sample_seq_lens(spec_of(Family::sliding_window, 16, 1, 4096, 1, 0, 0, 0.7, 0.5, seed))) sum += x, ++n;
  // Uniform on [2048, 4096]: mean 3072, sd 591; 1600 draws -> sd of the mean ~15.
  EXPECT_NEAR(sum / n, 3072.0, 80.0);
}

TEST(Layout, WindowRowsAreExactlyTheWindow) {
  for (std::int64_t seed = 0; seed < 30; ++seed) {
    const int w = 1 + int(seed % 5);
    const auto spec = spec_of(Family::sliding_window, 2, 3, 1280, w, 0, 0, 0.7, 0.3, seed);
    const auto L = build_layout(spec);
    check_layout_invariants(L, spec.t_max);
    for (int b = 0; b < 2; ++b)
      for (int h = 0; h < 3; ++h)
        for (int q = 0; q < L.q_blocks; ++q)
          EXPECT_EQ(row_of(L, b, h, q), q < valid_blocks(L, b) ? range(std::max(0, q - w + 1), q + 1) : range(0, 0));
  }
}

TEST(Layout, GlobalRowsAreWindowPlusLeadingBlocks) {
  for (std::int64_t seed = 0; seed < 30; ++seed) {
    const int w = 1 + int(seed % 4), g = int(seed % 6);
    const auto spec = spec_of(Family::sliding_window_global, 2, 2, 1536, w, g, 0, 0.7, 0.2, seed);
    const auto L = build_layout(spec);
    check_layout_invariants(L, spec.t_max);
    for (int b = 0; b < 2; ++b)
      for (int h = 0; h < 2; ++h)
        for (int q = 0; q < valid_blocks(L, b); ++q) {
          std::set<int> expect;
          for (int x = std::max(0, q - w + 1); x <= q; ++x) expect.insert(x);
          for (int x = 0; x < std::min(g, q + 1); ++x) expect.insert(x);
          EXPECT_EQ(row_of(L, b, h, q), std::vector<int>(expect.begin(), expect.end())) << "q_block " << q;
        }
  }
}

TEST(Layout, RetrievalRowsHaveTheWindowAndMinOfRAndCandidatesExtraBlocks) {
  for (std::int64_t seed = 0; seed < 40; ++seed) {
    const int w = 1 + int(seed % 4), r = 1 + int(seed % 5);
    const auto spec = spec_of(Family::sliding_window_retrieval, 2, 4, 2048, w, 0, r, 0.6, 0.4, seed);
    const auto L = build_layout(spec);
    check_layout_invariants(L, spec.t_max);
    for (int b = 0; b < 2; ++b)
      for (int h = 0; h < 4; ++h)
        for (int q = 0; q < valid_blocks(L, b); ++q) {
          const auto row = row_of(L, b, h, q);
          const int window_start = std::max(0, q - w + 1);
          const std::vector<int> tail(row.end() - std::min<long>(row.size(), q - window_start + 1), row.end());
          EXPECT_EQ(tail, range(window_start, q + 1));
          // Every block below the window is a candidate: min(r, window_start) of them are picked.
          EXPECT_EQ(int(row.size()) - (q - window_start + 1), std::min(r, window_start)) << "q_block " << q;
        }
  }
}

// Rows where both pools hold at least r blocks all the way through the picks: each pick is local with
// probability retrieval_local_bias, uniform inside the pool.
TEST(Layout, RetrievalLocalFractionFollowsTheBias) {
  for (double bias : {0.0, 0.25, 0.7, 1.0}) {
    long local = 0, far = 0;
    std::map<int, long> local_offset;  // q - block for local picks
    const int w = 2, r = 2;
    for (std::int64_t seed = 0; seed < 12; ++seed) {
      const auto spec = spec_of(Family::sliding_window_retrieval, 1, 8, 8192, w, 0, r, bias, 1.0, seed);
      const auto L = build_layout(spec);
      for (int h = 0; h < 8; ++h)
        for (int q = 4 * w + r; q < L.q_blocks; ++q)
          for (int c : row_of(L, 0, h, q)) {
            if (c >= q - w + 1) continue;  // window
            if (c >= q - 4 * w) {
              ++local;
              ++local_offset[q - c];
            } else {
              ++far;
            }
          }
    }
    const double n = double(local + far), frac = double(local) / n;
    EXPECT_EQ(local + far, 12L * 8 * (64 - (4 * w + r)) * r);
    // binomial sd <= 0.5/sqrt(10000) = 0.005
    EXPECT_NEAR(frac, bias, 0.025) << "bias " << bias;
    if (bias > 0) {
      // local range [q - 4w, q - w]: offsets w .. 4w, 3w + 1 = 7 blocks, equally likely
      ASSERT_EQ(local_offset.size(), 7u);
      EXPECT_EQ(local_offset.begin()->first, w);
      EXPECT_EQ(local_offset.rbegin()->first, 4 * w);
      for (const auto& [off, count] : local_offset) EXPECT_NEAR(count, local / 7.0, 0.2 * local / 7.0) << off;
    }
  }
}

TEST(Layout, RowsPastSeqLenAreEmptyAndPaddingIsZero) {
  const auto spec = spec_of(Family::sliding_window_retrieval, 6, 2, 2048, 3, 0, 3, 0.5, 0.1, 77);
  const auto L = build_layout(spec);
  check_layout_invariants(L, spec.t_max);
  int empty_rows = 0, max_nnz = 0;
  for (int b = 0; b < 6; ++b)
    for (int h = 0; h < 2; ++h) {
      const int nnz = L.row_begin(b, h, L.q_blocks);
      max_nnz = std::max(max_nnz, nnz);
      for (int q = valid_blocks(L, b); q < L.q_blocks; ++q) {
        EXPECT_EQ(L.row_begin(b, h, q), L.row_end(b, h, q));
        ++empty_rows;
      }
      for (int i = nnz; i < L.col_width; ++i) EXPECT_EQ(L.col(b, h, i), 0);
    }
  EXPECT_GT(empty_rows, 0) << "seq_len_min_ratio 0.1 leaves rows past seq_len";
  EXPECT_EQ(L.col_width, max_nnz);
}

TEST(Layout, DensityIsMeanOverHeadsOfNnzOverValidBlocksSquared) {
  const auto spec = spec_of(Family::sliding_window_global, 3, 2, 1024, 2, 1, 0, 0.7, 0.3, 4);
  const auto L = build_layout(spec);
  double sum = 0;
  for (int b = 0; b < 3; ++b)
    for (int h = 0; h < 2; ++h) sum += double(L.row_begin(b, h, L.q_blocks)) / std::pow(valid_blocks(L, b), 2);
  EXPECT_DOUBLE_EQ(L.density, sum / 6);
}

TEST(Layout, DeterministicInTheSeedAndHeadsDiffer) {
  const auto spec = spec_of(Family::sliding_window_retrieval, 2, 4, 4096, 2, 0, 3, 0.5, 0.625, 1234);
  const auto a = build_layout(spec), b = build_layout(spec);
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.col_idx, b.col_idx);
  EXPECT_EQ(a.seq_lens, b.seq_lens);
  auto other = spec;
  other.seed = 1235;
  EXPECT_NE(build_layout(other).col_idx, a.col_idx);
  // Each head draws its own generator: retrieval picks differ between heads of one batch.
  EXPECT_NE(row_of(a, 0, 0, 20), row_of(a, 0, 1, 20));
}

TEST(Layout, ExplicitSeqLensAreUsedAndChecked) {
  const auto spec = spec_of(Family::sliding_window, 2, 1, 512, 2, 0, 0, 0.7, 0.625, 1);
  const auto L = build_layout(spec, {129, 512});
  EXPECT_EQ(L.row_begin(0, 0, 2), L.row_begin(0, 0, 4));  // batch 0: two valid blocks
  EXPECT_EQ(row_of(L, 1, 0, 3), (std::vector<int>{2, 3}));
  EXPECT_THROW(build_layout(spec, {129}), std::invalid_argument);
  EXPECT_THROW(build_layout(spec, {0, 512}), std::invalid_argument);
  EXPECT_THROW(build_layout(spec, {129, 513}), std::invalid_argument);
  auto bad = spec;
  bad.t_max = 500;
  EXPECT_THROW(build_layout(bad), std::invalid_argument);
}

std::string invariant_error(const BlockSparseLayout& L, int t_max) {
  try {
    check_layout_invariants(L, t_max);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Layout, InvariantCheckNamesEachBrokenInvariant) {
  const auto spec = spec_of(Family::sliding_window_retrieval, 1, 1, 512, 2, 0, 1, 0.7, 1.0, 3);
  const auto good = build_layout(spec);  // rows: {0}, {0,1}, {0,1,2}, {x,2,3}
  ASSERT_EQ(invariant_error(good, 512), "");
  ASSERT_EQ(row_of(good, 0, 0, 2), (std::vector<int>{0, 1, 2}));
  auto edit = [&](auto f) {
    BlockSparseLayout L = good;
    f(L);
    return invariant_error(L, 512);
  };
  const int r2 = good.row_begin(0, 0, 2);
  EXPECT_NE(edit([&](auto& L) { L.col_idx[r2] = -1; }).find("kv block -1 is outside [0, 2]"), std::string::npos);
  EXPECT_NE(edit([&](auto& L) { L.col_idx[r2] = 3; }).find("kv block 3 is outside"), std::string::npos);
  EXPECT_NE(edit([&](auto& L) { std::swap(L.col_idx[r2], L.col_idx[r2 + 1]); }).find("not sorted and unique"),
            std::string::npos);
  EXPECT_NE(edit([&](auto& L) { L.col_idx[r2 + 1] = 0; }).find("not sorted and unique"), std::string::npos);
  EXPECT_NE(edit([&](auto& L) { L.row_ptr[1] = 0; }).find("diagonal kv block is missing"),
            std::string::npos);
  EXPECT_NE(edit([&](auto& L) { L.row_ptr[0] = 1; }).find("must be 0"), std::string::npos);
  EXPECT_NE(edit([&](auto& L) { L.row_ptr[2] = 0; }).find("row_ptr decreases"), std::string::npos);
  EXPECT_NE(edit([&](auto& L) { L.row_ptr[4] = L.col_width + 1; }).find("> col_width"), std::string::npos);
  EXPECT_NE(edit([&](auto& L) { L.seq_lens[0] = 200; }).find("past the valid blocks"), std::string::npos);
  EXPECT_NE(edit([&](auto& L) { L.seq_lens[0] = 600; }).find("seq_lens[0] = 600"), std::string::npos);
  EXPECT_NE(edit([&](auto& L) { L.col_idx.pop_back(); }).find("col_idx has"), std::string::npos);
  EXPECT_NE(invariant_error(good, 640).find("q_blocks 4 != t_max / 128 = 5"), std::string::npos);
}

TEST(Layout, AllowedPairsDropsWhatTheReferenceDrops) {
  const auto spec = spec_of(Family::sliding_window, 1, 1, 512, 2, 0, 0, 0.7, 1.0, 3);
  auto L = build_layout(spec, {300});  // 3 valid blocks: rows {0}, {0,1}, {1,2}, {}
  EXPECT_EQ(L.allowed_pairs(), 5);
  L.col_idx[1] = -1;  // row 1: {-1, 1}
  L.col_idx[3] = 3;   // row 2: {3, 2}: 3 > q_block
  EXPECT_EQ(L.allowed_pairs(), 3);
}

}  // namespace
}  // namespace attn
