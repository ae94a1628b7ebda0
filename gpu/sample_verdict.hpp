// The verdict of a timed sample's check (docs/verification.md, gpu/sample_checks.hpp): the rows drawn after the
// launch against their fp32 reference, and a scan of every element of o and lse for what the poison before the
// sample would leave (NaN), for any value that is not finite, and for padding rows (position >= seq_len) that
// differ from their known reference (o = 0, lse = -inf). Pure functions: the host path of the check and the
// failure messages. The device path (kernels_templates/validate_outputs.cu's validate_sample) applies the same
// rules and gives the same verdict.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "workload/bf16.hpp"
#include "workload/validation.hpp"

namespace attn {

/// One check's verdict. passed: no drawn row has an element outside the harness's tolerances and the scan found
/// nothing. The max abs diffs are the harness's over what was compared (the drawn rows, the padding rows): inf
/// when a pair has exactly one finite member (a valid row's element that is not finite counts as such a pair).
/// rows_wrong counts draws (a row drawn twice counts twice); scan_failures counts elements of o and lse.
struct SampleVerdict {
  bool passed = true;
  double o_max_abs_diff = 0, lse_max_abs_diff = 0;
  int rows_checked = 0, rows_wrong = 0;
  std::uint64_t scan_failures = 0;
  bool operator==(const SampleVerdict&) const = default;
};

/// A case's outputs as a launch left them and what the check compares them with: o bf16 [B * H * t_max, 128],
/// lse fp32 [B * H * t_max], seq_lens [B]; the drawn rows (flat row indices) with their reference rows (bf16
/// [rows, 128], fp32 [rows]).
struct SampleOutputs {
  const std::vector<bf16_bits>& o;
  const std::vector<float>& lse;
  const std::vector<std::int32_t>& seq_lens;
  int heads = 0, t_max = 0;
  const std::vector<std::int32_t>& rows;
  const std::vector<bf16_bits>& ref_o;
  const std::vector<float>& ref_lse;
};

/// The check on the host. Throws std::invalid_argument when the sizes do not fit together or a row is out of range.
SampleVerdict check_sample(const SampleOutputs& s, const Tolerances& tol);

/// "R of N drawn rows outside the tolerances, E elements unwritten, not finite or wrong in padding rows; o diff
/// D, lse diff L" (the parts that apply).
std::string sample_verdict_text(const SampleVerdict& v);

/// "case X: timed sample S (1-based), on fresh inputs with o and lse poisoned before it, is wrong (...): the
/// kernel skipped or reused work of an earlier launch".
std::string sample_failure_message(const std::string& case_id, int sample, const SampleVerdict& v);

/// "case X: the sign twin, a launch on the last timed sample's inputs with v's signs drawn anew, ..., is wrong
/// (...): ...".
std::string twin_failure_message(const std::string& case_id, const SampleVerdict& v);

}  // namespace attn
