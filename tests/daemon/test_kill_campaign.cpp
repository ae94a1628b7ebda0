// The kill campaign (issue 13) on the CPU: the real daemon with fake_worker.py on fake_campaign.json
// (288 configs, one in nine hangs), SIGKILLed 26 times on one DB, each time resumed by the next start:
// two kills of three at a random moment 0.3-2.5 s after the start, one of three while the worker hangs.
// After every kill: no process is left (the daemon's environment carries a tag, which every child
// inherits: the worker, a worker's child, a compile or git child); the DB passes integrity_check; every
// iteration finished before any earlier kill is still there with the same values. At the end, after a
// clean run: every killed run and every iteration it left running is `interrupted`, no config was
// evaluated twice, and iters.tsv equals `query tsv`.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "daemon/processes.hpp"
#include "db/iters_tsv.hpp"
#include "db/store.hpp"
#include "tests/daemon/daemon_harness.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// Live processes whose environment holds `entry` ("NAME=VALUE").
std::vector<ProcessInfo> processes_with_env(const std::string& entry) {
  std::vector<ProcessInfo> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t pos = 0;
    bool found = false;
    while (!found && pos < env.size()) {
      const std::size_t end = std::min(env.find('\0', pos), env.size());
      found = env.compare(pos, end - pos, entry) == 0;
      pos = end + 1;
    }
    if (found)
      if (auto p = process_info(std::stoi(name))) out.push_back(*p);
  }
  return out;
}

/// Lines "A B F" the fake worker logged so far (one per eval it started).
std::vector<std::string> eval_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

/// A FAKE_WORKER_LOG line ("A B F <cases> <validate> <seeds>") of a hanging config (F = 1).
bool is_hang_line(const std::string& l) {
  std::istringstream in(l);
  std::string a, b, f;
  return (in >> a >> b >> f) && f == "1";
}

TEST(KillCampaign, TwentySixSigkillsLoseNothingDuplicateNothingAndLeaveNoProcess) {
  test::DaemonFixture f;
  f.watchdog = "--watchdog-min 1 --watchdog-cap 1";
  const std::string evals = f.dir + "/evals.log", log = f.dir + "/daemon.log";
  const std::string tag = fmt::format("ATTN_CAMPAIGN_TAG={}-{}", ::getpid(), fs::path(f.dir).filename().string());
  const char* seed_env = std::getenv("ATTN_CAMPAIGN_SEED");
  const unsigned seed = seed_env ? unsigned(std::atoi(seed_env)) : 13u;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> delay_s(0.3, 2.5), after_hang_s(0.0, 0.4);
  constexpr int kKills = 26;
  const auto t0 = Clock::now();

  std::map<std::int64_t, IterationRecord> committed;  // finished before some kill: must never change
  std::set<std::int64_t> left_running;                // iterations a kill left running
  int hang_kills = 0, leftover_processes = 0;
  for (int k = 0; k < kKills; ++k) {
    const bool at_hang = k % 3 == 2;
    const std::size_t evals_before = eval_lines(evals).size();
    const std::size_t runs_before = fs::exists(f.db) ? ExperimentDb::open(f.db, ExperimentDb::Mode::read_only).runs().size() : 0;
    const pid_t daemon = test::spawn_tuner(
        f.args(fmt::format("--seed {}", k + 1), "random", "fake_campaign"),
        fmt::format("{} FAKE_WORKER_LOG='{}' FAKE_WORKER_DELAY=0.05", tag, evals), log);
    ASSERT_GT(daemon, 0);
    bool hung = false;
    if (at_hang) {  // wait for an eval of a hanging config to start, then kill inside its 1 s watchdog
      const auto until = Clock::now() + 8s;
      while (!hung && Clock::now() < until) {
        const auto lines = eval_lines(evals);
        for (std::size_t i = evals_before; i < lines.size() && !hung; ++i) hung = is_hang_line(lines[i]);
        if (!hung) std::this_thread::sleep_for(5ms);
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(after_hang_s(rng)));
    } else {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay_s(rng)));
    }
    ASSERT_EQ(::kill(daemon, SIGKILL), 0) << "kill " << k << ": the daemon had already exited\n" << test::read_text(log);
    test::wait_exit(daemon);
    hang_kills += hung ? 1 : 0;

    // No process is left: the worker (hanging or not), its children, anything else the daemon started.
    std::vector<ProcessInfo> left;
    for (int i = 0; i < 300 && !(left = processes_with_env(tag)).empty(); ++i) std::this_thread::sleep_for(10ms);
    for (const auto& p : left) {
      ADD_FAILURE() << "kill " << k << (hung ? " (during a hang)" : "") << ": process " << p.pid << " '" << p.cmdline
                    << "' outlived the daemon";
      ::kill(p.pid, SIGKILL);
      ++leftover_processes;
    }

    auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
    const auto check = db.sql_readonly("PRAGMA integrity_check");
    ASSERT_EQ(check.rows.size(), 1u);
    EXPECT_EQ(check.rows[0][0], std::optional<std::string>("ok")) << "kill " << k;
    std::map<std::int64_t, IterationRecord> now;
    for (auto& it : db.iterations()) now[it.iter] = it;
    for (const auto& [iter, before] : committed) {  // nothing committed before an earlier kill is lost or changed
      const auto found = now.find(iter);
      ASSERT_NE(found, now.end()) << "kill " << k << ": iteration " << iter << " lost";
      EXPECT_EQ(found->second, before) << "kill " << k << ": iteration " << iter << " changed";
    }
    // The resume marked what the last kill left running, in the transaction before the run's row: a daemon killed
    // before it logged its run (its GPU check and the worker's start take longer on a loaded machine) leaves them
    // running for the next one; the clean run at the end leaves none.
    const bool resumed = db.runs().size() > runs_before;
    for (const auto iter : left_running) {
      ASSERT_TRUE(now.count(iter));
      if (resumed) EXPECT_EQ(now[iter].status, IterationStatus::interrupted) << "iteration " << iter;
      else EXPECT_TRUE(now[iter].status == IterationStatus::running || now[iter].status == IterationStatus::interrupted)
               << "iteration " << iter;
    }
    left_running.clear();
    for (const auto& [iter, it] : now) {
      if (is_finished(it.status)) committed[iter] = it;
      else left_running.insert(iter);
    }
  }
  const double campaign_s = std::chrono::duration<double>(Clock::now() - t0).count();

  // A clean run resumes once more and finishes.
  const test::Output last = test::run_tuner(f.args("--iterations 2 --seed 99", "random", "fake_campaign"),
                                            "FAKE_WORKER_DELAY=0.05 " + tag);
  ASSERT_EQ(last.code, 0) << last.text;
  EXPECT_TRUE(processes_with_env(tag).empty());
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto runs = db.runs();
  ASSERT_GE(runs.size(), 2u);
  EXPECT_LE(runs.size(), std::size_t(kKills) + 1);  // a kill before the run was logged leaves no run
  for (std::size_t i = 0; i + 1 < runs.size(); ++i)
    EXPECT_EQ(runs[i].status, RunStatus::interrupted) << "run " << runs[i].id;
  EXPECT_EQ(runs.back().status, RunStatus::finished);

  const auto its = db.iterations();
  const test::Census census = test::census(its);
  EXPECT_TRUE(census.running.empty()) << census.running.size() << " iteration(s) still running";
  EXPECT_TRUE(census.duplicated.empty()) << "evaluated twice: " << census.duplicated.front();
  const int interrupted = census.interrupted;
  for (const auto& [iter, before] : committed) {
    const auto it = std::find_if(its.begin(), its.end(), [&](const IterationRecord& r) { return r.iter == iter; });
    ASSERT_NE(it, its.end()) << "iteration " << iter << " lost";
    EXPECT_EQ(*it, before);
  }
  const test::Output tsv = test::run_tuner("query tsv --db '" + f.db + "'");
  ASSERT_EQ(tsv.code, 0) << tsv.text;
  EXPECT_EQ(test::read_text(f.tsv), tsv.text);
  EXPECT_EQ(test::read_text(f.tsv), render_all(its));

  EXPECT_GE(hang_kills, kKills / 3 - 2) << "too few kills landed during a hang";
  EXPECT_EQ(leftover_processes, 0);
  RecordProperty("kills", kKills);
  RecordProperty("kills_during_hang", hang_kills);
  RecordProperty("iterations", int(its.size()));
  RecordProperty("interrupted", interrupted);
  RecordProperty("runs", int(runs.size()));
  std::printf("kill campaign (seed %u): %d SIGKILLs (%d during a hang) in %.1f s; %zu runs, %zu iterations "
              "(%d interrupted, %zu committed before a kill), 0 lost, 0 duplicated, %d processes left\n",
              seed, kKills, hang_kills, campaign_s, runs.size(), its.size(), interrupted, committed.size(),
              leftover_processes);
}

}  // namespace
}  // namespace attn
