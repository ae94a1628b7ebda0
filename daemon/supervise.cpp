#include "daemon/supervise.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
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
        for (const auto& extra : request_.extra_worker_pids)
          if (const pid_t w = extra.load(); w > 0) ::kill(-w, SIGKILL);
      }
    }
  });
}

SignalWatcher::~SignalWatcher() {
  pthread_kill(thread_.native_handle(), SIGUSR1);
  thread_.join();
}

std::string log_file_for(const std::string& db_path) { return db_path + ".log"; }
std::string status_file_for(const std::string& db_path) { return db_path + ".status.json"; }

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
