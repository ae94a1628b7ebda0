// Champion rule: pre-filter, A/B/A agreement, lead against each noise term, and input checks.
#include <gtest/gtest.h>

#include <stdexcept>

#include "tuner/champion.hpp"

namespace attn {
namespace {

TEST(ChampionRule, RelativeSpreadIsTheWorstCase) {
  EXPECT_DOUBLE_EQ(relative_spread({{1.0, 0.01}, {0.5, 0.04}, {2.0, 0.02}}), 0.04);
  EXPECT_DOUBLE_EQ(relative_spread({{1.0, 0.0}}), 0.0);
  EXPECT_THROW(relative_spread({}), std::invalid_argument);
  EXPECT_THROW(relative_spread({{0.0, 0.01}}), std::invalid_argument);
  EXPECT_THROW(relative_spread({{1.0, -0.01}}), std::invalid_argument);
}

TEST(ChampionRule, PrefilterDiscardsANotFasterChallengerWithoutRetiming) {
  const auto slower = prefilter_challenger({1.00, 1.02, 0.01, 0.01});
  EXPECT_EQ(slower.verdict, ChampionVerdict::not_faster);
  EXPECT_NE(slower.reason.find("not below"), std::string::npos) << slower.reason;
  EXPECT_EQ(prefilter_challenger({1.00, 1.00, 0.01, 0.01}).verdict, ChampionVerdict::not_faster);  // a tie
  const auto faster = prefilter_challenger({1.00, 0.98, 0.01, 0.01});
  EXPECT_EQ(faster.verdict, ChampionVerdict::retime);
  EXPECT_FALSE(faster.promote());
  EXPECT_NEAR(faster.lead_ms, 0.02, 1e-12);
  // decide_champion applies the pre-filter too, whatever the re-timing says.
  EXPECT_EQ(decide_champion({1.00, 1.02, 0.0, 0.0}, {1.0, 0.5, 1.0}).verdict, ChampionVerdict::not_faster);
}

TEST(ChampionRule, ClearWinPromotes) {
  const auto d = decide_champion({1.000, 0.900, 0.003, 0.004}, {1.001, 0.900, 0.999});
  EXPECT_EQ(d.verdict, ChampionVerdict::promote);
  EXPECT_TRUE(d.promote());
  EXPECT_NEAR(d.incumbent_ms, 1.000, 1e-12);
  EXPECT_NEAR(d.challenger_ms, 0.900, 1e-12);
  EXPECT_NEAR(d.lead_ms, 0.100, 1e-12);
  EXPECT_NEAR(d.noise_aba_ms, 0.002, 1e-12);
  EXPECT_NEAR(d.noise_spread_ms, 0.004, 1e-12);  // the larger of the two relative spreads
  EXPECT_NEAR(d.noise_floor_ms, 0.005, 1e-12);
  EXPECT_NEAR(d.noise_ms, 0.005, 1e-12);
  EXPECT_EQ(d.reason.rfind("promote: ", 0), 0u) << d.reason;
  EXPECT_NE(d.reason.find("0.9000 ms"), std::string::npos) << d.reason;
}

TEST(ChampionRule, WinWithinTheFloorDoesNotPromote) {
  // 0.3 % faster in both comparisons, but below the 0.5 % floor.
  const auto d = decide_champion({1.000, 0.996, 0.001, 0.001}, {1.000, 0.997, 1.000});
  EXPECT_EQ(d.verdict, ChampionVerdict::within_noise);
  EXPECT_NEAR(d.noise_ms, d.noise_floor_ms, 1e-12);
  EXPECT_NE(d.reason.find("within the noise"), std::string::npos) << d.reason;
  // The same lead with a smaller floor promotes: the floor is what stopped it.
  EXPECT_TRUE(decide_champion({1.000, 0.996, 0.001, 0.001}, {1.000, 0.997, 1.000}, ChampionRule{0.001}).promote());
}

TEST(ChampionRule, WinWithinTheMeasuredSpreadDoesNotPromote) {
  // 1.5 % lead, but one case of the challenger's first measurement spreads by 2 %.
  const double spread = relative_spread({{0.40, 0.005}, {0.80, 0.02}});
  EXPECT_DOUBLE_EQ(spread, 0.02);
  const auto d = decide_champion({1.000, 0.980, 0.004, spread}, {1.000, 0.985, 1.000});
  EXPECT_EQ(d.verdict, ChampionVerdict::within_noise);
  EXPECT_NEAR(d.noise_spread_ms, 0.020, 1e-12);
  EXPECT_NEAR(d.noise_ms, 0.020, 1e-12);
  // Weighting the spread down (the median is steadier than the samples) lets the same lead through.
  EXPECT_TRUE(decide_champion({1.000, 0.980, 0.004, spread}, {1.000, 0.985, 1.000}, ChampionRule{0.005, 0.5}).promote());
}

TEST(ChampionRule, WinWithinTheAADriftDoesNotPromote) {
  // B is below both incumbent timings, but the incumbent itself moved by 5 % between A1 and A2.
  const auto d = decide_champion({1.000, 0.960, 0.001, 0.001}, {1.000, 0.940, 0.950});
  EXPECT_EQ(d.verdict, ChampionVerdict::within_noise);
  EXPECT_NEAR(d.noise_aba_ms, 0.050, 1e-12);
  EXPECT_NEAR(d.lead_ms, 0.035, 1e-12);
}

TEST(ChampionRule, ABADisagreementDoesNotPromote) {
  // Mean of A1, A2 is 1.0 and B = 0.95 leads by 5 %, but A2 = 0.94 beats B: drift, not a win.
  const auto d = decide_champion({1.000, 0.950, 0.001, 0.001}, {1.060, 0.950, 0.940});
  EXPECT_EQ(d.verdict, ChampionVerdict::aba_disagree);
  EXPECT_FALSE(d.promote());
  EXPECT_NE(d.reason.find("A/B/A disagrees"), std::string::npos) << d.reason;
  EXPECT_EQ(decide_champion({1.0, 0.9, 0.0, 0.0}, {0.95, 0.95, 1.0}).verdict, ChampionVerdict::aba_disagree);  // tie
}

TEST(ChampionRule, LeadEqualToNoiseDoesNotPromote) {
  // Exactly representable: lead 0.25 == floor 0.25 * 1.0; the lead must exceed the noise.
  EXPECT_EQ(decide_champion({1.0, 0.5, 0.0, 0.0}, {1.0, 0.75, 1.0}, ChampionRule{0.25}).verdict,
            ChampionVerdict::within_noise);
  EXPECT_TRUE(decide_champion({1.0, 0.5, 0.0, 0.0}, {1.0, 0.74, 1.0}, ChampionRule{0.25}).promote());
}

TEST(ChampionRule, PerFamilyChampionsUseTheSameRuleOnFamilyMedians) {
  // The challenger wins the retrieval family clearly and only ties the window family.
  const FirstLook window{0.300, 0.299, relative_spread({{0.30, 0.01}}), relative_spread({{0.299, 0.01}})};
  const FirstLook retrieval{0.600, 0.500, relative_spread({{0.60, 0.005}}), relative_spread({{0.50, 0.004}})};
  EXPECT_EQ(decide_champion(window, {0.300, 0.299, 0.301}).verdict, ChampionVerdict::within_noise);
  EXPECT_TRUE(decide_champion(retrieval, {0.601, 0.502, 0.600}).promote());
}

TEST(ChampionRule, RejectsMeaninglessInput) {
  EXPECT_THROW(prefilter_challenger({0.0, 1.0, 0.0, 0.0}), std::invalid_argument);
  EXPECT_THROW(prefilter_challenger({1.0, -1.0, 0.0, 0.0}), std::invalid_argument);
  EXPECT_THROW(prefilter_challenger({1.0, 0.5, -0.1, 0.0}), std::invalid_argument);
  EXPECT_THROW(decide_champion({1.0, 0.5, 0.0, 0.0}, {1.0, 0.0, 1.0}), std::invalid_argument);
  EXPECT_THROW(decide_champion({1.0, 0.5, 0.0, 0.0}, {1.0, 0.5, 1.0}, ChampionRule{-0.1}), std::invalid_argument);
  EXPECT_THROW(decide_champion({1.0, 0.5, 0.0, 0.0}, {1.0, 0.5, 1.0}, ChampionRule{0.005, -1.0}), std::invalid_argument);
  EXPECT_STREQ(verdict_name(ChampionVerdict::within_noise), "within_noise");
}

}  // namespace
}  // namespace attn
