// The SM clock of a GPU through NVML, loaded with dlopen (libnvidia-ml.so.1) so that nothing breaks where
// NVML is absent: every query then answers 0.
#pragma once
#include <string>
#include <vector>

namespace attn {

/// Current SM clock in MHz of the GPU at `pci_bus_id` ("0000:19:00.0", DeviceInfo::pci_bus_id), from
/// nvmlDeviceGetClockInfo(NVML_CLOCK_SM). 0 when NVML or the device is unavailable. Thread-safe.
unsigned sm_clock_mhz(const std::string& pci_bus_id);

/// The UUID ("GPU-8e6b...") of the GPU at `pci_bus_id`, from nvmlDeviceGetUUID; "" when unavailable.
std::string gpu_uuid(const std::string& pci_bus_id);

/// The UUIDs of every GPU NVML sees, in NVML index order (the order of nvidia-smi, PCI bus order): the
/// GPUs of `attn-tuner run --gpus all`. Empty when NVML is unavailable.
std::vector<std::string> nvml_gpu_uuids();

/// True when libnvidia-ml.so.1 loaded and nvmlInit succeeded.
bool nvml_available();

}  // namespace attn
