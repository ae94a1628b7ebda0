// The CPU reference and the CSR generator against data made by the harness itself
// (scripts/dump_golden.py; skipped until tests/data/golden holds it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/workload/golden.hpp"
#include "workload/reference.hpp"
#include "workload/validation.hpp"

namespace attn {
namespace {

class Golden : public ::testing::Test {
 protected:
  void SetUp() override {
    ids_ = test::golden_case_ids();
    if (ids_.empty())
      GTEST_SKIP() << "no golden data in " << test::golden_dir()
                   << ": run scripts/dump_golden.py HARNESS_DIR on a machine with torch (docs/workload.md)";
  }
  std::vector<std::string> ids_;
};

TEST_F(Golden, ReferenceMatchesTheHarnessWithinItsTolerances) {
  for (const auto& id : ids_) {
    const auto g = test::load_golden(id);
    const auto out = reference_forward(g.q, g.k, g.v, g.layout, g.spec.t_max, 0);
    const auto v = validate_outputs(out.o, out.lse, g.o, g.lse);
    std::printf("golden %-20s o max abs diff %.3g, lse max abs diff %.3g%s\n", id.c_str(), v.o_max_abs_diff,
                v.lse_max_abs_diff, g.edited ? " (edited col_idx)" : "");
    RecordProperty(id + "_o_max_abs_diff", std::to_string(v.o_max_abs_diff));
    RecordProperty(id + "_lse_max_abs_diff", std::to_string(v.lse_max_abs_diff));
    EXPECT_TRUE(v.passed) << id << ": " << v.message;
    // Both are fp32 online softmaxes: far tighter than the tolerances.
    EXPECT_LT(v.lse_max_abs_diff, 1e-5) << id;
    EXPECT_LE(v.o_max_abs_diff, 0.0079) << id;  // at most one bf16 rounding flip on values below 2
  }
}

TEST_F(Golden, MaskedRowsOfTheHarnessAreZeroAndMinusInf) {
  for (const auto& id : ids_) {
    const auto g = test::load_golden(id);
    const auto& L = g.layout;
    for (int b = 0; b < L.batch_size; ++b)
      for (int h = 0; h < L.num_heads; ++h)
        for (int t = 0; t < g.spec.t_max; ++t) {
          const float lse = g.lse[(std::size_t(b) * L.num_heads + h) * g.spec.t_max + t];
          if (t >= L.seq_lens[b]) {
            ASSERT_TRUE(std::isinf(lse) && lse < 0) << id << " b" << b << " t" << t;
          } else if (!g.edited) {
            ASSERT_TRUE(std::isfinite(lse)) << id << " b" << b << " t" << t;
          }
        }
    if (g.edited) {
      // dump_golden.py leaves batch 0, q_block 0 of the edited case with no allowed key.
      EXPECT_TRUE(std::isinf(g.lse[0]) && g.lse[0] < 0) << id;
      EXPECT_GT(L.seq_lens[0], 0);
    }
  }
}

TEST_F(Golden, MaskedInputsAreNeverRead) {
  for (const auto& id : ids_) {
    const auto zero = test::load_golden(id, 0.0f), poisoned = test::load_golden(id, std::nanf(""));
    const auto a = reference_forward(zero.q, zero.k, zero.v, zero.layout, zero.spec.t_max, 0);
    const auto b = reference_forward(poisoned.q, poisoned.k, poisoned.v, poisoned.layout, poisoned.spec.t_max, 0);
    EXPECT_EQ(a.o, b.o) << id;
    EXPECT_EQ(std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * 4), 0) << id;
  }
}

TEST_F(Golden, HarnessLayoutsSatisfyTheInvariantsUnlessEdited) {
  int edited = 0;
  for (const auto& id : ids_) {
    const auto g = test::load_golden(id);
    if (g.edited) {
      ++edited;
      EXPECT_THROW(check_layout_invariants(g.layout, g.spec.t_max), std::invalid_argument) << id;
    } else {
      EXPECT_NO_THROW(check_layout_invariants(g.layout, g.spec.t_max)) << id;
    }
  }
  EXPECT_GE(edited, 1) << "the golden set should hold a case with an edited col_idx";
}

// Given the harness's seq_lens, row_ptr and density are deterministic for every family, and col_idx
// for window and global; retrieval picks differ (other PRNG) but keep the window and stay below it.
TEST_F(Golden, GeneratorReproducesTheHarnessCsrStructure) {
  for (const auto& id : ids_) {
    const auto g = test::load_golden(id);
    if (g.edited) continue;
    const auto& H = g.layout;
    const int min_len = std::max(128, int(g.spec.t_max * g.spec.seq_len_min_ratio));
    for (int s : H.seq_lens) {
      EXPECT_GE(s, std::min(min_len, g.spec.t_max)) << id;
      EXPECT_LE(s, g.spec.t_max) << id;
    }
    const auto L = build_layout(g.spec, H.seq_lens);
    EXPECT_EQ(L.row_ptr, H.row_ptr) << id;
    EXPECT_EQ(L.col_width, H.col_width) << id;
    EXPECT_DOUBLE_EQ(L.density, H.density) << id;
    if (g.spec.family != Family::sliding_window_retrieval) {
      EXPECT_EQ(L.col_idx, H.col_idx) << id;
      continue;
    }
    for (int b = 0; b < H.batch_size; ++b)
      for (int h = 0; h < H.num_heads; ++h)
        for (int q = 0; q < H.q_blocks; ++q) {
          const int window_start = std::max(0, q - g.spec.window_blocks + 1);
          for (int i = H.row_begin(b, h, q); i < H.row_end(b, h, q); ++i) {
            if (H.col(b, h, i) >= window_start) {
              EXPECT_EQ(H.col(b, h, i), L.col(b, h, i)) << id;
            } else {
              EXPECT_LT(L.col(b, h, i), window_start) << id;
            }
          }
        }
  }
}

}  // namespace
}  // namespace attn
