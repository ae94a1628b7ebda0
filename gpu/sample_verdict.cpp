#include "gpu/sample_verdict.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {

SampleVerdict check_sample(const SampleOutputs& s, const Tolerances& tol) {
  if (s.heads <= 0 || s.t_max <= 0)
    throw std::invalid_argument(fmt::format("check_sample: heads {} and t_max {} must be positive", s.heads, s.t_max));
  const std::size_t total_rows = s.seq_lens.size() * std::size_t(s.heads) * std::size_t(s.t_max);
  if (s.o.size() != total_rows * 128 || s.lse.size() != total_rows)
    throw std::invalid_argument(fmt::format("check_sample: o has {} and lse {} elements for {} rows", s.o.size(),
                                            s.lse.size(), total_rows));
  if (s.ref_o.size() != s.rows.size() * 128 || s.ref_lse.size() != s.rows.size())
    throw std::invalid_argument(fmt::format("check_sample: {} drawn rows with a reference of {} and {} elements",
                                            s.rows.size(), s.ref_o.size(), s.ref_lse.size()));
  const double inf = std::numeric_limits<double>::infinity();
  SampleVerdict v;
  auto add = [&v](const ValidationResult& r) {
    v.o_max_abs_diff = std::max(v.o_max_abs_diff, r.o_max_abs_diff);
    v.lse_max_abs_diff = std::max(v.lse_max_abs_diff, r.lse_max_abs_diff);
  };
  // The drawn rows, each against its reference with the harness's rules.
  v.rows_checked = int(s.rows.size());
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    const std::size_t r = std::size_t(s.rows[i]);
    if (s.rows[i] < 0 || r >= total_rows)
      throw std::invalid_argument(fmt::format("check_sample: drawn row {} is outside the {} rows", s.rows[i], total_rows));
    const std::vector<bf16_bits> o(s.o.begin() + std::ptrdiff_t(r * 128), s.o.begin() + std::ptrdiff_t(r * 128 + 128));
    const std::vector<bf16_bits> ref(s.ref_o.begin() + std::ptrdiff_t(i * 128),
                                     s.ref_o.begin() + std::ptrdiff_t(i * 128 + 128));
    const ValidationResult res = validate_outputs(o, {s.lse[r]}, ref, {s.ref_lse[i]}, tol);
    v.rows_wrong += !res.passed;
    add(res);
  }
  // The scan: valid rows finite (lse may be -inf), padding rows as their known reference.
  const std::vector<bf16_bits> zeros(128, bf16_bits(0));
  const std::vector<float> empty_lse{-std::numeric_limits<float>::infinity()};
  for (std::size_t r = 0; r < total_rows; ++r) {
    const std::size_t b = r / (std::size_t(s.heads) * std::size_t(s.t_max));
    const bool valid = std::int64_t(r % std::size_t(s.t_max)) < s.seq_lens[b];
    if (valid) {
      for (std::size_t e = 0; e < 128; ++e)
        if (!std::isfinite(bf16_to_float(s.o[r * 128 + e]))) {
          ++v.scan_failures;
          v.o_max_abs_diff = inf;
        }
      const float l = s.lse[r];
      if (std::isnan(l) || (std::isinf(l) && l > 0)) {
        ++v.scan_failures;
        v.lse_max_abs_diff = inf;
      }
      continue;
    }
    for (std::size_t e = 0; e < 128; ++e) {
      const ValidationResult res = validate_outputs({s.o[r * 128 + e]}, {}, {bf16_bits(0)}, {}, tol);
      v.scan_failures += !res.passed;
      add(res);
    }
    const ValidationResult res = validate_outputs({}, {s.lse[r]}, {}, empty_lse, tol);
    v.scan_failures += !res.passed;
    add(res);
  }
  v.passed = v.rows_wrong == 0 && v.scan_failures == 0;
  return v;
}

std::string sample_verdict_text(const SampleVerdict& v) {
  std::string s;
  if (v.rows_wrong > 0) s = fmt::format("{} of {} drawn rows outside the tolerances", v.rows_wrong, v.rows_checked);
  if (v.scan_failures > 0)
    s += fmt::format("{}{} elements unwritten, not finite or wrong in padding rows", s.empty() ? "" : ", ",
                     v.scan_failures);
  s += fmt::format("{}o diff {:.3g}, lse diff {:.3g}", s.empty() ? "" : "; ", v.o_max_abs_diff, v.lse_max_abs_diff);
  return s;
}

std::string sample_failure_message(const std::string& case_id, int sample, const SampleVerdict& v) {
  return fmt::format(
      "case {}: timed sample {}, on fresh inputs (new magnitudes) with o and lse poisoned before it, is wrong ({}): "
      "the kernel skipped or reused work of an earlier launch",
      case_id, sample, sample_verdict_text(v));
}

std::string twin_failure_message(const std::string& case_id, const SampleVerdict& v) {
  return fmt::format(
      "case {}: the sign twin, a launch on the last timed sample's inputs with v's signs drawn anew, o and lse as "
      "that sample left them, is wrong ({}): the result depends on something other than the inputs' values",
      case_id, sample_verdict_text(v));
}

}  // namespace attn
