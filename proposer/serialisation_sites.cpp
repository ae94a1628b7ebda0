// The new wgmma-window sites of an idea's build (proposer/serialisation_sites.hpp).
#include "proposer/serialisation_sites.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "gpu/nvrtc_ptx.hpp"
#include "gpu/wgmma_windows.hpp"

namespace attn {
namespace {

/// Line `n` (1-based) of `path`, trimmed; "" when unreadable.
std::string source_line(const std::string& path, int n) {
  std::ifstream in(path);
  std::string line;
  for (int i = 1; i <= n && std::getline(in, line); ++i) {
  }
  const auto b = line.find_first_not_of(" \t");
  return b == std::string::npos ? "" : line.substr(b);
}

const char* what(const std::string& code) {
  if (code == "C7510") return "a call inside a wgmma window (C7510's pattern)";
  if (code == "C7515") return "writes a pending wgmma accumulator register (C7515's pattern)";
  return "a conditional branch inside a wgmma window (a C7520 candidate)";
}

using Key = std::tuple<std::string, std::string, std::string>;  // kind, file name, source text

Key key_of(const WgmmaWindowSite& s) {
  return {s.code, std::filesystem::path(s.file).filename().string(), source_line(s.file, s.line)};
}

}  // namespace

std::vector<std::string> new_serialisation_sites(const CompileRequest& idea, const CompileRequest& parent,
                                                 const std::string& dir_prefix, std::size_t max_lines) {
  const PtxBuild ib = nvrtc_ptx(idea, {"-lineinfo"});
  const PtxBuild pb = nvrtc_ptx(parent, {"-lineinfo"});
  if (!ib.ok || !pb.ok)
    return {fmt::format("where: not found (no PTX of the {}'s build: {})", ib.ok ? "parent" : "idea",
                        (ib.ok ? pb : ib).problem.substr(0, 200))};
  std::map<Key, int> in_parent;
  for (const auto& s : wgmma_window_sites(pb.ptx)) ++in_parent[key_of(s)];
  std::vector<std::string> out;
  std::size_t more = 0;
  for (const auto& s : wgmma_window_sites(ib.ptx)) {
    const Key k = key_of(s);
    if (auto it = in_parent.find(k); it != in_parent.end() && it->second > 0) {
      --it->second;
      continue;
    }
    if (out.size() >= max_lines) {
      ++more;
      continue;
    }
    std::string file = s.file;
    if (!dir_prefix.empty() && file.rfind(dir_prefix, 0) == 0) file = file.substr(dir_prefix.size());
    while (!file.empty() && file[0] == '/') file.erase(0, 1);
    out.push_back(fmt::format("where: {}:{}: {}: `{}` | `{}`", file.empty() ? "?" : file, s.line, what(s.code),
                              s.instruction, std::get<2>(k)));
  }
  if (more) out.push_back(fmt::format("where: {} more site(s) of the same kinds", more));
  if (out.empty())
    out.push_back("where: no new call, branch or accumulator write inside a wgmma window in the PTX (the cause lies "
                  "in what ptxas does with registers: C7511 / C7512's pattern, or a window across a loop's back edge, "
                  "which this text-order scan does not follow)");
  return out;
}

}  // namespace attn
