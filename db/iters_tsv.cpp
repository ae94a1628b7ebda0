#include "db/iters_tsv.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace attn {
namespace {

[[noreturn]] void fail_errno(const std::string& path, const char* what) {
  throw std::runtime_error(fmt::format("{}: cannot {}: {}", path, what, std::strerror(errno)));
}

/// Writes all of `data` to `fd` (looping over short writes).
void write_fully(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno(path, "write");
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string format_ms(std::optional<double> ms) {
  if (!ms || !std::isfinite(*ms)) return "-";
  std::string s = fmt::format("{:.4f}", *ms);
  return s == "-0.0000" ? "0.0000" : s;
}

std::string format_delta_ms(std::optional<double> ms) {
  if (!ms || !std::isfinite(*ms)) return "-";
  std::string s = fmt::format("{:+.4f}", *ms);
  return s == "-0.0000" ? "+0.0000" : s;
}

std::string tsv_text(std::string_view text) {
  if (text.empty()) return "-";
  std::string out(text);
  for (char& ch : out) {
    if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
  }
  return out;
}

std::string render_row(const IterationRecord& it) {
  if (!is_finished(it.status)) {
    throw std::invalid_argument(fmt::format("iters.tsv: iteration {} is still running", it.iter));
  }
  return fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}", it.iter, format_ms(it.geomean_ms),
                     format_delta_ms(it.delta_ms), format_ms(it.window_ms), format_ms(it.global_ms),
                     format_ms(it.retrieval_ms), to_string(it.status), tsv_text(it.params),
                     tsv_text(it.description));
}

std::string render_all(const std::vector<IterationRecord>& rows) {
  std::string out(kItersTsvHeader);
  out += '\n';
  for (const auto& it : rows) {
    if (!is_finished(it.status)) continue;
    out += render_row(it);
    out += '\n';
  }
  return out;
}

void append_rows(const std::string& path, const std::vector<IterationRecord>& rows) {
  std::string line;
  for (const auto& it : rows) line += render_row(it) + '\n';
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno(path, "open for appending");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0) fail_errno(path, "seek");
  if (size == 0) {
    line = std::string(kItersTsvHeader) + '\n' + line;
  } else {
    std::ifstream in(path);
    std::string first;
    std::getline(in, first);
    if (first != kItersTsvHeader) {
      throw std::runtime_error(
          fmt::format("{}: does not start with the iters.tsv header; not appending to it", path));
    }
  }
  write_fully(fd, line, path);
}

void write_all(const std::string& path, const std::vector<IterationRecord>& rows) {
  const std::string text = render_all(rows);
  const std::string tmp = fmt::format("{}.tmp-{}", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno(tmp, "create");
  try {
    write_fully(fd, text, tmp);
    if (::fsync(fd) != 0) fail_errno(tmp, "fsync");
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    fail_errno(tmp, "close");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    fail_errno(path, "replace (rename)");
  }
}

bool tsv_matches(const std::string& path, std::size_t finished, const std::string& last_line) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::string head, tail;  // the first line; the end of the file, at least the last line and its newline
  const std::size_t keep = last_line.size() + 2;
  std::size_t lines = 0;
  std::vector<char> buf(1 << 20);
  bool ok = true;
  for (;;) {
    const ssize_t got = ::read(fd, buf.data(), buf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      ok = false;
      break;
    }
    if (got == 0) break;
    const char* b = buf.data();
    const char* e = b + got;
    if (head.size() <= kItersTsvHeader.size()) head.append(b, std::min<std::size_t>(got, kItersTsvHeader.size() + 1));
    for (const char* at = b; (at = static_cast<const char*>(std::memchr(at, '\n', e - at))) != nullptr; ++at) ++lines;
    tail.append(b, e);
    if (tail.size() > 2 * keep + buf.size()) tail.erase(0, tail.size() - keep);
  }
  ::close(fd);
  if (!ok || lines != finished + 1 || tail.empty() || tail.back() != '\n') return false;
  if (head.compare(0, kItersTsvHeader.size() + 1, std::string(kItersTsvHeader) + '\n') != 0) return false;
  if (finished == 0) return true;
  tail.pop_back();
  const auto nl = tail.rfind('\n');
  return nl != std::string::npos && tail.compare(nl + 1, std::string::npos, last_line) == 0;
}

}  // namespace attn
