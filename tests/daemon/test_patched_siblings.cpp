// The tuning loop's patched siblings (Scheduler::queue_siblings): configs that differ only in a patchable parameter
// are queued together, compiled once, and each evaluated with a cubin byte-identical to NVRTC's own build of it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "db/store.hpp"
#include "gpu/compiler.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;

TEST(PatchedSiblings, EachFamilyCompilesOnceAndEverySiblingRunsItsOwnExactCubin) {
  test::DaemonFixture f;
  const std::string templates = f.dir + "/templates";
  fs::create_directories(templates);
  // fake.cu with P read from constant memory: P's value is data in the cubin, not code.
  std::string cu = test::read_text(test::data_dir() + "/fake_templates/fake.cu");
  cu += "#ifndef P\n#define P 0\n#endif\nextern \"C\" __constant__ int attn_param_P = P;\n";
  std::ofstream(templates + "/share.cu") << cu;
  std::ofstream(templates + "/share.json")
      << R"({"name": "share", "source": "share.cu", "kernel": "block_sparse_attn_fwd",
             "parameters": {"P": {"values": [0, 1, 2], "patchable": true},
                            "A": {"values": [1, 2, 3, 4, 5, 6]}, "B": {"values": [1, 2, 3]}},
             "default": {"A": 1, "B": 1, "P": 0}})";
  // Exhaustive, P first (slowest): the strategy proposes P 0 of each family, the loop queues P 1 and 2 once it
  // compiled; two compiles of one family in flight at once would both run NVRTC.
  std::string args = f.args("", "exhaustive", "share");
  const std::string fake_dir = test::data_dir() + "/fake_templates";
  args.replace(args.find(fake_dir), fake_dir.size(), templates);

  const test::Output out = test::run_tuner(args);
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("search space exhausted: all 54 valid configs evaluated"), std::string::npos) << out.text;

  const auto its = f.iterations();
  ASSERT_EQ(its.size(), 54u);
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto space = TemplateSpace::load(templates + "/share.json");
  CompilerOptions no_cache;
  no_cache.use_cache = false;
  const Compiler nvrtc(no_cache);
  std::map<std::string, int> nvrtc_runs;  // family (A, B) -> iterations that ran NVRTC
  std::vector<std::string> family_of;
  int siblings = 0;
  for (const auto& it : its) {
    ASSERT_EQ(it.status == IterationStatus::keep || it.status == IterationStatus::discard, true) << it.description;
    ASSERT_TRUE(it.variant_id);
    const auto v = db.variant(*it.variant_id);
    ASSERT_TRUE(v);
    Config c = config_from_json(v->params_json);
    const CompiledVariant own = nvrtc.compile({space.source_path(), space.kernel(), c, {}});
    ASSERT_TRUE(own.ok) << own.log;
    EXPECT_EQ(v->cubin_hash, own.cubin_hash) << it.params;  // what the GPU ran is NVRTC's cubin of this config
    EXPECT_EQ(v->content_hash, own.hash) << it.params;
    c.erase("P");
    family_of.push_back(config_to_compact(c));
    if (it.compile_ms.value_or(0) > 0) ++nvrtc_runs[family_of.back()];
    if (it.description.find("(sibling P=") != std::string::npos) ++siblings;
  }
  EXPECT_EQ(nvrtc_runs.size(), 18u);  // every family compiled ...
  for (const auto& [family, n] : nvrtc_runs) EXPECT_EQ(n, 1) << family;  // ... once: 36 configs ran no NVRTC
  // The loop queued most of them itself; the strategy may propose a sibling while its family compiles (it then
  // waits for that compile and is patched: Compiler::compile).
  EXPECT_GE(siblings, 30);
  EXPECT_LE(siblings, 36);
  // A sibling is evaluated right after its family's compiled config or another sibling of it.
  for (std::size_t i = 0; i < its.size(); ++i)
    if (its[i].description.find("(sibling P=") != std::string::npos) {
      ASSERT_GT(i, 0u);
      EXPECT_EQ(family_of[i], family_of[i - 1]) << its[i].description;
    }
}

}  // namespace
}  // namespace attn
