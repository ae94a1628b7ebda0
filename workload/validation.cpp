// Output validation with the harness's rules (validation.py validate_outputs).
#include "workload/validation.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {
namespace {

/// torch.isclose(a, b, rtol, atol, equal_nan=False) on fp32 tensors, in fp32 as torch computes it:
/// equal values (infinities of one sign included), or a finite |a - b| <= atol + |rtol * b|.
/// NaN is close to nothing.
bool isclose(float a, float b, double atol, double rtol) {
  if (a == b) return true;
  const float err = std::fabs(a - b);
  return std::isfinite(err) && err <= float(atol) + std::fabs(float(rtol) * b);
}

/// validation.py _max_abs_diff: max |a - b| over pairs where both are finite; inf as soon as one pair
/// has exactly one finite member. The difference is taken in fp32, as torch does.
template <class GetA, class GetB>
double max_abs_diff(std::size_t n, GetA a, GetB b) {
  float m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = a(i), y = b(i);
    const bool fx = std::isfinite(x), fy = std::isfinite(y);
    if (fx != fy) return std::numeric_limits<double>::infinity();
    if (fx) m = std::max(m, std::fabs(x - y));
  }
  return m;
}

}  // namespace

ValidationResult validate_outputs(const std::vector<bf16_bits>& o, const std::vector<float>& lse,
                                  const std::vector<bf16_bits>& ref_o, const std::vector<float>& ref_lse,
                                  const Tolerances& tol) {
  if (o.size() != ref_o.size())
    throw std::invalid_argument(fmt::format("validate: o has {} elements, reference {}", o.size(), ref_o.size()));
  if (lse.size() != ref_lse.size())
    throw std::invalid_argument(
        fmt::format("validate: lse has {} elements, reference {}", lse.size(), ref_lse.size()));

  // o: torch.allclose on the fp32 values (bf16 -> fp32 is exact).
  bool o_ok = true;
  for (std::size_t i = 0; i < o.size() && o_ok; ++i)
    o_ok = isclose(bf16_to_float(o[i]), bf16_to_float(ref_o[i]), tol.output_atol, tol.output_rtol);

  // lse: validation.py _allclose_with_infinities: infinities in the same places with the same sign,
  // finite pairs allclose. Deviation: a NaN lse fails here; the harness skips pairs that are not both
  // finite, so a NaN where the reference is finite would pass there.
  bool lse_ok = true;
  for (std::size_t i = 0; i < lse.size() && lse_ok; ++i) {
    const float a = lse[i], b = ref_lse[i];
    if (std::isnan(a) || std::isnan(b)) lse_ok = false;
    else if (std::isinf(a) || std::isinf(b)) lse_ok = std::isinf(a) && std::isinf(b) && std::signbit(a) == std::signbit(b);
    else lse_ok = isclose(a, b, tol.lse_atol, tol.lse_rtol);
  }

  const double o_diff = max_abs_diff(
      o.size(), [&](std::size_t i) { return bf16_to_float(o[i]); }, [&](std::size_t i) { return bf16_to_float(ref_o[i]); });
  const double lse_diff =
      max_abs_diff(lse.size(), [&](std::size_t i) { return lse[i]; }, [&](std::size_t i) { return ref_lse[i]; });
  return validation_result(o_ok, lse_ok, o_diff, lse_diff);
}

ValidationResult validation_result(bool o_ok, bool lse_ok, double o_max_abs_diff, double lse_max_abs_diff) {
  ValidationResult r;
  r.o_max_abs_diff = o_max_abs_diff;
  r.lse_max_abs_diff = lse_max_abs_diff;
  r.passed = o_ok && lse_ok;
  r.message = r.passed ? "ok"
                       : fmt::format("validation failed: output_max_abs_diff={:.6g}, lse_max_abs_diff={:.6g}",
                                     r.o_max_abs_diff, r.lse_max_abs_diff);
  return r;
}

}  // namespace attn
