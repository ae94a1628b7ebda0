// One source for a template's defaults (tuner/template_defaults.hpp): the JSON "default". Every template the
// project ships or tests with, and every idea of lab/ideas that carries a default, agrees with its source; the
// repository's templates keep no fallback for a parameter at all.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/templates_dir.hpp"
#include "gpu/compiler.hpp"
#include "proposer/idea_file.hpp"
#include "tests/test_support.hpp"
#include "tuner/space.hpp"
#include "tuner/template_defaults.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;

/// Every <dir>/*.json that is a template space (the folder's other JSON files are not).
std::vector<TemplateSpace> spaces_in(const std::string& dir) {
  std::vector<TemplateSpace> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") out.push_back(TemplateSpace::load(e.path().string()));
  return out;
}

/// The source of `space` and its local includes, concatenated.
std::string source_texts(const TemplateSpace& space) {
  std::string all = test::read_text(space.source_path());
  for (const auto& [name, text] : local_includes(space.source_path())) all += "\n" + text;
  return all;
}

TEST(TemplateDefaults, SourceFallbacksReadsIfndefDefinePairs) {
  const Config f = source_fallbacks(
      "#ifndef WARPS\n#define WARPS 8\n#endif\n"
      "#ifndef  STAGES\n#  define STAGES -2  // a comment\n#endif\n"
      "#ifndef SOFTMAX\n#error \"SOFTMAX not given\"\n#endif\n"    // no fallback
      "#ifndef A\n#define B 1\n#endif\n"                             // another macro's define
      "#ifndef EXPR\n#define EXPR (1 + 2)\n#endif\n"                 // not an integer
      "#ifndef WARPS_X\n#define WARPS_X 3\n#endif\n"
      "#ifndef WARPS\n#define WARPS 16\n#endif\n"                    // the first one counts
      "#ifndef LAST\n");
  EXPECT_EQ(f, (Config{{"STAGES", -2}, {"WARPS", 8}, {"WARPS_X", 3}}));
}

TEST(TemplateDefaults, ADisagreementNamesTheParameterTheFileAndBothValues) {
  const std::string dir = test::temp_dir("template_defaults");
  test::write_text(dir + "/t.cu", "#include \"h.cuh\"\n#ifndef X\n#define X 8\n#endif\n");
  test::write_text(dir + "/h.cuh", "#ifndef Y\n#define Y 2\n#endif\n#ifndef SWITCH\n#define SWITCH 5\n#endif\n");
  test::write_text(dir + "/t.json", R"({"name": "t", "source": "t.cu", "kernel": "k",
      "parameters": {"X": {"values": [4, 8]}, "Y": {"values": [1, 2]}}, "default": {"X": 4, "Y": 2}})");
  EXPECT_EQ(default_disagreements(TemplateSpace::load(dir + "/t.json")),
            std::vector<std::string>{"X: t.cu falls back to 8, the default is 4"});
  fs::remove(dir + "/t.cu");
  EXPECT_THROW(default_disagreements(TemplateSpace::load(dir + "/t.json")), std::invalid_argument);
}

// Fails on the code before issue 41: fa2_mma.cu fell back to WARPS 8 (JSON 4), wgmma_fa.cu to STAGES 2 and
// OVERLAP_PV 0 (JSON 3 and 1), and fake.cu to A 1 and B 1 (fake_healthy.json and fake_campaign.json: A 4, B 2).
TEST(TemplateDefaults, EveryTemplateAgreesWithItsJson) {
  std::size_t checked = 0;
  for (const std::string& dir : std::vector<std::string>{default_templates_dir(), test::data_dir() + "/fake_templates",
                                test::data_dir() + "/redteam", test::data_dir() + "/spin_templates"})
    for (const auto& space : spaces_in(dir)) {
      EXPECT_EQ(default_disagreements(space), std::vector<std::string>{}) << space.json_path();
      ++checked;
    }
  EXPECT_GE(checked, 3u + 3u + 8u + 1u);
}

// The repository's templates: a parameter of the space has no fallback at all (the source stops with #error
// when it is not given), so the JSON is the only place its default can be read.
TEST(TemplateDefaults, RepositoryTemplatesKeepNoFallbackForAParameter) {
  const auto spaces = spaces_in(default_templates_dir());
  ASSERT_EQ(spaces.size(), 4u);  // fa2_mma, wgmma_fa, fa3_tma, fa4_g4
  for (const auto& space : spaces) {
    const Config fallbacks = source_fallbacks(source_texts(space));
    for (const auto& p : space.parameters()) EXPECT_EQ(fallbacks.count(p.name), 0u) << space.name() << " " << p.name;
    const std::string text = test::read_text(space.source_path());
    for (const auto& p : space.parameters())
      EXPECT_NE(text.find("#ifndef " + p.name + "\n#error \"" + p.name + " not given"), std::string::npos)
          << space.name() << " " << p.name;
  }
}

// What the #error does: a request that lacks a parameter (built by hand: compile_request would complete it) does
// not compile, and the log names the parameter.
TEST(TemplateDefaults, ARepositoryTemplateDoesNotCompileWithoutAParameter) {
  CompilerOptions o;
  o.use_cache = false;
  const Compiler compiler(o);
  for (const auto& space : spaces_in(default_templates_dir())) {
    const std::string missing = space.parameters().back().name;
    Config c = space.default_config();
    c.erase(missing);
    const CompiledVariant v = compiler.compile({space.source_path(), space.kernel(), c, {}});
    EXPECT_FALSE(v.ok) << space.name();
    EXPECT_NE(v.log.find(missing + " not given"), std::string::npos) << space.name() << ": " << v.log;
  }
}

/// The defaults an idea gives: its Default header, and the "default" object a diff of the template's JSON adds.
Config idea_defaults(const IdeaFile& idea) {
  Config out;
  for (auto it = idea.defaults.begin(); it != idea.defaults.end(); ++it) out[it.key()] = it->get<std::int64_t>();
  for (const auto& f : idea.files) {
    if (fs::path(f.new_path).extension() != ".json") continue;
    std::size_t start = 0;
    while (start < f.text.size()) {
      const auto end = std::min(f.text.find('\n', start), f.text.size());
      const std::string line = f.text.substr(start, end - start);
      start = end + 1;
      const auto key = line.find("\"default\":");
      if (line.rfind("+", 0) != 0 || line.rfind("+++", 0) == 0 || key == std::string::npos) continue;
      std::string object = line.substr(key + 10);
      while (!object.empty() && (object.back() == ',' || object.back() == ' ')) object.pop_back();
      const nlohmann::json j = nlohmann::json::parse(object);
      for (auto it = j.begin(); it != j.end(); ++it) out[it.key()] = it->get<std::int64_t>();
    }
  }
  return out;
}

/// The lines an idea's diff adds to sources and headers (the leading '+' dropped).
std::string added_source_lines(const IdeaFile& idea) {
  std::string out;
  for (const auto& f : idea.files) {
    if (fs::path(f.new_path).extension() == ".json") continue;
    std::size_t start = 0;
    while (start < f.text.size()) {
      const auto end = std::min(f.text.find('\n', start), f.text.size());
      const std::string line = f.text.substr(start, end - start);
      start = end + 1;
      if (line.rfind("+", 0) == 0 && line.rfind("+++", 0) != 0) out += line.substr(1) + "\n";
    }
  }
  return out;
}

// The ideas of lab/ideas: a fallback an idea adds for its new axis, or one the parent already has for a macro the
// idea makes an axis (a measurement switch), equals the default the idea gives it.
TEST(TemplateDefaults, EveryLabIdeaDefaultAgreesWithItsFallback) {
  const TemplateSpace parent = TemplateSpace::load_named(default_templates_dir(), "fa3_tma");
  const Config parent_fallbacks = source_fallbacks(source_texts(parent));
  std::size_t checked = 0;
  for (const auto& e : fs::directory_iterator(std::string(ATTN_SOURCE_DIR) + "/lab/ideas")) {
    if (e.path().extension() != ".idea") continue;
    const IdeaFile idea = parse_idea(e.path().filename().string(), test::read_text(e.path().string()));
    ASSERT_EQ(idea.template_root, "fa3_tma") << e.path();
    Config fallbacks = source_fallbacks(added_source_lines(idea));
    fallbacks.insert(parent_fallbacks.begin(), parent_fallbacks.end());  // the idea's own come first
    for (const auto& [name, value] : idea_defaults(idea)) {
      const auto f = fallbacks.find(name);
      if (f == fallbacks.end()) continue;
      EXPECT_EQ(f->second, value) << e.path() << ": " << name;
      ++checked;
    }
  }
  EXPECT_GE(checked, 10u);  // the new axes of 04-17 and 03's L2_PREFETCH
}

}  // namespace
}  // namespace attn
