// Refactor-safe champions (issue 27): a DB's champion still exports after its template source changed when
// the recompiled cubin is byte-identical to the one recorded with the variant (variants.cubin_hash), and is
// refused when it is not; `attn-tuner db cubin-hashes` records the hashes of a DB that predates them. NVRTC
// only: no GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/templates_dir.hpp"
#include "db/store.hpp"
#include "export/cubin_backfill.hpp"
#include "export/plan_from_db.hpp"
#include "gpu/compiler.hpp"
#include "tests/export/export_db.hpp"
#include "tests/export/helpers.hpp"
#include "tests/test_support.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;

/// A copy of the repository's templates that the test may edit.
std::string copy_templates() {
  const std::string dir = test::temp_dir("refactor-templates");
  fs::copy(default_templates_dir(), dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  return dir;
}

void append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app) << text;
}

/// The message of the std::invalid_argument that build_export_plan throws ("" when it does not throw).
std::string refusal(ExperimentDb& db, const DbExportOptions& o) {
  try {
    build_export_plan(db, o);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(RefactorSafeExport, AChangedSourceWithTheSameCubinExportsAndAnotherCubinIsRefused) {
  const std::string templates = copy_templates();
  const Config base = test::fa2_mma_default_config();
  test::ExportDb f;
  // The champion as a daemon records it today: content hash and cubin hash, its cubin file gone (another
  // machine's cache).
  const auto iter = f.add_iteration(base, {}, [](const CaseSpec&) { return 1.0; });
  f.champion(ChampionScope::overall, iter);
  const std::vector<std::uint8_t> cubin = test::fa2_mma_cubin(base);
  const std::int64_t variant = *f.db().iteration(iter)->variant_id;
  f.db().set_variant_cubin_hash(variant, cubin_hash(std::vector<char>(cubin.begin(), cubin.end())));

  DbExportOptions o;
  o.templates_dir = templates;
  {  // Unchanged source: exported as before, no note.
    const ExportPlan plan = build_export_plan(f.db(), o);
    EXPECT_EQ(plan.variants[0].cubin, cubin);
    EXPECT_FALSE(plan.variants[0].provenance.contains("source_note"));
  }
  // A refactor that leaves the cubin alone: a comment and a helper nobody calls.
  append(templates + "/fa2_mma.cu", "\n// refactored: this comment and the unused helper below change no SASS\n"
                                    "static __device__ __forceinline__ int attn_unused_helper(int x) { return x; }\n");
  {
    const ExportPlan plan = build_export_plan(f.db(), o);
    ASSERT_EQ(plan.variants.size(), 1u);
    EXPECT_EQ(plan.variants[0].cubin, cubin);
    EXPECT_EQ(plan.variants[0].provenance["source_matches_cubin"], true);
    const std::string note = plan.variants[0].provenance.value("source_note", std::string());
    EXPECT_NE(note.find("byte-identical"), std::string::npos) << note;
    EXPECT_NE(plan.variants[0].provenance["cubin"].get<std::string>().find("byte-identical"), std::string::npos);
    EXPECT_NE(plan.variants[0].source.find("refactored"), std::string::npos);  // the new source ships
  }
  // A change that does change the cubin: a new device global.
  append(templates + "/fa2_mma.cu", "extern \"C\" __device__ int attn_refactor_probe[1] = {42};\n");
  const std::string why = refusal(f.db(), o);
  EXPECT_NE(why.find("recompiled cubin differs"), std::string::npos) << why;
  EXPECT_NE(why.find("--allow-stale-source"), std::string::npos) << why;
}

TEST(RefactorSafeExport, ADbWithoutCubinHashesIsBackFilledWhileTheSourceMatches) {
  const std::string templates = copy_templates();
  const Config base = test::fa2_mma_default_config();
  test::ExportDb f;
  const auto iter = f.add_iteration(base, {}, [](const CaseSpec&) { return 1.0; });
  f.champion(ChampionScope::overall, iter);
  // A stale row: its content hash is no source's, so it cannot be back-filled.
  const auto stale = f.add_iteration(test::with(base, {{"BLOCK_N", 32}}), {}, [](const CaseSpec&) { return 2.0; },
                                     std::string(32, 'c'));
  f.champion(ChampionScope::sliding_window, stale);

  DbExportOptions o;
  o.templates_dir = templates;
  o.buckets = false;
  append(templates + "/fa2_mma.cu", "\n// edited before any cubin hash was recorded\n");
  std::string why = refusal(f.db(), o);
  EXPECT_NE(why.find("No cubin hash is recorded"), std::string::npos) << why;
  EXPECT_NE(why.find("db cubin-hashes"), std::string::npos) << why;

  // Back to the tuned source: back-fill, then the same edit exports.
  fs::copy_file(default_templates_dir() + "/fa2_mma.cu", templates + "/fa2_mma.cu",
                fs::copy_options::overwrite_existing);
  const CubinBackfill b = backfill_cubin_hashes(f.db(), templates, false);
  EXPECT_EQ(b.recorded, 1) << (b.skipped.empty() ? "" : b.skipped.front());
  // Skipped: the suite's export plan (the stale champion stops it, so only champions count) and the stale row.
  ASSERT_EQ(b.skipped.size(), 2u);
  EXPECT_NE(b.skipped[0].find("suite full: no export plan"), std::string::npos) << b.skipped[0];
  EXPECT_NE(b.skipped[1].find("changed since it was compiled"), std::string::npos) << b.skipped[1];
  const auto vr = f.db().variant(*f.db().iteration(iter)->variant_id);
  EXPECT_EQ(vr->cubin_hash.size(), 32u);
  EXPECT_EQ(backfill_cubin_hashes(f.db(), templates, false).already, 1);  // a second run records nothing new

  append(templates + "/fa2_mma.cu", "\n// edited after the back-fill\n");
  f.db().connection().exec("DELETE FROM champions WHERE scope = 'sliding_window'");
  const ExportPlan plan = build_export_plan(f.db(), o);
  EXPECT_EQ(plan.variants[0].cubin, test::fa2_mma_cubin(base));
  EXPECT_NE(plan.variants[0].provenance.value("source_note", std::string()).find("byte-identical"), std::string::npos);
}

TEST(RefactorSafeExport, TheCliBackFillsAndSaysWhatItDid) {
  test::ExportDb f;
  const auto iter = f.add_iteration(test::fa2_mma_default_config(), {}, [](const CaseSpec&) { return 1.0; });
  f.champion(ChampionScope::overall, iter);
  const auto r = test::run_command(std::string(ATTN_BINARY) + " db cubin-hashes " + test::shell_quote(f.path()));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("1 cubin hash(es) recorded"), std::string::npos) << r.output;
  const auto missing = test::run_command(std::string(ATTN_BINARY) + " db cubin-hashes /nonexistent/x.db");
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("no experiment DB at"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace attn
