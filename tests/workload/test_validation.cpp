// validate_outputs against the rules of the harness's validation.py.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "workload/validation.hpp"

namespace attn {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Outputs {
  std::vector<bf16_bits> o;
  std::vector<float> lse;
};

// A reference-like output: 4 rows of 128, the last row masked (o = 0, lse = -inf).
Outputs reference_like() {
  Outputs r;
  for (int i = 0; i < 4 * 128; ++i) r.o.push_back(i < 3 * 128 ? float_to_bf16(std::sin(0.37f * i) * 2.0f) : 0);
  r.lse = {3.25f, 4.5f, 0.125f, -kInf};
  return r;
}

ValidationResult check(const Outputs& cand, const Outputs& ref) { return validate_outputs(cand.o, cand.lse, ref.o, ref.lse); }

TEST(Validation, IdenticalOutputsPassWithZeroDiffs) {
  const auto ref = reference_like();
  const auto r = check(ref, ref);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.message, "ok");
  EXPECT_EQ(r.o_max_abs_diff, 0);
  EXPECT_EQ(r.lse_max_abs_diff, 0);  // -inf vs -inf is not a finite pair: not counted
}

TEST(Validation, OutputToleranceIsAtolPlusRtolTimesReference) {
  const auto ref = reference_like();
  // ref o[k] = 1.0 exactly: bound 1e-3 + 1e-2 * 1 = 0.011. bf16 neighbours of 1: 1 +- 2^-7 (0.0078) pass,
  // 1 + 2^-6 (0.0156) fails.
  auto with_o = [&](float ref_value, float cand_value) {
    Outputs r = ref, c = ref;
    r.o[5] = float_to_bf16(ref_value);
    c.o[5] = float_to_bf16(cand_value);
    return check(c, r);
  };
  EXPECT_TRUE(with_o(1.0f, 1.0f + 0x1p-7f).passed);
  EXPECT_TRUE(with_o(1.0f, 1.0f - 0x1p-7f).passed);
  const auto fail = with_o(1.0f, 1.0f + 0x1p-6f);
  EXPECT_FALSE(fail.passed);
  EXPECT_DOUBLE_EQ(fail.o_max_abs_diff, 0x1p-6);
  EXPECT_EQ(fail.message, "validation failed: output_max_abs_diff=0.015625, lse_max_abs_diff=0");
  // Near zero only atol counts: 0 vs 2^-10 (0.00098) passes, 0 vs 2^-9 fails.
  EXPECT_TRUE(with_o(0.0f, 0x1p-10f).passed);
  EXPECT_FALSE(with_o(0.0f, 0x1p-9f).passed);
  // rtol scales with the reference, not the candidate: ref 0.5, cand 0.5 + 2^-7 (0.0078 > 0.006) fails.
  EXPECT_FALSE(with_o(0.5f, 0.5f + 0x1p-7f).passed);
}

TEST(Validation, NanInOutputNeverPasses) {
  const auto ref = reference_like();
  auto c = ref;
  c.o[7] = 0x7fc0;  // NaN
  const auto r = check(c, ref);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(std::isinf(r.o_max_abs_diff));  // finiteness differs
  auto both = ref;
  both.o[7] = 0x7fc0;
  EXPECT_FALSE(check(both, both).passed);  // equal_nan=False: NaN is not close even to NaN
}

TEST(Validation, InfinitiesInOutputMatchOnlyThemselves) {
  auto ref = reference_like();
  ref.o[9] = float_to_bf16(kInf);
  auto c = ref;
  EXPECT_TRUE(check(c, ref).passed);
  c.o[9] = float_to_bf16(-kInf);
  EXPECT_FALSE(check(c, ref).passed);
  c.o[9] = float_to_bf16(3e38f);
  const auto r = check(c, ref);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(std::isinf(r.o_max_abs_diff));
}

TEST(Validation, LseInfinitiesMustMatchInPlaceAndSign) {
  const auto ref = reference_like();
  auto c = ref;
  c.lse[3] = 7.0f;  // finite where the reference is -inf
  auto r = check(c, ref);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(std::isinf(r.lse_max_abs_diff));
  EXPECT_EQ(r.message, "validation failed: output_max_abs_diff=0, lse_max_abs_diff=inf");
  c = ref;
  c.lse[3] = kInf;  // +inf where the reference is -inf
  r = check(c, ref);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.lse_max_abs_diff, 0);  // neither finite: the harness's diff does not see it, the rule does
  c = ref;
  c.lse[0] = -kInf;  // -inf where the reference is finite
  EXPECT_FALSE(check(c, ref).passed);
}

TEST(Validation, LseToleranceAndNan) {
  const auto ref = reference_like();
  auto c = ref;
  c.lse[1] = 4.5f + 5e-5f;  // bound 1e-5 + 1e-5 * 4.5 = 5.5e-5
  EXPECT_TRUE(check(c, ref).passed);
  c.lse[1] = 4.5f + 7e-5f;
  auto r = check(c, ref);
  EXPECT_FALSE(r.passed);
  EXPECT_NEAR(r.lse_max_abs_diff, 7e-5, 1e-6);
  c = ref;
  c.lse[2] = std::nanf("");  // where the reference is finite: the harness's check would let it through
  r = check(c, ref);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(std::isinf(r.lse_max_abs_diff));
  c = ref;
  c.lse[3] = std::nanf("");  // where the reference is -inf
  EXPECT_FALSE(check(c, ref).passed);
}

TEST(Validation, MaxDiffsAreOverFinitePairs) {
  const auto ref = reference_like();
  auto c = ref;
  c.o[0] = float_to_bf16(bf16_to_float(ref.o[0]) + 0.5f);
  c.o[200] = float_to_bf16(bf16_to_float(ref.o[200]) - 0.25f);
  c.lse[0] += 0.001f;
  const auto r = check(c, ref);
  EXPECT_FALSE(r.passed);
  EXPECT_NEAR(r.o_max_abs_diff, std::fabs(bf16_to_float(c.o[0]) - bf16_to_float(ref.o[0])), 1e-7);
  EXPECT_NEAR(r.lse_max_abs_diff, 0.001, 1e-6);
}

TEST(Validation, SizeMismatchThrows) {
  const auto ref = reference_like();
  auto c = ref;
  c.o.pop_back();
  EXPECT_THROW(check(c, ref), std::invalid_argument);
  c = ref;
  c.lse.push_back(0);
  EXPECT_THROW(check(c, ref), std::invalid_argument);
}

}  // namespace
}  // namespace attn
