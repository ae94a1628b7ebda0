// Crash safety: a child process writes iterations in a loop and is SIGKILLed at a random moment.
// After reopening: integrity_check ok, every iteration the child reported as committed is there with
// all its case results, nothing is half-written.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "db/store.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

constexpr int kCasesPerIteration = 12;

std::vector<CaseResultRecord> many_cases(std::int64_t salt) {
  std::vector<CaseResultRecord> cases;
  for (int i = 0; i < kCasesPerIteration; ++i) {
    CaseResultRecord c;
    c.case_id = fmt::format("case-{:02d}", i);  // the DB returns cases ordered by case_id
    c.family = kAllFamilies[i % 3];
    c.median_ms = 0.05 + 0.001 * i + 1e-6 * static_cast<double>(salt);
    c.spread = 0.005;
    c.samples = 30;
    c.passed = true;
    cases.push_back(c);
  }
  return cases;
}

/// The child: opens the DB itself (no SQLite handle crosses fork), then begins and finishes
/// iterations forever, writing each committed iter number to `fd` after its commit.
[[noreturn]] void child_writer(const std::string& path, std::int64_t run_id, int fd) {
  try {
    auto db = ExperimentDb::open(path);
    auto v = test::sample_variant(64, 8, 2);
    for (std::int64_t n = 0;; ++n) {
      IterationRecord it;
      it.run_id = run_id;
      it.suite = "quick";
      it.template_name = v.template_name;
      it.params_json = v.params_json;
      it.iter = db.begin_iteration(it);
      it.status = n % 3 ? IterationStatus::discard : IterationStatus::keep;
      it.geomean_ms = 0.08 + 1e-6 * static_cast<double>(it.iter);
      it.description = "child " + std::to_string(n);
      it.cases = many_cases(it.iter);
      db.finish_iteration(it);
      if (::write(fd, &it.iter, sizeof it.iter) != sizeof it.iter) ::_exit(4);
    }
  } catch (...) {
    ::_exit(3);
  }
}

TEST(CrashSafety, SigkillMidWriteLosesNoCommittedIterationAndLeavesNoPartialOne) {
  const auto path = test::temp_dir("db-crash") + "/attn-tuner.db";
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::int64_t total_reported = 0;

  for (int round = 0; round < 4; ++round) {
    std::int64_t run_id;
    {
      auto db = ExperimentDb::open(path);
      db.mark_interrupted_runs();
      run_id = db.begin_run(test::sample_run("quick"));
    }  // closed before fork
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      child_writer(path, run_id, fds[1]);
    }
    ::close(fds[1]);
    // Wait for the first commit, then kill after a random extra delay.
    std::vector<std::int64_t> reported;
    std::int64_t iter = 0;
    ASSERT_EQ(::read(fds[0], &iter, sizeof iter), static_cast<ssize_t>(sizeof iter)) << "child wrote nothing";
    reported.push_back(iter);
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 150'000)(rng)));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child ended on its own: " << status;
    while (::read(fds[0], &iter, sizeof iter) == static_cast<ssize_t>(sizeof iter)) reported.push_back(iter);
    ::close(fds[0]);
    total_reported += static_cast<std::int64_t>(reported.size());

    auto db = ExperimentDb::open(path);
    auto check = db.connection().prepare("PRAGMA integrity_check");
    ASSERT_TRUE(check.step());
    EXPECT_EQ(check.column_text(0), "ok");
    check.run();
    auto fk = db.connection().prepare("PRAGMA foreign_key_check");
    EXPECT_FALSE(fk.step()) << "dangling reference in " << fk.column_text(0);

    // Every reported commit is there, complete.
    for (auto id : reported) {
      auto it = db.iteration(id);
      ASSERT_TRUE(it) << "committed iteration " << id << " lost";
      EXPECT_TRUE(it->status == IterationStatus::keep || it->status == IterationStatus::discard);
      ASSERT_EQ(it->cases.size(), static_cast<std::size_t>(kCasesPerIteration)) << "iteration " << id;
      EXPECT_EQ(it->cases, many_cases(id));
    }
    // Beyond those: at most one finished iteration whose report the kill cut off, at most one running
    // one (begun, not finished); every finished one is complete.
    auto rows = db.iterations(IterationQuery{.suite = std::nullopt,
                                             .run_id = run_id,
                                             .statuses = {},
                                             .order = IterationQuery::Order::iter_asc,
                                             .limit = std::nullopt});
    std::int64_t finished = 0, running = 0;
    for (const auto& r : rows) {
      if (r.status == IterationStatus::running) {
        ++running;
        EXPECT_TRUE(db.case_results(r.iter).empty());
        EXPECT_EQ(r.geomean_ms, std::nullopt);
      } else {
        ++finished;
        EXPECT_EQ(db.case_results(r.iter).size(), static_cast<std::size_t>(kCasesPerIteration));
      }
    }
    EXPECT_LE(running, 1);
    EXPECT_GE(finished, static_cast<std::int64_t>(reported.size()));
    EXPECT_LE(finished, static_cast<std::int64_t>(reported.size()) + 1);

    // The restart path: the running one becomes interrupted.
    auto marked = db.mark_interrupted_iterations();
    EXPECT_EQ(static_cast<std::int64_t>(marked.size()), running);
    EXPECT_EQ(db.run_progress(run_id).running, 0);
  }
  EXPECT_GE(total_reported, 4);
}

}  // namespace
}  // namespace attn
