// The SM clock of a GPU through NVML, loaded with dlopen (libnvidia-ml.so.1) so that nothing breaks where
// NVML is absent: every query then answers 0.
#pragma once
#include <string>

namespace attn {

/// Current SM clock in MHz of the GPU at `pci_bus_id` ("0000:19:00.0", DeviceInfo::pci_bus_id), from
/// nvmlDeviceGetClockInfo(NVML_CLOCK_SM). 0 when NVML or the device is unavailable. Thread-safe.
unsigned sm_clock_mhz(const std::string& pci_bus_id);

/// True when libnvidia-ml.so.1 loaded and nvmlInit succeeded.
bool nvml_available();

}  // namespace attn
