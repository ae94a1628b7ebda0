// Why a variant failed, as a small closed set of kinds (the model: KTT's ResultStatus). The DB stores the
// lowercase names, so they are part of the on-disk format: never rename one. Header-only, so that every
// folder (db, gpu, tuner, export, ...) can use it without linking a library; in core/, which every folder stands on.
#pragma once
#include <cstddef>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attn {

/// none: it worked. compile: NVRTC rejected the source, or the cubin lacks the kernel / attn_launch_info.
/// device_limit: the launch asks for more than the GPU gives (smem, threads, registers).
/// fault: a sticky CUDA error (illegal address, ...): the context is dead, the worker exits.
/// hang: no answer before the deadline, the worker was killed. wrong_result: outputs outside the harness
/// tolerances. worker_died: the worker exited or broke the protocol without saying why.
/// interrupted: stopped by the user (SIGINT / stop) before it finished.
/// proposal: a proposer's template was refused before any GPU time (the proposer hung, crashed or wrote
/// outside its directory; its files are missing, its space JSON does not load, or its kernel ABI is wrong;
/// docs/proposer.md). A proposal that does not compile is `compile`.
/// inconsistent: every case passed validation, but a launch that reuse of earlier work would get wrong was
/// wrong: the second launch on the same inputs, a timed sample on inputs of new magnitudes, the sign twin (a
/// memoized result, skipped work; docs/verification.md).
/// below_floor: a case timed faster than its roofline floor allows (workload/roofline.hpp): impossible for a
/// kernel that does the work.
/// Appended kinds go at the end: the DB stores the names and an iterations CHECK lists them (db/schema.cpp).
enum class FailureKind {
  none,
  compile,
  device_limit,
  fault,
  hang,
  wrong_result,
  worker_died,
  interrupted,
  proposal,
  inconsistent,
  below_floor
};

/// The names, indexed by the enum's value.
inline constexpr const char* kFailureKindNames[] = {"none",        "compile",     "device_limit", "fault",
                                                    "hang",        "wrong_result", "worker_died", "interrupted",
                                                    "proposal",    "inconsistent", "below_floor"};
static_assert(std::size(kFailureKindNames) == std::size_t(FailureKind::below_floor) + 1,
              "a name for every FailureKind");

/// "none", "compile", "device_limit", "fault", "hang", "wrong_result", "worker_died", "interrupted",
/// "proposal", "inconsistent", "below_floor".
inline const char* to_string(FailureKind k) {
  const auto i = static_cast<std::size_t>(k);
  return i < std::size(kFailureKindNames) ? kFailureKindNames[i] : "unknown";
}

/// The kinds that judge what a kernel computed or how fast it ran, after it ran to the end: wrong_result,
/// inconsistent, below_floor. The worker and its context are healthy afterwards (no restart needed).
inline bool is_result_check_failure(FailureKind k) {
  return k == FailureKind::wrong_result || k == FailureKind::inconsistent || k == FailureKind::below_floor;
}

/// Inverse of to_string; std::nullopt for an unknown name.
inline std::optional<FailureKind> failure_kind_from_string(std::string_view s) {
  for (std::size_t i = 0; i < std::size(kFailureKindNames); ++i)
    if (s == kFailureKindNames[i]) return static_cast<FailureKind>(i);
  return std::nullopt;
}

/// Like failure_kind_from_string but throws std::invalid_argument naming the bad value and listing the
/// valid ones.
inline FailureKind parse_failure_kind(std::string_view s) {
  if (auto k = failure_kind_from_string(s)) return *k;
  throw std::invalid_argument("unknown failure kind '" + std::string(s) +
                              "' (expected none, compile, device_limit, fault, hang, wrong_result, "
                              "worker_died, interrupted, proposal, inconsistent or below_floor)");
}

}  // namespace attn
