// The idea file format (proposer/idea_file.hpp, docs/ideas.md) and the template JSON layout that lets a diff
// written against the repository apply to every template descended from it (proposer/template_json.hpp).
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "proposer/idea_file.hpp"
#include "proposer/template_json.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

const std::string kDiff = "--- a/kernels_templates/fa3_tma.cu\n+++ b/kernels_templates/fa3_tma.cu\n@@ -1,2 +1,3 @@\n"
                          " a\n+b\n c\n";

std::string error_of(const std::string& text) {
  try {
    parse_idea("x.idea", text);
  } catch (const IdeaInputError& e) {
    return e.what();
  }
  return "(parsed)";
}

// A file header as `diff -ru OLD NEW` writes it names the two folders (an author's helper noticed that a header
// under f/ was patched while fa4_g4.cu under g/ was refused): two different first folders with the same rest are
// dropped for every file alike; one folder on both lines is a path from kernels_templates/ and stays.
TEST(IdeaFile, TheFoldersOfDiffRuAreDroppedForEveryFileAlike) {
  const auto paths = [](const std::string& old_line, const std::string& new_line) {
    const auto i = parse_idea("p.idea", "Description: x\n\n--- " + old_line + "\n+++ " + new_line +
                                            "\n@@ -1 +1 @@\n-a\n+b\n");
    return i.files.at(0).old_path + " " + i.files.at(0).new_path;
  };
  EXPECT_EQ(paths("a/fa4_g4.cu", "g/fa4_g4.cu"), "fa4_g4.cu fa4_g4.cu");
  EXPECT_EQ(paths("a/blocks/g4_consumer.cuh", "f/blocks/g4_consumer.cuh"), "blocks/g4_consumer.cuh blocks/g4_consumer.cuh");
  EXPECT_EQ(paths("parent/blocks/x.cuh\t2026-11-29", "mine/blocks/x.cuh\t2026-11-29"), "blocks/x.cuh blocks/x.cuh");
  EXPECT_EQ(paths("blocks/x.cuh", "blocks/x.cuh"), "blocks/x.cuh blocks/x.cuh");  // written from kernels_templates/
  EXPECT_EQ(paths("a/kernels_templates/fa3_tma.cu", "b/kernels_templates/fa3_tma.cu"), "fa3_tma.cu fa3_tma.cu");
  EXPECT_EQ(paths("zz/blocks/x.cuh", "zz/blocks/x.cuh"), "zz/blocks/x.cuh zz/blocks/x.cuh");  // one folder: kept
  EXPECT_NE(error_of("Description: x\n\n--- p/../x.cu\n+++ q/../x.cu\n@@ -1 +1 @@\n-a\n+b\n").find("leaves kernels_templates/"),
            std::string::npos);
}

TEST(IdeaFile, ParsesHeadersAndDiffAndIsKnownByItsCodeNotItsWords) {
  const auto a = parse_idea("a.idea", "Description: one\nHypothesis: why\nTemplate: fa3_tma\nSpace: {\"X\": [0, 1]}\n"
                                      "Default: {\"X\": 0}\nRetry: yes\n\n" + kDiff);
  EXPECT_EQ(a.description, "one");
  EXPECT_EQ(a.hypothesis, "why");
  EXPECT_EQ(a.template_root, "fa3_tma");
  EXPECT_TRUE(a.retry);
  EXPECT_EQ(a.verdicts, 1);  // the default: one verdict on a parent
  ASSERT_EQ(a.files.size(), 1u);
  EXPECT_EQ(a.files[0].old_path, "fa3_tma.cu");  // a/ and kernels_templates/ dropped
  EXPECT_EQ(a.files[0].new_path, "fa3_tma.cu");
  EXPECT_EQ(a.space.dump(), R"({"X":[0,1]})");
  // Other words, same code: the same idea. Another diff: another idea.
  const auto b = parse_idea("b.idea", "Description: two\nTemplate: fa3_tma\nSpace: {\"X\": [0, 1]}\nDefault: {\"X\": 0}\n\n"
                                      "diff --git a/x b/x\nindex 1..2\n" + kDiff);
  EXPECT_EQ(a.hash, b.hash);
  const auto again = parse_idea("e.idea", "Description: two\nTemplate: fa3_tma\nVerdicts: 3\nSpace: {\"X\": [0, 1]}\n"
                                          "Default: {\"X\": 0}\n\n" + kDiff);
  EXPECT_EQ(again.verdicts, 3);
  EXPECT_EQ(again.hash, a.hash) << "asking for more verdicts does not make it another idea";
  std::string other = kDiff;
  other.replace(other.find("+b"), 2, "+d");
  const auto c = parse_idea("c.idea", "Description: two\nTemplate: fa3_tma\nSpace: {\"X\": [0, 1]}\nDefault: {\"X\": 0}\n\n" + other);
  EXPECT_NE(a.hash, c.hash);
  // A Space-only idea (a macro the source already has) needs no diff.
  EXPECT_NO_THROW(parse_idea("d.idea", "Description: axis only\nSpace: {\"U\": [4, 8]}\nDefault: {\"U\": 4}\n"));
}

TEST(IdeaFile, BadInputIsAClearErrorNamingTheProblem) {
  EXPECT_NE(error_of("Description: \xff\xfe\n\n" + kDiff).find("not UTF-8 on line 1"), std::string::npos);
  EXPECT_NE(error_of(std::string("Description: x\n\0\n", 17)).find("NUL byte"), std::string::npos);
  EXPECT_NE(error_of("\n" + kDiff).find("no 'Description: ...' line"), std::string::npos);
  EXPECT_NE(error_of("Description: x\nColour: red\n\n" + kDiff).find("unknown header 'Colour'"), std::string::npos);
  EXPECT_NE(error_of("Description: x\nDescription: y\n\n" + kDiff).find("given twice"), std::string::npos);
  EXPECT_NE(error_of("Description: x\n").find("changes nothing"), std::string::npos);
  EXPECT_NE(error_of("Description: x\nSpace: {\"X\": [0, 1]}\n\n").find("Default: no value for X"), std::string::npos);
  EXPECT_NE(error_of("Description: x\nSpace: {\"X\": [0, 1]}\nDefault: {\"X\": 2}\n").find("not one of its Space values"),
            std::string::npos);
  EXPECT_NE(error_of("Description: x\nSpace: {\"x\": [0]}\nDefault: {\"x\": 0}\n").find("not an identifier"), std::string::npos);
  EXPECT_NE(error_of("Description: x\nSpace: {\"X\": [0, 0]}\nDefault: {\"X\": 0}\n").find("listed twice"), std::string::npos);
  EXPECT_NE(error_of("Description: x\nSpace: {\"X\": [0.5]}\nDefault: {\"X\": 0.5}\n").find("not an integer"), std::string::npos);
  EXPECT_NE(error_of("Description: x\nSpace: [1]\n").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(error_of("Description: x\nRetry: maybe\n\n" + kDiff).find("Retry is yes or no"), std::string::npos);
  for (const char* bad : {"0", "10", "two", "2.5"})
    EXPECT_NE(error_of(std::string("Description: x\nVerdicts: ") + bad + "\n\n" + kDiff).find("Verdicts is a number from 1 to 9"),
              std::string::npos) << bad;
  EXPECT_NE(error_of("Description: " + std::string(400, 'a') + "\n\n" + kDiff).find("over 300"), std::string::npos);
  // The diff: counts that do not add up, a header without hunks, paths that leave the folder, binary patches.
  EXPECT_NE(error_of("Description: x\n\n--- a/f.cu\n+++ b/f.cu\n@@ -1,3 +1,3 @@\n a\n").find("ends early"), std::string::npos);
  EXPECT_NE(error_of("Description: x\n\n--- a/f.cu\n+++ b/f.cu\n").find("no hunk"), std::string::npos);
  EXPECT_NE(error_of("Description: x\n\n--- a/f.cu\nnot plus\n").find("not followed by a '+++ ' line"), std::string::npos);
  EXPECT_NE(error_of("Description: x\n\n--- a/../x.cu\n+++ b/../x.cu\n@@ -1 +1 @@\n-a\n+b\n").find("leaves kernels_templates/"),
            std::string::npos);
  EXPECT_NE(error_of("Description: x\n\n--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n").find("absolute path"),
            std::string::npos);
  EXPECT_NE(error_of("Description: x\n\nGIT binary patch\nliteral 1\n").find("binary patch"), std::string::npos);
  EXPECT_NE(error_of("Description: x\n\n--- a/f.cu\n+++ b/f.cu\n@@ -1 +1 @@\n-a\n?b\n").find("inside a hunk"),
            std::string::npos);
}

TEST(TemplateJson, TheRepositoryTemplatesAreInTheLayoutItWrites) {
  // Installed templates are written in this layout, so a diff of a repository .json applies to a descendant.
  for (const char* name : {"fa3_tma", "fa4_g4", "fa2_mma", "wgmma_fa"}) {
    const std::string path = test::data_dir() + "/../../kernels_templates/" + name + ".json";
    const std::string text = test::read_text(path);
    ASSERT_FALSE(text.empty()) << path;
    EXPECT_EQ(format_template_json(nlohmann::ordered_json::parse(text)), text) << name;
  }
}

}  // namespace
}  // namespace attn
