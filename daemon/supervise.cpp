#include "daemon/supervise.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace attn {
namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);  // internal: wakes the watcher thread at shutdown
  return set;
}

bool alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

}  // namespace

SignalWatcher::SignalWatcher(StopRequest& request) : request_(request) {
  sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this, set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (sig == SIGUSR1) return;
      const int level = ++request_.level;
      if (level >= 2) {
        const pid_t worker = request_.worker_pid.load();
        if (worker > 0) ::kill(-worker, SIGKILL);  // the worker leads its own process group
      }
    }
  });
}

SignalWatcher::~SignalWatcher() {
  pthread_kill(thread_.native_handle(), SIGUSR1);
  thread_.join();
}

std::string pid_file_for(const std::string& db_path) { return db_path + ".pid"; }
std::string log_file_for(const std::string& db_path) { return db_path + ".log"; }
std::string status_file_for(const std::string& db_path) { return db_path + ".status.json"; }

std::optional<pid_t> running_daemon(const std::string& db_path) {
  std::ifstream in(pid_file_for(db_path));
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return std::nullopt;
  if (!alive(pid_t(pid))) return std::nullopt;
  return pid_t(pid);
}

PidFile::PidFile(const std::string& db_path) : path_(pid_file_for(db_path)) {
  if (auto other = running_daemon(db_path); other && *other != ::getpid())
    throw std::runtime_error("another attn-tuner daemon (pid " + std::to_string(*other) + ") is running on " +
                             db_path + "; stop it with `attn-tuner stop --db " + db_path + "`");
  const auto parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream out(path_, std::ios::trunc);
  out << ::getpid() << "\n";
  if (!out) throw std::runtime_error("cannot write the pid file " + path_);
}

PidFile::~PidFile() {
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

pid_t detach_to_background(const std::string& log_path) {
  const auto parent = std::filesystem::path(log_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (log_fd < 0) throw std::runtime_error("cannot open the log file " + log_path + ": " + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid > 0) {
    ::close(log_fd);
    return pid;
  }
  ::setsid();
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  return 0;
}

}  // namespace attn
