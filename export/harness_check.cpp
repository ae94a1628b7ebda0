// The official harness on an exported submission: Boost.Process for the start (own process group, working
// directory, environment, output files), waitpid with a deadline, kill(-pgid) on the limit.
#include "export/harness_check.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <future>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>
#include <fmt/format.h>

#include "gpu/process_group.hpp"

namespace attn {
namespace bp = boost::process;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// waitpid with a deadline; true when `pid` ended (status in *st).
bool wait_until(pid_t pid, Clock::time_point until, int* st) {
  for (;;) {
    const pid_t r = ::waitpid(pid, st, WNOHANG);
    if (r == pid || r < 0) return true;
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(10ms);
  }
}

/// stdout of `exe args` run in `dir` (trailing newlines cut); nullopt when it cannot run or exits non-zero.
std::optional<std::string> capture(const std::string& exe, const std::vector<std::string>& args) {
  try {
    boost::asio::io_context ios;
    std::future<std::string> out;
    bp::child c(bp::exe = exe, bp::args = args, bp::std_out > out, bp::std_err > bp::null, bp::std_in < bp::null,
                ios);
    ios.run();
    c.wait();
    if (c.exit_code() != 0) return std::nullopt;
    std::string s = out.get();
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<double> number(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

}  // namespace

bool is_harness_suite(const std::string& name) {
  static const std::vector<std::string> kSuites = {"smoke", "local-dev", "quick", "full", "broad"};
  return std::find(kSuites.begin(), kSuites.end(), name) != kSuites.end();
}

std::string default_harness_suite(const std::string& export_suite) {
  return is_harness_suite(export_suite) ? export_suite : "quick";
}

void require_harness_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw std::invalid_argument(fmt::format(
        "no harness at {}: not a directory (point --harness at a checkout of "
        "github.com/paradigmxyz/attention-kernel-challenge)",
        dir));
  if (!fs::is_regular_file(fs::path(dir) / "attention_kernel_challenge" / "cli.py", ec))
    throw std::invalid_argument(fmt::format(
        "no harness at {}: it has no attention_kernel_challenge package (attention_kernel_challenge/cli.py); "
        "point --harness at a checkout of github.com/paradigmxyz/attention-kernel-challenge",
        dir));
}

std::string find_python3() {
  const auto p = bp::search_path("python3");
  if (p.empty())
    throw std::invalid_argument(
        "no python3 on PATH: the harness needs Python 3 with torch and triton (and a CUDA GPU, or a "
        "--harness-arg backend that has one)");
  return p.string();
}

std::optional<std::string> harness_commit(const std::string& dir) {
  const auto git = bp::search_path("git");
  if (git.empty()) return std::nullopt;
  const auto top = capture(git.string(), {"-C", dir, "rev-parse", "--show-toplevel"});
  std::error_code ec1, ec2;
  if (!top || fs::canonical(*top, ec1) != fs::canonical(dir, ec2) || ec1 || ec2) return std::nullopt;
  return capture(git.string(), {"-C", dir, "rev-parse", "HEAD"});
}

std::optional<std::int64_t> harness_root_seed_from_env() {
  const char* v = std::getenv("ATTENTION_KERNEL_CHALLENGE_PUBLIC_SUITE_ROOT_SEED");
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0') return std::nullopt;
  return static_cast<std::int64_t>(x);
}

std::vector<std::string> harness_argv(const HarnessInvocation& inv) {
  std::vector<std::string> a = {"-m",       "attention_kernel_challenge.cli",
                                "eval-submission", "--submission-dir",
                                inv.submission_dir, "--suite",
                                inv.suite,  "--backend",
                                "local",    "--device",
                                "cuda",     "--serverlike",
                                "--emit-json"};
  a.insert(a.end(), inv.extra_args.begin(), inv.extra_args.end());
  return a;
}

std::string harness_command(const std::string& submission_dir, const std::string& suite) {
  return "python -m attention_kernel_challenge.cli eval-submission --submission-dir " + submission_dir + " --suite " +
         suite + " --device cuda --serverlike";
}

std::optional<nlohmann::json> find_harness_summary(const std::string& out) {
  std::size_t p = out.size();
  while (p > 0) {
    p = out.rfind('{', p - 1);
    if (p == std::string::npos) break;
    if (p > 0 && out[p - 1] != '\n') continue;
    const auto j = nlohmann::json::parse(out.begin() + static_cast<std::ptrdiff_t>(p), out.end(), nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("overall_valid")) return j;
  }
  return std::nullopt;
}

nlohmann::json harness_family_medians(const nlohmann::json& summary) {
  std::map<std::string, std::vector<double>> by_family;
  if (summary.contains("case_results") && summary["case_results"].is_array())
    for (const auto& c : summary["case_results"]) {
      if (!c.is_object() || !c.contains("family") || !c["family"].is_string()) continue;
      if (const auto ms = number(c, "latency_ms")) by_family[c["family"].get<std::string>()].push_back(*ms);
    }
  nlohmann::json out = nlohmann::json::object();
  for (auto& [family, v] : by_family) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    out[family] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;  // Python's statistics.median
  }
  return out;
}

std::string last_lines(const std::string& text, std::size_t n, const std::string& indent) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  std::string out;
  for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += indent + lines[i] + "\n";
  return out;
}

void interpret_harness_output(const std::string& out, const std::string& err, HarnessRunResult& r, double timeout_s) {
  if (r.timed_out) {
    r.error = fmt::format("the harness did not finish within --harness-timeout {:g} s; its process group was killed",
                          timeout_s);
  } else if (const auto summary = find_harness_summary(out)) {
    r.has_summary = true;
    r.valid = summary->value("overall_valid", false) == true;
    r.score_ms = number(*summary, "geometric_mean_family_latency_ms");
    r.family_ms = harness_family_medians(*summary);
    if (summary->contains("failure_reason") && (*summary)["failure_reason"].is_string())
      r.failure_reason = (*summary)["failure_reason"].get<std::string>();
    if (!r.valid && !r.failure_reason) {
      // No overall reason: the first case whose validation failed says why.
      for (const auto& c : summary->value("case_results", nlohmann::json::array()))
        if (c.is_object() && c.contains("validation") && c["validation"].is_object() &&
            !c["validation"].value("passed", true)) {
          r.failure_reason = fmt::format("{}: {}", c.value("case_id", std::string("?")),
                                         c["validation"].value("message", std::string("validation failed")));
          break;
        }
    }
    return;
  } else if (r.exit_code && *r.exit_code != 0) {
    r.error = fmt::format("the harness exited with code {} and printed no JSON summary", *r.exit_code);
  } else if (r.exit_code) {
    r.error = "the harness exited with code 0 but printed no JSON summary (is --emit-json honoured?)";
  } else {
    r.error = "the harness was killed by a signal and printed no JSON summary";
  }
  std::string tail = last_lines(err, 15);
  if (!tail.empty()) r.error += "; its last lines (stderr):\n" + tail;
  const std::string out_tail = last_lines(out, 5);
  if (!out_tail.empty()) r.error += (tail.empty() ? "; its last lines (stdout):\n" : "  stdout:\n") + out_tail;
  while (!r.error.empty() && r.error.back() == '\n') r.error.pop_back();
}

HarnessRunResult run_harness_once(const HarnessInvocation& inv) {
  HarnessRunResult r;
  r.stdout_path = fmt::format("{}/run-{}.stdout", inv.log_dir, inv.index);
  r.stderr_path = fmt::format("{}/run-{}.stderr", inv.log_dir, inv.index);
  bp::environment env = boost::this_process::environment();
  std::string pythonpath = inv.harness_dir;
  if (!inv.env_dir.empty()) pythonpath = inv.env_dir + ":" + pythonpath;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pythonpath += std::string(":") + old;
  env.set("PYTHONPATH", pythonpath);  // set(), not env[name]: see proposer/proposer_process.cpp
  env.set("PYTHONUNBUFFERED", "1");
  // run_harness.sh's second fix: the harness trusts compilers under /usr/bin etc. only (Triton's launcher).
  if (!inv.env_dir.empty() && ::access("/usr/bin/gcc", X_OK) == 0) env.set("CC", "/usr/bin/gcc");

  const auto t0 = Clock::now();
  pid_t pid = 0;
  try {
    bp::child child(bp::exe = inv.python, bp::args = harness_argv(inv), bp::start_dir = inv.harness_dir, env,
                    bp::std_in < bp::null, bp::std_out > r.stdout_path, bp::std_err > r.stderr_path,
                    NewProcessGroup{}, InheritOnlyStdio{});
    pid = child.id();
    child.detach();  // waited for below with waitpid
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("cannot start the harness ({} -m attention_kernel_challenge.cli in {}): {}",
                                         inv.python, inv.harness_dir, e.what()));
  }
  int st = 0;
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(inv.timeout_s));
  if (!wait_until(pid, deadline, &st)) {
    r.timed_out = true;
    ::kill(-pid, SIGTERM);
    ::kill(pid, SIGTERM);  // in case setpgid had not run yet
    if (!wait_until(pid, Clock::now() + 5s, &st)) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      wait_until(pid, Clock::now() + 10s, &st);
    }
  }
  ::kill(-pid, SIGKILL);  // what it left running in its group (the isolated submission worker), if anything
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!r.timed_out && WIFEXITED(st)) r.exit_code = WEXITSTATUS(st);
  interpret_harness_output(read_all(r.stdout_path), read_all(r.stderr_path), r, inv.timeout_s);
  return r;
}

}  // namespace attn
