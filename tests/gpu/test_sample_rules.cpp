// Issue 50, without a GPU: the rules of the timed samples' inputs (every sample's magnitudes new, the sign twin,
// the way back to the tuning inputs), the rows a sample check draws, and the check's verdict on the host, on
// host tensors with the formulas the device kernels share (kernels_templates/sample_rules.h).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <deque>
#include <memory>
#include <limits>
#include <map>
#include <set>

#include "gpu/sample_inputs.hpp"
#include "gpu/sample_verdict.hpp"
#include "kernels_templates/sample_rules.h"
#include "workload/inputs.hpp"

namespace attn {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// A [rows, 128] tensor of fill_normal's values (workload/inputs.cpp), as a case's q, k or v.
std::vector<bf16_bits> normal_tensor(std::uint64_t seed, Tensor t, std::size_t rows) {
  std::vector<bf16_bits> x(rows * 128);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float_to_bf16(normal_sample(seed, t, i));
  return x;
}

/// q, k and v of one input set, moved together.
struct Inputs {
  std::vector<bf16_bits> t[3];
  void apply(const InputXor& x) {
    for (unsigned i = 0; i < 3; ++i) xor_tensor_host(t[i], i, x);
  }
  bool operator==(const Inputs&) const = default;
};
Inputs tuning_inputs(std::size_t rows = 512) {
  return {{normal_tensor(11, Tensor::q, rows), normal_tensor(11, Tensor::k, rows), normal_tensor(11, Tensor::v, rows)}};
}

/// A draw that returns `values` in order, then counts up from 1000.
SeedDraw sequence(std::deque<std::uint64_t> values) {
  auto state = std::make_shared<std::deque<std::uint64_t>>(std::move(values));
  auto next = std::make_shared<std::uint64_t>(1000);
  return [state, next] {
    if (state->empty()) return (*next)++;
    const std::uint64_t v = state->front();
    state->pop_front();
    return v;
  };
}

TEST(SampleRules, TheMagnitudeMaskChangesEveryElementInsideItsBinadeAndKeepsTheInputsNormal) {
  const Inputs x0 = tuning_inputs(2048);
  Inputs x = x0;
  x.apply(mask_transition({}, {0x1234567, 0}));
  for (unsigned t = 0; t < 3; ++t) {
    std::size_t same = 0, other_binade = 0;
    double sum = 0, sq = 0;
    for (std::size_t i = 0; i < x.t[t].size(); ++i) {
      same += x.t[t][i] == x0.t[t][i];
      other_binade += (x.t[t][i] & 0x7F80) != (x0.t[t][i] & 0x7F80);
      const double f = bf16_to_float(x.t[t][i]);
      sum += f;
      sq += f * f;
    }
    const double n = double(x.t[t].size());
    EXPECT_EQ(same, 0u) << t;          // every element changes
    EXPECT_EQ(other_binade, 0u) << t;  // and keeps its exponent: no inf or NaN can appear
    EXPECT_NEAR(sum / n, 0.0, 0.01) << t;
    EXPECT_NEAR(sq / n, 1.0, 0.02) << t;
  }
}

TEST(SampleRules, EveryTimedSampleHasMagnitudesNoLaunchBeforeItSaw) {
  // Sample after sample: each one's magnitudes differ from the tuning inputs' everywhere and from the sample
  // before's in about 14 of 15 elements (the low 4 bits of two masks agree in 1 of 15).
  const Inputs x0 = tuning_inputs();
  Inputs x = x0;
  InputMask now;
  const SeedDraw draw = sequence({});
  for (int sample = 0; sample < 4; ++sample) {
    const Inputs before = x;
    const InputMask next = fresh_mask(now, draw);
    EXPECT_NE(next.magnitude, 0u);
    EXPECT_NE(next.magnitude, now.magnitude);
    EXPECT_EQ(next.v_signs, 0u);
    x.apply(mask_transition(now, next));
    now = next;
    for (unsigned t = 0; t < 3; ++t) {
      std::size_t new_vs_tuning = 0, new_vs_before = 0;
      for (std::size_t i = 0; i < x.t[t].size(); ++i) {
        new_vs_tuning += (x.t[t][i] & 0x7FFF) != (x0.t[t][i] & 0x7FFF);
        new_vs_before += (x.t[t][i] & 0x7FFF) != (before.t[t][i] & 0x7FFF);
      }
      const double n = double(x.t[t].size());
      EXPECT_EQ(new_vs_tuning, x.t[t].size()) << sample << " " << t;
      if (sample > 0) {
        EXPECT_GT(new_vs_before / n, 0.90) << sample << " " << t;
      }
    }
  }
}

TEST(SampleRules, TheSignTwinKeepsQAndKAndVsMagnitudesAndDrawsVsSigns) {
  // The twin of a sample: q and k bit for bit (so every score and every product q_c k_c), |v| kept, v's signs
  // drawn per element (not per column: o changes in every element, not only in its signs).
  const Inputs x0 = tuning_inputs();
  Inputs x = x0;
  const SeedDraw draw = sequence({});
  const InputMask sample = fresh_mask({}, draw);
  x.apply(mask_transition({}, sample));
  const Inputs last = x;
  const InputMask twin = twin_mask(sample, draw);
  EXPECT_EQ(twin.magnitude, sample.magnitude);
  EXPECT_NE(twin.v_signs, 0u);
  x.apply(mask_transition(sample, twin));
  EXPECT_EQ(x.t[0], last.t[0]);
  EXPECT_EQ(x.t[1], last.t[1]);
  std::size_t v_flipped = 0;
  std::map<unsigned, std::set<bool>> column_flips;
  for (std::size_t i = 0; i < x.t[2].size(); ++i) {
    EXPECT_EQ(x.t[2][i] & 0x7FFF, last.t[2][i] & 0x7FFF) << i;
    const bool flipped = x.t[2][i] != last.t[2][i];
    v_flipped += flipped;
    column_flips[unsigned(i % 128)].insert(flipped);
  }
  const double share = double(v_flipped) / double(x.t[2].size());
  EXPECT_GT(share, 0.45);
  EXPECT_LT(share, 0.55);
  for (const auto& [c, kinds] : column_flips) EXPECT_EQ(kinds.size(), 2u) << "column " << c;  // not whole columns
  // And back to the tuning inputs in one pass, bit for bit.
  x.apply(mask_transition(twin, {}));
  EXPECT_EQ(x, x0);
}

TEST(SampleRules, AnyTwoStatesAreOnePassApartAndTheTuningInputsComeBack) {
  const Inputs x0 = tuning_inputs(64);
  const std::vector<InputMask> states = {{}, {77, 0}, {78, 0}, {78, 41}, {77, 42}, {0, 41}};
  auto under = [&](const InputMask& m) {  // the tuning inputs put under m directly, mask by mask
    Inputs x = x0;
    x.apply({0, m.magnitude, 0, 0});
    x.apply({0, 0, 0, m.v_signs});
    return x;
  };
  for (const InputMask& a : states)
    for (const InputMask& b : states) {
      Inputs x = under(a);
      x.apply(mask_transition(a, b));
      EXPECT_EQ(x, under(b));
    }
  EXPECT_EQ(mask_transition({78, 41}, {78, 41}), InputXor{});  // nothing to do
  const InputXor x = mask_transition({77, 0}, {78, 0});
  EXPECT_EQ(x, (InputXor{77, 78, 0, 0}));
  EXPECT_EQ(mask_transition({78, 0}, {78, 41}), (InputXor{0, 0, 0, 41}));  // the twin: v's signs alone
  std::vector<bf16_bits> odd(12);
  EXPECT_THROW(xor_tensor_host(odd, 0, x), std::invalid_argument);
}

TEST(SampleRules, DrawsSkipZeroAndTheMaskInForce) {
  // fresh_mask never keeps the magnitudes in force nor returns the tuning inputs; twin_mask never flips nothing.
  EXPECT_EQ(fresh_mask({5, 0}, sequence({0, 5, 9})).magnitude, 9u);
  const InputMask twin = twin_mask({9, 0}, sequence({0, 8}));
  EXPECT_EQ(twin.magnitude, 9u);
  EXPECT_EQ(twin.v_signs, 8u);
  EXPECT_EQ(twin_mask({9, 8}, sequence({8, 0, 6})).v_signs, 6u);
}

TEST(SampledRows, UniformOverTheValidRowsAndNeverAPaddingRow) {
  // Two sequences of unequal lengths, three heads: a draw lands on (b, h, p) with p < seq_lens[b], each valid
  // row as often as any other, so a kernel wrong on a share f of them passes n draws with probability (1-f)^n.
  const int seq_lens[] = {300, 900}, batch = 2, heads = 3, t_max = 1024;
  std::map<int, int> per_batch, per_head;
  std::map<int, int> per_tenth;  // position / (seq_len / 10): uniform along each sequence
  const int draws_per_seed = 128, seeds = 400;
  std::set<unsigned long long> first_rows;
  for (int s = 0; s < seeds; ++s) {
    const unsigned long long seed = 0x9E3779B97F4A7C15ull * unsigned(s + 1);
    for (int i = 0; i < draws_per_seed; ++i) {
      const unsigned long long row = attn_sample::sampled_row(seed, unsigned(i), seq_lens, batch, heads, t_max);
      ASSERT_LT(row, unsigned(batch * heads * t_max));
      const int p = int(row % t_max), bh = int(row / t_max), b = bh / heads;
      ASSERT_LT(p, seq_lens[b]) << row;
      ++per_batch[b];
      ++per_head[bh % heads];
      ++per_tenth[p * 10 / seq_lens[b]];
      if (i == 0) first_rows.insert(row);
      EXPECT_EQ(row, attn_sample::sampled_row(seed, unsigned(i), seq_lens, batch, heads, t_max));  // a function
    }
  }
  const double n = double(draws_per_seed) * seeds;
  EXPECT_NEAR(per_batch[0] / n, 300.0 / 1200.0, 0.01);
  EXPECT_NEAR(per_batch[1] / n, 900.0 / 1200.0, 0.01);
  for (int h = 0; h < heads; ++h) EXPECT_NEAR(per_head[h] / n, 1.0 / 3, 0.01) << h;
  for (int d = 0; d < 10; ++d) EXPECT_NEAR(per_tenth[d] / n, 0.1, 0.01) << d;
  EXPECT_GT(first_rows.size(), 350u);  // seeds draw different rows (3,600 valid rows: some coincide)
}

/// A synthetic case of B = 1, H = 2, t_max = 256 with seq_len 200: right outputs (o random in valid rows, 0 in
/// padding rows; lse finite, -inf in padding rows) and 6 drawn rows with their reference.
struct Synthetic {
  std::vector<std::int32_t> seq_lens{200};
  int heads = 2, t_max = 256;
  std::vector<bf16_bits> o;
  std::vector<float> lse;
  std::vector<std::int32_t> rows{3, 199, 256 + 5, 256 + 120, 7, 256 + 199};
  std::vector<bf16_bits> ref_o;
  std::vector<float> ref_lse;
  Synthetic() {
    const std::size_t total = std::size_t(heads) * t_max;
    o.assign(total * 128, 0);
    lse.assign(total, -std::numeric_limits<float>::infinity());
    for (std::size_t r = 0; r < total; ++r) {
      if (int(r % t_max) >= seq_lens[0]) continue;
      for (std::size_t e = 0; e < 128; ++e) o[r * 128 + e] = float_to_bf16(normal_sample(5, Tensor::q, r * 128 + e));
      lse[r] = 3.0f + 0.001f * float(r);
    }
    for (const int r : rows) {
      ref_o.insert(ref_o.end(), o.begin() + r * 128, o.begin() + r * 128 + 128);
      ref_lse.push_back(lse[std::size_t(r)]);
    }
  }
  SampleVerdict check() const { return check_sample({o, lse, seq_lens, heads, t_max, rows, ref_o, ref_lse}, {}); }
};

TEST(SampleCheck, ARightLaunchPasses) {
  const SampleVerdict v = Synthetic().check();
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.rows_checked, 6);
  EXPECT_EQ(v.rows_wrong, 0);
  EXPECT_EQ(v.scan_failures, 0u);
  EXPECT_EQ(v.o_max_abs_diff, 0);
  EXPECT_EQ(v.lse_max_abs_diff, 0);
}

TEST(SampleCheck, ADrawnRowOutsideTheTolerancesFails) {
  Synthetic s;
  s.o[std::size_t(256 + 120) * 128 + 17] = float_to_bf16(bf16_to_float(s.o[std::size_t(256 + 120) * 128 + 17]) + 0.25f);
  SampleVerdict v = s.check();
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.rows_wrong, 1);
  EXPECT_EQ(v.scan_failures, 0u);
  EXPECT_GT(v.o_max_abs_diff, 0.2);
  // A row drawn twice counts twice; a wrong lse makes the row wrong too.
  s.rows.push_back(256 + 120);
  s.ref_o.insert(s.ref_o.end(), s.ref_o.begin() + 3 * 128, s.ref_o.begin() + 4 * 128);
  s.ref_lse.push_back(s.ref_lse[3]);
  s.lse[7] += 1e-3f;
  v = s.check();
  EXPECT_EQ(v.rows_wrong, 3);
  EXPECT_NEAR(v.lse_max_abs_diff, 1e-3, 1e-5);
}

TEST(SampleCheck, AnUndrawnValidRowIsJudgedOnlyByTheScan) {
  // What a check cannot see: a finite wrong value in a row nobody drew (the design's bound, (1 - f)^rows). The
  // poison left where nothing was written (NaN), an infinity, or an lse of +inf or NaN it does see.
  Synthetic s;
  s.o[100 * 128 + 3] = float_to_bf16(7.0f);
  EXPECT_TRUE(s.check().passed);
  s.o[100 * 128 + 4] = 0xFFFF;  // the poison
  SampleVerdict v = s.check();
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.rows_wrong, 0);
  EXPECT_EQ(v.scan_failures, 1u);
  EXPECT_TRUE(std::isinf(v.o_max_abs_diff));
  s = Synthetic();
  s.o[256 * 128] = 0x7F80;  // +inf
  EXPECT_EQ(s.check().scan_failures, 1u);
  s = Synthetic();
  s.lse[42] = std::numeric_limits<float>::infinity();
  v = s.check();
  EXPECT_FALSE(v.passed);
  EXPECT_TRUE(std::isinf(v.lse_max_abs_diff));
  s.lse[42] = std::bit_cast<float>(0xFFFFFFFFu);  // the poison
  EXPECT_EQ(s.check().scan_failures, 1u);
  s.lse[42] = -std::numeric_limits<float>::infinity();  // a valid row without keys: allowed
  EXPECT_TRUE(s.check().passed);
}

TEST(SampleCheck, PaddingRowsMustHoldTheirKnownReference) {
  Synthetic s;
  s.o[std::size_t(230) * 128 + 9] = float_to_bf16(0.5f);  // position 230 >= seq_len 200
  SampleVerdict v = s.check();
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.scan_failures, 1u);
  EXPECT_NEAR(v.o_max_abs_diff, 0.5, 1e-6);
  s = Synthetic();
  s.o[std::size_t(230) * 128 + 9] = float_to_bf16(5e-4f);  // within atol 1e-3 of 0
  EXPECT_TRUE(s.check().passed);
  s.lse[256 + 240] = 0.0f;
  v = s.check();
  EXPECT_EQ(v.scan_failures, 1u);
  EXPECT_TRUE(std::isinf(v.lse_max_abs_diff));
}

TEST(SampleCheck, SizesThatDoNotFitAreRefused) {
  Synthetic s;
  s.lse.pop_back();
  EXPECT_THROW(s.check(), std::invalid_argument);
  s = Synthetic();
  s.ref_lse.pop_back();
  EXPECT_THROW(s.check(), std::invalid_argument);
  s = Synthetic();
  s.rows[0] = 512;
  EXPECT_THROW(s.check(), std::invalid_argument);
}

TEST(SampleCheck, MessagesNameTheCaseTheSampleAndWhatWasWrong) {
  SampleVerdict v;
  v.passed = false;
  v.rows_checked = 128;
  v.rows_wrong = 51;
  v.o_max_abs_diff = 1.5;
  v.lse_max_abs_diff = 0.25;
  EXPECT_EQ(sample_failure_message("full-window-1", 3, v),
            "case full-window-1: timed sample 3, on fresh inputs (new magnitudes) with o and lse poisoned before it, "
            "is wrong (51 of 128 drawn rows outside the tolerances; o diff 1.5, lse diff 0.25): the kernel skipped "
            "or reused work of an earlier launch");
  v.rows_wrong = 0;
  v.scan_failures = 4096;
  v.o_max_abs_diff = std::numeric_limits<double>::infinity();
  EXPECT_EQ(sample_verdict_text(v), "4096 elements unwritten, not finite or wrong in padding rows; o diff inf, lse diff 0.25");
  const std::string twin = twin_failure_message("quick-global-1", v);
  EXPECT_TRUE(contains(twin, "case quick-global-1: the sign twin, a launch on the last timed sample's inputs with v's"))
      << twin;
  EXPECT_TRUE(contains(twin, "(4096 elements unwritten")) << twin;
}

}  // namespace
}  // namespace attn
