// drop_unreached_variants (export/plan.hpp, issue 48 item 6): the export ships no variant that no call reaches. The
// research DB's full export had shipped its global-family champion, every case of which went to the overall
// champion: loaded and self-checked by setup(), never launched (tests/docs/research_db_commands.py checks that DB).
#include <gtest/gtest.h>

#include "export/plan.hpp"

namespace attn {
namespace {

ExportVariant variant(const std::string& name) {
  ExportVariant v;
  v.name = name;
  return v;
}

ShapeRule rule(int variant, int t_max) {
  ShapeRule r;
  r.variant = variant;
  r.min_t_max = r.max_t_max = t_max;
  return r;
}

TEST(UnreachedVariants, OnlyTheDefaultAndTheRulesVariantsAreKeptAndRenumbered) {
  ExportPlan plan;
  plan.variants = {variant("overall"), variant("global_family"), variant("bucket"), variant("window_family")};
  plan.default_variant = 0;
  plan.rules = {rule(0, 1024), rule(3, 2048), rule(0, 4096)};  // nothing routes to 1 (its cases went to 0) or 2
  plan.family_variants = {{Family::sliding_window, 3}, {Family::sliding_window_global, 1}};
  const std::vector<int> to = drop_unreached_variants(plan);
  EXPECT_EQ(to, (std::vector<int>{0, -1, -1, 1}));
  ASSERT_EQ(plan.variants.size(), 2u);
  EXPECT_EQ(plan.variants[0].name, "overall");
  EXPECT_EQ(plan.variants[1].name, "window_family");
  EXPECT_EQ(plan.default_variant, 0);
  ASSERT_EQ(plan.rules.size(), 3u);
  EXPECT_EQ(plan.rules[1].variant, 1);
  EXPECT_EQ(plan.family_variants.at(Family::sliding_window), 1);
  EXPECT_EQ(plan.family_variants.count(Family::sliding_window_global), 0u);  // labelled with the default
  // Every call still gets a variant, the same kernel as before.
  EXPECT_EQ(plan.variants[static_cast<std::size_t>(pick_variant(plan, 1, 1, 2048, 1))].name, "window_family");
  EXPECT_EQ(plan.variants[static_cast<std::size_t>(pick_variant(plan, 1, 1, 8192, 1))].name, "overall");
  // The manifest still partitions the families over what is exported.
  const auto manifest = variant_manifest(plan);
  std::size_t families = 0;
  for (const auto& m : manifest) families += m.families.empty() ? 3 : m.families.size();
  EXPECT_EQ(families, 3u);

  // Nothing unreached: nothing changes.
  const ExportPlan before = plan;
  EXPECT_EQ(drop_unreached_variants(plan), (std::vector<int>{0, 1}));
  EXPECT_EQ(plan.variants.size(), before.variants.size());
  EXPECT_EQ(plan.rules, before.rules);
}

}  // namespace
}  // namespace attn
