#include "daemon/pid_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

namespace attn {
namespace {

flock whole_file(short type) {
  flock l{};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = 0;
  l.l_len = 0;  // to the end, however long
  return l;
}

/// The pid written in the file at `fd` (0 when empty or not a number).
pid_t read_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  char* end = nullptr;
  const long v = std::strtol(buf, &end, 10);
  return v > 0 && (*end == '\n' || *end == '\0') ? pid_t(v) : 0;
}

/// Reads the holder's pid, waiting up to 1 s for a holder that has just taken the lock to write it.
pid_t wait_for_holder_pid(int fd) {
  for (int i = 0; i < 100; ++i) {
    if (const pid_t p = read_pid(fd)) return p;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

}  // namespace

std::string pid_file_for(const std::string& db_path) { return db_path + ".pid"; }

DaemonRunning::DaemonRunning(const std::string& db_path, pid_t holder_pid)
    : std::runtime_error(fmt::format("another attn-tuner daemon ({}) is running on {}; stop it with "
                                     "`attn-tuner stop --db {}`",
                                     holder_pid > 0 ? fmt::format("pid {}", holder_pid) : std::string("pid not yet written"),
                                     db_path, db_path)),
      holder(holder_pid) {}

std::optional<pid_t> running_daemon(const std::string& db_path) {
  const int fd = ::open(pid_file_for(db_path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  flock l = whole_file(F_WRLCK);
  std::optional<pid_t> out;
  if (::fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK) out = wait_for_holder_pid(fd);
  ::close(fd);
  return out;
}

PidFile::PidFile(const std::string& db_path) : path_(pid_file_for(db_path)) {
  const auto parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  // The holder removes the file when it ends. A process that opened the old file just before that could
  // lock the removed inode while a third locks a new file: so after locking, the path must still name the
  // locked inode, else try again.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error(fmt::format("cannot create the pid file {}: {}", path_, std::strerror(errno)));
    flock l = whole_file(F_WRLCK);
    if (::fcntl(fd, F_OFD_SETLK, &l) != 0) {
      const int err = errno;
      if (err == EAGAIN || err == EACCES) {
        const pid_t holder = wait_for_holder_pid(fd);
        ::close(fd);
        throw DaemonRunning(db_path, holder);
      }
      ::close(fd);
      throw std::runtime_error(fmt::format("cannot lock the pid file {}: {}", path_, std::strerror(err)));
    }
    struct stat held {}, named {};
    if (::fstat(fd, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      fd_ = fd;
      try {
        set_holder(::getpid());
      } catch (...) {  // e.g. a full disk: leave no empty pid file behind
        ::unlink(path_.c_str());
        ::close(fd_);
        fd_ = -1;
        throw;
      }
      return;
    }
    ::close(fd);  // locked a file that its holder removed meanwhile
  }
  throw std::runtime_error("cannot lock the pid file " + path_ + ": it keeps being replaced");
}

void PidFile::set_holder(pid_t pid) {
  if (fd_ < 0) return;
  const std::string text = std::to_string(pid) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != ssize_t(text.size()))
    throw std::runtime_error(fmt::format("cannot write the pid file {}: {}", path_, std::strerror(errno)));
}

void PidFile::hand_over() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

PidFile::~PidFile() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace attn
