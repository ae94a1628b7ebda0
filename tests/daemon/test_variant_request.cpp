// resolve_variant (cli/variant_request.hpp): how `bench` and `trace` read --config and --define, on the
// real fa3_tma space.
#include <gtest/gtest.h>

#include "cli/commands.hpp"
#include "cli/variant_request.hpp"

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

}  // namespace
}  // namespace attn
