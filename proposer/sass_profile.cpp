// parse_sass and the disassembler call (proposer/sass_profile.hpp).
#include "proposer/sass_profile.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>

#include <boost/process.hpp>
#include <fmt/format.h>

#include "gpu/process_group.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace bp = boost::process;
namespace {

struct Insn {
  std::uint64_t addr = 0;
  std::string op;
  std::optional<std::uint64_t> target;  ///< a branch's target address (resolved after the labels)
  std::string target_label;
};

bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

}  // namespace

std::vector<std::string> sass_classes() {
  return {"HGMMA", "MUFU.EX2", "MUFU", "F2FP", "F2F", "FFMA", "FMUL", "FADD", "FMNMX", "SHFL", "BAR", "SYNCS",
          "WARPGROUP", "WARPSYNC", "LDS", "STS", "LDSM", "LDG", "STG", "UTMA", "LDL/STL", "BRA", "other"};
}

std::string sass_class(const std::string& op) {
  const std::string base = op.substr(0, op.find('.'));
  if (base == "HGMMA") return "HGMMA";
  if (starts(op, "MUFU.EX2")) return "MUFU.EX2";
  if (base == "MUFU") return "MUFU";
  if (base == "F2FP") return "F2FP";
  if (base == "F2F") return "F2F";
  if (base == "FFMA" || base == "FMUL" || base == "FADD" || base == "FMNMX" || base == "SHFL" || base == "BAR" ||
      base == "SYNCS" || base == "WARPGROUP" || base == "WARPSYNC" || base == "LDS" || base == "STS" ||
      base == "LDSM" || base == "LDG" || base == "STG" || base == "BRA")
    return base;
  if (starts(base, "UTMA") || starts(base, "UBLKCP")) return "UTMA";
  if (base == "LDL" || base == "STL") return "LDL/STL";
  return "other";
}

SassProfile parse_sass(const std::string& listing) {
  static const std::regex insn_re(R"(^\s*/\*([0-9a-fA-F]+)\*/\s+(?:\{\s*)?(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)(.*)$)");
  static const std::regex label_re(R"(^\s*(\.L_[A-Za-z0-9_]+):)");
  static const std::regex target_label_re(R"(`\((\.L_[A-Za-z0-9_]+)\))");
  static const std::regex target_addr_re(R"(\b0x([0-9a-fA-F]+)\b)");
  std::vector<Insn> insns;
  std::map<std::string, std::size_t> label_at;  // label -> index of the next instruction
  std::istringstream in(listing);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, label_re)) {
      label_at[m[1]] = insns.size();
      continue;
    }
    if (!std::regex_match(line, m, insn_re)) continue;
    Insn i;
    i.addr = std::stoull(m[1], nullptr, 16);
    i.op = m[2];
    const std::string rest = m[3];
    if (starts(i.op, "BRA")) {
      std::smatch t;
      if (std::regex_search(rest, t, target_label_re)) i.target_label = t[1];
      else if (std::regex_search(rest, t, target_addr_re)) i.target = std::stoull(t[1], nullptr, 16);
    }
    insns.push_back(std::move(i));
  }
  if (insns.empty()) throw std::invalid_argument("parse_sass: the listing holds no SASS instruction");
  SassProfile p;
  p.instructions = insns.size();
  for (const auto& i : insns) {
    ++p.counts[sass_class(i.op)];
    ++p.opcodes[i.op];
  }
  // Loops: a branch to an address at or before its own.
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // instruction index range [first, last]
  for (std::size_t k = 0; k < insns.size(); ++k) {
    const Insn& i = insns[k];
    std::optional<std::size_t> to;
    if (!i.target_label.empty()) {
      if (const auto l = label_at.find(i.target_label); l != label_at.end()) to = l->second;
    } else if (i.target) {
      const auto it = std::find_if(insns.begin(), insns.end(), [&](const Insn& x) { return x.addr == *i.target; });
      if (it != insns.end()) to = std::size_t(it - insns.begin());
    }
    if (to && *to <= k) spans.emplace_back(*to, k);
  }
  std::sort(spans.begin(), spans.end());
  spans.erase(std::unique(spans.begin(), spans.end()), spans.end());
  for (const auto& [a, b] : spans) {
    SassLoop l;
    l.start = insns[a].addr;
    l.end = insns[b].addr;
    l.instructions = b - a + 1;
    for (std::size_t k = a; k <= b; ++k) ++l.counts[sass_class(insns[k].op)];
    if (l.counts.count("HGMMA")) p.loops.push_back(std::move(l));
  }
  for (auto& outer : p.loops)
    for (const auto& inner : p.loops)
      if (&outer != &inner && outer.start <= inner.start && inner.end <= outer.end &&
          (outer.start != inner.start || outer.end != inner.end))
        outer.innermost = false;
  return p;
}

std::string sass_profile_text(const SassProfile& p) {
  std::string s = "class\twhole kernel";
  for (const auto& l : p.loops)
    s += fmt::format("\tloop {:04x}-{:04x}{}", l.start, l.end, l.innermost ? " (innermost: per kv tile)" : "");
  s += "\n";
  const auto count = [](const std::map<std::string, std::size_t>& m, const std::string& k) {
    const auto i = m.find(k);
    return i == m.end() ? std::size_t(0) : i->second;
  };
  for (const auto& c : sass_classes()) {
    s += fmt::format("{}\t{}", c, count(p.counts, c));
    for (const auto& l : p.loops) s += fmt::format("\t{}", count(l.counts, c));
    s += "\n";
  }
  s += fmt::format("total\t{}", p.instructions);
  for (const auto& l : p.loops) s += fmt::format("\t{}", l.instructions);
  s += "\n\nmost frequent opcodes (whole kernel)\n";
  std::vector<std::pair<std::size_t, std::string>> ops;
  for (const auto& [op, n] : p.opcodes) ops.emplace_back(n, op);
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (std::size_t i = 0; i < std::min<std::size_t>(15, ops.size()); ++i) s += fmt::format("{}\t{}\n", ops[i].second, ops[i].first);
  return s;
}

std::optional<std::string> find_disassembler() {
  for (const char* name : {"cuobjdump", "nvdisasm"}) {
    const fs::path in_cuda = fs::path("/usr/local/cuda/bin") / name;
    if (fs::exists(in_cuda)) return in_cuda.string();
    const auto p = bp::search_path(name);
    if (!p.empty()) return p.string();
  }
  return std::nullopt;
}

std::string disassemble_cubin(const std::string& tool, const std::string& cubin_path) {
  const bool nvdisasm = fs::path(tool).filename() == "nvdisasm";
  std::string out;
  int code = 0;
  try {
    bp::ipstream pipe;
    bp::child c(tool, nvdisasm ? std::vector<std::string>{"-c", cubin_path} : std::vector<std::string>{"-sass", cubin_path},
                (bp::std_out & bp::std_err) > pipe, bp::std_in < bp::null, InheritOnlyStdio{});
    std::ostringstream ss;
    ss << pipe.rdbuf();
    c.wait();
    code = c.exit_code();
    out = ss.str();
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("cannot run {}: {}", tool, e.what()));
  }
  if (code != 0) throw std::runtime_error(fmt::format("{} exited with code {}: {}", tool, code, out.substr(0, 400)));
  return out;
}

}  // namespace attn
