#include "gpu/worker_client.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <boost/process.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpu/process_group.hpp"

namespace attn {
namespace bp = boost::process;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

/// Runs in the worker child between fork and exec (async-signal-safe calls only):
/// - its own process group, so that a kill reaches everything it started (a shell standing in for the
///   worker in tests, its children);
/// - PR_SET_PDEATHSIG = SIGKILL, so that the worker dies with the daemon, even with SIGKILL (a hung kernel
///   must not keep the GPU busy under the next daemon's timings). The death signal survives exec;
/// - then getppid() against the parent's pid: when the parent died before prctl took effect, the child
///   has been reparented already and no signal will come, so it exits at once.
/// With InheritOnlyStdio (gpu/process_group.hpp), the worker inherits its pipes and stderr only.
struct WorkerChildSetup : bp::extend::handler {
  pid_t parent = ::getpid();  // taken in the parent, when the handler is built
  template <class Executor>
  void on_exec_setup(Executor&) const {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
  }
};

std::string describe_wait_status(int st) {
  if (WIFEXITED(st)) return fmt::format("exited with code {}", WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return fmt::format("killed by signal {} ({})", WTERMSIG(st), ::strsignal(WTERMSIG(st)));
  return fmt::format("ended with wait status {}", st);
}

ReplyStatus died(std::string message) { return {FailureKind::worker_died, false, std::move(message)}; }

}  // namespace

struct WorkerClient::Proc {
  bp::opstream in;   // the worker's stdin
  bp::ipstream out;  // the worker's stdout
  pid_t pid = 0;
};

WorkerCommand default_worker_command(int device, const std::vector<std::string>& extra) {
  WorkerCommand c;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  c.exe = ec ? std::string("attn-tuner") : self.string();
  c.args = {"worker", "--device", std::to_string(device)};
  c.args.insert(c.args.end(), extra.begin(), extra.end());
  return c;
}

WorkerClient::WorkerClient(WorkerCommand command) : command_(std::move(command)) {
  std::signal(SIGPIPE, SIG_IGN);
}

WorkerClient::~WorkerClient() {
  try {
    if (alive() && pending_.empty()) {  // with requests unanswered, a quit's answer could not be told apart
      request(json{{"cmd", "quit"}}, 2000ms);
      if (proc_) reap(2000ms);
    } else if (alive()) {
      kill_group();
      reap(0ms);
    }
  } catch (...) {
  }
}

bool WorkerClient::alive() const { return proc_ != nullptr && !dead_; }
pid_t WorkerClient::pid() const { return alive() ? proc_->pid : 0; }

ReplyStatus WorkerClient::start() {
  auto p = std::make_unique<Proc>();
  try {
    bp::environment env = boost::this_process::environment();
    for (const auto& [name, value] : command_.env) env.set(name, value);  // not env[name]: proposer_process.cpp
    bp::child child(bp::exe = command_.exe, bp::args = command_.args, bp::std_in < p->in,
                    bp::std_out > p->out, bp::env = env, WorkerChildSetup{}, InheritOnlyStdio{});
    p->pid = child.id();
    child.detach();  // this class waits for and kills the pid itself (reap / kill_group)
  } catch (const std::exception& e) {
    dead_ = true;
    last_exit_ = "did not start";
    return died(fmt::format("cannot start worker '{}': {}", command_.exe, e.what()));
  }
  proc_ = std::move(p);
  dead_ = false;
  last_exit_.clear();
  ++starts_;
  spdlog::debug("worker client: started {} (pid {})", command_.exe, proc_->pid);
  if (on_start_) on_start_(proc_->pid);
  return {};
}

void WorkerClient::kill_group() {
  if (!proc_ || proc_->pid <= 0) return;
  ::kill(-proc_->pid, SIGKILL);  // the group (setpgid in the child)
  ::kill(proc_->pid, SIGKILL);   // in case setpgid had not run yet
}

void WorkerClient::reap(std::chrono::milliseconds grace) {
  if (!proc_ || proc_->pid <= 0) return;
  const auto until = std::chrono::steady_clock::now() + grace;
  int st = 0;
  pid_t r = 0;
  while ((r = ::waitpid(proc_->pid, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(2ms);
  if (r == 0) {
    kill_group();
    r = ::waitpid(proc_->pid, &st, 0);
  }
  last_exit_ = r == proc_->pid ? describe_wait_status(st) : "was already reaped";
  ::kill(-proc_->pid, SIGKILL);  // leftovers of the group (children of a shell), if any
  // Nothing more is written to it: a request left in the stream's buffer (a write that met EPIPE) would be flushed,
  // and throw, when the stream is destroyed.
  proc_->in.pipe().close();
  dead_ = true;
  proc_->pid = 0;
}

void WorkerClient::restart() {
  if (proc_ && proc_->pid > 0) {
    kill_group();
    reap(1000ms);
  }
  proc_.reset();
  dead_ = false;
  last_exit_.clear();
  pending_.clear();
}

WorkerReply WorkerClient::request(const json& req, std::chrono::milliseconds deadline) {
  if (!pending_.empty())
    throw std::logic_error(fmt::format("WorkerClient::request('{}') with {} request(s) sent ahead unanswered",
                                       req.value("cmd", "?"), pending_.size()));
  if (ReplyStatus s = send(req); !s.ok()) {
    WorkerReply reply;
    reply.status = s;
    return reply;
  }
  WorkerReply reply = receive(deadline);
  if (reply.status.ok() && req.value("cmd", "") == "quit") {
    proc_->in.pipe().close();  // EOF on its stdin as well: a worker that ignores quit ends its read loop
    reap(2000ms);
  }
  return reply;
}

ReplyStatus WorkerClient::send(const json& req) {
  if (dead_) return died(fmt::format("worker is not running ({}); call restart()", last_exit_));
  if (!proc_)
    if (ReplyStatus s = start(); !s.ok()) return s;
  const std::string cmd = req.value("cmd", "?");
  std::string why = "its stdin is closed";
  bool written = false;
  try {
    proc_->in << req.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    proc_->in.flush();
    written = static_cast<bool>(proc_->in);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!written) {  // EPIPE, which the stream keeps as badbit or passes on as process_error: the worker ended
    // Our end of its stdin closed (what is buffered is dropped, never flushed again when the stream is destroyed),
    // not reaped: the answers it wrote before it ended are still read by receive(), each for its own request.
    proc_->in.pipe().close();
    proc_->in.clear();
    return died(fmt::format("worker ended before the request '{}' could be sent ({})", cmd, why));
  }
  pending_.push_back(cmd);
  return {};
}

WorkerReply WorkerClient::receive(std::chrono::milliseconds deadline) {
  WorkerReply reply;
  if (pending_.empty()) throw std::logic_error("WorkerClient::receive with no request sent");
  const std::string cmd = pending_.front();
  pending_.pop_front();
  if (dead_ || !proc_) {  // it died answering an earlier request
    reply.status = died(fmt::format("worker {} before its response to '{}'", last_exit_.empty() ? "ended" : last_exit_, cmd));
    return reply;
  }

  // Watchdog: kills the worker when no line arrived before the deadline.
  std::mutex mu;
  std::condition_variable cv;
  bool answered = false, timed_out = false;
  const pid_t pid = proc_->pid;
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, deadline, [&] { return answered; })) {
      timed_out = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
  });
  auto stop_watchdog = [&] {
    {
      std::lock_guard lock(mu);
      answered = true;
    }
    cv.notify_all();
    watchdog.join();
  };

  std::string line;
  bool got_line = false;
  if (proc_->in.good()) got_line = static_cast<bool>(std::getline(proc_->out, line));
  stop_watchdog();

  if (timed_out) {
    reap(1000ms);
    reply.status = {FailureKind::hang, false,
                    fmt::format("no response to '{}' within {} ms: worker killed", cmd, deadline.count())};
    return reply;
  }
  if (!got_line) {
    reap(2000ms);
    reply.status = died(fmt::format("worker {} without a response to '{}'", last_exit_, cmd));
    return reply;
  }
  try {
    reply.body = json::parse(line);
    reply.status = reply_status_from_json(reply.body);
  } catch (const std::exception& e) {
    kill_group();
    reap(0ms);
    reply.body = json::object();
    reply.status = died(fmt::format("worker broke the protocol ({}); its line was: {}", e.what(),
                                    line.substr(0, 300)));
    return reply;
  }
  if (reply.status.failure == FailureKind::fault) reap(5000ms);
  return reply;
}

HelloResponse WorkerClient::hello(std::chrono::milliseconds deadline) {
  WorkerReply r = request(json{{"cmd", "hello"}}, deadline);
  HelloResponse m;
  m.status = r.status;
  if (!r.status.ok()) return m;
  try {
    return hello_response_from_json(r.body);
  } catch (const std::exception& e) {
    kill_group();
    reap(0ms);
    m.status = died(std::string("malformed hello response: ") + e.what());
    return m;
  }
}

PrepareResponse WorkerClient::prepare(const std::vector<CaseSpec>& cases, std::chrono::milliseconds deadline,
                                      bool evict) {
  WorkerReply r = request(to_json(PrepareRequest{cases, evict}), deadline);
  PrepareResponse m;
  m.status = r.status;
  if (!r.status.ok()) return m;
  try {
    return prepare_response_from_json(r.body);
  } catch (const std::exception& e) {
    kill_group();
    reap(0ms);
    m.status = died(std::string("malformed prepare response: ") + e.what());
    return m;
  }
}

EvalResponse WorkerClient::eval(const EvalRequest& request_msg, std::chrono::milliseconds deadline) {
  return eval_response_of(request(to_json(request_msg), deadline));
}

ReplyStatus WorkerClient::send_eval(const EvalRequest& request_msg) { return send(to_json(request_msg)); }

EvalResponse WorkerClient::receive_eval(std::chrono::milliseconds deadline) { return eval_response_of(receive(deadline)); }

EvalResponse WorkerClient::eval_response_of(const WorkerReply& r) {
  EvalResponse m;
  m.status = r.status;
  m.score_ms = std::numeric_limits<double>::quiet_NaN();
  if (r.body.empty() || r.status.rejected) return m;
  try {
    return eval_response_from_json(r.body);
  } catch (const std::exception& e) {
    kill_group();
    reap(0ms);
    m.status = died(std::string("malformed eval response: ") + e.what());
    return m;
  }
}

}  // namespace attn
