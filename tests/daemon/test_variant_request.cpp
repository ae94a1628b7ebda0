// resolve_variant (cli/variant_request.hpp): how `bench` and `trace` read --config and --define, on the
// real fa3_tma space.
#include <cstdlib>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "cli/commands.hpp"
#include "cli/variant_request.hpp"
#include "tests/daemon/daemon_harness.hpp"

namespace attn {
namespace {

TEST(VariantRequest, AConfigNamingSomeParametersKeepsTheDefaultOfTheOthers) {
  const VariantRequest v = resolve_variant("bench", "", "fa3_tma", R"({"OVERLAP":0,"SCHEDULE":2})", {"ABLATE=1"});
  const Config def = v.space.default_config();
  ASSERT_EQ(v.config.size(), def.size());
  EXPECT_EQ(v.config.at("OVERLAP"), 0);
  EXPECT_EQ(v.config.at("SCHEDULE"), 2);
  EXPECT_NE(def.at("OVERLAP"), 0) << "the test must change a default";
  EXPECT_NE(def.at("SCHEDULE"), 2) << "the test must change a default";
  for (const auto& [name, value] : def) {
    if (name == "OVERLAP" || name == "SCHEDULE") continue;
    EXPECT_EQ(v.config.at(name), value) << name;
  }
  EXPECT_EQ(v.extra_options, std::vector<std::string>{"-DABLATE=1"});
  EXPECT_EQ(resolve_variant("trace", "", "fa3_tma", "", {}).config, def);
}

TEST(VariantRequest, RejectsUnknownParametersValuesOutsideTheSpaceAndDefinesOfParameters) {
  auto why = [](const std::string& config, std::vector<std::string> defines) {
    try {
      resolve_variant("trace", "", "fa3_tma", config, defines);
    } catch (const CliError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(why(R"({"WARPZ":4})", {}).find("unknown parameter WARPZ"), std::string::npos) << why(R"({"WARPZ":4})", {});
  EXPECT_NE(why(R"({"OVERLAP":7})", {}).find("trace: config not valid for fa3_tma"), std::string::npos);
  EXPECT_NE(why("{", {}).find("trace: --config"), std::string::npos);
  EXPECT_NE(why("", {"OVERLAP=0"}).find("OVERLAP is a parameter of fa3_tma"), std::string::npos);
  EXPECT_NE(why("", {"ATTN_TRACE"}).find("is not NAME=VALUE"), std::string::npos);
  EXPECT_NE(why("", {}).find("accepted"), std::string::npos);
}

// `bench --nvrtc-option` passes an NVRTC option to the config's compile, --Ofast-compile included (refused in the
// daemon: NVRTC keeps it for later compiles of the process; bench compiles one config). The cubin lands in the
// cache under its own key, other bytes than the plain compile's. Without a GPU the bench ends at the worker after it.
TEST(VariantRequest, BenchPassesNvrtcOptionsFastCompileIncluded) {
  namespace fs = std::filesystem;
  const std::string dir = test::temp_dir("bench_nvrtc_option");
  const auto cubins = [](const std::string& cache) {
    std::set<std::string> bytes;
    for (const auto& e : fs::recursive_directory_iterator(cache))
      if (e.is_regular_file() && e.path().extension() == ".cubin" &&  // the worker's helper kernels on a GPU machine: not these
          test::read_text(fs::path(e.path()).replace_extension(".json").string()).find("\"BLOCK_N\"") != std::string::npos)
        bytes.insert(test::read_text(e.path().string()));
    return bytes;
  };
  const test::Output plain = test::run_tuner("bench --template fa3_tma --suite smoke --cache '" + dir + "/plain'");
  const test::Output fast =
      test::run_tuner("bench --template fa3_tma --suite smoke --nvrtc-option=-Ofc=max --cache '" + dir + "/fast'");
  EXPECT_EQ(fast.text.find("refused"), std::string::npos) << fast.text;
  EXPECT_EQ(fast.text.find("does not compile"), std::string::npos) << fast.text;
  const auto p = cubins(dir + "/plain"), f = cubins(dir + "/fast");
  ASSERT_EQ(p.size(), 1u) << plain.text;
  ASSERT_EQ(f.size(), 1u) << fast.text;
  EXPECT_NE(*p.begin(), *f.begin()) << "-Ofc=max gives other code";
}

// --db (issue 48 item 8): a template of the DB's idea queue, named as `query best` names the champion's, is read
// from its row in the DB (its files in a temporary folder that lives as long as the request) and compiles; without
// --db the error says where such a template lives.
TEST(VariantRequest, ATemplateOfTheDbsIdeaQueueIsReachedWithDb) {
  const std::string dir = test::temp_dir("variant-db"), db = dir + "/fixture.db";
  ASSERT_EQ(std::system(("xz -dc '" + test::data_dir() + "/../docs/fixture.db.xz' > '" + db + "'").c_str()), 0);
  const std::string templates = test::data_dir() + "/fake_templates";
  try {
    resolve_variant("compile", templates, "fake_healthy_p1", "", {});
    ADD_FAILURE() << "a DB's template was found without --db";
  } catch (const CliError& e) {
    EXPECT_NE(std::string(e.what()).find("fake_healthy_p1 is a template of the proposer hook or the idea queue, which "
                                         "lives in its DB: pass --db DB"),
              std::string::npos)
        << e.what();
  }
  std::string folder;
  {
    const VariantRequest v = resolve_variant("compile", templates, "fake_healthy_p1", "", {}, db);
    EXPECT_EQ(v.space.name(), "fake_healthy_p1");
    ASSERT_TRUE(v.folder);
    folder = *v.folder;
    EXPECT_TRUE(std::filesystem::exists(v.space.source_path())) << v.space.source_path();
    EXPECT_TRUE(v.config.count("FAST")) << "the idea's own parameter";
  }
  EXPECT_FALSE(std::filesystem::exists(folder)) << "the temporary folder outlived the request";
  const test::Output c = test::run_tuner("compile --db '" + db + "' --templates '" + templates +
                                         "' --template fake_healthy_p1 --cache '" + dir + "/cache'");
  EXPECT_EQ(c.code, 0) << c.text;
  EXPECT_NE(c.text.find("summary: 1 config(s), 1 ok"), std::string::npos) << c.text;
}

}  // namespace
}  // namespace attn
