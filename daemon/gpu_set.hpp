// `attn-tuner run --gpus all | 0,1,...`: the GPUs of a host that get one worker each (docs/scale-out.md).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace attn {

/// One GPU of the host: its index in NVML / nvidia-smi order and, when known, its UUID.
struct GpuSpec {
  int index = 0;
  std::string uuid;  ///< "GPU-..." ("" when NVML did not say; tests)
  /// The CUDA_VISIBLE_DEVICES entry the daemon itself was given for this GPU (Slurm sets it to the job's
  /// GPUs), passed to the worker verbatim; "" when the daemon saw every GPU.
  std::string visible;
  bool operator==(const GpuSpec&) const = default;
};

/// The environment variable that makes `--gpus all` see N pretend GPUs (indices 0..N-1, no UUIDs)
/// instead of asking NVML: for the CPU tests with the fake worker.
inline constexpr const char* kFakeGpusEnv = "ATTN_TUNER_FAKE_GPUS";

/// Parses --gpus: "all" (the GPUs of the daemon's own CUDA_VISIBLE_DEVICES when it is set, as under Slurm;
/// else every GPU NVML sees; or $ATTN_TUNER_FAKE_GPUS pretend ones) or a comma-separated
/// list of distinct indices ("0,1,3"). UUIDs are filled from NVML where it answers. Throws
/// std::invalid_argument naming the problem: an empty list, a non-integer or negative item, a repeated
/// index, an index NVML does not have, more than 64 GPUs, or "all" with no GPU found.
std::vector<GpuSpec> parse_gpus(const std::string& text);

/// The environment of the worker of `gpu`: CUDA_VISIBLE_DEVICES set to gpu.visible when the daemon was
/// given one (Slurm), else to the GPU's UUID when known (immune
/// to the difference between CUDA's and NVML's device order), else to its index with
/// CUDA_DEVICE_ORDER=PCI_BUS_ID (the order NVML and nvidia-smi use). The worker then sees one device,
/// ordinal 0, and can neither touch nor create a context on any other GPU.
std::vector<std::pair<std::string, std::string>> worker_env_for(const GpuSpec& gpu);

}  // namespace attn
