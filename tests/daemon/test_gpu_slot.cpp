// GpuSlot (daemon/gpu_slot.hpp) without the daemon: one slot and the fake worker (tests/daemon/fake_worker.py), its
// cubins files that name their config. The one rule for restarting a worker after an answer, screens sent ahead, and
// the status read from another thread while the worker is replaced (ThreadSanitizer: ctest label tsan).
#include <atomic>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "daemon/gpu_slot.hpp"
#include "daemon/worker_answers.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/test_support.hpp"

namespace attn::tuning {
namespace {

/// A slot on fake GPU 0 holding the smoke suite's cases, with what it tells the run.
struct SlotRig {
  std::string dir = test::temp_dir("gpu-slot");
  std::shared_ptr<const CaseSet> cases;
  std::vector<InFlight> lost;
  std::vector<pid_t> pids;
  double prepared_ms = 0;
  std::unique_ptr<GpuSlot> slot;

  SlotRig() {
    auto set = std::make_shared<CaseSet>();
    set->cases = builtin_suite("smoke");
    cases = set;
    GpuSlot::Env env;
    env.cases = [this] { return cases; };
    env.deadline = [] { return milliseconds(1000); };  // the watchdog: a hang is killed after 1 s
    env.prepare_timeout = milliseconds(30'000);
    env.prepared = [this](double ms) { prepared_ms += ms; };
    env.lost = [this](InFlight&& job) { lost.push_back(std::move(job)); };
    env.started = [this](pid_t pid) { pids.push_back(pid); };
    slot = std::make_unique<GpuSlot>(0, GpuSpec{}, WorkerCommand{test::fake_worker_path(), {}}, std::move(env));
  }
  /// A whole-suite request of config (A, B, F) of the fake template: F 1 hangs, 2 faults, 3 is wrong, 4 dies.
  EvalRequest full(int a, int b, int f) {
    const std::string path = fmt::format("{}/A{}_B{}_F{}.cubin", dir, a, b, f);
    test::write_text(path, fmt::format("fake_cfg_A{}_B{}_F{}", a, b, f));
    return EvalRequest{path, "block_sparse_attn_fwd", TimingParams{}, true, true, {}};
  }
  /// The same on the first case only (a screen).
  EvalRequest screen(int a, int b, int f) {
    EvalRequest r = full(a, b, f);
    r.case_ids = {cases->cases.front().case_id};
    return r;
  }
};

InFlight job_of(int a) { return InFlight{TemplateProposal{"fake", {Config{{"A", a}, {"B", 2}, {"F", 0}}, "test"}}, {}}; }

TEST(GpuSlot, AnAnswerThatEndsTheWorkerRestartsItAndNoOtherDoes) {
  SlotRig r;
  r.slot->start();
  ASSERT_EQ(r.pids.size(), 1u);
  EXPECT_GT(r.slot->status().pid, 0);
  const EvalResponse ok = r.slot->eval(r.full(4, 2, 0));
  ASSERT_TRUE(ok.status.ok()) << ok.status.message;
  EXPECT_DOUBLE_EQ(ok.score_ms, 0.1);
  EXPECT_EQ(r.slot->eval(r.full(4, 2, 3)).status.failure, FailureKind::wrong_result);
  EXPECT_TRUE(r.slot->ready()) << "a result check leaves a healthy worker";
  EXPECT_EQ(r.pids.size(), 1u);
  for (const int f : {2, 4, 1}) {  // a fault, a death, a hang
    const EvalResponse bad = r.slot->eval(r.full(4, 2, f));
    EXPECT_TRUE(ends_worker(bad.status)) << f << ": " << bad.status.name();
    EXPECT_FALSE(r.slot->ready()) << f;
    EXPECT_EQ(r.slot->status().pid, 0) << f;
    EXPECT_TRUE(r.slot->eval(r.full(4, 2, 0)).status.ok()) << "a fresh worker on the same GPU after F=" << f;
  }
  EXPECT_EQ(r.pids.size(), 4u);
  EXPECT_EQ(r.slot->status().restarts, 3);
  EvalRequest unknown = r.full(4, 2, 0);  // a case the worker does not hold: it rejects the request
  unknown.case_ids = {"no-such-case"};
  EXPECT_TRUE(r.slot->eval(unknown).status.rejected);
  EXPECT_FALSE(r.slot->ready()) << "a rejected request ends the worker too";
  EXPECT_GT(r.prepared_ms, 0.0);
}

TEST(GpuSlot, AScreenSentAheadIsAnsweredInOrderAndOneLostWithItsWorkerGoesBack) {
  SlotRig r;
  r.slot->start();
  InFlight first = job_of(3), second = job_of(6);
  // The first config's screen; while it is on the way the second's is written (the send ahead).
  const EvalResponse one = r.slot->screen(first, r.screen(3, 2, 0), [&] {
    second.sent = r.slot->send_screen(r.screen(6, 2, 0));
    r.slot->set_ahead(std::move(second));
  });
  ASSERT_TRUE(one.status.ok()) << one.status.message;
  EXPECT_DOUBLE_EQ(one.score_ms, 0.11);
  EXPECT_EQ(one.cases.size(), 1u);
  std::optional<InFlight> next = r.slot->take_ahead();
  ASSERT_TRUE(next && next->sent);
  const EvalResponse two = r.slot->screen(*next, r.screen(6, 2, 0), [] {});
  ASSERT_TRUE(two.status.ok()) << two.status.message;
  EXPECT_DOUBLE_EQ(two.score_ms, 0.14);
  EXPECT_EQ(r.pids.size(), 1u) << "one worker answered both";

  // A screen whose answer ends the worker loses the one written behind it: that job goes back to the queue, unsent.
  InFlight faulty = job_of(4), behind = job_of(5);
  const EvalResponse fault = r.slot->screen(faulty, r.screen(4, 2, 2), [&] {
    behind.sent = r.slot->send_screen(r.screen(5, 2, 0));
    if (!behind.sent->reply) r.slot->set_ahead(std::move(behind));
  });
  EXPECT_EQ(fault.status.failure, FailureKind::fault);
  EXPECT_FALSE(r.slot->has_ahead());
  ASSERT_EQ(r.lost.size(), 1u);
  EXPECT_FALSE(r.lost[0].sent);
  EXPECT_EQ(r.lost[0].proposal.proposal.config.at("A"), 5);
}

// The status file reads every slot's status on other threads while a slot replaces its worker (issue 47's race: the
// status read the worker's process object as it was reset).
TEST(GpuSlot, ItsStatusIsReadOnAnotherThreadWhileItRestartsItsWorker) {
  SlotRig r;
  r.slot->start();
  std::atomic<bool> done{false};
  std::set<pid_t> seen;
  std::thread reader([&] {
    while (!done) seen.insert(r.slot->status().pid);
  });
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r.slot->eval(r.full(4, 2, 2)).status.failure, FailureKind::fault);
    EXPECT_TRUE(r.slot->eval(r.full(4, 2, 0)).status.ok());
  }
  done = true;
  reader.join();
  EXPECT_EQ(r.slot->status().restarts, 4);
  EXPECT_EQ(r.pids.size(), 5u);
  EXPECT_GE(seen.size(), 2u) << "the reader saw workers come and go";
}

}  // namespace
}  // namespace attn::tuning
