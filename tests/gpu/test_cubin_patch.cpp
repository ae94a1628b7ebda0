// Patchable parameters (gpu/cubin_patch.hpp, CompileRequest::patchable) on the real fa3_tma template: a sibling's
// cubin made by writing its values into one NVRTC build is byte-identical to NVRTC's own build of it, and the
// compiler shares one compile per family through its cache (no GPU needed).
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <set>

#include "gpu/compiler.hpp"
#include "gpu/cubin_patch.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/space.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

TemplateSpace fa3() { return TemplateSpace::load_named(ATTN_TEMPLATES_DIR, "fa3_tma"); }

/// fa3_tma's default config in its CMEM_PARAMS 1 build with ORDER and KV_ORDER set.
Config with_orders(const TemplateSpace& s, std::int64_t order, std::int64_t kv_order) {
  Config c = s.default_config();
  c["CMEM_PARAMS"] = 1;
  c["ORDER"] = order;
  c["KV_ORDER"] = kv_order;
  return c;
}

CompileRequest request(const TemplateSpace& s, const Config& c) { return compile_request(s, c); }

CompiledVariant nvrtc_build(const TemplateSpace& s, const Config& c) {
  CompilerOptions o;
  o.use_cache = false;
  return Compiler(o).compile(request(s, c));
}

TEST(CubinPatch, Fa3TmaDeclaresOrderAndKvOrderPatchable) {
  const auto s = fa3();
  EXPECT_EQ(s.patchable_names(), (std::vector<std::string>{"ORDER", "KV_ORDER"}));
  // 0 by default: a config recorded before CMEM_PARAMS existed is the compiled-in build it was.
  EXPECT_EQ(s.default_config().at("CMEM_PARAMS"), 0);
}

// The compiled-in build is the template as it was: the research DB's champion on full (iter 21092, recorded on the
// H100 before CMEM_PARAMS existed, lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz) compiles to
// the cubin hash the DB holds for it, so export ships it as recorded (export/db_variant.cpp). NVRTC 13.0.
TEST(CubinPatch, AConfigRecordedBeforeCmemParamsCompilesToItsRecordedCubin) {
  const auto s = fa3();
  const Config c = config_from_json(
      R"({"BLOCK_N":128,"CONSUMERS":2,"CONVERTERS":3,"CTAS_PER_SM":1,"EPILOGUE":2,"KV_ORDER":0,"ORDER":2,"OVERLAP":1,)"
      R"("PINGPONG":0,"PRODUCER_REGS":40,"Q_BUFFERS":1,"RESCALE_SKIP":0,"SCHEDULE":2,"SOFTMAX":2,"STAGES":2,"V_CONVERT":0})");
  const CompiledVariant v = nvrtc_build(s, c);
  ASSERT_TRUE(v.ok) << v.log;
  if (nvrtc_version_string() != "13.0") GTEST_SKIP() << "recorded with NVRTC 13.0, this is " << nvrtc_version_string();
  EXPECT_EQ(v.cubin_hash, "fbac238df5c466a2a767b535ddef63f9");
}

TEST(CubinPatch, AWrittenSiblingIsByteIdenticalToNvrtcsBuildOfIt) {
  const auto s = fa3();
  const CompiledVariant a = nvrtc_build(s, with_orders(s, 0, 1));
  const CompiledVariant b = nvrtc_build(s, with_orders(s, 2, 0));
  ASSERT_TRUE(a.ok && b.ok) << a.log << b.log;
  ASSERT_NE(a.cubin, b.cubin);  // the values are in the cubin
  std::vector<char> patched = a.cubin;
  ASSERT_EQ(patch_cubin_params(patched, {{"ORDER", 2}, {"KV_ORDER", 0}}), std::nullopt);
  EXPECT_EQ(patched, b.cubin);
  EXPECT_EQ(cubin_hash(patched), b.cubin_hash);
}

TEST(CubinPatch, RefusesWhatItCannotPatchAndLeavesTheCubinAlone) {
  const auto s = fa3();
  Config compiled_in = with_orders(s, 0, 1);
  compiled_in["CMEM_PARAMS"] = 0;  // how configs recorded before CMEM_PARAMS compile: the orders are code
  const CompiledVariant v = nvrtc_build(s, compiled_in);
  ASSERT_TRUE(v.ok) << v.log;
  std::vector<char> cubin = v.cubin;
  const auto why = patch_cubin_params(cubin, {{"ORDER", 2}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("attn_param_ORDER not in the cubin"), std::string::npos) << *why;
  EXPECT_EQ(cubin, v.cubin);

  const CompiledVariant p = nvrtc_build(s, with_orders(s, 0, 1));
  ASSERT_TRUE(p.ok) << p.log;
  cubin = p.cubin;
  EXPECT_TRUE(patch_cubin_params(cubin, {{"ORDER", 1LL << 40}}));  // not an int
  EXPECT_TRUE(patch_cubin_params(cubin, {{"ORDER", 2}, {"NO_SUCH", 1}}));  // all or nothing
  EXPECT_EQ(cubin, p.cubin);
  std::vector<char> text(p.cubin.begin(), p.cubin.begin() + 100);
  text[1] = 'X';
  EXPECT_NE(patch_cubin_params(text, {{"ORDER", 2}})->find("not an ELF"), std::string::npos);
  std::vector<char> cut(p.cubin.begin(), p.cubin.begin() + p.cubin.size() / 2);  // section headers past the end
  EXPECT_TRUE(patch_cubin_params(cut, {{"ORDER", 2}}));
}

TEST(CubinPatch, TheCompilerSharesOneNvrtcRunPerFamilyThroughItsCache) {
  const auto s = fa3();
  CompilerOptions o;
  o.cache_dir = test::temp_dir("attn-patch-cache");
  const Compiler c(o);
  const CompiledVariant first = c.compile(request(s, with_orders(s, 0, 1)));
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(first.patched_from.empty());
  EXPECT_TRUE(first.patchable);

  const Config sibling = with_orders(s, 2, 0);
  const CompiledVariant second = c.compile(request(s, sibling));  // another process, or a later proposal
  ASSERT_TRUE(second.ok) << second.log;
  EXPECT_TRUE(second.cache_hit);
  EXPECT_FALSE(second.patched_from.empty());
  EXPECT_EQ(second.compile_ms, first.compile_ms);  // the compile it shares, not a new one
  EXPECT_EQ(second.resources, first.resources);
  const CompiledVariant direct = nvrtc_build(s, sibling);
  EXPECT_EQ(second.cubin_hash, direct.cubin_hash);
  EXPECT_EQ(second.hash, direct.hash);  // the config's own content hash: the DB and export see no difference
  ASSERT_FALSE(second.cubin_path.empty());
  EXPECT_EQ(test::read_text(second.cubin_path), std::string(direct.cubin.begin(), direct.cubin.end()));

  // In memory, as the daemon does for the siblings it queues behind a proposal.
  const auto third = c.from_sibling(first, request(s, with_orders(s, 2, 1)));
  ASSERT_TRUE(third);
  EXPECT_EQ(third->cubin_hash, nvrtc_build(s, with_orders(s, 2, 1)).cubin_hash);
  EXPECT_TRUE(third->cache_hit);

  // A config that compiles the orders in shares nothing: each sibling is NVRTC's.
  Config old_a = with_orders(s, 0, 1), old_b = with_orders(s, 2, 1);
  old_a["CMEM_PARAMS"] = old_b["CMEM_PARAMS"] = 0;
  const CompiledVariant oa = c.compile(request(s, old_a));
  ASSERT_TRUE(oa.ok) << oa.log;
  EXPECT_FALSE(oa.patchable);
  EXPECT_FALSE(c.from_sibling(oa, request(s, old_b)));
  const CompiledVariant ob = c.compile(request(s, old_b));
  EXPECT_FALSE(ob.cache_hit);
  EXPECT_EQ(ob.cubin_hash, nvrtc_build(s, old_b).cubin_hash);
}

TEST(CubinPatch, TwoMembersOfAFamilyCompiledAtOnceRunNvrtcOnce) {
  const auto s = fa3();
  CompilerOptions o;
  o.cache_dir = test::temp_dir("attn-patch-inflight");
  const Compiler c(o);
  CompilePool pool(c, 4);
  std::vector<std::future<CompiledVariant>> f;
  for (const auto& [order, kv] : std::vector<std::pair<int, int>>{{0, 1}, {2, 0}, {2, 1}, {0, 0}})
    f.push_back(pool.submit(request(s, with_orders(s, order, kv))));
  int nvrtc_runs = 0;
  std::set<std::string> cubins;
  for (auto& x : f) {
    const CompiledVariant v = x.get();
    ASSERT_TRUE(v.ok) << v.log;
    nvrtc_runs += v.cache_hit ? 0 : 1;
    cubins.insert(v.cubin_hash);
  }
  EXPECT_EQ(nvrtc_runs, 1);  // the other three waited for it and were patched
  EXPECT_EQ(cubins.size(), 4u);
}

}  // namespace
}  // namespace attn
