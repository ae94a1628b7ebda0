// The project's real kernel templates: every kernels_templates/*.json loads, its default config is
// valid and in the enumeration, and the enumeration is non-empty and consistent with check().
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tuner/space.hpp"

namespace attn {
namespace {

std::vector<std::string> template_jsons() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(ATTN_TEMPLATES_DIR))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(KernelTemplates, EveryJsonLoadsWithValidDefaultAndNonEmptySpace) {
  const auto files = template_jsons();
  ASSERT_FALSE(files.empty()) << "no *.json template space in " << ATTN_TEMPLATES_DIR;
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const auto s = TemplateSpace::load(f);
    EXPECT_EQ(std::filesystem::path(f).stem().string(), s.name());
    EXPECT_TRUE(std::filesystem::is_regular_file(s.source_path())) << s.source_path();
    EXPECT_EQ(s.check(s.default_config()), std::nullopt);
    const auto all = s.enumerate();
    ASSERT_FALSE(all.empty());
    EXPECT_LE(all.size(), s.raw_size());
    EXPECT_NE(std::find(all.begin(), all.end(), s.default_config()), all.end());
    for (const auto& c : all) ASSERT_EQ(s.check(c), std::nullopt) << config_to_compact(c);
    // Through the name lookup the daemon uses.
    EXPECT_EQ(TemplateSpace::load_named(ATTN_TEMPLATES_DIR, s.name()).enumerate().size(), all.size());
  }
}

}  // namespace
}  // namespace attn
