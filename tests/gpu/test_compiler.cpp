// NVRTC compiler, ptxas resource parsing, the content-hash disk cache and the CompilePool (no GPU needed).
#include <algorithm>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "gpu/compiler.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/space.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;

std::string templates() { return ATTN_TEMPLATES_DIR; }
std::string faulty(const std::string& name) { return test::data_dir() + "/faulty_kernels/" + name; }

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

// A kernel with a known static smem footprint (1024 floats) whose size and unroll come from defines.
const char* kProbe = R"(
#include "probe_inc.cuh"
extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};
extern "C" __global__ void probe(float* out, int n) {
  __shared__ float tile[1024];
  float acc[ACC];
  #pragma unroll
  for (int i = 0; i < ACC; ++i) acc[i] = out[i * n + threadIdx.x];
  tile[threadIdx.x] = acc[threadIdx.x % ACC];
  __syncthreads();
  float t = 0.f;
  #pragma unroll
  for (int i = 0; i < ACC; ++i) t += acc[i] * tile[(i * 7 + threadIdx.x) % 1024] * PROBE_SCALE;
  out[threadIdx.x] = t;
}
)";

struct Probe {
  std::string dir = test::temp_dir("attn-compiler");
  std::string src = dir + "/probe.cu";
  Probe() {
    write(src, kProbe);
    write(dir + "/probe_inc.cuh", "#define PROBE_SCALE 2.0f\n");
  }
  CompileRequest req(std::int64_t acc, std::vector<std::string> extra = {}) const {
    return {src, "probe", Config{{"ACC", acc}}, std::move(extra)};
  }
};

Compiler make_compiler(const std::string& cache) {
  CompilerOptions o;
  o.cache_dir = cache;
  return Compiler(o);
}

TEST(Compiler, CompilesFillNormal) {
  const Compiler c = make_compiler(test::temp_dir("attn-cache"));
  const CompiledVariant v = c.compile({templates() + "/fill_normal.cu", "fill_normal_bf16", {}, {}});
  ASSERT_TRUE(v.ok) << v.log;
  EXPECT_EQ(v.error, FailureKind::none);
  EXPECT_GT(v.cubin.size(), 1000u);
  EXPECT_EQ(std::string(v.cubin.data() + 1, 3), "ELF");  // a cubin is an ELF image
  EXPECT_EQ(v.hash.size(), 32u);
  EXPECT_GT(v.resources.registers, 0);
  EXPECT_LE(v.resources.registers, 255);
  EXPECT_FALSE(v.cache_hit);
  EXPECT_TRUE(fs::exists(v.cubin_path));
  EXPECT_NE(v.log.find("fill_normal_bf16"), std::string::npos);  // ptxas -v reports the kernel
}

TEST(Compiler, SyntaxErrorGivesLogNotException) {
  const Compiler c = make_compiler(test::temp_dir("attn-cache"));
  const CompiledVariant v = c.compile({faulty("compile_error.cu"), "block_sparse_attn_fwd", {}, {}});
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.error, FailureKind::compile);
  EXPECT_TRUE(v.cubin.empty());
  EXPECT_NE(v.log.find("error"), std::string::npos) << v.log;
  EXPECT_NE(v.log.find("compile_error.cu(10)"), std::string::npos) << v.log;  // file and line of the error
}

TEST(Compiler, BadInputsGiveCompileFailure) {
  const Compiler c = make_compiler(test::temp_dir("attn-cache"));
  const auto missing = c.compile({"/nonexistent/x.cu", "k", {}, {}});
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.log.find("/nonexistent/x.cu"), std::string::npos);
  const auto bad_define = c.compile({templates() + "/fill_normal.cu", "fill_normal_bf16", {{"1BAD", 1}}, {}});
  EXPECT_FALSE(bad_define.ok);
  EXPECT_NE(bad_define.log.find("1BAD"), std::string::npos);
}

TEST(Compiler, ParsesResourcesFromRealLog) {
  Probe p;
  const Compiler c = make_compiler(test::temp_dir("attn-cache"));
  const CompiledVariant v = c.compile(p.req(8));
  ASSERT_TRUE(v.ok) << v.log;
  EXPECT_EQ(v.resources.static_smem, 1024 * 4);  // the __shared__ tile
  EXPECT_GT(v.resources.registers, 0);
  EXPECT_EQ(v.resources.spill_stores, 0);
  // The parser reads the same numbers from the log text directly, and nothing for an absent kernel.
  EXPECT_EQ(parse_ptxas_resources(v.log, "probe"), v.resources);
  EXPECT_EQ(parse_ptxas_resources(v.log, "not_there").registers, -1);

  // A register cap far below the need forces spills, which the report must show.
  const CompiledVariant capped = c.compile(p.req(96, {"-maxrregcount=24"}));
  ASSERT_TRUE(capped.ok) << capped.log;
  EXPECT_LE(capped.resources.registers, 24);
  EXPECT_GT(capped.resources.spill_stores + capped.resources.stack_frame, 0) << capped.log;
}

// NVRTC 13's own cross-process cache (where a driver is installed) returns a cubin without the ptxas -v
// log: off in every compile, and out of the cache key (it changes no code). The same cubin both ways.
TEST(Compiler, NvrtcsOwnCacheIsOffAndOutOfTheKey) {
  Probe p;
  const Compiler c = make_compiler(test::temp_dir("attn-cache"));
  const auto options = c.nvrtc_options(p.req(8));
  EXPECT_EQ(std::count(options.begin(), options.end(), "-no-cache"), 1);
  EXPECT_EQ(c.content_hash(p.req(8, {"-no-cache"})), c.content_hash(p.req(8)));
  const CompiledVariant v = c.compile(p.req(8));
  ASSERT_TRUE(v.ok) << v.log;
  EXPECT_GT(v.resources.registers, 0) << v.log;
  const CompiledVariant again = make_compiler(test::temp_dir("attn-cache")).compile(p.req(8));  // no cache of ours
  ASSERT_TRUE(again.ok && !again.cache_hit) << again.log;
  EXPECT_EQ(again.resources, v.resources);
  EXPECT_EQ(again.cubin, v.cubin);
}

TEST(Compiler, CacheHitsAndHashChanges) {
  Probe p;
  const std::string cache = test::temp_dir("attn-cache");
  const Compiler c = make_compiler(cache);
  const CompiledVariant first = c.compile(p.req(8));
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(fs::exists(cache + "/" + first.hash + ".cubin"));
  EXPECT_TRUE(fs::exists(cache + "/" + first.hash + ".json"));

  const CompiledVariant second = c.compile(p.req(8));
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.hash, first.hash);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.resources, first.resources);
  EXPECT_DOUBLE_EQ(second.compile_ms, first.compile_ms);

  // A changed define, an extra option, or an edited include: a new hash and a real compile.
  EXPECT_NE(c.content_hash(p.req(16)), first.hash);
  EXPECT_NE(c.content_hash(p.req(8, {"--use_fast_math"})), first.hash);
  write(p.dir + "/probe_inc.cuh", "#define PROBE_SCALE 3.0f\n");
  const CompiledVariant edited = c.compile(p.req(8));
  ASSERT_TRUE(edited.ok) << edited.log;
  EXPECT_NE(edited.hash, first.hash);
  EXPECT_FALSE(edited.cache_hit);

  // Without the cache, NVRTC runs every time.
  CompilerOptions off;
  off.cache_dir = cache;
  off.use_cache = false;
  const CompiledVariant uncached = Compiler(off).compile(p.req(8));
  EXPECT_FALSE(uncached.cache_hit);
  EXPECT_TRUE(uncached.cubin_path.empty());
}

TEST(Compiler, CompileErrorsAreCachedToo) {
  const std::string cache = test::temp_dir("attn-cache");
  const Compiler c = make_compiler(cache);
  const auto a = c.compile({faulty("compile_error.cu"), "block_sparse_attn_fwd", {}, {}});
  const auto b = c.compile({faulty("compile_error.cu"), "block_sparse_attn_fwd", {}, {}});
  EXPECT_FALSE(a.ok);
  EXPECT_FALSE(b.ok);
  EXPECT_TRUE(b.cache_hit);
  EXPECT_EQ(a.log, b.log);
}

TEST(Compiler, AMissingHeaderIsTransientAndNeverCached) {
  Probe p;
  const Compiler c = make_compiler(test::temp_dir("attn-cache"));
  std::filesystem::remove(p.dir + "/probe_inc.cuh");
  const auto gone = c.compile(p.req(4));
  EXPECT_FALSE(gone.ok);
  EXPECT_TRUE(gone.transient) << gone.log;
  const auto again = c.compile(p.req(4));  // not answered from the cache
  EXPECT_FALSE(again.cache_hit);
  EXPECT_TRUE(again.transient);
  write(p.dir + "/probe_inc.cuh", "#define PROBE_SCALE 2.0f\n");
  const auto back = c.compile(p.req(4));
  EXPECT_TRUE(back.ok) << back.log;
  EXPECT_FALSE(back.cache_hit);
  EXPECT_FALSE(back.transient);
  // A missing template source is transient too; a syntax error is not.
  std::filesystem::remove(p.src);
  EXPECT_TRUE(c.compile(p.req(4)).transient);
  const auto syntax = c.compile({faulty("compile_error.cu"), "block_sparse_attn_fwd", {}, {}});
  EXPECT_FALSE(syntax.ok);
  EXPECT_FALSE(syntax.transient);
}

TEST(Compiler, LocalIncludesAreFound) {
  Probe p;
  const auto inc = local_includes(p.src);
  ASSERT_EQ(inc.size(), 1u);
  EXPECT_EQ(inc[0].first, "probe_inc.cuh");
  EXPECT_NE(inc[0].second.find("PROBE_SCALE"), std::string::npos);
}

TEST(CompilePool, CompilesConfigsInParallel) {
  Probe p;
  const Compiler c = make_compiler(test::temp_dir("attn-cache"));
  CompilePool pool(c, 2);
  EXPECT_EQ(pool.threads(), 2u);
  std::vector<std::future<CompiledVariant>> futures;
  const std::vector<std::int64_t> accs{4, 8, 12, 16};
  for (auto a : accs) futures.push_back(pool.submit(p.req(a)));
  futures.push_back(pool.submit({faulty("compile_error.cu"), "block_sparse_attn_fwd", {}, {}}));
  std::set<std::string> hashes;
  for (std::size_t i = 0; i < accs.size(); ++i) {
    const CompiledVariant v = futures[i].get();
    EXPECT_TRUE(v.ok) << v.log;
    EXPECT_EQ(v.hash, c.content_hash(p.req(accs[i])));
    hashes.insert(v.hash);
  }
  EXPECT_EQ(hashes.size(), accs.size());
  EXPECT_FALSE(futures.back().get().ok);
}

// fa3_tma's softmax modes and V conversions (2026-11-25) on the structure of the full-suite champions: each
// compiles, with no wgmma serialised by ptxas (a wgmma under a run-time condition did that once, warning
// C7520: docs/kernels.md) and no spill at PRODUCER_REGS 40 (SOFTMAX 2 keeps S intact beside the new P for its
// slow path, the register pressure to watch), and each is a kernel of its own.
TEST(Fa3TmaTemplate, EverySoftmaxModeAndVConversionCompilesUnserialisedWithoutSpills) {
  const TemplateSpace space = TemplateSpace::load_named(templates(), "fa3_tma");
  Config base = space.default_config();
  for (const auto& [k, v] : Config{{"EPILOGUE", 2}, {"KV_ORDER", 0}, {"ORDER", 2}, {"Q_BUFFERS", 1}, {"SCHEDULE", 2},
                                   {"OVERLAP", 1}, {"PINGPONG", 1}, {"PRODUCER_REGS", 40}})
    base[k] = v;
  const Compiler c = make_compiler(test::temp_dir("attn-cache"));
  std::set<std::string> hashes;
  for (const auto& [softmax, convert] : std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {2, 0}, {2, 1}}) {
    Config cfg = base;
    cfg["SOFTMAX"] = softmax;
    cfg["V_CONVERT"] = convert;
    ASSERT_FALSE(space.check(cfg)) << *space.check(cfg);
    const CompiledVariant v = c.compile({space.source_path(), space.kernel(), cfg, {}});
    const std::string what = "SOFTMAX " + std::to_string(softmax) + ", V_CONVERT " + std::to_string(convert);
    ASSERT_TRUE(v.ok) << what << ": " << v.log;
    EXPECT_EQ(v.log.find("serialized"), std::string::npos) << what << ": " << v.log;
    EXPECT_EQ(v.resources.spill_stores + v.resources.spill_loads, 0) << what << ": " << v.log;
    hashes.insert(v.hash);
  }
  EXPECT_EQ(hashes.size(), 4u);
}

// NVRTC 13.0 keeps --Ofast-compile for every later compile of the process (a plain fa3_tma compile after an -Ofc
// one gives another cubin: lab/scripts/nvrtc_cost_probe.py), which would put wrong cubins into the cache. The
// compiler refuses the option, so the same config compiles to the same cubin before and after such a request.
TEST(Compiler, FastCompileOptionIsRefusedAndLeavesLaterCubinsAlone) {
  const TemplateSpace space = TemplateSpace::load_named(templates(), "fa3_tma");
  CompilerOptions o;
  o.use_cache = false;
  const Compiler c(o);
  const CompileRequest plain = compile_request(space, space.default_config());
  const CompiledVariant before = c.compile(plain);
  ASSERT_TRUE(before.ok) << before.log;
  for (const std::string opt : {"-Ofc=max", "--Ofast-compile=mid", "-Ofc", "-Ofast-compile=min"}) {
    CompileRequest fast = plain;
    fast.extra_options = {"--use_fast_math", opt};
    const CompiledVariant v = c.compile(fast);
    EXPECT_FALSE(v.ok) << opt;
    EXPECT_EQ(v.error, FailureKind::compile);
    EXPECT_NE(v.log.find(opt), std::string::npos) << v.log;
  }
  const CompiledVariant after = c.compile(plain);
  ASSERT_TRUE(after.ok) << after.log;
  EXPECT_EQ(after.cubin_hash, before.cubin_hash);
  EXPECT_EQ(after.cubin, before.cubin);
}

TEST(Compiler, DefaultCacheDirFollowsEnvironment) {
  ::setenv("ATTN_TUNER_CACHE", "/tmp/attn-x-cache", 1);
  EXPECT_EQ(default_cache_dir(), "/tmp/attn-x-cache");
  ::unsetenv("ATTN_TUNER_CACHE");
  if (const char* h = std::getenv("HOME")) {
    EXPECT_EQ(default_cache_dir(), std::string(h) + "/.cache/attn-tuner");
  }
}

}  // namespace
}  // namespace attn
