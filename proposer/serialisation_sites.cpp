// The new wgmma-window sites of an idea's build (proposer/serialisation_sites.hpp).
#include "proposer/serialisation_sites.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include <fmt/format.h>

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

std::string what(const WgmmaWindowSite& s) {
  if (s.code == "C7510") return "a call inside a wgmma window (C7510's pattern)";
  if (s.code == "C7514") return "reads a pending wgmma accumulator register (C7514's pattern)";
  if (s.code == "C7515")
    return s.reads ? "reads and writes a pending wgmma accumulator register (C7514's and C7515's patterns)"
                   : "writes a pending wgmma accumulator register (C7515's pattern)";
  return "a conditional branch inside a wgmma window (a C7520 candidate)";
}

/// A place: its kind, its file and line and those of the call it was inlined at, in the idea's files.
using Place = std::tuple<std::string, bool, std::string, int, std::string, int>;
/// What makes two builds' places the same code: the kind, the file names and source texts (line numbers move with a
/// patch).
using Key = std::tuple<std::string, bool, std::string, std::string, std::string, std::string>;

Key key_of(const Place& p) {
  const auto& [code, reads, file, line, caller, caller_line] = p;
  return {code, reads, std::filesystem::path(file).filename().string(), source_line(file, line),
          std::filesystem::path(caller).filename().string(), caller.empty() ? "" : source_line(caller, caller_line)};
}

/// The sites of `ptx` grouped by place, with their count and the first one's instruction, in text order.
std::vector<std::tuple<Place, int, std::string>> places(const std::string& ptx) {
  std::vector<std::tuple<Place, int, std::string>> out;
  std::map<Place, std::size_t> at;
  for (const auto& s : wgmma_window_sites(ptx)) {
    const Place p{s.code, s.reads, s.file, s.line, s.caller_file, s.caller_line};
    if (auto it = at.find(p); it != at.end()) {
      ++std::get<1>(out[it->second]);
      continue;
    }
    at.emplace(p, out.size());
    out.emplace_back(p, 1, s.instruction);
  }
  return out;
}

}  // namespace

std::vector<std::string> new_serialisation_sites(const PtxBuild& ib, const PtxBuild& pb, const std::string& dir_prefix,
                                                 std::size_t max_lines) {
  if (!ib.ok || !pb.ok)
    return {fmt::format("where: not found (no PTX of the {}'s build: {})", ib.ok ? "parent" : "idea",
                        (ib.ok ? pb : ib).problem.substr(0, 200))};
  std::map<Key, int> in_parent;
  for (const auto& [p, n, ins] : places(pb.ptx)) in_parent[key_of(p)] += n;
  const auto shown = [&](const std::string& file) {
    std::string f = file;
    if (!dir_prefix.empty() && f.rfind(dir_prefix, 0) == 0) f = f.substr(dir_prefix.size());
    while (!f.empty() && f[0] == '/') f.erase(0, 1);
    return f.empty() ? std::string("?") : f;
  };
  std::vector<std::string> out;
  std::size_t more = 0;
  for (const auto& [p, n, ins] : places(ib.ptx)) {
    const Key k = key_of(p);
    int extra = n;
    if (auto it = in_parent.find(k); it != in_parent.end()) {
      const int same = std::min(extra, it->second);
      extra -= same;
      it->second -= same;
    }
    if (extra == 0) continue;
    if (out.size() >= max_lines) {
      ++more;
      continue;
    }
    const auto& [code, reads, file, line, caller, caller_line] = p;
    out.push_back(fmt::format("where: {}:{}{}: {}{}: `{}` | `{}`", shown(file), line,
                              caller.empty() ? "" : fmt::format(" (inlined at {}:{})", shown(caller), caller_line),
                              what(WgmmaWindowSite{code, reads, file, line, caller, caller_line, ""}),
                              extra > 1 ? fmt::format(", {} instructions", extra) : "", ins, std::get<3>(k)));
  }
  if (more) out.push_back(fmt::format("where: {} more place(s)", more));
  if (out.empty())
    out.push_back("where: no new call, branch or accumulator access inside a wgmma window in the PTX (the cause lies "
                  "in what ptxas does with registers: C7511 / C7512's pattern, or a window across a loop's back edge, "
                  "which this text-order scan does not follow)");
  return out;
}

}  // namespace attn
