// The fidelity ladder's pieces: which cases the screen uses, the screen's timing, the promotion verdict.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tuner/fidelity.hpp"
#include "workload/layout.hpp"
#include "workload/roofline.hpp"

namespace attn {
namespace {

TEST(Fidelity, ScreenTakesTheMedianWorkCaseOfEachFamily) {
  const auto suite = builtin_suite("full");
  const ScreenPlan plan = plan_screen(suite);
  ASSERT_EQ(plan.case_ids.size(), 3u);
  EXPECT_EQ(plan.suite_cases, suite.size());
  EXPECT_FALSE(plan.whole_suite());
  std::set<Family> families;
  for (const auto& id : plan.case_ids) {
    const auto it = std::find_if(suite.begin(), suite.end(), [&](const CaseSpec& c) { return c.case_id == id; });
    ASSERT_NE(it, suite.end()) << id;
    EXPECT_TRUE(families.insert(it->family).second) << "two screen cases of one family";
    // As many cases of its family do less work as do more (odd counts), by the roofline's FLOPs.
    const double mine = case_work(build_layout(*it), it->t_max).flops;
    int less = 0, more = 0;
    for (const auto& c : suite) {
      if (c.family != it->family || c.case_id == id) continue;
      const double w = case_work(build_layout(c), c.t_max).flops;
      (w < mine ? less : more) += 1;
    }
    EXPECT_EQ(less, more) << id;
  }
  EXPECT_NE(plan.describe().find("3 of 9 cases ("), std::string::npos) << plan.describe();
  // One case per family: the screen is the whole suite.
  EXPECT_TRUE(plan_screen(builtin_suite("smoke")).whole_suite());
  EXPECT_THROW(plan_screen({}), std::invalid_argument);
  // Deterministic.
  EXPECT_EQ(plan_screen(suite).case_ids, plan.case_ids);
}

TEST(Fidelity, ScreenTimingTakesFewSamples) {
  TimingParams full;
  full.min_samples = 20;
  full.max_samples = 200;
  full.max_seconds = 2;
  const TimingParams t = screen_timing(full, LadderOptions{});
  EXPECT_EQ(t.min_samples, 3);
  EXPECT_EQ(t.max_samples, 5);
  EXPECT_DOUBLE_EQ(t.max_seconds, 0.5);
  EXPECT_EQ(t.warmup, full.warmup);
  // Never more than the full timing asks for.
  full.min_samples = 2;
  full.max_samples = 4;
  const TimingParams s = screen_timing(full, LadderOptions{});
  EXPECT_EQ(s.min_samples, 2);
  EXPECT_EQ(s.max_samples, 4);
}

TEST(Fidelity, SpareCandidatesAreNearMissesOfTheBestScreenNow) {
  EXPECT_FALSE(spare_candidate(0.5, std::nullopt, 0.3));  // no best screen yet: nothing to compare with
  EXPECT_TRUE(spare_candidate(0.45, 0.40, 0.3));           // screened out at the ladder's 10 %, within 30 %
  EXPECT_TRUE(spare_candidate(0.52, 0.40, 0.3));           // exactly at the cut-off
  EXPECT_FALSE(spare_candidate(0.5201, 0.40, 0.3));
  EXPECT_FALSE(spare_candidate(0.45, 0.30, 0.3));          // the best moved down: no longer a near miss
  EXPECT_FALSE(spare_candidate(0.41, 0.40, 0.0));
  EXPECT_THROW(spare_candidate(0.0, 0.4, 0.3), std::invalid_argument);
  EXPECT_THROW(spare_candidate(std::nan(""), 0.4, 0.3), std::invalid_argument);
  EXPECT_THROW(spare_candidate(0.4, 0.4, -0.1), std::invalid_argument);
}

TEST(Fidelity, VerdictPromotesWithinTheCutoffOfTheBestScreen) {
  EXPECT_TRUE(judge_screen(0.5, std::nullopt, 0.1).promote);
  const auto better = judge_screen(0.39, 0.40, 0.1);
  EXPECT_TRUE(better.promote);
  EXPECT_NE(better.reason.find("best screen so far"), std::string::npos) << better.reason;
  const auto within = judge_screen(0.43, 0.40, 0.1);
  EXPECT_TRUE(within.promote);
  EXPECT_NE(within.reason.find("7.5% above the best screen 0.4000 ms, within the cut-off 10%"), std::string::npos)
      << within.reason;
  EXPECT_TRUE(judge_screen(0.44, 0.40, 0.1).promote);  // exactly at the cut-off
  const auto out = judge_screen(0.4401, 0.40, 0.1);
  EXPECT_FALSE(out.promote);
  EXPECT_NE(out.reason.find("10.0% above the best screen 0.4000 ms (cut-off 10%)"), std::string::npos) << out.reason;
  EXPECT_FALSE(judge_screen(0.41, 0.40, 0.0).promote);  // cut-off 0: only new bests go on
  EXPECT_THROW(judge_screen(0.0, 0.4, 0.1), std::invalid_argument);
  EXPECT_THROW(judge_screen(std::nan(""), 0.4, 0.1), std::invalid_argument);
  EXPECT_THROW(judge_screen(0.4, 0.4, -0.1), std::invalid_argument);
  EXPECT_EQ(parse_fidelity_mode("ladder"), FidelityMode::ladder);
  EXPECT_EQ(parse_fidelity_mode("full"), FidelityMode::full);
  EXPECT_THROW(parse_fidelity_mode("screen"), std::invalid_argument);
}

}  // namespace
}  // namespace attn
