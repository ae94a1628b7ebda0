// Generation 4's template (kernels_templates/fa4_g4.cu, docs/kernels.md "Generation 4") under NVRTC, no GPU
// needed: every structural axis compiles to a kernel of its own with no wgmma serialised by ptxas and no spill,
// and the space refuses the register-starved and shared-memory-starved corners.
#include <gtest/gtest.h>

#include <set>

#include "gpu/abi_check.hpp"
#include "gpu/compiler.hpp"
#include "tests/test_support.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

TemplateSpace g4_space() { return TemplateSpace::load_named(ATTN_TEMPLATES_DIR, "fa4_g4"); }

/// The default config with `changes` applied.
Config with(const TemplateSpace& space, const Config& changes) {
  Config cfg = space.default_config();
  for (const auto& [k, v] : changes) cfg[k] = v;
  return cfg;
}

// DEPTH 2 issues a Q K^T before the softmax of the tile before it, with S double-buffered: the wgmma issue has to
// stay free of run-time conditions and no wgmma may be in flight across the loop's back edge, or ptxas
// serialises every wgmma of the kernel (C7511 / C7515 / C7517, "serialized" in its log) at no error.
TEST(Fa4G4Template, EveryStructuralAxisCompilesUnserialisedWithoutSpills) {
  const TemplateSpace space = g4_space();
  CompilerOptions o;
  o.cache_dir = test::temp_dir("attn-cache");
  const Compiler c(o);
  const Config deep = {{"DEPTH", 2}, {"BLOCK_N", 64}, {"Q_REGS", 1}, {"STAGES", 4}};
  auto deep_with = [&](const Config& more) {
    Config c = deep;
    for (const auto& [k, v] : more) c[k] = v;
    return c;
  };
  const std::vector<std::pair<std::string, Config>> axes = {  // each value of every structural axis once
      {"default (DEPTH 1, BLOCK_N 128: the champion's structure)", {}},
      {"DEPTH 2, BLOCK_N 64, Q_REGS 1", deep},
      {"DEPTH 2, Q_REGS 0", deep_with({{"Q_REGS", 0}})},
      {"DEPTH 1, BLOCK_N 64, Q_REGS 1", deep_with({{"DEPTH", 1}})},
      {"DEPTH 2, PINGPONG 1, EXP2_POLY 2, EPILOGUE 1, CONVERTERS 2, Q_BUFFERS 2",
       deep_with({{"PINGPONG", 1}, {"EXP2_POLY", 2}, {"EPILOGUE", 1}, {"CONVERTERS", 2}, {"Q_BUFFERS", 2}})},
      {"SCHEDULE 3, EXP2_POLY 1", {{"SCHEDULE", 3}, {"EXP2_POLY", 1}}},
  };
  std::set<std::string> hashes;
  for (const auto& [what, changes] : axes) {
    const Config cfg = with(space, changes);
    ASSERT_FALSE(space.check(cfg)) << what << ": " << *space.check(cfg);
    const CompiledVariant v = c.compile(compile_request(space, cfg));
    ASSERT_TRUE(v.ok) << what << ": " << v.log;
    EXPECT_EQ(v.log.find("serialized"), std::string::npos) << what << ": " << v.log;
    EXPECT_EQ(v.log.find("C7517"), std::string::npos) << what << ": " << v.log;
    EXPECT_EQ(v.resources.spill_stores + v.resources.spill_loads, 0) << what << ": " << v.log;
    hashes.insert(v.hash);
  }
  EXPECT_EQ(hashes.size(), axes.size());
}

TEST(Fa4G4Template, TheDefaultPassesTheAbiCheckWithTensorMaps) {
  const TemplateSpace space = g4_space();
  const KernelAbi abi = check_kernel_abi(compile_request(space, space.default_config()));
  ASSERT_TRUE(abi.ok) << abi.problem;
  EXPECT_EQ(abi.params, 13);  // the tensor maps
  ASSERT_EQ(abi.launch_info.size(), 8u);
  EXPECT_EQ(abi.launch_info[0], 384);  // a producer and two consumer warpgroups
  EXPECT_EQ(abi.launch_info[2], 128);  // BLOCK_M
  EXPECT_EQ(abi.launch_info[3], 1);    // persistent grid
  EXPECT_EQ(abi.launch_info[5], 128);  // the default's BLOCK_N: the k / v box rows
}

TEST(Fa4G4Template, TheSpaceRefusesTheRegisterStarvedCorners) {
  const TemplateSpace space = g4_space();
  const auto refused = space.check(with(space, {{"DEPTH", 2}}));  // at the default's BLOCK_N 128
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("DEPTH 2 needs BLOCK_N 64"), std::string::npos) << *refused;
  EXPECT_TRUE(space.check(with(space, {{"Q_REGS", 1}})));
  EXPECT_FALSE(space.check(with(space, {{"DEPTH", 2}, {"BLOCK_N", 64}, {"Q_REGS", 1}})));
  EXPECT_TRUE(space.check(with(space, {{"BLOCK_N", 64}, {"STAGES", 5}, {"Q_BUFFERS", 2}})));  // over 227 KB
  EXPECT_FALSE(space.check(with(space, {{"BLOCK_N", 64}, {"STAGES", 5}})));
  EXPECT_TRUE(space.check(with(space, {{"STAGES", 3}})));  // BLOCK_N 128: three 64 KB K/V slots and Q, O
}

}  // namespace
}  // namespace attn
