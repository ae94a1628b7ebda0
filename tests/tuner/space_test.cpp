// TemplateSpace: loading, constraint language, check(), enumerate() against brute force, and the
// compact / JSON config formats.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/templates_dir.hpp"
#include "db/configs.hpp"
#include "tests/tuner/tuner_fixtures.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

using test::space_json;
using test::tile_space;
using test::tile_valid;
using test::write_space;

/// Expects load() to throw std::invalid_argument whose message contains the file and every needle.
void expect_load_error(const std::string& path, const std::vector<std::string>& needles) {
  try {
    TemplateSpace::load(path);
    ADD_FAILURE() << "loading " << path << " did not throw";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << "message does not name the file: " << msg;
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "missing '" << n << "' in: " << msg;
  }
}

TEST(TemplateSpace, LoadsFieldsInFileOrder) {
  const auto dir = test::temp_dir("tuner-space");
  const auto s = tile_space(dir);
  EXPECT_EQ(s.name(), "tile");
  EXPECT_EQ(s.kernel(), "block_sparse_attn_fwd");
  EXPECT_EQ(s.description(), "test space");
  EXPECT_EQ(s.source_path(), dir + "/tile.cu");
  ASSERT_EQ(s.parameters().size(), 4u);
  EXPECT_EQ(s.parameters()[0].name, "BLOCK_M");  // file order, not alphabetical
  EXPECT_EQ(s.parameters()[1].name, "BLOCK_N");
  EXPECT_EQ(s.parameters()[2].name, "WARPS");
  EXPECT_EQ(s.parameters()[3].name, "STAGES");
  EXPECT_EQ(s.parameters()[0].doc, "query rows per CTA");
  EXPECT_EQ(s.parameters()[3].values, (std::vector<std::int64_t>{1, 2, 3, 4}));
  ASSERT_EQ(s.constraints().size(), 3u);
  EXPECT_EQ(s.constraints()[1].why, "smem budget");
  EXPECT_EQ(s.raw_size(), 3u * 3 * 3 * 4);
  EXPECT_EQ(s.default_config(), (Config{{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"WARPS", 4}, {"STAGES", 2}}));
  EXPECT_EQ(TemplateSpace::load_named(dir, "tile").parameters().size(), 4u);
}

TEST(TemplateSpace, EnumerateMatchesBruteForceInOdometerOrder) {
  const auto s = tile_space(test::temp_dir("tuner-space"));
  std::vector<Config> expected;
  for (auto m : {64, 128, 192})
    for (auto n : {32, 64, 128})
      for (auto w : {2, 4, 8})
        for (auto st : {1, 2, 3, 4})
          if (tile_valid(m, n, w, st)) expected.push_back({{"BLOCK_M", m}, {"BLOCK_N", n}, {"WARPS", w}, {"STAGES", st}});
  const auto got = s.enumerate();
  EXPECT_EQ(got, expected);  // same set and same (last parameter fastest) order
  EXPECT_GT(got.size(), 5u);
  EXPECT_LT(got.size(), s.raw_size());
  // check() agrees with the C++ predicate on the whole raw space.
  std::size_t valid = 0;
  for (auto m : {64, 128, 192})
    for (auto n : {32, 64, 128})
      for (auto w : {2, 4, 8})
        for (auto st : {1, 2, 3, 4}) {
          const bool ok = !s.check({{"BLOCK_M", m}, {"BLOCK_N", n}, {"WARPS", w}, {"STAGES", st}}).has_value();
          EXPECT_EQ(ok, tile_valid(m, n, w, st)) << m << " " << n << " " << w << " " << st;
          valid += ok;
        }
  EXPECT_EQ(valid, got.size());
  EXPECT_EQ(s.count_valid(), got.size());
}

TEST(TemplateSpace, CountValidStreamsAMillionConfigSpace) {
  // 8 parameters x 6 values = 1.68M raw configs, one constraint on the last two (prunes late): counted
  // without materialising them, equal to the closed form.
  std::string params;
  for (int i = 0; i < 8; ++i)
    params += (i ? ", " : "") + ("\"P" + std::to_string(i) + "\": {\"values\": [1, 2, 3, 4, 5, 6]}");
  const auto dir = test::temp_dir("tuner-space");
  const auto s = TemplateSpace::load(test::write_space(
      dir, "big", test::space_json("big", params, R"({"expr": "P6 + P7 <= 7"})",
                                   R"({"P0": 1, "P1": 1, "P2": 1, "P3": 1, "P4": 1, "P5": 1, "P6": 1, "P7": 1})")));
  EXPECT_EQ(s.raw_size(), 1679616u);
  // Pairs (a, b) in 1..6 with a + b <= 7: 21.
  EXPECT_EQ(s.count_valid(), 6u * 6 * 6 * 6 * 6 * 6 * 21);
}

TEST(TemplateSpace, CheckNamesTheProblem) {
  const auto s = tile_space(test::temp_dir("tuner-space"));
  Config c = s.default_config();
  EXPECT_FALSE(s.check(c).has_value());
  c["STAGES"] = 4;
  c["BLOCK_N"] = 128;
  EXPECT_EQ(s.check(c).value_or(""), "smem budget");
  c = s.default_config();
  c["BLOCK_M"] = 64;
  c["WARPS"] = 8;
  EXPECT_EQ(s.check(c).value_or(""), "each warp owns 16-row slices");
  c = s.default_config();
  c["BLOCK_M"] = 96;
  EXPECT_NE(s.check(c).value_or("").find("BLOCK_M=96 is not one of its values [64, 128, 192]"), std::string::npos);
  c = s.default_config();
  c.erase("WARPS");
  EXPECT_EQ(s.check(c).value_or(""), "missing parameter WARPS");
  c = s.default_config();
  c["SPLIT_K"] = 1;
  EXPECT_NE(s.check(c).value_or("").find("unknown parameter SPLIT_K"), std::string::npos);
}

TEST(TemplateSpace, IndicesRoundTrip) {
  const auto s = tile_space(test::temp_dir("tuner-space"));
  for (const auto& c : s.enumerate()) {
    auto idx = s.indices_of(c);
    ASSERT_TRUE(idx.has_value());
    EXPECT_EQ(s.config_at(*idx), c);
  }
  Config outside = s.default_config();
  outside["BLOCK_M"] = 96;
  EXPECT_FALSE(s.indices_of(outside).has_value());
  EXPECT_THROW(s.config_at({0, 0, 0, 9}), std::out_of_range);
}

TEST(TemplateSpace, CompleteFillsOnlyTheMissingParametersWithTheirDefaults) {
  const auto s = tile_space(test::temp_dir("tuner-space"));  // default BLOCK_M 128, BLOCK_N 64, WARPS 4, STAGES 2
  // Two parameters missing: they take the default; the two given keep their (non-default) values.
  const Config partial{{"BLOCK_M", 64}, {"BLOCK_N", 32}};
  EXPECT_EQ(s.complete(partial), (Config{{"BLOCK_M", 64}, {"BLOCK_N", 32}, {"WARPS", 4}, {"STAGES", 2}}));
  EXPECT_EQ(s.complete({}), s.default_config());
  for (const auto& c : s.enumerate()) EXPECT_EQ(s.complete(c), c);  // a complete config is left alone
  // Keys it has are kept as they are, even unknown ones or values outside the list: check() still judges them.
  const Config odd = s.complete({{"BLOCK_M", 96}, {"SPLIT_K", 2}});
  EXPECT_EQ(odd, (Config{{"BLOCK_M", 96}, {"BLOCK_N", 64}, {"WARPS", 4}, {"STAGES", 2}, {"SPLIT_K", 2}}));
  EXPECT_NE(s.check(odd).value_or("").find("unknown parameter SPLIT_K"), std::string::npos);
  // A completed config can still break a constraint: 64 rows with the default WARPS 4 fit, with 8 they do not.
  EXPECT_FALSE(s.check(s.complete({{"BLOCK_M", 64}})).has_value());
  EXPECT_EQ(s.check(s.complete({{"BLOCK_M", 64}, {"WARPS", 8}})).value_or(""), "each warp owns 16-row slices");
}

TEST(TemplateSpace, PinToDefaultRestrictsTheSpaceToTheDefaultsSlice) {
  const auto dir = test::temp_dir("tuner-space");
  const auto full = tile_space(dir);
  auto s = full;
  s.pin_to_default("STAGES");  // default 2
  EXPECT_EQ(s.parameters()[3].values, (std::vector<std::int64_t>{2}));
  std::vector<Config> expected;  // the full space's configs at STAGES 2, in its order
  for (const auto& c : full.enumerate())
    if (c.at("STAGES") == 2) expected.push_back(c);
  ASSERT_GT(expected.size(), 3u);
  EXPECT_LT(expected.size(), full.count_valid());
  EXPECT_EQ(s.enumerate(), expected);
  EXPECT_EQ(s.count_valid(), expected.size());
  EXPECT_EQ(s.raw_size(), 3u * 3 * 3);
  Config c = s.default_config();
  c["STAGES"] = 3;
  EXPECT_FALSE(full.check(c).has_value());
  EXPECT_NE(s.check(c).value_or("").find("STAGES=3 is not one of its values [2]"), std::string::npos);
  EXPECT_EQ(full.count_valid(), full.enumerate().size());  // the copy it was pinned on is unchanged
  EXPECT_EQ(full.parameters()[3].values.size(), 4u);
  // Unknown names are refused, naming the parameter; the space is left as it was.
  try {
    s.pin_to_default("SOFTMAX");
    ADD_FAILURE() << "pinning an unknown parameter did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("SOFTMAX"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.count_valid(), expected.size());

  // A template that gained a parameter (SOFTMAX, default 0, with a constraint of its own), pinned to its
  // default, is the space it was before, each config completed with SOFTMAX 0.
  auto grown = test::grown_tile_space(test::temp_dir("tuner-space-grown"));
  EXPECT_GT(grown.count_valid(), full.count_valid());
  for (const auto& old : full.enumerate()) EXPECT_EQ(grown.check(old).value_or(""), "missing parameter SOFTMAX");
  std::vector<Config> old_completed;
  for (const auto& old : full.enumerate()) {
    old_completed.push_back(grown.complete(old));
    EXPECT_FALSE(grown.check(old_completed.back()).has_value()) << config_to_compact(old);
  }
  grown.pin_to_default("SOFTMAX");
  EXPECT_EQ(grown.enumerate(), old_completed);
  EXPECT_EQ(grown.count_valid(), full.count_valid());
}

/// One parameter X in [-4, 9] and one constraint: the valid X must be exactly those of `pred`.
void expect_one_param_constraint(const std::string& expr, const std::function<bool(std::int64_t)>& pred) {
  static int counter = 0;
  const auto dir = test::temp_dir("tuner-expr");
  const std::string name = "expr" + std::to_string(counter++);
  std::int64_t first_ok = -100;
  std::vector<std::int64_t> expected;
  for (std::int64_t x = -4; x <= 9; ++x)
    if (pred(x)) {
      expected.push_back(x);
      if (first_ok == -100) first_ok = x;
    }
  ASSERT_FALSE(expected.empty()) << expr;
  const auto s = TemplateSpace::load(write_space(
      dir, name,
      space_json(name, R"("X": {"values": [-4,-3,-2,-1,0,1,2,3,4,5,6,7,8,9]})",
                 "{\"expr\": \"" + expr + "\"}", "{\"X\": " + std::to_string(first_ok) + "}")));
  std::vector<std::int64_t> got;
  for (const auto& c : s.enumerate()) got.push_back(c.at("X"));
  EXPECT_EQ(got, expected) << expr;
}

TEST(TemplateSpace, ModuloIsIntegerWithCSignRule) {
  expect_one_param_constraint("X % 3 == 1", [](auto x) { return x % 3 == 1; });
  expect_one_param_constraint("X%3==-1", [](auto x) { return x % 3 == -1; });
  expect_one_param_constraint("X % 4 == 0 && X != 0", [](auto x) { return x % 4 == 0 && x != 0; });
  // % binds like * and /: 2 + X % 3 == 3 is 2 + (X % 3) == 3.
  expect_one_param_constraint("2 + X % 3 == 3", [](auto x) { return 2 + x % 3 == 3; });
  expect_one_param_constraint("(X * 5) % 7 == 3", [](auto x) { return (x * 5) % 7 == 3; });
}

TEST(TemplateSpace, ComparisonAndLogicOperators) {
  expect_one_param_constraint("X == 3 || X == 5", [](auto x) { return x == 3 || x == 5; });
  expect_one_param_constraint("X != 3 && X >= 0", [](auto x) { return x != 3 && x >= 0; });
  expect_one_param_constraint("X < 2", [](auto x) { return x < 2; });
  expect_one_param_constraint("X <= 2", [](auto x) { return x <= 2; });
  expect_one_param_constraint("X > 2", [](auto x) { return x > 2; });
  expect_one_param_constraint("X >= 2 && X <= 4 || X == -4", [](auto x) { return (x >= 2 && x <= 4) || x == -4; });
  expect_one_param_constraint("!(X > 0)", [](auto x) { return !(x > 0); });
  expect_one_param_constraint("X > 0 ? X % 2 == 0 : X == -3", [](auto x) { return x > 0 ? x % 2 == 0 : x == -3; });
  expect_one_param_constraint("max(X, 3) == 3", [](auto x) { return std::max<std::int64_t>(x, 3) == 3; });
}

TEST(TemplateSpace, ModuloByZeroRejectsTheConfigWithAReason) {
  const auto dir = test::temp_dir("tuner-space");
  const auto s = TemplateSpace::load(write_space(
      dir, "modzero",
      space_json("modzero", R"("A": {"values": [4, 6]}, "B": {"values": [2, 0, 3]})",
                 R"({"expr": "A % B == 0", "why": "A divisible by B"})", R"({"A": 4, "B": 2})")));
  EXPECT_EQ(s.check({{"A", 6}, {"B", 3}}), std::nullopt);
  EXPECT_EQ(s.check({{"A", 4}, {"B", 3}}).value_or(""), "A divisible by B");
  const auto why = s.check({{"A", 4}, {"B", 0}}).value_or("");
  EXPECT_NE(why.find("modulo by zero"), std::string::npos) << why;
  EXPECT_NE(why.find("A % B == 0"), std::string::npos) << why;
  EXPECT_EQ(s.enumerate(), (std::vector<Config>{{{"A", 4}, {"B", 2}}, {{"A", 6}, {"B", 2}}, {{"A", 6}, {"B", 3}}}));
}

TEST(TemplateSpace, ConstraintErrorsNameFileAndExpression) {
  const auto dir = test::temp_dir("tuner-bad");
  const char* params = R"("BLOCK_M": {"values": [64, 128]}, "WARPS": {"values": [4, 8]})";
  const char* def = R"({"BLOCK_M": 64, "WARPS": 4})";
  expect_load_error(write_space(dir, "unknown_name", space_json("unknown_name", params,
                                                                 R"({"expr": "BLOCK_Q % 64 == 0"})", def)),
                    {"BLOCK_Q % 64 == 0", "unknown name \"BLOCK_Q\""});
  expect_load_error(write_space(dir, "syntax", space_json("syntax", params, R"({"expr": "(BLOCK_M * 2 < 256"})", def)),
                    {"(BLOCK_M * 2 < 256", "does not parse"});
  expect_load_error(write_space(dir, "dangling", space_json("dangling", params, R"({"expr": "BLOCK_M % "})", def)),
                    {"BLOCK_M % ", "does not parse"});
  expect_load_error(write_space(dir, "assign", space_json("assign", params, R"({"expr": "WARPS = 4"})", def)),
                    {"WARPS = 4", "lone '='"});
  expect_load_error(write_space(dir, "empty_expr", space_json("empty_expr", params, R"({"expr": "  "})", def)),
                    {"constraint #1", "empty expr"});
  expect_load_error(
      write_space(dir, "breaks_default",
                  space_json("breaks_default", params, R"({"expr": "BLOCK_M >= 16 * WARPS * 2", "why": "two slices"})",
                             R"({"BLOCK_M": 64, "WARPS": 4})")),
      {"default config is invalid", "two slices"});
}

TEST(TemplateSpace, StructureErrorsNameFileAndField) {
  const auto dir = test::temp_dir("tuner-bad");
  const char* params = R"("BLOCK_M": {"values": [64, 128]})";
  expect_load_error(dir + "/missing.json", {"cannot open"});
  std::ofstream(dir + "/notjson.json") << "{\"name\": ";
  expect_load_error(dir + "/notjson.json", {"invalid JSON"});
  expect_load_error(write_space(dir, "nokernel", R"({"name": "nokernel", "source": "nokernel.cu",
      "parameters": {"BLOCK_M": {"values": [64]}}, "default": {"BLOCK_M": 64}})"),
                    {"missing field \"kernel\""});
  expect_load_error(write_space(dir, "nodefault", R"({"name": "nodefault", "source": "nodefault.cu",
      "kernel": "k", "parameters": {"BLOCK_M": {"values": [64]}}})"),
                    {"missing field \"default\""});
  expect_load_error(write_space(dir, "empty_values",
                                space_json("empty_values", R"("BLOCK_M": {"values": []})", "", R"({"BLOCK_M": 64})")),
                    {"parameter BLOCK_M", "non-empty array"});
  expect_load_error(
      write_space(dir, "dup", space_json("dup", R"("BLOCK_M": {"values": [64, 128, 64]})", "", R"({"BLOCK_M": 64})")),
      {"parameter BLOCK_M", "value 64 is listed twice"});
  expect_load_error(
      write_space(dir, "realval", space_json("realval", R"("BLOCK_M": {"values": [64, 128.5]})", "", R"({"BLOCK_M": 64})")),
      {"parameter BLOCK_M", "128.5 is not a 64-bit integer"});
  expect_load_error(write_space(dir, "badname", space_json("badname", R"("BLOCK-M": {"values": [64]})", "", "{}")),
                    {"parameter BLOCK-M", "not a C identifier"});
  expect_load_error(write_space(dir, "outside", space_json("outside", params, "", R"({"BLOCK_M": 96})")),
                    {"default config is invalid", "BLOCK_M=96 is not one of its values"});
  expect_load_error(write_space(dir, "partial",
                                space_json("partial", R"("BLOCK_M": {"values": [64]}, "WARPS": {"values": [4]})", "",
                                           R"({"BLOCK_M": 64})")),
                    {"default config is invalid", "missing parameter WARPS"});
  expect_load_error(write_space(dir, "typo", R"({"name": "typo", "source": "typo.cu", "kernel": "k",
      "parameters": {"BLOCK_M": {"values": [64]}}, "constraint": [], "default": {"BLOCK_M": 64}})"),
                    {"unknown key \"constraint\""});
  expect_load_error(write_space(dir, "patchable", space_json("patchable", R"("BLOCK_M": {"values": [64], "patchable": 1})",
                                                            "", R"({"BLOCK_M": 64})")),
                    {"parameter BLOCK_M", "\"patchable\" must be true or false"});
  const auto flagged = TemplateSpace::load(write_space(
      dir, "flagged", space_json("flagged", R"("BLOCK_M": {"values": [64]}, "ORDER": {"values": [0, 2], "patchable": true})",
                                 "", R"({"BLOCK_M": 64, "ORDER": 0})")));
  EXPECT_EQ(flagged.patchable_names(), std::vector<std::string>{"ORDER"});
  expect_load_error(write_space(dir, "stem", space_json("other_name", params, "", R"({"BLOCK_M": 64})")),
                    {"\"other_name\"", "stem.json"});
  std::ofstream(dir + "/nosource.json") << R"({"name": "nosource", "source": "gone.cu", "kernel": "k",
      "parameters": {"BLOCK_M": {"values": [64]}}, "default": {"BLOCK_M": 64}})";
  expect_load_error(dir + "/nosource.json", {"gone.cu does not exist"});
  EXPECT_THROW(TemplateSpace::load_named(dir, "absent"), std::invalid_argument);
}

TEST(TemplateSpace, PatchSiblingsAreTheValidCombinationsOfThePatchableValues) {
  const auto dir = test::temp_dir("tuner-siblings");
  const auto s = TemplateSpace::load(write_space(
      dir, "sib",
      space_json("sib", R"("A": {"values": [1, 2], "patchable": true}, "C": {"values": [5, 6]},
                           "B": {"values": [0, 1, 2], "patchable": true})",
                 R"J({"expr": "!(A == 2 && B == 2)", "why": "no A 2 with B 2"})J", R"({"A": 1, "B": 0, "C": 5})")));
  // Odometer over A then B (parameters() order), the config itself and A 2 / B 2 (invalid) left out, C kept.
  EXPECT_EQ(s.patch_siblings(config_from_compact("A=1,B=0,C=5")),
            (std::vector<Config>{config_from_compact("A=1,B=1,C=5"), config_from_compact("A=1,B=2,C=5"),
                                 config_from_compact("A=2,B=0,C=5"), config_from_compact("A=2,B=1,C=5")}));
  EXPECT_EQ(s.patch_siblings(config_from_compact("A=2,B=1,C=6")).size(), 4u);
  // A config without B varies A alone, and A 2 without B is no config of this space: no sibling.
  EXPECT_EQ(s.patch_siblings(config_from_compact("A=1,C=5")), std::vector<Config>{});
  const auto plain = TemplateSpace::load(
      write_space(dir, "plain", space_json("plain", R"("A": {"values": [1, 2]})", "", R"({"A": 1})")));
  EXPECT_TRUE(plain.patch_siblings(config_from_compact("A=1")).empty());
}

TEST(TemplateSpace, CopiesShareConstraintsAndCheckIsThreadSafe) {
  const auto s = tile_space(test::temp_dir("tuner-space"));
  const auto all = s.enumerate();
  std::vector<Config> raw;
  for (auto m : {64, 128, 192})
    for (auto n : {32, 64, 128})
      for (auto w : {2, 4, 8})
        for (auto st : {1, 2, 3, 4}) raw.push_back({{"BLOCK_M", m}, {"BLOCK_N", n}, {"WARPS", w}, {"STAGES", st}});
  std::vector<std::size_t> counts(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t, copy = s] {
      for (int rep = 0; rep < 50; ++rep)
        for (const auto& c : raw) counts[t] += copy.check(c) ? 0 : 1;
    });
  }
  for (auto& th : threads) th.join();
  for (auto n : counts) EXPECT_EQ(n, 50 * all.size());
}

TEST(Config, CompactAndJsonRoundTrip) {
  const auto s = tile_space(test::temp_dir("tuner-space"));
  for (const auto& c : s.enumerate()) {
    EXPECT_EQ(config_from_compact(config_to_compact(c)), c);
    EXPECT_EQ(config_from_json(config_to_json(c)), c);
  }
  const Config c{{"BLOCK_N", 64}, {"BLOCK_M", 128}, {"NEG", -3}, {"BIG", INT64_MAX}};
  EXPECT_EQ(config_to_compact(c), "BIG=9223372036854775807,BLOCK_M=128,BLOCK_N=64,NEG=-3");
  EXPECT_EQ(config_to_json(c), R"({"BIG":9223372036854775807,"BLOCK_M":128,"BLOCK_N":64,"NEG":-3})");
  EXPECT_EQ(config_from_compact("BLOCK_M=128, BLOCK_N=64"), (Config{{"BLOCK_M", 128}, {"BLOCK_N", 64}}));
  EXPECT_EQ(config_from_compact(""), Config{});
  EXPECT_EQ(config_to_compact(Config{}), "");
}

TEST(Config, MalformedInputNamesTheItem) {
  auto expect_error = [](auto fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no error, expected one naming " << needle;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([] { config_from_compact("A=1,B"); }, "item 'B'");
  expect_error([] { config_from_compact("A=1,,B=2"); }, "item ''");
  expect_error([] { config_from_compact("A=x1"); }, "'x1' of A");
  expect_error([] { config_from_compact("A=1.5"); }, "'1.5' of A");
  expect_error([] { config_from_compact("A=99999999999999999999"); }, "not a 64-bit integer");
  expect_error([] { config_from_compact("1A=2"); }, "'1A'");
  expect_error([] { config_from_compact("A=1,A=2"); }, "A is given twice");
  expect_error([] { config_from_json("[1, 2]"); }, "must be an object");
  expect_error([] { config_from_json(R"({"A": 1.5})"); }, "value of A is not an integer");
  expect_error([] { config_from_json(R"({"A": "1"})"); }, "value of A is not an integer");
  expect_error([] { config_from_json(R"({"A": 18446744073709551615})"); }, "overflows");
  expect_error([] { config_from_json("{"); }, "not valid JSON");
}

TEST(TemplateSpace, DefaultTemplatesDirFollowsEnvironment) {
  const char* old = std::getenv("ATTN_TUNER_TEMPLATES");
  const std::string saved = old ? old : "";
  ::setenv("ATTN_TUNER_TEMPLATES", "/some/where", 1);
  EXPECT_EQ(default_templates_dir(), "/some/where");
  ::setenv("ATTN_TUNER_TEMPLATES", "", 1);
  EXPECT_EQ(default_templates_dir(), ATTN_TEMPLATES_DIR);
  ::unsetenv("ATTN_TUNER_TEMPLATES");
  EXPECT_EQ(default_templates_dir(), ATTN_TEMPLATES_DIR);
  if (old) ::setenv("ATTN_TUNER_TEMPLATES", saved.c_str(), 1);
}

// A config as the DB stores it (names and values lists, db/configs.hpp) reads back as the config its JSON is, for
// every fa3_tma config of a sample; values that are not integers or lists that do not pair up are refused.
TEST(Config, FromListsIsTheConfigTheDbSplit) {
  const auto space = TemplateSpace::load_named(ATTN_TEMPLATES_DIR, "fa3_tma");
  const auto all = space.enumerate();
  for (std::size_t i = 0; i < all.size(); i += 997) {
    const auto stored = db::split_params(config_to_json(all[i]));
    const auto names = nlohmann::json::parse(stored.names_json).get<std::vector<std::string>>();
    EXPECT_EQ(config_from_lists(names, stored.values_json), all[i]) << stored.values_json;
  }
  EXPECT_EQ(config_from_lists({"A", "B"}, "[64,-2]"), (Config{{"A", 64}, {"B", -2}}));
  EXPECT_EQ(config_from_lists({"A", "B"}, "[64, -2]"), (Config{{"A", 64}, {"B", -2}}));  // spaces: the JSON path
  EXPECT_EQ(config_from_lists({}, "[]"), Config{});
  for (const auto& [names, values] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"A"}, "[1,2]"}, {{"A", "B"}, "[1]"}, {{"A"}, "[1.5]"}, {{"A"}, "[true]"}, {{"A"}, "[\"x\"]"},
           {{"A"}, "[1"}, {{"A"}, "{}"}, {{"A"}, "[99999999999999999999]"}})
    EXPECT_THROW(config_from_lists(names, values), std::invalid_argument) << values;
}

}  // namespace
}  // namespace attn
