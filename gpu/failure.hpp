// Why a variant failed, as a small closed set of kinds (the model: KTT's ResultStatus). The DB stores the
// lowercase names, so they are part of the on-disk format: never rename one. Header-only, so that every
// folder (gpu, tuner, db, export) can use it without linking attn_gpu.
#pragma once
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
enum class FailureKind { none, compile, device_limit, fault, hang, wrong_result, worker_died, interrupted, proposal };

/// The names, indexed by the enum's value.
inline constexpr const char* kFailureKindNames[] = {"none",         "compile",     "device_limit", "fault",
                                                    "hang",         "wrong_result", "worker_died", "interrupted", "proposal"};

/// "none", "compile", "device_limit", "fault", "hang", "wrong_result", "worker_died", "interrupted",
/// "proposal".
inline const char* to_string(FailureKind k) {
  const auto i = static_cast<std::size_t>(k);
  return i < std::size(kFailureKindNames) ? kFailureKindNames[i] : "unknown";
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
                              "worker_died, interrupted or proposal)");
}

}  // namespace attn
