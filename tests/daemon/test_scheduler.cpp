// The scheduler and the search book (daemon/scheduler.hpp, daemon/search_book.hpp) without the daemon: what a free
// GPU takes, the iteration limit counting the jobs on GPUs, the run's end, a template that leaves with its queued
// configs, and when an idea's template is tuned. The compiles go to a real pool (NVRTC in this process; the test
// templates' empty sources fail to compile at once, which the queue does not look at).
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/scheduler.hpp"
#include "daemon/search_book.hpp"
#include "tests/test_support.hpp"
#include "tests/tuner/tuner_fixtures.hpp"

namespace attn::tuning {
namespace {

/// A search book of one template with `values` configs (parameter A), a compiler and a pool of one thread.
struct SchedulerRig {
  std::string dir = test::temp_dir("scheduler");
  SearchBook search{std::nullopt, 3};
  Compiler compiler{[this] {
    CompilerOptions c;
    c.cache_dir = dir + "/cache";
    c.procs.procs = 0;
    return c;
  }()};
  CompilePool pool{compiler, 1};
  StopRequest stop;
  explicit SchedulerRig(int values) {
    std::string list;
    for (int v = 1; v <= values; ++v) list += (v > 1 ? ", " : "") + std::to_string(v);
    const std::string json = test::space_json("small", "\"A\": {\"values\": [" + list + "]}", "", "{\"A\": 1}");
    search.add(TemplateSpace::load(test::write_space(dir, "small", json)), make_strategy("exhaustive", 1), std::nullopt,
               false);
  }
};

TEST(Scheduler, TheIterationLimitCountsTheJobsOnGpusAndTheFirstReasonToEndStays) {
  SchedulerRig r(8);
  Scheduler s(r.search, r.compiler, r.pool, r.stop, RunLimits{std::nullopt, 3});
  std::vector<Scheduler::Ticket> tickets;
  for (int i = 0; i < 3; ++i) {
    Scheduler::Next n = s.next(false);
    ASSERT_EQ(n.kind, Scheduler::Next::Kind::job);
    tickets.push_back(s.ticket());
  }
  EXPECT_EQ(s.stop_reason(), "iteration limit 3 reached") << "0 finished and 3 on GPUs";
  EXPECT_FALSE(s.stop_reason(1)) << "a job sent ahead to the caller's GPU fits under the limit already";
  EXPECT_FALSE(s.take_screen_ahead()) << "nothing is sent ahead past the limit";
  EXPECT_EQ(tickets[0].finish(true), 1);
  EXPECT_TRUE(s.stop_reason());
  tickets.pop_back();  // a job that ended without an iteration (evaluated by another daemon): off the GPUs
  EXPECT_FALSE(s.stop_reason()) << "1 finished and 1 on a GPU";
  s.end("search space exhausted");
  s.end("budget used up");
  EXPECT_EQ(s.reason(), "search space exhausted");
  EXPECT_EQ(s.stop_reason(), "search space exhausted");
  EXPECT_EQ(s.iterations(), 1);
  EXPECT_EQ(s.count_outside(), 2) << "a proposer's crash iteration counts";
}

TEST(Scheduler, AFreeGpuWaitsForAnotherGpusResultThenFindsNothingLeft) {
  SchedulerRig r(2);
  Scheduler s(r.search, r.compiler, r.pool, r.stop, RunLimits{});
  ASSERT_EQ(s.next(false).kind, Scheduler::Next::Kind::job);
  Scheduler::Ticket first = s.ticket();
  ASSERT_EQ(s.next(false).kind, Scheduler::Next::Kind::job);
  Scheduler::Ticket second = s.ticket();
  // Nothing queued while two GPUs evaluate: a third waits until one of them finishes (its result may open proposals).
  Scheduler::Next::Kind third = Scheduler::Next::Kind::job;
  std::thread waiter([&] { third = s.next(false).kind; });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  first.finish(true);
  waiter.join();
  EXPECT_EQ(third, Scheduler::Next::Kind::again);
  EXPECT_FALSE(s.end_if_idle("exhausted", false)) << "a GPU still evaluates";
  second.finish(true);
  EXPECT_EQ(s.next(false).kind, Scheduler::Next::Kind::idle);
  EXPECT_FALSE(s.end_if_idle("exhausted", true)) << "an idea's check may still bring configs";
  EXPECT_TRUE(s.end_if_idle("exhausted", false));
  EXPECT_EQ(s.reason(), "exhausted");
}

TEST(Scheduler, AJobPutBackIsTakenFirstAndARetiredTemplateTakesItsQueuedConfigsAlong) {
  SchedulerRig r(12);
  Scheduler s(r.search, r.compiler, r.pool, r.stop, RunLimits{});
  s.refill();
  Scheduler::Next n = s.next(false);
  ASSERT_EQ(n.kind, Scheduler::Next::Kind::job);
  const Config taken = n.job.proposal.proposal.config;
  s.put_back(std::move(n.job));  // its screen went to a worker that ended: back to the front, off the GPUs
  n = s.next(false);
  Scheduler::Ticket t = s.ticket();
  EXPECT_EQ(n.job.proposal.proposal.config, taken);
  const TemplateProgress before = r.search.progress("small");
  EXPECT_GT(before.issued, 1u);
  s.retire("small");
  const TemplateProgress after = r.search.progress("small");
  EXPECT_EQ(after.finished, after.issued - 1) << "every queued config finished with it; the one on a GPU is not";
  t.finish(true);
  EXPECT_EQ(s.next(false).kind, Scheduler::Next::Kind::idle);
}

TEST(SearchBook, AnIdeasTemplateIsTunedWhenEveryConfigIssuedFinishedAndItsSearchIsDone) {
  SchedulerRig r(2);
  EXPECT_TRUE(r.search.has("small"));
  EXPECT_FALSE(r.search.is_idea("small"));
  EXPECT_EQ(r.search.kernel("small"), "block_sparse_attn_fwd");
  EXPECT_FALSE(r.search.kernel("other"));
  auto p = r.search.next(false);
  ASSERT_TRUE(p);
  EXPECT_FALSE(r.search.tuned("small"));
  EXPECT_TRUE(r.search.claim("small", {p->proposal.config}).empty()) << "seen already";
  IterationRecord it;
  it.iter = 7;
  it.template_name = "small";
  it.status = IterationStatus::discard;
  it.geomean_ms = 0.5;
  it.gpu_ms = 2.5;
  EXPECT_FALSE(r.search.record(it, p->proposal.config));
  auto q = r.search.next(false);
  ASSERT_TRUE(q);
  r.search.skipped("small", q->proposal.config, "evaluated in an earlier run");
  EXPECT_FALSE(r.search.next(false));  // exhausted
  EXPECT_TRUE(r.search.tuned("small"));
  const TemplateProgress progress = r.search.progress("small");
  EXPECT_EQ(progress.issued, 2u);
  EXPECT_EQ(progress.finished, 2u);
  EXPECT_DOUBLE_EQ(progress.gpu_ms, 2.5);
  const auto champion = r.search.read([](const MultiSearch& s) { return s.state("small").champion(); });
  ASSERT_TRUE(champion);
  EXPECT_EQ(champion->iter, 7);
}

TEST(SearchBook, AProposalWhoseFirstConfigsAllCrashIsBrokenAndSoIsOneThatFailsTheVerification) {
  SchedulerRig r(8);
  const std::string json = test::space_json("small_p4", "\"A\": {\"values\": [1, 2, 3, 4]}", "", "{\"A\": 1}");
  r.search.add(TemplateSpace::load(test::write_space(r.dir, "small_p4", json)), make_strategy("exhaustive", 1), 4, false);
  EXPECT_EQ(r.search.proposal_of("small_p4"), 4);
  IterationRecord it;
  it.template_name = "small_p4";
  it.status = IterationStatus::crash;
  it.failure_kind = FailureKind::fault;
  for (int a = 1; a <= 2; ++a) {
    it.iter = a;
    EXPECT_FALSE(r.search.record(it, Config{{"A", a}}));
  }
  it.iter = 3;
  const auto broken = r.search.record(it, Config{{"A", 3}});
  ASSERT_TRUE(broken);
  EXPECT_NE(broken->find("its first 3 configs all crashed"), std::string::npos) << *broken;
  it.iter = 4;  // a repository template is never broken
  it.template_name = "small";
  it.failure_kind = FailureKind::below_floor;
  EXPECT_FALSE(r.search.record(it, Config{{"A", 1}}));
  const SearchState& st = r.search.read([](const MultiSearch& s) -> const SearchState& { return s.state("small"); });
  const auto cheat = broken_template(st, 9, 3);
  ASSERT_TRUE(cheat);
  EXPECT_NE(cheat->find("failed the verification (below_floor)"), std::string::npos) << *cheat;
}

}  // namespace
}  // namespace attn::tuning
