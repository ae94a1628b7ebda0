// CaseSpec rules, manifest JSON and built-in suites against the harness's cases.py.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/test_support.hpp"
#include "workload/case_spec.hpp"

namespace attn {
namespace {

CaseSpec valid_case() {
  CaseSpec c;
  c.case_id = "x";
  c.family = Family::sliding_window_retrieval;
  c.batch_size = 2;
  c.num_heads = 3;
  c.t_max = 512;
  c.window_blocks = 2;
  c.retrieval_blocks = 2;
  c.seed = 5;
  return c;
}

std::string rule_error(const CaseSpec& c) {
  try {
    validate_case_spec(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(CaseSpec, FamilyNamesRoundTrip) {
  for (Family f : kAllFamilies) EXPECT_EQ(parse_family(family_name(f)), f);
  EXPECT_STREQ(family_name(Family::sliding_window_global), "sliding_window_global");
  EXPECT_STREQ(family_short_name(Family::sliding_window_retrieval), "retrieval");
  EXPECT_THROW(parse_family("sliding"), std::invalid_argument);
}

TEST(CaseSpec, ValidationRulesNameTheBrokenRule) {
  EXPECT_EQ(rule_error(valid_case()), "");
  auto broken = [](auto edit) {
    CaseSpec c = valid_case();
    edit(c);
    return rule_error(c);
  };
  EXPECT_EQ(broken([](CaseSpec& c) { c.t_max = 300; }), "case 'x': t_max 300 is not a positive multiple of 128");
  EXPECT_NE(broken([](CaseSpec& c) { c.t_max = 0; }).find("t_max 0 is not a positive multiple"), std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.t_max = -128; }).find("t_max -128"), std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.batch_size = 0; }).find("batch_size 0 must be >= 1"), std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.num_heads = -1; }).find("num_heads -1 must be >= 1"), std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.window_blocks = 0; }).find("window_blocks 0 must be >= 1"), std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.global_blocks = -1; }).find("global_blocks -1 must not be negative"),
            std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.retrieval_blocks = -2; }).find("retrieval_blocks -2"), std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.retrieval_local_bias = 1.5; }).find("retrieval_local_bias 1.5 is not in [0, 1]"),
            std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.retrieval_local_bias = std::nan(""); }).find("retrieval_local_bias"),
            std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.seq_len_min_ratio = 0; }).find("seq_len_min_ratio 0 is not in (0, 1]"),
            std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.seq_len_min_ratio = 1.25; }).find("seq_len_min_ratio"), std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.seed = -1; }).find("seed -1 must not be negative"), std::string::npos);
  EXPECT_NE(broken([](CaseSpec& c) { c.family = Family(7); }).find("unsupported family"), std::string::npos);
  // The edges of the ranges are allowed, as in the harness.
  EXPECT_EQ(broken([](CaseSpec& c) { c.retrieval_local_bias = 0, c.seq_len_min_ratio = 1, c.t_max = 128; }), "");
  EXPECT_EQ(broken([](CaseSpec& c) { c.retrieval_local_bias = 1, c.global_blocks = 0, c.retrieval_blocks = 0; }), "");
}

TEST(Manifest, RoundTripOfEveryBuiltinSuite) {
  for (const auto& name : builtin_suite_names()) {
    const auto suite = builtin_suite(name, 42);
    const std::string text = suite_to_manifest_json(suite);
    EXPECT_EQ(suite_from_manifest_json(text), suite) << name;
  }
}

TEST(Manifest, WritesHarnessFieldNamesInDeclarationOrder) {
  const std::string text = suite_to_manifest_json({valid_case()});
  const auto j = nlohmann::ordered_json::parse(text);
  ASSERT_TRUE(j.is_array());
  std::vector<std::string> keys;
  for (const auto& [k, _] : j[0].items()) keys.push_back(k);
  const std::vector<std::string> expected = {"case_id",          "family",          "batch_size",
                                             "num_heads",        "t_max",           "window_blocks",
                                             "global_blocks",    "retrieval_blocks", "retrieval_local_bias",
                                             "seq_len_min_ratio", "seed",            "profile"};
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(j[0]["family"], "sliding_window_retrieval");
  EXPECT_EQ(j[0]["retrieval_local_bias"].get<double>(), 0.7);
}

TEST(Manifest, ReadsHarnessJsonAndAppliesDataclassDefaults) {
  // As the harness's json.dumps(indent=2) writes it, plus an item relying on the defaults.
  const std::string text = R"([
  {"case_id": "a", "family": "sliding_window_global", "batch_size": 2, "num_heads": 4, "t_max": 896,
   "window_blocks": 3, "global_blocks": 1, "retrieval_blocks": 0, "retrieval_local_bias": 0.7,
   "seq_len_min_ratio": 1.0, "seed": 202, "profile": "local-dev"},
  {"case_id": "b", "family": "sliding_window", "batch_size": 1, "num_heads": 1, "t_max": 128, "window_blocks": 1}
])";
  const auto suite = suite_from_manifest_json(text);
  ASSERT_EQ(suite.size(), 2u);
  EXPECT_EQ(suite[0].family, Family::sliding_window_global);
  EXPECT_EQ(suite[0].t_max, 896);
  EXPECT_EQ(suite[0].global_blocks, 1);
  EXPECT_EQ(suite[0].seq_len_min_ratio, 1.0);
  EXPECT_EQ(suite[0].seed, 202);
  EXPECT_EQ(suite[0].profile, "local-dev");
  EXPECT_EQ(suite[1].global_blocks, 0);
  EXPECT_EQ(suite[1].retrieval_blocks, 0);
  EXPECT_EQ(suite[1].retrieval_local_bias, 0.7);
  EXPECT_EQ(suite[1].seq_len_min_ratio, 0.625);
  EXPECT_EQ(suite[1].seed, 0);
  EXPECT_EQ(suite[1].profile, "smoke");
}

std::string manifest_error(const std::string& text) {
  try {
    suite_from_manifest_json(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Manifest, ErrorsNameTheProblem) {
  const std::string base = R"("case_id": "c1", "family": "sliding_window", "batch_size": 1, "num_heads": 2, )";
  EXPECT_EQ(manifest_error("[{" + base + R"("t_max": 256, "window_blocks": 2}])"), "");
  EXPECT_NE(manifest_error("[{" + base + R"("t_max": 256, "window_blocks": 2, "windows": 3}])").find("unknown field 'windows'"),
            std::string::npos);
  EXPECT_NE(manifest_error("[{" + base + R"("t_max": 256}])").find("missing required field 'window_blocks'"),
            std::string::npos);
  EXPECT_NE(manifest_error("[{" + base + R"("t_max": 256.0, "window_blocks": 2}])").find("'t_max' must be an integer"),
            std::string::npos);
  EXPECT_NE(manifest_error("[{" + base + R"("t_max": "256", "window_blocks": 2}])").find("'t_max' must be an integer"),
            std::string::npos);
  EXPECT_NE(manifest_error("[{" + base + R"("t_max": 300, "window_blocks": 2}])")
                .find("case 'c1': t_max 300 is not a positive multiple of 128"),
            std::string::npos);
  EXPECT_NE(manifest_error("[{" + base + R"("t_max": 256, "window_blocks": 2, "retrieval_local_bias": "high"}])")
                .find("'retrieval_local_bias' must be a number"),
            std::string::npos);
  EXPECT_NE(manifest_error("[{" + base + R"("t_max": 256, "window_blocks": 4294967296}])").find("out of range"),
            std::string::npos);
  EXPECT_NE(manifest_error(R"([{"case_id": "f", "family": "dense", "batch_size": 1, "num_heads": 1, "t_max": 128,
                                "window_blocks": 1}])")
                .find("unknown family 'dense'"),
            std::string::npos);
  EXPECT_NE(manifest_error(R"({"case_id": "c1"})").find("must be a list"), std::string::npos);
  EXPECT_NE(manifest_error("[3]").find("must be an object"), std::string::npos);
  EXPECT_NE(manifest_error("[{").find("not valid JSON"), std::string::npos);
  // Found by fuzz/fuzz_manifest: a number beyond double made the JSON parser throw out_of_range, which
  // escaped as an unnamed json exception instead of this error.
  EXPECT_NE(manifest_error("[{" + base + R"("t_max": 256, "window_blocks": 2, "retrieval_local_bias": 1e309}])")
                .find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(manifest_error("1e309").find("number overflow"), std::string::npos);
  const std::string item = "{" + base + R"("t_max": 256, "window_blocks": 2})";
  EXPECT_NE(manifest_error("[" + item + "," + item + "]").find("duplicate case_id 'c1'"), std::string::npos);
}

TEST(Manifest, FileRoundTripAndMissingFile) {
  const std::string dir = test::temp_dir("manifest");
  const std::string path = dir + "/suite.json";
  const auto suite = builtin_suite("local-dev");
  std::ofstream(path) << suite_to_manifest_json(suite);
  EXPECT_EQ(suite_from_manifest_file(path), suite);
  try {
    suite_from_manifest_file(dir + "/absent.json");
    FAIL() << "no error for a missing manifest";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("absent.json"), std::string::npos);
  }
}

const CaseSpec& find(const std::vector<CaseSpec>& s, const std::string& id) {
  for (const auto& c : s)
    if (c.case_id == id) return c;
  throw std::runtime_error("no case " + id);
}

TEST(BuiltinSuites, SizesAndFamiliesAsTheHarness) {
  EXPECT_EQ(builtin_suite_names(), (std::vector<std::string>{"smoke", "local-dev", "quick", "full", "broad"}));
  const std::pair<const char*, std::size_t> sizes[] = {
      {"smoke", 3}, {"local-dev", 6}, {"quick", 3}, {"full", 9}, {"broad", 9}};
  for (const auto& [name, n] : sizes) {
    const auto s = builtin_suite(name);
    ASSERT_EQ(s.size(), n) << name;
    std::map<Family, int> per_family;
    for (const auto& c : s) {
      ++per_family[c.family];
      EXPECT_EQ(c.profile, name) << c.case_id;
    }
    for (Family f : kAllFamilies) EXPECT_EQ(per_family[f], int(n / 3)) << name;
  }
  try {
    builtin_suite("public-quick");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown suite 'public-quick'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("broad"), std::string::npos);
  }
}

// Literal values of cases.py (_smoke_suite, _local_dev_suite, _quick_suite, _full_suite, _broad_suite).
TEST(BuiltinSuites, SpotChecksAgainstCasesPy) {
  const auto smoke = builtin_suite("smoke");
  const auto& s3 = find(smoke, "smoke-retrieval-1");
  EXPECT_EQ(s3.family, Family::sliding_window_retrieval);
  EXPECT_EQ(std::tie(s3.batch_size, s3.num_heads, s3.t_max, s3.window_blocks, s3.retrieval_blocks),
            std::make_tuple(1, 2, 512, 2, 2));
  EXPECT_EQ(find(smoke, "smoke-window-1").seed, 11);
  EXPECT_EQ(find(smoke, "smoke-global-1").seed, 22);
  EXPECT_EQ(s3.seed, 33);

  const auto local_dev = builtin_suite("local-dev");
  const auto& lg2 = find(local_dev, "local-global-2");
  EXPECT_EQ(std::tie(lg2.batch_size, lg2.num_heads, lg2.t_max, lg2.window_blocks, lg2.global_blocks),
            std::make_tuple(2, 4, 896, 3, 1));
  EXPECT_EQ(lg2.seed, 202);
  EXPECT_EQ(find(local_dev, "local-retrieval-2").retrieval_blocks, 3);

  const auto quick = builtin_suite("quick");
  const auto& qr = find(quick, "quick-retrieval-1");
  EXPECT_EQ(std::tie(qr.batch_size, qr.num_heads, qr.t_max, qr.window_blocks, qr.retrieval_blocks),
            std::make_tuple(1, 16, 4096, 4, 2));
  EXPECT_EQ(qr.retrieval_local_bias, 0.75);
  EXPECT_EQ(qr.seq_len_min_ratio, 0.625);

  const auto full = builtin_suite("full");
  const auto& fr3 = find(full, "full-retrieval-3");
  EXPECT_EQ(std::tie(fr3.batch_size, fr3.num_heads, fr3.t_max, fr3.window_blocks, fr3.retrieval_blocks),
            std::make_tuple(2, 16, 8192, 7, 4));
  EXPECT_EQ(fr3.retrieval_local_bias, 0.2);
  EXPECT_EQ(fr3.seq_len_min_ratio, 1.0);
  const auto& fg3 = find(full, "full-global-3");
  EXPECT_EQ(std::tie(fg3.window_blocks, fg3.global_blocks), std::make_tuple(7, 4));
  EXPECT_EQ(find(full, "full-window-2").seq_len_min_ratio, 0.75);
  // test_harness.py test_full_stays_in_single_bucket_and_varies_descriptors
  std::set<int> windows;
  for (const auto& c : full) windows.insert(c.window_blocks);
  EXPECT_EQ(windows.size(), 5u);

  const auto broad = builtin_suite("broad");
  const auto& bw3 = find(broad, "broad-window-3");
  EXPECT_EQ(std::tie(bw3.batch_size, bw3.num_heads, bw3.t_max, bw3.window_blocks), std::make_tuple(4, 32, 16384, 8));
  const auto& bg2 = find(broad, "broad-global-2");
  EXPECT_EQ(std::tie(bg2.batch_size, bg2.num_heads, bg2.t_max, bg2.window_blocks, bg2.global_blocks),
            std::make_tuple(2, 32, 8192, 5, 2));
  const auto& br2 = find(broad, "broad-retrieval-2");
  EXPECT_EQ(br2.retrieval_local_bias, 0.65);
  EXPECT_EQ(std::tie(br2.batch_size, br2.num_heads, br2.window_blocks, br2.retrieval_blocks),
            std::make_tuple(2, 16, 5, 3));
}

TEST(BuiltinSuites, PublishedSuiteSeedsDeriveFromRootSeedAndCaseId) {
  for (const char* name : {"quick", "full", "broad"}) {
    const auto a = builtin_suite(name, 111), a2 = builtin_suite(name, 111), b = builtin_suite(name, 222);
    EXPECT_EQ(a, a2) << name;
    std::set<std::int64_t> seeds;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_GE(a[i].seed, 0);
      EXPECT_LT(a[i].seed, 2147483647);
      EXPECT_NE(a[i].seed, b[i].seed) << a[i].case_id;
      seeds.insert(a[i].seed);
      CaseSpec same_shape = b[i];
      same_shape.seed = a[i].seed;
      EXPECT_EQ(same_shape, a[i]);  // only the seed depends on the root seed
    }
    EXPECT_EQ(seeds.size(), a.size()) << name;  // one seed per case
  }
  // smoke and local-dev keep the harness's literal seeds whatever the root seed.
  EXPECT_EQ(builtin_suite("smoke", 7), builtin_suite("smoke", 8));
}

}  // namespace
}  // namespace attn
