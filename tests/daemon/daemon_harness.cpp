#include "tests/daemon/daemon_harness.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/test_support.hpp"

namespace attn::test {
namespace fs = std::filesystem;

pid_t spawn_tuner(const std::string& args, const std::string& env, const std::string& log_path,
                  const std::string& shell_prefix) {
  const std::string cmd = shell_prefix + " exec env " + env + " '" + binary_path() + "' " + args + " >> '" + log_path + "' 2>&1";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int st = 0;
  pid_t r;
  while ((r = ::waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
  }
  return r == pid ? st : -1;
}

Census census(const std::vector<IterationRecord>& iterations) {
  Census c;
  for (const auto& it : iterations) {
    if (!is_finished(it.status)) c.running.push_back(it.iter);
    else if (it.status == IterationStatus::interrupted) ++c.interrupted;
    else if (!c.evaluated.insert(it.template_name + " " + it.params).second) c.duplicated.push_back(it.params);
  }
  return c;
}

std::string fake_worker_path() {
  return (fs::path(data_dir()).parent_path() / "daemon" / "fake_worker.py").string();
}

DaemonFixture::DaemonFixture()
    : dir(temp_dir("daemon")), db(dir + "/t.db"), tsv(dir + "/iters.tsv"), cache(dir + "/cache") {}

std::string DaemonFixture::args(const std::string& extra, const std::string& strategy,
                                const std::string& template_name) const {
  return "run --db '" + db + "' --tsv '" + tsv + "' --suite " + suite + " --templates '" + data_dir() +
         "/fake_templates' --template " + template_name + " --strategy " + strategy + " --worker-exe '" +
         fake_worker_path() + "' --cache '" + cache + "' --jobs 2 " + watchdog + " " + extra;
}

void DaemonFixture::warm_cache(const std::string& template_name, int code) const {
  const Output warm = run_tuner("compile --templates '" + data_dir() + "/fake_templates' --template " + template_name +
                                " --all --cache '" + cache + "'");
  ASSERT_EQ(warm.code, code) << warm.text;
}

std::vector<IterationRecord> DaemonFixture::iterations() const {
  auto d = ExperimentDb::open(db, ExperimentDb::Mode::read_only);
  return d.iterations();
}

std::size_t DaemonFixture::wait_finished(std::size_t n, double timeout_s) const {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::size_t done = 0;
  do {  // at least one look, so that wait_finished(0, 0) counts what is there now
    if (fs::exists(db)) {
      try {
        done = 0;
        for (const auto& it : iterations()) done += is_finished(it.status) ? 1 : 0;
        if (done >= n) return done;
      } catch (const std::exception&) {  // the daemon is creating the schema
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < end);
  return done;
}

std::vector<GpuEval> read_gpu_log(const std::string& path) {
  std::vector<GpuEval> out;
  std::ifstream in(path);
  GpuEval e;
  while (in >> e.gpu >> e.start >> e.end >> e.a >> e.b >> e.f >> e.cases >> e.validate >> e.pid) out.push_back(e);
  return out;
}

std::map<int, std::vector<GpuEval>> by_gpu_without_overlap(const std::vector<GpuEval>& log) {
  std::map<int, std::vector<GpuEval>> gpus;
  for (const auto& e : log) gpus[e.gpu].push_back(e);
  for (auto& [gpu, evals] : gpus) {
    std::sort(evals.begin(), evals.end(), [](const GpuEval& x, const GpuEval& y) { return x.start < y.start; });
    for (std::size_t i = 1; i < evals.size(); ++i)
      EXPECT_GE(evals[i].start, evals[i - 1].end)
          << "GPU " << gpu << ": eval of A=" << evals[i].a << ",B=" << evals[i].b << " started before the eval of A="
          << evals[i - 1].a << ",B=" << evals[i - 1].b << " ended";
  }
  return gpus;
}

std::vector<EvalLine> read_eval_log(const std::string& path) {
  std::vector<EvalLine> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    EvalLine e;
    int v = 0;
    std::string seeds;
    ls >> e.a >> e.b >> e.f >> e.cases >> v >> seeds;
    e.validate = v != 0;
    std::stringstream ss(seeds);
    for (std::string s; std::getline(ss, s, ',');) e.seeds.push_back(std::stoll(s));
    out.push_back(e);
  }
  return out;
}

}  // namespace attn::test
