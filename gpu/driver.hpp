// Owners of CUDA driver API resources (the nvbench style: non-copyable RAII types, cleanup guaranteed on
// exceptions). Every CUresult is checked; a failure throws attn::CudaError, which says whether the error
// is sticky (the context is dead and the process must exit) or a resource limit of the launch.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attn {

/// A failed driver call: `call` is the function ("cuLaunchKernel"), `result` the CUresult, `name` its
/// enum name ("CUDA_ERROR_ILLEGAL_ADDRESS"). what() = "<call>: <name> (<description>)".
class CudaError : public std::runtime_error {
 public:
  CudaError(std::string call, CUresult result, const std::string& detail = {});
  const std::string& call() const { return call_; }
  CUresult result() const { return result_; }
  const std::string& name() const { return name_; }
  /// The context is corrupted: every later call fails. See is_sticky_error.
  bool sticky() const;
  /// The launch asked for more than the device gives. See is_resource_limit_error.
  bool resource_limit() const;

 private:
  std::string call_;
  CUresult result_;
  std::string name_;
};

/// Errors after which the CUDA context is unusable (CUDA programming guide, "sticky" errors): illegal /
/// misaligned address, illegal instruction, invalid PC or address space, hardware stack error, device
/// assert, launch failure or timeout, uncorrectable ECC, and the like.
bool is_sticky_error(CUresult r);
/// Launch-configuration errors caused by the variant's resource needs: too much shared memory, too many
/// threads or registers per block (CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_RESOURCES, ...).
bool is_resource_limit_error(CUresult r);
/// "CUDA_ERROR_ILLEGAL_ADDRESS" (from the driver when loaded, else "CUresult <n>").
std::string cuda_error_name(CUresult r);

/// Throws CudaError(call, r) unless r == CUDA_SUCCESS.
void check(CUresult r, const char* call);

/// Facts about one GPU, read from the driver.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;           ///< "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;     ///< "0000:19:00.0" (NVML looks the device up by it)
  int driver_version = 0;     ///< cuDriverGetVersion: 13000 for CUDA 13.0
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t total_mem_bytes = 0;
  int max_smem_per_block_optin = 0;  ///< the most dynamic smem a kernel may ask for, bytes
  int max_threads_per_block = 0;
};

/// Retains the primary context of device `ordinal` and makes it current on the constructing thread
/// (cuInit first). Releases it on destruction. Throws CudaError (no driver / no such device).
class Context {
 public:
  explicit Context(int ordinal = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// Makes this context current on the calling thread.
  void make_current() const;
  void synchronize() const;
  CUdevice device() const { return device_; }
  const DeviceInfo& info() const { return info_; }

 private:
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  DeviceInfo info_;
};

/// Device memory of `bytes` bytes (cuMemAlloc). Move-only; freed on destruction (errors ignored there).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  /// Synchronous copies; throw std::invalid_argument when `n` exceeds the buffer.
  void upload(const void* src, std::size_t n);
  void download(void* dst, std::size_t n) const;
  /// Every byte set to `value` (synchronous).
  void fill_bytes(std::uint8_t value);

  template <class T>
  static DeviceBuffer from_vector(const std::vector<T>& v) {
    DeviceBuffer b(v.size() * sizeof(T));
    b.upload(v.data(), v.size() * sizeof(T));
    return b;
  }
  template <class T>
  std::vector<T> to_vector(std::size_t count) const {
    std::vector<T> v(count);
    download(v.data(), count * sizeof(T));
    return v;
  }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

/// Page-locked host memory (cuMemAllocHost), for async copies. Move-only.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A non-blocking stream (CU_STREAM_NON_BLOCKING).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return stream_; }
  void synchronize() const;

 private:
  CUstream stream_ = nullptr;
};

/// Two timing events around work on a stream: record_start, launch, record_stop, elapsed_ms.
class EventPair {
 public:
  EventPair();
  ~EventPair();
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  void record_start(CUstream s);
  void record_stop(CUstream s);
  /// Waits for the stop event, then milliseconds between the two (resolution ~0.5 us).
  float elapsed_ms();

 private:
  CUevent start_ = nullptr, stop_ = nullptr;
};

/// A loaded cubin (cuModuleLoadData); unloaded on destruction. The image is copied by the driver.
class Module {
 public:
  explicit Module(const std::vector<char>& image);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The __global__ function `name`; throws CudaError (CUDA_ERROR_NOT_FOUND) when absent.
  CUfunction function(const std::string& name) const;
  /// Bytes of the __device__ variable `name`, copied to the host; throws CudaError when absent.
  std::vector<std::uint8_t> read_global(const std::string& name) const;
  /// Device address and size in bytes of the __device__ variable `name`; throws CudaError when absent.
  std::pair<CUdeviceptr, std::size_t> global(const std::string& name) const;
  CUmodule get() const { return module_; }

 private:
  CUmodule module_ = nullptr;
};

}  // namespace attn
