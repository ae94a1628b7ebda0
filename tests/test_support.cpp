#include "tests/test_support.hpp"

#include <dlfcn.h>

#include <atomic>
#include <filesystem>
#include <unistd.h>

namespace attn::test {

std::string data_dir() { return ATTN_TEST_DATA; }
std::string binary_path() { return ATTN_BINARY; }

bool gpu_available() {
  // dlopen so that test binaries also run where no driver is installed (CI).
  static const bool available = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    using InitFn = int (*)(unsigned);
    using CountFn = int (*)(int*);
    auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
    auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
    int n = 0;
    return init && count && init(0) == 0 && count(&n) == 0 && n > 0;
  }();
  return available;
}

std::string temp_dir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  auto dir = std::filesystem::temp_directory_path() /
             (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace attn::test
