#include "daemon/processes.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace attn {
namespace {

/// Parses /proc/<pid>/stat. The command name (field 2) is in parentheses and may hold spaces or ')',
/// so the fields are read after the last ')'.
bool parse_stat(const std::string& text, ProcessInfo& p) {
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream in(text.substr(close + 1));
  // fields 3..22: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice num_threads itrealvalue starttime
  std::string skip;
  long ppid = 0, pgid = 0;
  if (!(in >> p.state >> ppid >> pgid)) return false;
  for (int field = 6; field <= 21; ++field)
    if (!(in >> skip)) return false;
  if (!(in >> p.start_ticks)) return false;
  p.ppid = pid_t(ppid);
  p.pgid = pid_t(pgid);
  return true;
}

}  // namespace

std::optional<ProcessInfo> process_info(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  const std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream stat(dir + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  ProcessInfo p;
  p.pid = pid;
  if (text.empty() || !parse_stat(text, p) || p.state == 'Z' || p.state == 'X') return std::nullopt;
  std::ifstream cmd(dir + "/cmdline", std::ios::binary);
  std::string argv((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
  while (!argv.empty() && argv.back() == '\0') argv.pop_back();
  for (char& c : argv)
    if (c == '\0') c = ' ';
  p.cmdline = std::move(argv);
  return p;
}

std::vector<ProcessInfo> process_group_members(pid_t pgid) {
  std::vector<ProcessInfo> out;
  if (pgid <= 0) return out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    char* end = nullptr;
    const long pid = std::strtol(name.c_str(), &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (auto p = process_info(pid_t(pid)); p && p->pgid == pgid) out.push_back(std::move(*p));
  }
  return out;
}

}  // namespace attn
