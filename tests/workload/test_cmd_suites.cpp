// `attn-tuner suites`: the built binary's output against the workload library.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/test_support.hpp"
#include "workload/roofline.hpp"

namespace attn {
namespace {

struct CliRun {
  int code = -1;
  std::string out;  // stdout and stderr together
};

CliRun run_cli(const std::string& args) {
  CliRun r;
  FILE* p = ::popen((test::binary_path() + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(CmdSuites, JsonWorkMatchesTheLibrary) {
  const CliRun r = run_cli("suites --name local-dev --json --tflops 500 --tbps 2");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["suites"].size(), 1u);
  const auto& s = doc["suites"][0];
  EXPECT_EQ(s["name"], "local-dev");
  const auto suite = builtin_suite("local-dev");
  ASSERT_EQ(s["cases"].size(), suite.size());
  const Ceilings ceil{500e12, 2e12};
  std::vector<Family> fams;
  std::vector<double> floors;
  for (std::size_t i = 0; i < suite.size(); ++i) {
    const auto& j = s["cases"][i];
    nlohmann::json spec = j;
    spec.erase("work");
    EXPECT_EQ(case_from_json(spec), suite[i]);
    const auto L = build_layout(suite[i]);
    const auto w = case_work(L, suite[i].t_max);
    EXPECT_EQ(j["work"]["kv_block_pairs"].get<std::int64_t>(), w.kv_block_pairs);
    EXPECT_EQ(j["work"]["flops"].get<double>(), w.flops);
    EXPECT_EQ(j["work"]["bytes"].get<double>(), w.bytes);
    EXPECT_EQ(j["work"]["seq_lens"].get<std::vector<std::int32_t>>(), L.seq_lens);
    EXPECT_NEAR(j["work"]["floor_us"].get<double>(), w.floor_s(ceil) * 1e6, 1e-9);
    fams.push_back(suite[i].family);
    floors.push_back(w.floor_s(ceil));
  }
  EXPECT_NEAR(s["floor_score_us"].get<double>(), suite_score(fams, floors).geomean * 1e6, 1e-9);
}

TEST(CmdSuites, TableListsEveryBuiltinSuite) {
  const CliRun r = run_cli("suites");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const auto& name : builtin_suite_names()) EXPECT_NE(r.out.find("suite " + name + " ("), std::string::npos);
  EXPECT_NE(r.out.find("broad-retrieval-3"), std::string::npos);
  EXPECT_NE(r.out.find("floor score:"), std::string::npos);
}

TEST(CmdSuites, WriteManifestRoundTrips) {
  const std::string path = test::temp_dir("suites-cli") + "/quick.json";
  const CliRun r = run_cli("suites --name quick --root-seed 7 --write-manifest " + path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(suite_from_manifest_file(path), builtin_suite("quick", 7));
  const CliRun again = run_cli("suites --manifest " + path + " --json");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(nlohmann::json::parse(again.out)["suites"][0]["cases"].size(), 3u);
}

TEST(CmdSuites, ErrorsAreClear) {
  CliRun r = run_cli("suites --name quik");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown suite 'quik'"), std::string::npos) << r.out;
  const std::string bad = test::temp_dir("suites-cli") + "/bad.json";
  std::ofstream(bad) << R"([{"case_id": "a", "family": "sliding_window", "batch_size": 1, "num_heads": 1,
                            "t_max": 200, "window_blocks": 1}])";
  r = run_cli("suites --manifest " + bad);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("t_max 200 is not a positive multiple of 128"), std::string::npos) << r.out;
  r = run_cli("suites --write-manifest " + bad + ".out");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--write-manifest needs one suite"), std::string::npos) << r.out;
  r = run_cli("suites --name smoke --tbps -1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("must be positive"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace attn
