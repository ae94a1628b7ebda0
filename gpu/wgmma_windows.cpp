// The PTX scan of wgmma windows (gpu/wgmma_windows.hpp).
#include "gpu/wgmma_windows.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace attn {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t;");
  return s.substr(b, e - b + 1);
}

/// The registers named in `text` (%f12, %r3, %rd7, ...).
std::vector<std::string> registers_in(const std::string& text) {
  static const std::regex reg(R"(%[A-Za-z_][A-Za-z0-9_]*)");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), reg); it != std::sregex_iterator(); ++it)
    out.push_back(it->str());
  return out;
}

/// An instruction's destination operand(s): the first operand, a `{...}` vector whole. Empty for the instructions
/// whose first operand is not written (stores, branches, barriers, fences, prefetches, returns).
std::vector<std::string> destinations(const std::string& ins) {
  static const char* no_dest[] = {"st.", "st ", "red.", "bar.", "bar ", "barrier", "bra", "membar", "fence",
                                  "cp.async", "prefetch", "ret", "exit", "trap", "stmatrix", "mbarrier.arrive.",
                                  "mbarrier.init", "mbarrier.expect_tx", "wgmma.", "setmaxnreg", "griddepcontrol",
                                  "cp.reduce", "tensormap"};
  std::string body = ins;
  if (!body.empty() && body[0] == '@') {  // a guard predicate: the instruction follows it
    const auto sp = body.find_first_of(" \t");
    body = sp == std::string::npos ? std::string() : body.substr(sp);
  }
  body = trim(body);
  for (const char* p : no_dest)
    if (body.rfind(p, 0) == 0) return {};
  const auto sp = body.find_first_of(" \t");
  if (sp == std::string::npos) return {};
  std::string ops = trim(body.substr(sp));
  std::string first;
  if (!ops.empty() && ops[0] == '{') first = ops.substr(0, ops.find('}') + 1);
  else first = ops.substr(0, ops.find(','));
  if (first.find('[') != std::string::npos) return {};  // a memory operand: not a register written
  return registers_in(first);
}

}  // namespace

std::vector<WgmmaWindowSite> wgmma_window_sites(const std::string& ptx) {
  static const std::regex file_re(R"re(^\s*\.file\s+(\d+)\s+"([^"]*)")re");
  static const std::regex loc_re(R"(^\s*\.loc\s+(\d+)\s+(\d+)(?:.*inlined_at\s+(\d+)\s+(\d+))?)");
  static const std::regex wait_re(R"(wgmma\.wait_group\.sync\.aligned\s+(\d+))");
  std::map<int, std::string> files;  // .file directives come at the module's end: resolved after the scan
  struct Raw {
    std::string code;
    bool reads = false;
    int file = -1, line = 0, caller_file = -1, caller_line = 0;
    std::string instruction;
  };
  std::vector<Raw> raw;
  std::deque<std::set<std::string>> groups;  // committed, not yet retired, oldest first
  std::set<std::string> open;                // issued since the last commit
  int loc_file = -1, loc_line = 0, caller_file = -1, caller_line = 0;
  std::istringstream in(ptx);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, file_re)) {
      files[std::stoi(m[1])] = m[2];
      continue;
    }
    if (std::regex_search(line, m, loc_re)) {
      loc_file = std::stoi(m[1]);
      loc_line = std::stoi(m[2]);
      caller_file = m[3].matched ? std::stoi(m[3]) : -1;
      caller_line = m[4].matched ? std::stoi(m[4]) : 0;
      continue;
    }
    const std::string t = trim(line.substr(0, line.find("//")));  // a comment, e.g. "{ // callseq 0, 0", is no code
    if (t.empty() || t[0] == '.' || t[0] == '/' || t[0] == '$' || t == "{" || t == "}" || t.back() == ':') {
      if (t.rfind(".entry", 0) == 0 || t.rfind(".visible .entry", 0) == 0 || t.rfind(".func", 0) == 0 ||
          t.rfind(".visible .func", 0) == 0) {
        groups.clear();
        open.clear();
      }
      continue;
    }
    if (t.find("wgmma.mma_async") != std::string::npos) {
      const auto b = t.find('{'), e = t.find('}');
      if (b != std::string::npos && e != std::string::npos && e > b)
        for (auto& r : registers_in(t.substr(b, e - b + 1))) open.insert(r);
      continue;
    }
    if (t.find("wgmma.commit_group") != std::string::npos) {
      if (!open.empty()) groups.push_back(std::move(open));
      open.clear();
      continue;
    }
    if (std::regex_search(t, m, wait_re)) {
      const std::size_t keep = std::stoul(m[1]);
      while (groups.size() > keep) groups.pop_front();
      continue;
    }
    if (groups.empty() && open.empty()) continue;
    const auto pending = [&](const std::string& r) {
      if (open.count(r)) return true;
      for (const auto& g : groups)
        if (g.count(r)) return true;
      return false;
    };
    std::string code;
    bool reads = false;
    if (t.rfind("call", 0) == 0 || (t[0] == '@' && t.find(" call") != std::string::npos)) {
      code = "C7510";
    } else if (t[0] == '@' && t.find("bra") != std::string::npos) {
      code = "C7520";
    } else {
      const std::vector<std::string> dests = destinations(t);
      std::vector<std::string> sources = registers_in(t);  // every register named, less the destinations once each
      for (const auto& d : dests)
        if (auto it = std::find(sources.begin(), sources.end(), d); it != sources.end()) sources.erase(it);
      reads = std::any_of(sources.begin(), sources.end(), pending);
      if (std::any_of(dests.begin(), dests.end(), pending)) code = "C7515";
      else if (reads) code = "C7514";
    }
    if (!code.empty()) raw.push_back({code, reads, loc_file, loc_line, caller_file, caller_line, t});
  }
  std::vector<WgmmaWindowSite> out;
  for (auto& r : raw) {
    const auto f = files.find(r.file), c = files.find(r.caller_file);
    out.push_back({r.code, r.reads, f == files.end() ? std::string() : f->second, f == files.end() ? 0 : r.line,
                   c == files.end() ? std::string() : c->second, c == files.end() ? 0 : r.caller_line,
                   std::move(r.instruction)});
  }
  return out;
}

}  // namespace attn
