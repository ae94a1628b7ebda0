#include "tests/export/helpers.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

#include "core/templates_dir.hpp"
#include "gpu/compiler.hpp"
#include "tests/test_support.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/space.hpp"

namespace attn::test {

CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool python3_available() {
  static const bool ok = run_command("python3 -c 'import ast, base64, json, zlib'").status == 0;
  return ok;
}

bool python3_torch_cuda_available() {
  static const bool ok =
      run_command("python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'").status == 0;
  return ok;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string dispatch_picks(const std::string& submission_dir, const std::string& shapes_json) {
  const std::string shapes_file = temp_dir("export-shapes") + "/shapes.json";
  write_file(shapes_file, shapes_json);
  const auto py = run_command("python3 -c " +
                              shell_quote("import json, sys\nsys.path.insert(0, sys.argv[1])\n"
                                          "import attn_tuner_dispatch as d\n"
                                          "print(json.dumps([d.pick_variant(*s) for s in json.load(open(sys.argv[2]))]))") +
                              " " + shell_quote(submission_dir) + " " + shell_quote(shapes_file));
  if (py.status != 0) throw std::runtime_error("dispatch_picks: python3 failed:\n" + py.output);
  return py.output;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

Config fa2_mma_default_config() {
  return TemplateSpace::load_named(default_templates_dir(), "fa2_mma").default_config();
}

std::vector<std::uint8_t> fa2_mma_cubin(const Config& config) {
  static std::mutex mutex;
  static std::map<Config, std::vector<std::uint8_t>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(config); it != cache.end()) return it->second;
  const TemplateSpace space = TemplateSpace::load_named(default_templates_dir(), "fa2_mma");
  CompilerOptions options;
  options.use_cache = false;
  const CompiledVariant v = Compiler(options).compile(compile_request(space, config));
  if (!v.ok) throw std::runtime_error("fa2_mma compile failed: " + v.log);
  return cache[config] = std::vector<std::uint8_t>(v.cubin.begin(), v.cubin.end());
}

ExportPlan hand_made_plan() {
  const TemplateSpace space = TemplateSpace::load_named(default_templates_dir(), "fa2_mma");
  const std::string source = read_file(space.source_path());
  auto variant = [&](const std::string& name, std::size_t cubin_bytes, int block_n) {
    ExportVariant v;
    v.name = name;
    v.template_name = "fa2_mma";
    v.kernel = space.kernel();
    v.defines = space.default_config();
    v.defines["BLOCK_N"] = block_n;
    v.nvrtc_options = {"-std=c++17"};
    v.source = source;
    v.headers = local_includes(space.source_path());  // as export ships them (fa2_mma.cu includes cta_order.cuh)
    for (std::size_t i = 0; i < cubin_bytes; ++i) v.cubin.push_back(static_cast<std::uint8_t>((i * 7 + 3) & 0xff));
    v.provenance = {{"iteration", name}};
    return v;
  };
  ExportPlan plan;
  plan.suite = "full";
  plan.variants = {variant("fa2_mma_i7", 1000, 64), variant("fa2_mma_i9", 1001, 128)};
  plan.default_variant = 0;
  plan.family_variants = {{Family::sliding_window, 0}, {Family::sliding_window_global, 1}};
  plan.rules = {
      ShapeRule{0, 2, 2, 16, 16, 8192, 8192, 150, 250, "full-window-1"},
      ShapeRule{1, 2, 2, 16, 16, 8192, 8192, 300, 400, "full-global-1"},
  };
  return plan;
}

}  // namespace attn::test
