// CPU reference against a naive dense fp64 implementation of the harness's semantics.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "workload/inputs.hpp"
#include "workload/reference.hpp"

namespace attn {
namespace {

struct Inputs {
  std::vector<bf16_bits> q, k, v;
};

Inputs inputs_of(const CaseSpec& c) {
  return {make_tensor(c, Tensor::q), make_tensor(c, Tensor::k), make_tensor(c, Tensor::v)};
}

/// Dense fp64 attention over the token mask of the CSR, as reference.py's dense_reference /
/// _dense_token_mask: entries < 0, > q_block or past the valid blocks dropped; causal in the diagonal
/// block; queries and keys at or past seq_len masked.
struct Dense {
  std::vector<double> o, lse;
};
Dense dense_fp64(const Inputs& in, const BlockSparseLayout& L, int t_max) {
  const int D = kHeadDim;
  Dense out;
  out.o.assign(std::size_t(L.batch_size) * L.num_heads * t_max * D, 0.0);
  out.lse.assign(std::size_t(L.batch_size) * L.num_heads * t_max, -std::numeric_limits<double>::infinity());
  const double scale = 1.0 / std::sqrt(128.0);
  for (int b = 0; b < L.batch_size; ++b) {
    const int seq = L.seq_lens[b], valid = (seq + 127) / 128;
    for (int h = 0; h < L.num_heads; ++h) {
      const std::size_t base = (std::size_t(b) * L.num_heads + h) * t_max;
      std::vector<char> mask(std::size_t(t_max) * t_max, 0);
      for (int q = 0; q < valid; ++q)
        for (int i = L.row_begin(b, h, q); i < L.row_end(b, h, q); ++i) {
          const int c = L.col(b, h, i);
          if (c < 0 || c > q || c >= valid) continue;
          for (int t = q * 128; t < std::min(seq, q * 128 + 128); ++t)
            for (int u = c * 128; u < std::min(seq, c * 128 + 128); ++u)
              if (c != q || u <= t) mask[std::size_t(t) * t_max + u] = 1;
        }
      for (int t = 0; t < seq; ++t) {
        std::vector<std::pair<int, double>> s;
        for (int u = 0; u < seq; ++u) {
          if (!mask[std::size_t(t) * t_max + u]) continue;
          double dot = 0;
          for (int d = 0; d < D; ++d)
            dot += double(bf16_to_float(in.q[(base + t) * D + d])) * double(bf16_to_float(in.k[(base + u) * D + d]));
          s.emplace_back(u, dot * scale);
        }
        if (s.empty()) continue;
        double m = -1e300, sum = 0;
        for (auto& [u, x] : s) m = std::max(m, x);
        for (auto& [u, x] : s) sum += std::exp(x - m);
        for (auto& [u, x] : s) {
          const double p = std::exp(x - m) / sum;
          for (int d = 0; d < D; ++d) out.o[(base + t) * D + d] += p * double(bf16_to_float(in.v[(base + u) * D + d]));
        }
        out.lse[base + t] = m + std::log(sum);
      }
    }
  }
  return out;
}

/// o within one bf16 rounding of the fp64 value (fp32 accumulation may flip the rounding), lse within
/// fp32 accumulation error; masked rows exactly 0 / -inf.
void expect_matches_dense(const AttnOutput& got, const Dense& want) {
  ASSERT_EQ(got.o.size(), want.o.size());
  ASSERT_EQ(got.lse.size(), want.lse.size());
  double max_o = 0, max_lse = 0;
  std::size_t masked = 0;
  for (std::size_t r = 0; r < want.lse.size(); ++r) {
    if (std::isinf(want.lse[r])) {
      ++masked;
      ASSERT_TRUE(std::isinf(got.lse[r]) && got.lse[r] < 0) << "row " << r << " lse " << got.lse[r];
      for (int d = 0; d < kHeadDim; ++d) ASSERT_EQ(got.o[r * kHeadDim + d], 0) << "row " << r;
      continue;
    }
    ASSERT_NEAR(got.lse[r], want.lse[r], 2e-6 + 2e-6 * std::fabs(want.lse[r])) << "row " << r;
    max_lse = std::max(max_lse, std::fabs(got.lse[r] - want.lse[r]));
    for (int d = 0; d < kHeadDim; ++d) {
      const double g = bf16_to_float(got.o[r * kHeadDim + d]), w = want.o[r * kHeadDim + d];
      ASSERT_NEAR(g, w, std::fabs(w) * 0x1p-8 + 1e-6) << "row " << r << " d " << d;
      max_o = std::max(max_o, std::fabs(g - w));
    }
  }
  ::testing::Test::RecordProperty("max_o_diff", std::to_string(max_o));
  ::testing::Test::RecordProperty("max_lse_diff", std::to_string(max_lse));
  ::testing::Test::RecordProperty("masked_rows", std::to_string(masked));
}

CaseSpec small_case(Family f, int batch, int heads, int t_max, int w, int g, int r, double ratio, std::int64_t seed) {
  CaseSpec c;
  c.case_id = "ref-test";
  c.family = f;
  c.batch_size = batch;
  c.num_heads = heads;
  c.t_max = t_max;
  c.window_blocks = w;
  c.global_blocks = g;
  c.retrieval_blocks = r;
  c.seq_len_min_ratio = ratio;
  c.seed = seed;
  return c;
}

TEST(Reference, MatchesDenseFp64OnEachFamilyWithMaskedRows) {
  const CaseSpec cases[] = {
      small_case(Family::sliding_window, 2, 2, 512, 2, 0, 0, 0.3, 1),
      small_case(Family::sliding_window_global, 2, 1, 640, 1, 2, 0, 0.3, 2),
      small_case(Family::sliding_window_retrieval, 3, 1, 768, 1, 0, 2, 0.2, 3),
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(family_name(c.family));
    const auto L = build_layout(c);
    const auto in = inputs_of(c);
    expect_matches_dense(reference_forward(in.q, in.k, in.v, L, c.t_max, 2), dense_fp64(in, L, c.t_max));
  }
}

TEST(Reference, SeqLenNotAMultipleOfTheBlock) {
  // seq_len 1 (one query, one key), 129 (one valid query in the second block) and 383.
  const auto c = small_case(Family::sliding_window_global, 3, 1, 384, 1, 1, 0, 0.625, 4);
  const auto L = build_layout(c, {1, 129, 383});
  const auto in = inputs_of(c);
  const auto got = reference_forward(in.q, in.k, in.v, L, c.t_max, 1);
  expect_matches_dense(got, dense_fp64(in, L, c.t_max));
  // The single query of batch 0 sees only itself: o is its v, lse its scaled self score.
  for (int d = 0; d < kHeadDim; ++d) EXPECT_EQ(got.o[d], in.v[d]);
  EXPECT_TRUE(std::isinf(got.lse[1]) && got.lse[1] < 0);
}

TEST(Reference, DropsInvalidColIdxEntriesAndEmptiesRowsWithNoKey) {
  const auto c = small_case(Family::sliding_window, 2, 1, 512, 3, 0, 0, 0.625, 5);
  auto L = build_layout(c, {512, 300});  // batch 1: 3 valid blocks
  // batch 0 rows: {0} {0,1} {0,1,2} {1,2,3}
  auto at = [&](int b, int q, int i) -> std::int32_t& {
    return L.col_idx[std::size_t(b) * L.col_width + L.row_begin(b, 0, q) + i];
  };
  at(0, 0, 0) = -1;  // row 0: no allowed key left -> o = 0, lse = -inf on valid queries
  at(0, 2, 0) = 3;   // > q_block
  at(0, 3, 0) = 7;   // > q_block and past t_max's blocks
  at(1, 2, 0) = -1;  // batch 1 row 2: {-1, 2, 2}: kv block 2 twice, processed twice as reference.py does
  at(1, 2, 1) = 2;
  at(1, 1, 0) = -5;
  const auto in = inputs_of(c);
  const auto got = reference_forward(in.q, in.k, in.v, L, c.t_max, 2);
  for (int t = 0; t < 128; ++t) {
    EXPECT_TRUE(std::isinf(got.lse[t]) && got.lse[t] < 0);
    for (int d = 0; d < kHeadDim; ++d) ASSERT_EQ(got.o[t * kHeadDim + d], 0);
  }
  // Compare batch 0 only with the dense form (the dense form would not double count batch 1's duplicate).
  auto dense = dense_fp64(in, L, c.t_max);
  auto got0 = got;
  got0.o.resize(512 * kHeadDim), got0.lse.resize(512);
  dense.o.resize(512 * kHeadDim), dense.lse.resize(512);
  expect_matches_dense(got0, dense);
  // Batch 1, q_block 2 is {-1, 2, 2}: every allowed key of block 2 counts twice, so
  // lse = log(2 * sum of exp(score)) over keys 256..t (o is unchanged by the doubling).
  const std::size_t row = (512 + 256 + 5);  // batch 1, token 261 (q_block 2)
  double sum2 = 0;
  for (int u = 256; u <= 261; ++u) {
    double dot = 0;
    for (int d = 0; d < kHeadDim; ++d)
      dot += double(bf16_to_float(in.q[row * kHeadDim + d])) * bf16_to_float(in.k[(512 + u) * kHeadDim + d]);
    sum2 += std::exp(dot / std::sqrt(128.0));
  }
  EXPECT_NEAR(got.lse[row], std::log(2 * sum2), 1e-5);
}

TEST(Reference, MaskedTokensAreNeverRead) {
  const auto c = small_case(Family::sliding_window_retrieval, 2, 2, 640, 2, 0, 2, 0.3, 6);
  const auto L = build_layout(c);
  auto in = inputs_of(c);
  const auto clean = reference_forward(in.q, in.k, in.v, L, c.t_max, 2);
  const bf16_bits nan = 0x7fc0;
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 2; ++h)
      for (int t = L.seq_lens[b]; t < c.t_max; ++t)
        for (int d = 0; d < kHeadDim; ++d) {
          const std::size_t i = ((std::size_t(b) * 2 + h) * c.t_max + t) * kHeadDim + d;
          in.q[i] = in.k[i] = in.v[i] = nan;
        }
  ASSERT_LT(L.seq_lens[0], c.t_max);
  const auto poisoned = reference_forward(in.q, in.k, in.v, L, c.t_max, 2);
  EXPECT_EQ(poisoned.o, clean.o);
  EXPECT_EQ(std::memcmp(poisoned.lse.data(), clean.lse.data(), clean.lse.size() * 4), 0);
}

TEST(Reference, SameBitsForAnyThreadCount) {
  const auto c = small_case(Family::sliding_window_retrieval, 2, 3, 512, 2, 0, 2, 0.5, 7);
  const auto L = build_layout(c);
  const auto in = inputs_of(c);
  const auto one = reference_forward(in.q, in.k, in.v, L, c.t_max, 1);
  const auto many = reference_forward(in.q, in.k, in.v, L, c.t_max, 5);
  EXPECT_EQ(one.o, many.o);
  EXPECT_EQ(std::memcmp(one.lse.data(), many.lse.data(), one.lse.size() * 4), 0);
}

TEST(Reference, RejectsMismatchedSizes) {
  const auto c = small_case(Family::sliding_window, 1, 1, 256, 1, 0, 0, 1.0, 8);
  const auto L = build_layout(c);
  auto in = inputs_of(c);
  EXPECT_THROW(reference_forward(in.q, in.k, in.v, L, 384, 1), std::invalid_argument);
  in.k.pop_back();
  EXPECT_THROW(reference_forward(in.q, in.k, in.v, L, 256, 1), std::invalid_argument);
}

// Speed guard for CI: a quick-suite-sized head (4096 tokens, window 4) must stay well under a second.
TEST(Reference, FastEnoughOnAQuickSizedHead) {
  auto c = small_case(Family::sliding_window_retrieval, 1, 2, 4096, 4, 0, 2, 0.625, 9);
  const auto L = build_layout(c);
  const auto in = inputs_of(c);
  const auto t0 = std::chrono::steady_clock::now();
  const auto out = reference_forward(in.q, in.k, in.v, L, c.t_max, 2);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("seconds", std::to_string(s));
  std::printf("reference: 2 heads x 4096 tokens, %lld kv-block pairs: %.3f s\n", (long long)L.allowed_pairs(), s);
  EXPECT_LT(s, 5.0);
  EXPECT_EQ(out.o.size(), in.q.size());
}

}  // namespace
}  // namespace attn
