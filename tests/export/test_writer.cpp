// The exported directory, checked statically with plain python3 (no torch, no GPU): the harness's file
// and import rules, VARIANT_MANIFEST, the embedded cubins, and the dispatch rule against the C++ one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "export/encoding.hpp"
#include "export/harness_check.hpp"
#include "export/writer.hpp"
#include "tests/export/check_submission_py.hpp"
#include "tests/export/helpers.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

/// Runs the checker on `dir`; returns its JSON; decoded cubins go to `decoded_dir` when given.
nlohmann::json check_dir(const std::string& dir, const std::string& decoded_dir = "") {
  const std::string script = test::temp_dir("export-checker") + "/check.py";
  test::write_file(script, test::submission_checker_py());
  std::string cmd = "python3 " + shell_quote(script) + " " + shell_quote(dir);
  if (!decoded_dir.empty()) cmd += " " + shell_quote(decoded_dir);
  const auto r = run_command(cmd);
  EXPECT_EQ(r.status, 0) << r.output;
  return nlohmann::json::parse(r.output.substr(r.output.find('{')));
}

class ExportWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::python3_available()) GTEST_SKIP() << "python3 not available";
  }
};

TEST_F(ExportWriter, HandMadePlanPassesTheHarnessRulesAndRoundTripsCubins) {
  const ExportPlan plan = test::hand_made_plan();
  const std::string out = test::temp_dir("export-writer") + "/sub";
  write_submission_dir(plan, load_submission_templates(), out, false);
  for (const char* f : {"submission.py", "attn_tuner_dispatch.py", "attn_tuner_cuda.py", "export_plan.json", "README.md",
                        "kernels/fa2_mma_i7.cu.txt", "kernels/fa2_mma_i7.cubin.b64.txt",
                        "kernels/fa2_mma_i9.cubin.b64.txt"})
    EXPECT_TRUE(fs::is_regular_file(out + "/" + f)) << f;
  // Both variants are fa2_mma: one copy of the source, which i9's entry names.
  EXPECT_FALSE(fs::exists(out + "/kernels/fa2_mma_i9.cu.txt"));
  EXPECT_EQ(test::read_file(out + "/kernels/fa2_mma_i7.cu.txt"), plan.variants[1].source);
  const std::string submission = test::read_file(out + "/submission.py");
  EXPECT_EQ(submission.find("fa2_mma_i9.cu.txt"), std::string::npos);
  // The README names the official harness's command (issue 38 item 5), not a path of this repository's setup.
  const std::string readme = test::read_file(out + "/README.md");
  EXPECT_NE(readme.find("    python -m attention_kernel_challenge.cli eval-submission --submission-dir THIS_DIR --suite " +
                        default_harness_suite(plan.suite) + " --device cuda --serverlike\n"),
            std::string::npos)
      << readme;
  EXPECT_EQ(readme.find("run_harness.sh"), std::string::npos) << readme;

  const std::string decoded = test::temp_dir("export-decoded");
  const auto report = check_dir(out, decoded);
  EXPECT_TRUE(report["problems"].empty()) << report.dump(2);
  EXPECT_GT(report["cases_checked"].get<int>(), 1000);
  // window -> i7 (default), global -> i9, retrieval has no champion -> default i7.
  EXPECT_EQ(report["manifest"], nlohmann::json::parse(R"([
      {"name": "fa2_mma_i7", "families": ["sliding_window", "sliding_window_retrieval"]},
      {"name": "fa2_mma_i9", "families": ["sliding_window_global"]}])"));
  for (const ExportVariant& v : plan.variants) {
    const std::string bytes = test::read_file(decoded + "/" + v.name + ".bin");
    EXPECT_EQ(std::vector<std::uint8_t>(bytes.begin(), bytes.end()), v.cubin) << v.name;
  }
  // No temporary folders left beside the output.
  for (const auto& e : fs::directory_iterator(fs::path(out).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".sub.export-"), std::string::npos) << e.path();
}

TEST_F(ExportWriter, SixteenVariantsOfOneTemplateShareItsSourceAndHeaders) {
  // fa3_tma includes about ten headers: a copy per variant would be 16 * 12 files, over the harness's 128.
  ExportPlan plan = test::hand_made_plan();
  ExportVariant base = plan.variants[0];
  base.headers.clear();  // ten made-up headers in their place
  for (int h = 0; h < 10; ++h) base.headers.emplace_back(fmt::format("blocks/h{}.cuh", h), fmt::format("// header {}\n", h));
  plan.variants.clear();
  for (int i = 0; i < kMaxExportVariants; ++i) {
    ExportVariant v = base;
    v.name = fmt::format("fa2_mma_i{}", 100 + i);
    v.cubin.push_back(static_cast<std::uint8_t>(i));  // distinct cubins
    plan.variants.push_back(std::move(v));
  }
  plan.variants[15].headers[3].second = "// header 3, edited\n";  // one text differs: its own file
  const auto files = render_submission(plan, load_submission_templates());
  EXPECT_EQ(files.size(), 5u + 16u + 1u + 10u + 1u);  // five: submission, dispatch, cuda, plan, README
  EXPECT_TRUE(files.count("kernels/fa2_mma_i115.inc.blocks_h3.cuh.txt"));
  EXPECT_FALSE(files.count("kernels/fa2_mma_i115.inc.blocks_h2.cuh.txt"));
  const std::string out = test::temp_dir("export-writer") + "/sub";
  write_submission_dir(plan, load_submission_templates(), out, false);
  const auto report = check_dir(out);  // every source_file and header path of _VARIANTS exists
  EXPECT_TRUE(report["problems"].empty()) << report.dump(2);
  EXPECT_EQ(report["variants"].size(), 16u);
}

TEST_F(ExportWriter, ManifestIsOneCatchAllWhenOneVariantServesEveryFamily) {
  ExportPlan plan = test::hand_made_plan();
  plan.family_variants.clear();
  const std::string out = test::temp_dir("export-writer") + "/sub";
  write_submission_dir(plan, load_submission_templates(), out, false);
  const auto report = check_dir(out);
  EXPECT_TRUE(report["problems"].empty()) << report.dump(2);
  // i9 serves no family in the manifest but is still exported for its dispatch rule.
  EXPECT_EQ(report["manifest"], nlohmann::json::parse(R"([{"name": "fa2_mma_i7"}])"));
  EXPECT_EQ(report["variants"], nlohmann::json::parse(R"(["fa2_mma_i7", "fa2_mma_i9"])"));
}

TEST_F(ExportWriter, ManifestHasNoDefaultEntryWhenEveryFamilyHasItsChampion) {
  ExportPlan plan = test::hand_made_plan();
  plan.variants.push_back(plan.variants[1]);
  plan.variants[2].name = "fa2_mma_i11";
  plan.family_variants = {{Family::sliding_window, 1}, {Family::sliding_window_global, 1},
                          {Family::sliding_window_retrieval, 2}};
  const std::string out = test::temp_dir("export-writer") + "/sub";
  write_submission_dir(plan, load_submission_templates(), out, false);
  const auto report = check_dir(out);
  EXPECT_TRUE(report["problems"].empty()) << report.dump(2);
  EXPECT_EQ(report["manifest"], nlohmann::json::parse(R"([
      {"name": "fa2_mma_i9", "families": ["sliding_window", "sliding_window_global"]},
      {"name": "fa2_mma_i11", "families": ["sliding_window_retrieval"]}])"));
}

TEST_F(ExportWriter, PythonDispatchAgreesWithTheCppRuleAndImportsNoTorch) {
  ExportPlan plan = test::hand_made_plan();
  plan.rules.push_back(ShapeRule{1, 1, 4, 8, 32, 4096, 16384, 10, 20, "ranges"});
  const std::string out = test::temp_dir("export-writer") + "/sub";
  write_submission_dir(plan, load_submission_templates(), out, false);

  nlohmann::json shapes = nlohmann::json::array();
  for (int b : {1, 2, 3, 5})
    for (int h : {8, 16, 33})
      for (int t : {128, 4096, 8192, 16384, 32768})
        for (int cw : {1, 10, 15, 20, 21, 149, 150, 200, 250, 251, 299, 300, 400, 401}) shapes.push_back({b, h, t, cw});
  const std::string shapes_file = test::temp_dir("export-shapes") + "/shapes.json";
  test::write_file(shapes_file, shapes.dump());
  const auto r = run_command(
      "python3 -c " +
      shell_quote("import json, sys\n"
                  "sys.path.insert(0, sys.argv[1])\n"
                  "import attn_tuner_dispatch as d\n"
                  "assert 'torch' not in sys.modules\n"
                  "shapes = json.load(open(sys.argv[2]))\n"
                  "print(json.dumps([d.pick_variant(*s) for s in shapes]))\n") +
      " " + shell_quote(out) + " " + shell_quote(shapes_file));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto picks = nlohmann::json::parse(r.output);
  ASSERT_EQ(picks.size(), shapes.size());
  int tuned = 0, fallback = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    const int expected = pick_variant(plan, s[0], s[1], s[2], s[3]);
    EXPECT_EQ(picks[i].get<int>(), expected) << s.dump();
    (expected == plan.default_variant ? fallback : tuned)++;
  }
  // The tuned shapes get their class, and shapes never tuned the default.
  EXPECT_EQ(pick_variant(plan, 2, 16, 8192, 200), 0);
  EXPECT_EQ(pick_variant(plan, 2, 16, 8192, 350), 1);
  EXPECT_EQ(pick_variant(plan, 2, 16, 8192, 280), plan.default_variant);
  EXPECT_EQ(pick_variant(plan, 7, 16, 8192, 350), plan.default_variant);
  EXPECT_GT(tuned, 20);
  EXPECT_GT(fallback, 20);
}

TEST_F(ExportWriter, RefusesANonEmptyOutWithoutForceAndReplacesAnEarlierExportWithIt) {
  const ExportPlan plan = test::hand_made_plan();
  const auto templates = load_submission_templates();
  const std::string out = test::temp_dir("export-writer") + "/sub";
  write_submission_dir(plan, templates, out, false);
  test::write_file(out + "/marker.txt", "earlier");
  EXPECT_THROW(write_submission_dir(plan, templates, out, false), std::invalid_argument);
  EXPECT_TRUE(fs::exists(out + "/marker.txt"));
  write_submission_dir(plan, templates, out, true);
  EXPECT_FALSE(fs::exists(out + "/marker.txt"));
  EXPECT_TRUE(fs::exists(out + "/submission.py"));

  // An unrelated non-empty folder is refused even with force; an empty one is fine without.
  const std::string other = test::temp_dir("export-other");
  test::write_file(other + "/notes.txt", "mine");
  EXPECT_THROW(write_submission_dir(plan, templates, other, true), std::invalid_argument);
  EXPECT_EQ(test::read_file(other + "/notes.txt"), "mine");
  const std::string empty = test::temp_dir("export-empty");
  write_submission_dir(plan, templates, empty, false);
  EXPECT_TRUE(fs::exists(empty + "/submission.py"));
  // A file in the way, and the root, are refused.
  EXPECT_THROW(check_output_dir(other + "/notes.txt", true), std::invalid_argument);
  EXPECT_THROW(check_output_dir("/", true), std::invalid_argument);
}

TEST_F(ExportWriter, BadPlansAndTemplatesWriteNothing) {
  const auto templates = load_submission_templates();
  const std::string parent = test::temp_dir("export-bad");
  auto expect_nothing_written = [&](const ExportPlan& plan, const SubmissionTemplates& t, const char* what) {
    EXPECT_THROW(write_submission_dir(plan, t, parent + "/sub", false), std::invalid_argument) << what;
    EXPECT_TRUE(fs::is_empty(parent)) << what;
  };
  ExportPlan p = test::hand_made_plan();
  p.variants[1].cubin.clear();
  expect_nothing_written(p, templates, "empty cubin");
  p = test::hand_made_plan();
  p.variants[1].name = p.variants[0].name;
  expect_nothing_written(p, templates, "duplicate name");
  p = test::hand_made_plan();
  p.variants[0].name = "a-b";
  expect_nothing_written(p, templates, "name with a dash");
  p = test::hand_made_plan();
  p.rules[0].variant = 2;
  expect_nothing_written(p, templates, "rule variant out of range");
  p = test::hand_made_plan();
  p.rules[0].min_t_max = 64;
  expect_nothing_written(p, templates, "t_max below 128");
  p = test::hand_made_plan();
  p.variants[0].nvrtc_options.push_back("-arch=sm_80");
  expect_nothing_written(p, templates, "-arch among the options");
  p = test::hand_made_plan();
  p.variants.resize(17, p.variants[0]);
  for (std::size_t i = 0; i < p.variants.size(); ++i) p.variants[i].name = "v" + std::to_string(i);
  expect_nothing_written(p, templates, "17 variants");
  p = test::hand_made_plan();
  p.variants[0].cubin.assign(21u << 20, 0x5a);  // 28 MiB of base64
  expect_nothing_written(p, templates, "over 20 MiB");
  SubmissionTemplates t = templates;
  t.dispatch_py += "\nX = __ATTN_EXPORT_DISPATCH_RULES__\n";
  expect_nothing_written(test::hand_made_plan(), t, "placeholder twice");
  t = templates;
  t.submission_py += "\nY = __ATTN_EXPORT_SOMETHING__\n";
  expect_nothing_written(test::hand_made_plan(), t, "unknown placeholder");
  EXPECT_THROW(load_submission_templates(parent + "/nowhere"), std::invalid_argument);
}

TEST(ExportEncoding, MatchesPythonBase64Crc32AndLiterals) {
  if (!test::python3_available()) GTEST_SKIP() << "python3 not available";
  const nlohmann::json value = nlohmann::json::parse(R"({"a": [1, -2, 3.5, 1e-7, true, false, null],
      "s": "quote \" backslash \\ newline \n tab \t unicode \u00e9 \u2603", "nested": {"x": [[], {}], "y": [[1, [2]]]}})");
  std::vector<std::uint8_t> bytes;
  for (int i = 0; i < 3000; ++i) bytes.push_back(static_cast<std::uint8_t>((i * 131 + i / 7) & 0xff));
  const std::string dir = test::temp_dir("export-encoding");
  test::write_file(dir + "/literal.py", "VALUE = " + python_literal(value, 2, 2) + "\n");
  test::write_file(dir + "/value.json", value.dump());
  for (std::size_t n : {0u, 1u, 2u, 3u, 2999u, 3000u}) {
    std::vector<std::uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    test::write_file(dir + "/b" + std::to_string(n) + ".txt", base64_encode(prefix));
    test::write_file(dir + "/b" + std::to_string(n) + ".bin", std::string(prefix.begin(), prefix.end()));
    EXPECT_EQ(base64_decode(base64_encode(prefix)), prefix);
    EXPECT_EQ(base64_decode(base64_encode(prefix, 0)), prefix);
  }
  const auto r = run_command(
      "cd " + shell_quote(dir) + " && python3 -c " +
      shell_quote("import ast, base64, json, zlib\n"
                  "tree = ast.parse(open('literal.py').read())\n"
                  "assert ast.literal_eval(tree.body[0].value) == json.load(open('value.json'))\n"
                  "for n in (0, 1, 2, 3, 2999, 3000):\n"
                  "    raw = open('b%d.bin' % n, 'rb').read()\n"
                  "    assert base64.b64decode(open('b%d.txt' % n, 'rb').read()) == raw, n\n"
                  "    assert open('b%d.txt' % n).read().replace(chr(10), '') == base64.b64encode(raw).decode(), n\n"
                  "print(zlib.crc32(open('b3000.bin', 'rb').read()))\n"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(std::stoul(r.output), crc32(bytes));
  EXPECT_EQ(crc32({}), 0u);
  EXPECT_EQ(crc32({'1', '2', '3', '4', '5', '6', '7', '8', '9'}), 0xCBF43926u);  // the CRC-32 check value
  EXPECT_THROW(base64_decode("QQ"), std::invalid_argument);
  EXPECT_THROW(base64_decode("Q*=="), std::invalid_argument);
  EXPECT_THROW(python_literal(nlohmann::json(std::nan(""))), std::invalid_argument);
}

}  // namespace
}  // namespace attn
