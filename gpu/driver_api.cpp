#include "gpu/driver_api.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "gpu/driver.hpp"

namespace attn::cu {
namespace {

#define ATTN_STR(x) #x
#define ATTN_XSTR(x) ATTN_STR(x)  // expands the header's version macro first: "cuMemAlloc_v2"

struct Loaded {
  Api api;
  std::string error;  // empty when every symbol resolved
};

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    out.error = std::string("cannot load the CUDA driver (libcuda.so.1): ") + (why ? why : "not found");
    return out;
  }
#define ATTN_CU_LOAD(name)                                                              \
  out.api.name = reinterpret_cast<decltype(out.api.name)>(dlsym(lib, ATTN_XSTR(name))); \
  if (!out.api.name && out.error.empty()) out.error = "libcuda.so.1 lacks " ATTN_XSTR(name);
  ATTN_CU_FUNCTIONS(ATTN_CU_LOAD)
#undef ATTN_CU_LOAD
  return out;  // the library stays loaded for the process lifetime
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const Api& api() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw CudaError("dlopen", CUDA_ERROR_NO_DEVICE, l.error);
  return l.api;
}

const Api* try_api() {
  const Loaded& l = loaded();
  return l.error.empty() ? &l.api : nullptr;
}

bool driver_usable() {
  const Loaded& l = loaded();
  if (!l.error.empty()) return false;
  int n = 0;
  return l.api.cuInit(0) == CUDA_SUCCESS && l.api.cuDeviceGetCount(&n) == CUDA_SUCCESS && n > 0;
}

}  // namespace attn::cu
