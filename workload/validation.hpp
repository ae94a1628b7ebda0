// Output validation with the harness's rules and tolerances (validation.py, spec.py Tolerances).
#pragma once
#include <string>
#include <vector>

#include "workload/bf16.hpp"

namespace attn {

/// Harness tolerances: o atol 1e-3 rtol 1e-2; lse atol 1e-5 rtol 1e-5 (spec.py).
struct Tolerances {
  double output_atol = 1e-3, output_rtol = 1e-2;
  double lse_atol = 1e-5, lse_rtol = 1e-5;
};

/// passed, and the max abs diff of each output over finite pairs (inf where finiteness differs), as the
/// harness's _max_abs_diff.
struct ValidationResult {
  bool passed = false;
  double o_max_abs_diff = 0;
  double lse_max_abs_diff = 0;
  std::string message;  ///< "ok" or "validation failed: output_max_abs_diff=..., lse_max_abs_diff=..."
};

/// The result of the two checks: passed = o_ok && lse_ok, the diffs, and the message (shared by the host
/// path below and gpu/device_validation.hpp).
ValidationResult validation_result(bool o_ok, bool lse_ok, double o_max_abs_diff, double lse_max_abs_diff);

/// o: torch.allclose(cand, ref, atol, rtol) on fp32 values (|a-b| <= atol + rtol*|ref|, NaN fails).
/// lse: infinities must match in place and sign; finite pairs allclose; NaN fails (stricter than the
/// harness, which skips pairs that are not both finite). Comparisons in fp32, as torch. Throws
/// std::invalid_argument on size mismatch.
ValidationResult validate_outputs(const std::vector<bf16_bits>& o, const std::vector<float>& lse,
                                  const std::vector<bf16_bits>& ref_o, const std::vector<float>& ref_lse,
                                  const Tolerances& tol = {});

}  // namespace attn
