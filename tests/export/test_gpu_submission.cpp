// The exported submission on a GPU, through python3 + torch: setup() loads the real fa2_mma cubins
// (and, in a second process, rebuilds them with NVRTC), every call matches an fp32 reference within the
// harness's tolerances, non-contiguous inputs and bad dtypes behave, and the host overhead per call is
// measured. Skipped without a GPU or without torch (CI).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "export/shape_rules.hpp"
#include "export/writer.hpp"
#include "tests/export/check_submission_py.hpp"
#include "tests/export/gpu_check_py.hpp"
#include "tests/export/helpers.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;

/// Three real fa2_mma variants: 0 (default config) serves window and untuned shapes, 1 (BLOCK_M 64)
/// global, 2 (BLOCK_N 32) retrieval; rules from the smoke and full suites.
ExportPlan gpu_plan() {
  ExportPlan plan = test::hand_made_plan();
  const Config base = test::fa2_mma_default_config();
  Config b = base, c = base;
  b["BLOCK_M"] = 64;
  c["BLOCK_N"] = 32;
  plan.variants.resize(3, plan.variants[0]);
  const Config configs[] = {base, b, c};
  for (int i = 0; i < 3; ++i) {
    plan.variants[static_cast<std::size_t>(i)].name = "fa2_mma_v" + std::to_string(i);
    plan.variants[static_cast<std::size_t>(i)].defines = configs[i];
    plan.variants[static_cast<std::size_t>(i)].cubin = test::fa2_mma_cubin(configs[i]);
  }
  plan.family_variants = {{Family::sliding_window, 0}, {Family::sliding_window_global, 1},
                          {Family::sliding_window_retrieval, 2}};
  std::vector<CaseAssignment> cases;
  for (const char* suite : {"smoke", "full"})
    for (const CaseSpec& spec : builtin_suite(suite)) cases.push_back({spec, plan.family_variants.at(spec.family), {}});
  plan.rules = build_shape_rules(cases);
  return plan;
}

TEST(ExportGpu, SubmissionLoadsRunsAndMatchesTheReference) {
  if (!test::gpu_available()) GTEST_SKIP() << "no GPU";
  if (!test::python3_torch_cuda_available()) GTEST_SKIP() << "python3 has no torch with CUDA";
  const std::string out = test::temp_dir("export-gpu") + "/sub";
  write_submission_dir(gpu_plan(), load_submission_templates(), out, false);
  const std::string script = test::temp_dir("export-gpu-check") + "/gpu_check.py";
  test::write_file(script, test::gpu_checker_py());

  const auto r = run_command("python3 " + shell_quote(script) + " " + shell_quote(out));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = nlohmann::json::parse(r.output.substr(r.output.rfind("\n{") + 1));
  EXPECT_LT(report["setup_s"].get<double>(), 30.0);
  std::set<std::string> used;
  for (const auto& c : report["cases"]) used.insert(c["variant"].get<std::string>());
  EXPECT_GE(used.size(), 2u) << report.dump(2);
  EXPECT_LT(report["host_us_per_call"].get<double>(), 100.0) << report.dump(2);
  std::printf("host overhead %.1f us/call (allocations alone %.1f us), setup %.2f s\n",
              report["host_us_per_call"].get<double>(), report["host_us_allocations_only"].get<double>(),
              report["setup_s"].get<double>());

  const auto nvrtc = run_command("ATTN_TUNER_FORCE_NVRTC=1 python3 " + shell_quote(script) + " " + shell_quote(out) +
                                 " --quick");
  ASSERT_EQ(nvrtc.status, 0) << nvrtc.output;
  const auto nvrtc_report = nlohmann::json::parse(nvrtc.output.substr(nvrtc.output.rfind("\n{") + 1));
  EXPECT_LT(nvrtc_report["setup_s"].get<double>(), 30.0);
}

// With ATTN_EXPORT_BUNDLE_DIR set: writes that folder for a GPU machine without this build: the
// submission (sub/), gpu_check.py and static_check.py. Skipped otherwise.
TEST(ExportGpu, WritesADeviceBundleWhenAsked) {
  const char* dir = std::getenv("ATTN_EXPORT_BUNDLE_DIR");
  if (!dir || !*dir) GTEST_SKIP() << "ATTN_EXPORT_BUNDLE_DIR not set";
  fs::create_directories(dir);
  write_submission_dir(gpu_plan(), load_submission_templates(), std::string(dir) + "/sub", true);
  test::write_file(std::string(dir) + "/gpu_check.py", test::gpu_checker_py());
  test::write_file(std::string(dir) + "/static_check.py", test::submission_checker_py());
  EXPECT_TRUE(fs::exists(std::string(dir) + "/sub/submission.py"));
}

}  // namespace
}  // namespace attn
