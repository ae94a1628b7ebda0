#include "daemon/gpu_set.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "gpu/nvml.hpp"

namespace attn {

std::vector<GpuSpec> parse_gpus(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("--gpus '{}': {} (expected all, or indices such as 0,1)", text, why));
  };
  const char* fake = std::getenv(kFakeGpusEnv);
  const bool pretend = fake && *fake;
  std::vector<std::string> uuids;
  int available = -1;  // unknown
  if (pretend) {
    available = std::atoi(fake);
    if (available <= 0 || available > 64) throw bad(fmt::format("{}={} is not a GPU count in 1..64", kFakeGpusEnv, fake));
  } else {
    uuids = nvml_gpu_uuids();
    if (!uuids.empty()) available = int(uuids.size());
  }
  std::vector<GpuSpec> out;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (text == "all" && !pretend && visible && *visible) {  // the GPUs this process was given (Slurm, a container)
    const std::string list = visible;
    std::size_t start = 0;
    for (int i = 0; start <= list.size(); ++i) {
      const std::size_t end = std::min(list.find(',', start), list.size());
      const std::string entry = list.substr(start, end - start);
      start = end + 1;
      if (entry.empty()) continue;
      GpuSpec g;
      g.index = i;
      if (std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; })) g.index = std::stoi(entry);
      if (entry.rfind("GPU-", 0) == 0 || entry.rfind("MIG-", 0) == 0) g.uuid = entry;
      g.visible = entry;
      out.push_back(g);
    }
    if (out.empty()) throw bad("CUDA_VISIBLE_DEVICES names no GPU");
  } else if (text == "all") {
    if (available <= 0) throw bad("NVML found no GPU (is the NVIDIA driver loaded?); name the GPUs by index");
    for (int i = 0; i < available; ++i) out.push_back({i, pretend ? "" : uuids[std::size_t(i)]});
  } else {
    std::set<int> seen;
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = std::min(text.find(',', start), text.size());
      const std::string item = text.substr(start, end - start);
      int index = -1;
      const auto r = std::from_chars(item.data(), item.data() + item.size(), index);
      if (item.empty() || r.ec != std::errc() || r.ptr != item.data() + item.size() || index < 0)
        throw bad(fmt::format("'{}' is not a GPU index", item));
      if (!seen.insert(index).second) throw bad(fmt::format("GPU {} is named twice", index));
      if (available >= 0 && index >= available)
        throw bad(fmt::format("there is no GPU {} ({} GPU(s) on this host)", index, available));
      out.push_back({index, !pretend && std::size_t(index) < uuids.size() ? uuids[std::size_t(index)] : ""});
      start = end + 1;
    }
  }
  if (out.size() > 64) throw bad("more than 64 GPUs");
  return out;
}

std::vector<std::pair<std::string, std::string>> worker_env_for(const GpuSpec& gpu) {
  if (!gpu.visible.empty()) return {{"CUDA_VISIBLE_DEVICES", gpu.visible}};
  if (!gpu.uuid.empty()) return {{"CUDA_VISIBLE_DEVICES", gpu.uuid}};
  return {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", std::to_string(gpu.index)}};
}

}  // namespace attn
