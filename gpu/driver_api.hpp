// The CUDA driver API, resolved at run time from libcuda.so.1 (dlopen), so that attn-tuner and the tests
// start on machines without an NVIDIA driver (CI, the build machine): only code that touches the GPU
// needs it. Types and the versioned symbol names (cuMemAlloc -> cuMemAlloc_v2) come from <cuda.h>.
// Internal to gpu/: call through attn::cu::api(), and wrap results with attn::check (driver.hpp).
#pragma once
#include <cuda.h>

namespace attn::cu {

// Every driver entry point gpu/ uses. Adding one here is all it takes to call it through api().
#define ATTN_CU_FUNCTIONS(X)                                                                          \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName)               \
  X(cuDeviceGetAttribute) X(cuDeviceGetPCIBusId) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)      \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuModuleLoadData)             \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuModuleGetGlobal) X(cuFuncSetAttribute)                 \
  X(cuFuncGetAttribute) X(cuMemAlloc) X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemcpyHtoD) \
  X(cuMemcpyDtoH) X(cuMemsetD8) X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuStreamCreate)              \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)       \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuLaunchKernel) X(cuGetErrorName) X(cuGetErrorString)  \
  X(cuTensorMapEncodeTiled) X(cuCtxGetDevice) X(cuMemcpyDtoD)

/// Function pointers with the exact types of <cuda.h>'s prototypes. Member names go through the same
/// macros as the header (api().cuMemAlloc is the cuMemAlloc_v2 entry point).
struct Api {
#define ATTN_CU_MEMBER(name) decltype(&::name) name = nullptr;
  ATTN_CU_FUNCTIONS(ATTN_CU_MEMBER)
#undef ATTN_CU_MEMBER
};

/// The loaded table (loaded once, thread-safe). Throws attn::CudaError (CUDA_ERROR_NO_DEVICE) naming the
/// library when libcuda.so.1 is absent or lacks a symbol.
const Api& api();
/// The table, or nullptr when libcuda.so.1 did not load; never throws.
const Api* try_api();
/// True when libcuda.so.1 loads and cuInit(0) succeeds with at least one device; never throws.
bool driver_usable();

}  // namespace attn::cu
