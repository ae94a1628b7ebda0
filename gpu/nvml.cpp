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
constexpr int kNvmlClockSm = 1;

struct Nvml {
  ByBusFn by_bus = nullptr;
  ClockFn clock = nullptr;
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

}  // namespace attn
