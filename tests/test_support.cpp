#include "tests/test_support.hpp"

#include <dlfcn.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
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

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CaseSpec batched_case(const std::string& case_id, std::int64_t seed) {
  CaseSpec c = builtin_suite("smoke").back();
  c.case_id = case_id;
  c.batch_size = 2;
  c.num_heads = 3;
  c.t_max = 768;
  c.seq_len_min_ratio = 0.3;
  c.seed = seed;
  return c;
}

void write_text(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

CommandOutput run_binary(const std::string& args, const std::string& env) {
  const std::string cmd = env + " '" + binary_path() + "' " + args + " 2>&1";
  CommandOutput out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.text.append(buf, n);
  const int status = ::pclose(p);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::int64_t begin_test_run(ExperimentDb& db, const std::string& suite, const std::string& template_name) {
  RunRecord rr;
  rr.suite = suite;
  rr.strategy = "random";
  rr.templates = {template_name};
  rr.suite_json = "[]";
  return db.begin_run(rr);
}

std::pair<IterationRecord, VariantRecord> test_iteration(std::int64_t run_id, const std::string& suite,
                                                         const std::string& template_name,
                                                         const std::string& params_json,
                                                         const std::string& content_hash) {
  VariantRecord v;
  v.template_name = template_name;
  v.params_json = params_json;
  v.content_hash = content_hash;
  v.compile_ok = true;
  IterationRecord it;
  it.run_id = run_id;
  it.suite = suite;
  it.template_name = template_name;
  it.params_json = params_json;
  return {it, v};
}

}  // namespace attn::test
