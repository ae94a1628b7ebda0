// run_proposer_command: Boost.Process for the start (new process group, redirections, environment), waitpid
// for the wait, kill(-pgid) for the group.
#include "proposer/proposer_process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include <boost/process.hpp>
#include <fmt/format.h>

#include "gpu/process_group.hpp"

extern char** environ;

namespace attn {
namespace bp = boost::process;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

/// waitpid with a deadline; true when `pid` ended (status in *st).
bool wait_until(pid_t pid, Clock::time_point until, int* st) {
  for (;;) {
    const pid_t r = ::waitpid(pid, st, WNOHANG);
    if (r == pid) return true;
    if (r < 0) return true;  // already reaped: nothing left to wait for
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(5ms);
  }
}

}  // namespace

ProposerExit run_proposer_command(const std::string& command, const std::string& workdir, const std::string& log_path,
                                  const std::vector<std::string>& env, double timeout_s,
                                  const std::function<bool()>& should_stop) {
  bp::environment environment;
  for (const auto& kv : env) {
    const auto eq = kv.find('=');
    // The rule for every Boost.Process environment here: set(), not environment[name]. Boost 1.74's find (under
    // operator[]) compares "NAME=" against each entry without its length and reads past the end of a shorter one
    // (ThreadSanitizer: heap-use-after-free); set() compares lengths.
    if (eq != std::string::npos && eq > 0) environment.set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  { std::ofstream(log_path, std::ios::trunc); }  // exists (empty) even if the shell never writes
  const auto t0 = Clock::now();
  pid_t pid = 0;
  try {
    bp::child child(bp::exe = "/bin/sh", bp::args = {"-c", command}, bp::start_dir = workdir, environment,
                    bp::std_in < bp::null, (bp::std_out & bp::std_err) > log_path, NewProcessGroup{},
                    InheritOnlyStdio{});
    pid = child.id();
    child.detach();  // waited for below with waitpid
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("cannot start the proposer `{}` in {}: {}", command, workdir, e.what()));
  }

  ProposerExit out;
  int st = 0;
  bool ended = false;
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  while (!ended) {
    ended = wait_until(pid, std::min(deadline, Clock::now() + 20ms), &st);
    if (ended) break;
    if (Clock::now() >= deadline) out.timed_out = true;
    else if (should_stop && should_stop()) out.stopped = true;
    else continue;
    ::kill(-pid, SIGTERM);
    ::kill(pid, SIGTERM);  // in case setpgid had not run yet
    if (!wait_until(pid, Clock::now() + 2s, &st)) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      wait_until(pid, Clock::now() + 10s, &st);
    }
    ended = true;
  }
  ::kill(-pid, SIGKILL);  // what it left running in its group (background children), if anything
  out.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (WIFEXITED(st)) out.exit_code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) out.signal = WTERMSIG(st);
  if (out.timed_out) {
    out.exit_code.reset();
    out.status = fmt::format("killed after the {:g} s limit (process group)", timeout_s);
  } else if (out.stopped) {
    out.exit_code.reset();
    out.status = "killed: the daemon was asked to stop";
  } else if (out.exit_code) {
    out.status = fmt::format("exited with code {}", *out.exit_code);
  } else if (out.signal) {
    out.status = fmt::format("killed by signal {} ({})", *out.signal, ::strsignal(*out.signal));
  } else {
    out.status = fmt::format("ended with wait status {}", st);
  }
  return out;
}

std::vector<std::string> proposer_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("ATTN_TUNER_", 0) == 0) continue;
    env.push_back(kv);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > std::streamoff(max_bytes) ? size - std::streamoff(max_bytes) : 0;
  in.seekg(start);
  std::string text(std::size_t(size - start), '\0');
  in.read(text.data(), std::streamsize(text.size()));
  if (start > 0) text = fmt::format("[... first {} bytes cut ...]\n", start) + text;
  return text;
}

}  // namespace attn
