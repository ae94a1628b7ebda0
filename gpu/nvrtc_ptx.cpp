// NVRTC to PTX (gpu/nvrtc_ptx.hpp).
#include "gpu/nvrtc_ptx.hpp"

#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <nvrtc.h>

#include "core/config.hpp"

namespace attn {

RegisterSplit register_split(const std::string& ptx) {
  static const std::regex re(R"(setmaxnreg\.(dec|inc)\.sync\.aligned\.u32\s+(\d+))");
  RegisterSplit r;
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), re); it != std::sregex_iterator(); ++it)
    ((*it)[1] == "dec" ? r.producer : r.consumers) = std::stoi((*it)[2]);
  return r;
}

PtxBuild nvrtc_ptx(const CompileRequest& req, const std::vector<std::string>& extra_options) {
  PtxBuild r;
  std::ifstream in(req.source_path, std::ios::binary);
  if (!in) {
    r.problem = "cannot read template source '" + req.source_path + "'";
    return r;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string source = ss.str();
  for (const auto& [name, value] : req.defines)
    if (!is_identifier(name)) {
      r.problem = "config parameter '" + name + "' is not a C identifier";
      return r;
    }
  CompilerOptions co;
  co.use_cache = false;
  co.arch = "compute_90a";  // PTX only: the front end, no ptxas
  std::vector<std::string> options;
  for (const auto& o : Compiler(co).nvrtc_options(req))
    if (o.rfind("--ptxas-options", 0) != 0) options.push_back(o);
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());

  nvrtcProgram prog = nullptr;
  if (nvrtcResult rc = nvrtcCreateProgram(&prog, source.c_str(), req.source_path.c_str(), 0, nullptr, nullptr);
      rc != NVRTC_SUCCESS) {
    r.problem = std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(rc);
    return r;
  }
  const nvrtcResult rc = nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  std::size_t n = 0;
  if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    r.log.resize(n);
    nvrtcGetProgramLog(prog, r.log.data());
    r.log.resize(n - 1);
  }
  if (rc == NVRTC_SUCCESS && nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    r.ptx.resize(n);
    nvrtcGetPTX(prog, r.ptx.data());
    r.ptx.resize(n - 1);
  }
  nvrtcDestroyProgram(&prog);
  if (rc != NVRTC_SUCCESS || r.ptx.empty()) {
    r.problem = fmt::format("{}\n{}", nvrtcGetErrorString(rc), r.log);
    r.ptx.clear();
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace attn
