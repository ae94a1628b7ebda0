// The daemon's smaller parts without the daemon (ARCHITECTURE.md, "The daemon's core"): calls beside the tuning, the
// idea bench's choices and its rule for judging again, the rounds of cases, the book of screens, the challenge seat and
// the watchdog's deadline.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/background_calls.hpp"
#include "daemon/case_rounds.hpp"
#include "daemon/challenge.hpp"
#include "daemon/idea_picks.hpp"
#include "daemon/screen_book.hpp"
#include "daemon/worker_answers.hpp"
#include "tests/test_support.hpp"
#include "tests/tuner/tuner_fixtures.hpp"

namespace attn::tuning {
namespace {

using namespace std::chrono_literals;

TEST(BackgroundCalls, UpToKAtOnceEachEndCollectedInTheOrderStartedAndACancelStopsThem) {
  BackgroundCalls<int> calls(2);
  std::atomic<int> at_once{0}, most{0};
  const auto busy = [&](int result) {
    return [&, result](const std::atomic<bool>&) {
      most = std::max(most.load(), ++at_once);
      std::this_thread::sleep_for(100ms);
      --at_once;
      if (result < 0) throw std::runtime_error("the call failed");
      return result;
    };
  };
  calls.start(busy(1));
  EXPECT_TRUE(calls.room());
  calls.start(busy(-1));
  EXPECT_FALSE(calls.room());
  EXPECT_TRUE(calls.collect(false).empty()) << "none has ended yet";
  const auto ended = calls.collect(true);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].result, 1);
  EXPECT_FALSE(ended[1].result);
  EXPECT_EQ(ended[1].error, "the call failed");
  EXPECT_EQ(most.load(), 2) << "both ran at once";
  EXPECT_EQ(calls.running(), 0u);
  calls.start([](const std::atomic<bool>& stop) {
    while (!stop) std::this_thread::sleep_for(1ms);
    return 7;
  });
  calls.cancel();
  const auto stopped = calls.collect(true);
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].result, 7);
}

TEST(BackgroundCalls, TheProposerAndTheAgentsLeaveOneListOfTheDaemonsFilesAlone) {
  RunOptions o;
  o.db_path = "/r/runs/t.db";
  o.ideas.dir = "/r/queue";
  const auto files = daemon_files(o, "/c/cache");
  for (const std::string f : {"/r/runs/t.db", "/r/runs/t.db-wal", "/r/runs/t.iters.tsv", "/c/cache", "/r/queue",
                              "/r/runs/proposals", "/r/runs/idea_agent", "/r/runs/t.db.status.json"})
    EXPECT_NE(std::find(files.begin(), files.end(), f), files.end()) << f;
}

TEST(IdeaPicks, AnIdeasNewValuesItsSeedsAndItsContenders) {
  const std::string dir = test::temp_dir("idea-picks");
  std::filesystem::create_directories(dir + "/p");
  std::filesystem::create_directories(dir + "/i");
  const TemplateSpace parent_space = test::tile_space(dir + "/p"), idea_space = test::grown_tile_space(dir + "/i");
  const NewValues added = idea_new_values(parent_space, idea_space);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added.at("SOFTMAX"), (std::set<std::int64_t>{1, 2})) << "a new axis' values but its default";
  EXPECT_TRUE(idea_active(added, {{"SOFTMAX", 2}}));
  EXPECT_FALSE(idea_active(added, {{"SOFTMAX", 0}}));
  EXPECT_TRUE(idea_active({}, {{"SOFTMAX", 0}})) << "a plain code change runs in every config";

  SearchState parent(parent_space), idea(idea_space);
  const Config best{{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"STAGES", 3}, {"WARPS", 4}};
  const Config other{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"STAGES", 3}, {"WARPS", 4}};
  parent.record(best, Outcome::success(10, 1.0));
  parent.record(other, Outcome::success(11, 1.2));
  parent.set_champion(best);
  const auto seeds = idea_seeds(parent, idea_space, added, 4);
  ASSERT_EQ(seeds.size(), 6u) << "two bases, each with SOFTMAX 1, 2, then as it is";
  EXPECT_EQ(seeds[0].config.at("SOFTMAX"), 1);
  EXPECT_EQ(seeds[2].config.at("SOFTMAX"), 0);
  EXPECT_NE(seeds[0].move.find("parent's champion (iter 10)"), std::string::npos) << seeds[0].move;

  IdeaPickOutcome none = pick_idea_contenders(idea, parent, added);
  EXPECT_FALSE(none.pick);
  EXPECT_EQ(none.verdict, IdeaVerdict::no_gain);
  Config off = idea_space.complete(best), on = off, lucky = idea_space.complete(other);
  on["SOFTMAX"] = 1;
  lucky["SOFTMAX"] = 2;
  idea.record(off, Outcome::success(20, 0.8));    // fastest overall, but the parent's code
  idea.record(on, Outcome::success(21, 0.99));    // the paired config
  idea.record(lucky, Outcome::success(22, 0.95)); // the fastest with the idea on
  idea.set_champion(off);
  const IdeaPickOutcome picked = pick_idea_contenders(idea, parent, added);
  ASSERT_TRUE(picked.pick);
  EXPECT_EQ(picked.configs, 3u);
  EXPECT_EQ(picked.pick->parent_best.iter, 10);
  EXPECT_EQ(picked.pick->best.iter, 22);
  ASSERT_TRUE(picked.pick->paired);
  EXPECT_EQ(picked.pick->paired->iter, 21);
  EXPECT_NE(picked.pick->inactive_note.find("iter 20"), std::string::npos) << picked.pick->inactive_note;

  SearchState crashed(idea_space);
  crashed.record(on, Outcome::failed(30, "wrong_result"));
  crashed.record(lucky, Outcome::failed(31, "wrong_result"));
  const IdeaPickOutcome broken = pick_idea_contenders(crashed, parent, added);
  EXPECT_FALSE(broken.pick);
  EXPECT_EQ(broken.verdict, IdeaVerdict::broken);
  EXPECT_EQ(broken.kind, IdeaBrokenKind::wrong_result);
}

TEST(CaseRounds, ARotationDrawsANewRoundsCasesAndTheHeldOutCasesStayApart) {
  RunOptions o;
  o.suite = "full";
  o.rotate_seeds = true;
  o.round_configs = 2;
  CaseRounds rounds(o, builtin_suite("full", o.root_seed));
  const auto first = rounds.now();
  EXPECT_EQ(first->gen, 0);
  EXPECT_EQ(first->root_seed, o.root_seed);
  ASSERT_TRUE(first->screen) << "full has several cases per family: the ladder screens";
  EXPECT_FALSE(rounds.holdout().empty());
  EXPECT_FALSE(rounds.rotate(1, 5));
  const auto line = rounds.rotate(2, 5);
  ASSERT_TRUE(line);
  const auto second = rounds.now();
  EXPECT_EQ(second->gen, 1);
  EXPECT_NE(second->root_seed, first->root_seed);
  EXPECT_NE(second->root_seed, o.holdout_seed);
  EXPECT_NE(line->find("round 1"), std::string::npos) << *line;
  EXPECT_FALSE(rounds.rotate(3, 5));
  EXPECT_EQ(first->gen, 0) << "a slot's snapshot of the round before stays as it was";
}

TEST(ScreenBook, EachScreenIsJudgedAgainstTheBestAndNearMissesWaitForSpareGpuTime) {
  const std::string dir = test::temp_dir("screen-book");
  ScreenBook book(0.10, true, 0.30);
  book.seed(1.0);
  EXPECT_TRUE(book.judge(1.05).promote) << "within the ladder's 10 %";
  EXPECT_FALSE(book.judge(1.2).promote);
  const auto miss = [&](std::int64_t iter, bool cubin) {
    ScreenedNearMiss m;
    m.iter = iter;
    m.proposal.template_name = "t";
    m.cv.cubin_path = dir + "/" + std::to_string(iter) + ".cubin";
    m.cv.cubin = {'x'};
    if (cubin) test::write_text(m.cv.cubin_path, "x");
    return m;
  };
  book.screened_out(1.2, miss(1, true));
  book.screened_out(1.25, miss(2, false));  // its cubin left the cache
  book.screened_out(1.5, miss(3, true));    // beyond the spare cut-off: not kept
  EXPECT_TRUE(book.spare_due());
  auto job = book.take_spare();
  ASSERT_TRUE(job);
  EXPECT_EQ(job->spare_of, 1);
  EXPECT_TRUE(job->ready());
  EXPECT_TRUE(job->compiled.get().cubin.empty()) << "the cubin's bytes are not kept, its path is";
  EXPECT_FALSE(book.spare_due()) << "the one left has no cubin";
  EXPECT_FALSE(book.take_spare());
  ScreenBook off(0.10, false, 0.30);
  off.screened_out(1.0, miss(4, true));
  EXPECT_FALSE(off.spare_due());
}

TEST(ChallengeSeat, OneChallengeAtATimeEachOnItsOwnGpu) {
  RunStats stats;
  const TimingParams timing;
  const std::vector<CaseSpec> holdout;
  ChallengeSeat seat(timing, holdout, stats, nullptr);
  GpuSlot::Env env;
  GpuSlot a(0, GpuSpec{0, "", ""}, WorkerCommand{"/bin/false", {}}, env), b(1, GpuSpec{1, "", ""}, WorkerCommand{"/bin/false", {}}, env);
  std::atomic<int> inside{0}, most{0};
  const auto challenge = [&](GpuSlot& slot) {
    for (int i = 0; i < 20; ++i) {
      Challenge c = seat.take(slot);
      EXPECT_EQ(&c.slot(), &slot);
      most = std::max(most.load(), ++inside);
      std::this_thread::sleep_for(1ms);
      --inside;
    }
  };
  std::thread other([&] { challenge(b); });
  challenge(a);
  other.join();
  EXPECT_EQ(most.load(), 1);
}

TEST(Watchdog, TheDeadlineFollowsTheChampionsEvaluationWithinItsBounds) {
  EXPECT_EQ(watchdog_deadline(10, 20, 180, 0), 180'000ms) << "no champion yet: the cap";
  EXPECT_EQ(watchdog_deadline(10, 20, 180, 500), 20'000ms) << "at least the floor";
  EXPECT_EQ(watchdog_deadline(10, 20, 180, 5'000), 50'000ms);
  EXPECT_EQ(watchdog_deadline(10, 20, 180, 60'000), 180'000ms) << "at most the cap";
}

}  // namespace
}  // namespace attn::tuning
