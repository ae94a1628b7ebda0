#include "gpu/nvml.hpp"

#include <dlfcn.h>

#include <mutex>

namespace attn {
namespace {

// The few NVML declarations used (nvml.h): results are ints, 0 = NVML_SUCCESS; NVML_CLOCK_SM = 1.
using nvmlDevice_t = struct nvmlDevice_st*;
using InitFn = int (*)();
using ByBusFn = int (*)(const char*, nvmlDevice_t*);
using ClockFn = int (*)(nvmlDevice_t, int, unsigned*);
using UuidFn = int (*)(nvmlDevice_t, char*, unsigned);
using CountFn = int (*)(unsigned*);
using ByIndexFn = int (*)(unsigned, nvmlDevice_t*);
constexpr int kNvmlClockSm = 1;

struct Nvml {
  ByBusFn by_bus = nullptr;
  ClockFn clock = nullptr;
  UuidFn uuid = nullptr;      // optional: the functions below answer "" / nothing without them
  CountFn count = nullptr;
  ByIndexFn by_index = nullptr;
  bool ok = false;
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml out;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return out;
    auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
    out.by_bus = reinterpret_cast<ByBusFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    out.clock = reinterpret_cast<ClockFn>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    out.uuid = reinterpret_cast<UuidFn>(dlsym(lib, "nvmlDeviceGetUUID"));
    out.count = reinterpret_cast<CountFn>(dlsym(lib, "nvmlDeviceGetCount_v2"));
    out.by_index = reinterpret_cast<ByIndexFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    out.ok = init && out.by_bus && out.clock && init() == 0;
    return out;
  }();
  return n;
}

}  // namespace

bool nvml_available() { return nvml().ok; }

unsigned sm_clock_mhz(const std::string& pci_bus_id) {
  const Nvml& n = nvml();
  if (!n.ok || pci_bus_id.empty()) return 0;
  nvmlDevice_t dev = nullptr;
  if (n.by_bus(pci_bus_id.c_str(), &dev) != 0) return 0;
  unsigned mhz = 0;
  return n.clock(dev, kNvmlClockSm, &mhz) == 0 ? mhz : 0;
}

std::string gpu_uuid(const std::string& pci_bus_id) {
  const Nvml& n = nvml();
  if (!n.ok || !n.uuid || pci_bus_id.empty()) return "";
  nvmlDevice_t dev = nullptr;
  if (n.by_bus(pci_bus_id.c_str(), &dev) != 0) return "";
  char buf[96] = {};
  return n.uuid(dev, buf, sizeof buf) == 0 ? std::string(buf) : std::string();
}

std::vector<std::string> nvml_gpu_uuids() {
  const Nvml& n = nvml();
  std::vector<std::string> out;
  unsigned count = 0;
  if (!n.ok || !n.uuid || !n.count || !n.by_index || n.count(&count) != 0) return out;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    char buf[96] = {};
    out.push_back(n.by_index(i, &dev) == 0 && n.uuid(dev, buf, sizeof buf) == 0 ? std::string(buf) : std::string());
  }
  return out;
}

}  // namespace attn
