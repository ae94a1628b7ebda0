#include "gpu/driver.hpp"

#include <fmt/format.h>

#include <utility>

#include "gpu/driver_api.hpp"

namespace attn {
namespace {

std::string describe(CUresult r) {
  const char* s = nullptr;
  if (const cu::Api* a = cu::try_api(); a && a->cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return "unknown error";
}

}  // namespace

std::string cuda_error_name(CUresult r) {
  const char* s = nullptr;
  if (const cu::Api* a = cu::try_api(); a && a->cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return fmt::format("CUresult {}", int(r));
}

CudaError::CudaError(std::string call, CUresult result, const std::string& detail)
    : std::runtime_error(fmt::format("{}: {} ({})", call, cuda_error_name(result),
                                     detail.empty() ? describe(result) : detail)),
      call_(std::move(call)),
      result_(result),
      name_(cuda_error_name(result)) {}

bool CudaError::sticky() const { return is_sticky_error(result_); }
bool CudaError::resource_limit() const { return is_resource_limit_error(result_); }

bool is_sticky_error(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_EXTERNAL_DEVICE:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

bool is_resource_limit_error(CUresult r) {
  switch (r) {
    case CUDA_ERROR_INVALID_VALUE:  // dynamic smem above the opt-in maximum, block dims too large
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:  // registers x threads above the SM's register file
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    case CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY:
      return true;
    default:
      return false;
  }
}

void check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) throw CudaError(call, r);
}

// ---- Context ----

Context::Context(int ordinal) {
  const auto& a = cu::api();
  check(a.cuInit(0), "cuInit");
  int count = 0;
  check(a.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    throw CudaError("cuDeviceGet", CUDA_ERROR_INVALID_DEVICE,
                    fmt::format("device {} requested, {} present", ordinal, count));
  check(a.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  check(a.cuDevicePrimaryCtxRetain(&ctx_, device_), "cuDevicePrimaryCtxRetain");
  try {
    check(a.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    info_.ordinal = ordinal;
    char name[256] = {};
    check(a.cuDeviceGetName(name, sizeof name, device_), "cuDeviceGetName");
    info_.name = name;
    char bus[64] = {};
    check(a.cuDeviceGetPCIBusId(bus, sizeof bus, device_), "cuDeviceGetPCIBusId");
    info_.pci_bus_id = bus;
    check(a.cuDriverGetVersion(&info_.driver_version), "cuDriverGetVersion");
    auto attr = [&](CUdevice_attribute at) {
      int v = 0;
      check(a.cuDeviceGetAttribute(&v, at, device_), "cuDeviceGetAttribute");
      return v;
    };
    info_.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    info_.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    info_.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    info_.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    info_.max_smem_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    info_.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    size_t total = 0;
    check(a.cuDeviceTotalMem(&total, device_), "cuDeviceTotalMem");
    info_.total_mem_bytes = std::int64_t(total);
  } catch (...) {
    a.cuDevicePrimaryCtxRelease(device_);
    throw;
  }
}

Context::~Context() {
  if (ctx_) cu::api().cuDevicePrimaryCtxRelease(device_);
}

void Context::make_current() const { check(cu::api().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }
void Context::synchronize() const { check(cu::api().cuCtxSynchronize(), "cuCtxSynchronize"); }

// ---- DeviceBuffer ----

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) check(cu::api().cuMemAlloc(&ptr_, bytes), "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cu::api().cuMemFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cu::api().cuMemFree(ptr_);
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* src, std::size_t n) {
  if (n > bytes_)
    throw std::invalid_argument(fmt::format("upload of {} bytes into a {}-byte device buffer", n, bytes_));
  if (n) check(cu::api().cuMemcpyHtoD(ptr_, src, n), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* dst, std::size_t n) const {
  if (n > bytes_)
    throw std::invalid_argument(fmt::format("download of {} bytes from a {}-byte device buffer", n, bytes_));
  if (n) check(cu::api().cuMemcpyDtoH(dst, ptr_, n), "cuMemcpyDtoH");
}

void DeviceBuffer::fill_bytes(std::uint8_t value) {
  if (!bytes_) return;
  // cuMemsetD8 on device memory returns before the memset ends and runs on the legacy stream, which a
  // CU_STREAM_NON_BLOCKING stream does not wait for: finish it here, as the doc comment promises.
  check(cu::api().cuMemsetD8(ptr_, value, bytes_), "cuMemsetD8");
  check(cu::api().cuCtxSynchronize(), "cuCtxSynchronize");
}

// ---- PinnedBuffer ----

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) check(cu::api().cuMemAllocHost(&ptr_, bytes), "cuMemAllocHost");
}
PinnedBuffer::~PinnedBuffer() {
  if (ptr_) cu::api().cuMemFreeHost(ptr_);
}

// ---- Stream, EventPair ----

Stream::Stream() { check(cu::api().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); }
Stream::~Stream() {
  if (stream_) cu::api().cuStreamDestroy(stream_);
}
void Stream::synchronize() const { check(cu::api().cuStreamSynchronize(stream_), "cuStreamSynchronize"); }

EventPair::EventPair() {
  check(cu::api().cuEventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
  try {
    check(cu::api().cuEventCreate(&stop_, CU_EVENT_DEFAULT), "cuEventCreate");
  } catch (...) {
    cu::api().cuEventDestroy(start_);
    throw;
  }
}
EventPair::~EventPair() {
  cu::api().cuEventDestroy(start_);
  cu::api().cuEventDestroy(stop_);
}
void EventPair::record_start(CUstream s) { check(cu::api().cuEventRecord(start_, s), "cuEventRecord"); }
void EventPair::record_stop(CUstream s) { check(cu::api().cuEventRecord(stop_, s), "cuEventRecord"); }
float EventPair::elapsed_ms() {
  check(cu::api().cuEventSynchronize(stop_), "cuEventSynchronize");
  float ms = 0;
  check(cu::api().cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
  return ms;
}

// ---- Module ----

Module::Module(const std::vector<char>& image) {
  if (image.empty()) throw CudaError("cuModuleLoadData", CUDA_ERROR_INVALID_IMAGE, "empty cubin");
  check(cu::api().cuModuleLoadData(&module_, image.data()), "cuModuleLoadData");
}
Module::~Module() {
  if (module_) cu::api().cuModuleUnload(module_);
}

CUfunction Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  const CUresult r = cu::api().cuModuleGetFunction(&f, module_, name.c_str());
  if (r != CUDA_SUCCESS) throw CudaError("cuModuleGetFunction", r, "no kernel '" + name + "' in the cubin");
  return f;
}

std::pair<CUdeviceptr, std::size_t> Module::global(const std::string& name) const {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  const CUresult r = cu::api().cuModuleGetGlobal(&p, &bytes, module_, name.c_str());
  if (r != CUDA_SUCCESS)
    throw CudaError("cuModuleGetGlobal", r, "no __device__ variable '" + name + "' in the cubin");
  return {p, bytes};
}

std::vector<std::uint8_t> Module::read_global(const std::string& name) const {
  const auto [p, bytes] = global(name);
  std::vector<std::uint8_t> out(bytes);
  if (bytes) check(cu::api().cuMemcpyDtoH(out.data(), p, bytes), "cuMemcpyDtoH");
  return out;
}

}  // namespace attn
