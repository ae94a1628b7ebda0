// One daemon per DB, race-free (issue 13): the lock on <db>.pid is exclusive under a race of threads and of
// processes, dies with its holder (SIGKILL included), ignores a pid file left behind, and a second `run` on a
// DB, started in the same instant or while a detached daemon runs, exits non-zero naming the DB and the
// holder's pid.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/pid_lock.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(OneDaemon, LockIsExclusiveUnderARaceOfThreads) {
  const std::string db = test::temp_dir("lock") + "/t.db";
  constexpr int kThreads = 8, kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<int> won{0}, refused{0}, other{0};
    std::barrier start(kThreads), attempted(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&] {
        start.arrive_and_wait();
        std::optional<PidFile> held;
        try {
          held.emplace(db);
          ++won;
        } catch (const DaemonRunning& e) {
          if (e.holder == ::getpid() && std::string(e.what()).find(db) != std::string::npos) ++refused;
          else ++other;
        } catch (...) {
          ++other;
        }
        attempted.arrive_and_wait();  // the winner holds the lock until every thread has tried
      });
    for (auto& t : threads) t.join();
    ASSERT_EQ(won.load(), 1) << "round " << round;
    ASSERT_EQ(refused.load(), kThreads - 1) << "round " << round;
    ASSERT_EQ(other.load(), 0);
    ASSERT_FALSE(running_daemon(db)) << "round " << round;  // released, file removed
    ASSERT_FALSE(fs::exists(pid_file_for(db)));
  }
}

TEST(OneDaemon, PidFileLeftByADeadDaemonDoesNotBlock) {
  const std::string db = test::temp_dir("lock") + "/t.db";
  std::ofstream(pid_file_for(db)) << ::getppid() << "\n";  // a live pid, but no lock: a killed daemon's file
  EXPECT_FALSE(running_daemon(db));
  PidFile held(db);
  EXPECT_EQ(running_daemon(db), ::getpid());
}

TEST(OneDaemon, LockDiesWithItsHolderEvenOnSigkill) {
  const std::string db = test::temp_dir("lock") + "/t.db";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      PidFile held(db);
      (void)!::write(ready[1], "x", 1);
      ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  EXPECT_EQ(running_daemon(db), child);
  try {
    PidFile second(db);
    ADD_FAILURE() << "a second holder got the lock";
  } catch (const DaemonRunning& e) {
    EXPECT_EQ(e.holder, child);
    EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(child)), std::string::npos) << e.what();
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  test::wait_exit(child);
  EXPECT_TRUE(fs::exists(pid_file_for(db)));  // SIGKILL left the file behind...
  EXPECT_FALSE(running_daemon(db));           // ...but not the lock
  PidFile next(db);
  EXPECT_EQ(running_daemon(db), ::getpid());
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(OneDaemon, TwoRunsStartedTogetherExactlyOneRuns) {
  test::DaemonFixture f;
  constexpr int kRounds = 6;
  for (int round = 0; round < kRounds; ++round) {
    const std::string log_a = f.dir + "/a" + std::to_string(round), log_b = f.dir + "/b" + std::to_string(round);
    const std::string args = f.args("--iterations 1");
    const pid_t a = test::spawn_tuner(args, "FAKE_WORKER_DELAY=0.4", log_a);
    const pid_t b = test::spawn_tuner(args, "FAKE_WORKER_DELAY=0.4", log_b);
    const int sa = test::wait_exit(a), sb = test::wait_exit(b);
    const bool a_ok = WIFEXITED(sa) && WEXITSTATUS(sa) == 0, b_ok = WIFEXITED(sb) && WEXITSTATUS(sb) == 0;
    ASSERT_NE(a_ok, b_ok) << "round " << round << ": exactly one must run\n"
                          << test::read_text(log_a) << "\n---\n" << test::read_text(log_b);
    const pid_t winner = a_ok ? a : b;
    const std::string loser_log = test::read_text(a_ok ? log_b : log_a);
    const int loser_status = a_ok ? sb : sa;
    EXPECT_TRUE(WIFEXITED(loser_status) && WEXITSTATUS(loser_status) != 0);
    EXPECT_NE(loser_log.find("another attn-tuner daemon (pid " + std::to_string(winner) + ") is running on " + f.db),
              std::string::npos)
        << loser_log;
  }
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  EXPECT_EQ(db.runs().size(), std::size_t(kRounds));  // the losers logged nothing
  for (const auto& r : db.runs()) EXPECT_EQ(r.status, RunStatus::finished);
}

TEST(OneDaemon, SecondRunWhileADetachedDaemonRunsIsRefusedInTheForeground) {
  test::DaemonFixture f;
  const test::Output bg = test::run_tuner(f.args("--detach"), "FAKE_WORKER_DELAY=0.3");
  ASSERT_EQ(bg.code, 0) << bg.text;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(bg.text, m, std::regex("background: pid (\\d+)"))) << bg.text;
  const pid_t child = std::stoi(m[1]);
  EXPECT_EQ(running_daemon(f.db), child);  // the parent handed the lock over and exited
  const test::Output second = test::run_tuner(f.args("--detach"));
  EXPECT_EQ(second.code, 1) << second.text;
  EXPECT_NE(second.text.find("another attn-tuner daemon (pid " + std::to_string(child) + ") is running on " + f.db),
            std::string::npos)
      << second.text;
  EXPECT_EQ(second.text.find("running in the background"), std::string::npos) << second.text;
  const test::Output stop = test::run_tuner("stop --db '" + f.db + "'");
  EXPECT_EQ(stop.code, 0) << stop.text;
  EXPECT_FALSE(running_daemon(f.db));
  EXPECT_FALSE(fs::exists(pid_file_for(f.db)));
}

}  // namespace
}  // namespace attn
