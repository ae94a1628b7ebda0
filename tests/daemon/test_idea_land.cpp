// `attn-tuner idea land` (proposer/idea_land.hpp) and the parent a DB reader sees (proposer/parent_template.hpp):
// the doc test's fixture DB (tests/docs/fixture.db.xz: idea 1, FAST, a win on quick) landed into a copy of the fake
// templates, a landing refused when the source changed, and the research DB against the repository's fa3_tma, in
// which V_UNPACK and EPI_LEAN are landed (NVRTC on the CPU).
#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text_file.hpp"
#include "db/store.hpp"
#include "proposer/idea_context.hpp"
#include "proposer/idea_land.hpp"
#include "proposer/parent_template.hpp"
#include "proposer/sass_profile.hpp"
#include "tests/test_support.hpp"
#include "proposer/idea_apply.hpp"
#include "proposer/idea_check.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/idea_parent.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;

const Compiler& compiler() {
  static const std::string cache = test::temp_dir("attn-idea-land-cache");
  static const Compiler c([] {
    CompilerOptions o;
    o.cache_dir = cache;
    return o;
  }());
  return c;
}

/// `xz` unpacked into a fresh temporary folder; returns the file's path.
std::string unpack(const std::string& xz, const std::string& name) {
  const std::string dir = test::temp_dir("attn-idea-land-db");
  const std::string out = dir + "/" + name;
  const int rc = std::system(fmt::format("xz -dc '{}' > '{}'", xz, out).c_str());
  EXPECT_EQ(rc, 0) << xz;
  return out;
}

std::string fixture_db() { return unpack(std::string(ATTN_SOURCE_DIR) + "/tests/docs/fixture.db.xz", "fixture.db"); }

/// A templates folder copied into a fresh one (landing in place writes there).
std::string copy_of(const std::string& rel) {
  const std::string dir = test::temp_dir("attn-idea-land-templates");
  fs::copy(std::string(ATTN_SOURCE_DIR) + "/" + rel, dir, fs::copy_options::recursive);
  return dir;
}
std::string fake_templates() { return copy_of("tests/data/fake_templates"); }
/// fake_healthy as it was when the fixture's lineage was built on it (tests/docs/fixture_templates: fake.cu had
/// `#define A 1` where it has the #error guard today, so the lineage does not apply to today's fake.cu).
std::string fixture_templates() { return copy_of("tests/docs/fixture_templates"); }

TEST(IdeaLand, TheFixtureDbsWinLandsAsAnAxisWithTheParentsDefault) {
  auto db = ExperimentDb::open(fixture_db(), ExperimentDb::Mode::read_only);
  const std::string templates = fixture_templates(), out = test::temp_dir("attn-idea-land-out") + "/landed";
  // Before: quick's parent is the win's template (fake_healthy_p1), not landed.
  const ParentTemplate before = load_parent_template(db, "quick", "fake_healthy", templates, test::temp_dir("p"));
  EXPECT_EQ(before.rule.code, "fake_healthy_p1");
  EXPECT_FALSE(before.rule.landed);

  LandRequest req;
  req.suite = "quick";
  req.templates_dir = templates;
  req.out_dir = out;
  const LandResult r = land_lineage(db, req, compiler());
  ASSERT_EQ(r.landed.size(), 1u);
  EXPECT_EQ(r.landed[0].file, "01_fast.idea");
  std::string all;
  for (const auto& l : r.lines) all += l + "\n";
  EXPECT_NE(all.find("every file and the space equal the DB's fake_healthy_p1"), std::string::npos) << all;
  EXPECT_NE(all.find("the landed source = fake_healthy_p1"), std::string::npos) << all;
  EXPECT_NE(all.find("axis FAST [0,1] (idea 1): kept as an axis, default 0"), std::string::npos) << all;
  // The landed template: FAST an axis, default 0 (the parent's kernel), the win recorded.
  const TemplateSpace landed = TemplateSpace::load(out + "/fake_healthy.json");
  EXPECT_EQ(landed.default_config().at("FAST"), 0);
  const auto l = landed_ideas(landed);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].idea_hash, r.landed[0].idea_hash);
  EXPECT_EQ(l[0].template_name, "fake_healthy_p1");
  EXPECT_NE(read_text_file(out + "/fake_healthy.cu").find("#if FAST"), std::string::npos);
  // The repository's templates were not touched (--out).
  EXPECT_EQ(read_text_file(templates + "/fake_healthy.json"),
            read_text_file(std::string(ATTN_SOURCE_DIR) + "/tests/data/fake_templates/fake_healthy.json"));

  // In place: the parent is now the repository template, and a second landing has nothing to do.
  req.in_place = true;
  req.out_dir.clear();
  land_lineage(db, req, compiler());
  const ParentTemplate after = load_parent_template(db, "quick", "fake_healthy", templates, test::temp_dir("p"));
  EXPECT_EQ(after.rule.code, "fake_healthy");
  EXPECT_TRUE(after.rule.landed);
  EXPECT_EQ(after.rule.measured, "fake_healthy_p1");  // the same axes: the win's rows are the landed template's
  EXPECT_EQ(after.best->iter, 27);                    // quick's champion, the win's best
  EXPECT_EQ(after.config.at("FAST"), 1);
  const LandResult again = land_lineage(db, req, compiler());
  EXPECT_TRUE(again.landed.empty());
  ASSERT_FALSE(again.lines.empty());
  EXPECT_NE(again.lines[0].find("nothing to land"), std::string::npos) << again.lines[0];
  // full has no win: its parent stays the repository template, and nothing lands.
  EXPECT_EQ(load_parent_template(db, "full", "fake_healthy", templates, test::temp_dir("p")).rule.code, "fake_healthy");
}

TEST(IdeaLand, ALineageThatDoesNotApplyToTheCurrentSourceIsRefusedAndNothingIsWritten) {
  auto db = ExperimentDb::open(fixture_db(), ExperimentDb::Mode::read_only);
  // Today's fake.cu: its #error guards replaced the fallbacks the lineage was built on (fixture_templates).
  {
    LandRequest req;
    req.suite = "quick";
    req.templates_dir = fake_templates();
    req.out_dir = test::temp_dir("attn-idea-land-out") + "/x";
    try {
      land_lineage(db, req, compiler());
      FAIL() << "landed on today's fake.cu";
    } catch (const LandRefused& e) {
      EXPECT_NE(std::string(e.what()).find("fake_healthy.cu differs from the DB's fake_healthy_p1 (line 5: the landed "
                                           "source has '#error \"A not given"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(req.out_dir));
  }
  const std::string templates = fixture_templates();
  // The line the win's hunk starts from changed since the lineage was built on it.
  std::string cu = read_text_file(templates + "/fake.cu");
  const auto at = cu.find("extern \"C\" __device__ int attn_launch_info[4]");
  ASSERT_NE(at, std::string::npos);
  cu.insert(at, "// a comment the lineage never saw\n");
  write_text_file(templates + "/fake.cu", cu);
  LandRequest req;
  req.suite = "quick";
  req.templates_dir = templates;
  req.in_place = true;
  try {
    land_lineage(db, req, compiler());
    FAIL() << "landed on a changed source";
  } catch (const LandRefused& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("idea 1 (01_fast.idea, template fake_healthy_p1)"), std::string::npos) << what;
    EXPECT_NE(what.find("nothing written"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(templates + "/fake_healthy.cu"));
  EXPECT_EQ(read_text_file(templates + "/fake_healthy.json"),
            read_text_file(std::string(ATTN_SOURCE_DIR) + "/tests/docs/fixture_templates/fake_healthy.json"));
}

/// The fixture's quick kit (`idea context` from the DB at `db_path`, the fake templates) in a fresh folder.
std::string fixture_kit(const std::string& db_path) {
  const std::string kit = test::temp_dir("attn-idea-land-kit") + "/kit";
  auto db = ExperimentDb::open(db_path, ExperimentDb::Mode::read_only);
  IdeaContextRequest req;
  req.suite = "quick";
  req.templates_dir = fake_templates();
  req.cache_dir = test::temp_dir("attn-idea-land-kit-cache");
  write_idea_context(kit, db, req);
  return kit;
}

TEST(IdeaLand, TheCheckFromAKitSaysWhatTheDaemonWouldSkip) {
  // The fixture's quick kit: its parent is the win fake_healthy_p1; the win itself, sent again unchanged, was judged
  // on fake_healthy and has no Retry: the daemon skips it, and so does the check (exit 10).
  const std::string kit = fixture_kit(fixture_db());
  const auto parent = nlohmann::json::parse(read_text_file(kit + "/parent.json"));
  EXPECT_EQ(parent.at("template"), "fake_healthy_p1");
  EXPECT_EQ(parent.at("config").at("FAST"), 1);
  const test::CommandOutput again = test::run_binary("idea check '" + kit + "/ideas_tried/1_01_fast.idea' --kit '" + kit + "'");
  EXPECT_EQ(again.code, 10) << again.text;
  EXPECT_NE(again.text.find("FAIL already_judged: idea 1_01_fast.idea: already judged win on fake_healthy on quick (idea 1); "
                            "add 'Retry: yes' to run it on fake_healthy_p1"),
            std::string::npos) << again.text;
  EXPECT_NE(again.text.find("RESULT already_judged"), std::string::npos) << again.text;
  // The same file with Retry: yes goes on to the apply on the new parent, which holds its code already: as the
  // daemon's, the patch refuses.
  const std::string retry = test::temp_dir("attn-idea-land-retry") + "/retry.idea";
  write_text_file(retry, "Retry: yes\n" + read_text_file(kit + "/ideas_tried/1_01_fast.idea"));
  const test::CommandOutput r = test::run_binary("idea check '" + retry + "' --kit '" + kit + "'");
  EXPECT_EQ(r.text.find("already_judged"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("FAIL does_not_apply: patch:"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("previously applied"), std::string::npos) << r.text;
}

/// How often `needle` occurs in the files under `dir`, all together.
std::size_t occurrences_in(const std::string& dir, const std::string& needle) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string text = read_text_file(e.path().string());
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  }
  return n;
}

TEST(IdeaLand, AKitCopiedElsewhereSaysWhatItLacksAndWhereToGetIt) {
  // The fixture's quick kit, written into one folder and read from another (the authors got it copied).
  const std::string db_path = fixture_db(), first = fixture_kit(db_path);
  const std::string kit = test::temp_dir("attn-idea-land-copied") + "/kit";
  fs::rename(first, kit);
  EXPECT_EQ(occurrences_in(kit, first), 0u) << "no file names the folder the kit was written to";
  // The trace commands once, in PROFILE.md, with the templates relative to the kit's root, which they still name.
  const std::string profile = read_text_file(kit + "/profile/PROFILE.md");
  EXPECT_EQ(occurrences_in(kit, "`attn-tuner trace` (on a GPU)"), 1u) << profile;
  EXPECT_FALSE(fs::exists(kit + "/profile/trace")) << "no traces given: no trace folder";
  EXPECT_NE(profile.find("attn-tuner trace --templates template --template fake_healthy --config"), std::string::npos)
      << profile;
  EXPECT_NE(profile.find("relative to it, so they hold wherever the kit was copied"), std::string::npos);
  EXPECT_NO_THROW(TemplateSpace::load_named(kit + "/template", "fake_healthy"));
  // What it lacks, at its top, and the command that writes it whole on a GPU machine.
  const auto missing = profile.find("## Missing here"), resources = profile.find("## Resources");
  ASSERT_NE(missing, std::string::npos) << profile;
  EXPECT_LT(missing, resources);
  EXPECT_NE(profile.find("- the trace (cycles per kv tile and per role): the DB holds no trace"), std::string::npos);
  EXPECT_NE(profile.find("attn-tuner idea context --db " + db_path + " --suite quick --out NEW_KIT --trace traces"),
            std::string::npos) << profile;
  const bool no_disassembler = !find_disassembler();
  EXPECT_EQ(profile.find("no disassembler (cuobjdump or nvdisasm of the CUDA toolkit) on the machine that wrote this "
                         "kit: it was written without the GPU machine's toolkit") != std::string::npos,
            no_disassembler) << profile;
  EXPECT_EQ(fs::exists(kit + "/profile/sass_mix.tsv"), !no_disassembler);
  // The ABI the host honours, which IDEA.md names.
  EXPECT_EQ(read_text_file(kit + "/template/ABI.md"), read_text_file(std::string(ATTN_TEMPLATES_DIR) + "/ABI.md"));
  const std::string idea_md = read_text_file(kit + "/IDEA.md");
  EXPECT_NE(idea_md.find("- `template/ABI.md`: the kernel ABI the host honours"), std::string::npos);
  // parent.json: the parent's best configs, one row a config, fastest first, the first its best config.
  const auto parent = nlohmann::json::parse(read_text_file(kit + "/parent.json"));
  const auto& top = parent.at("top");
  ASSERT_GE(top.size(), 2u) << parent.dump(2);
  EXPECT_LE(top.size(), kIdeaTopConfigs);
  EXPECT_EQ(top[0].at("iteration"), parent.at("iteration"));
  EXPECT_EQ(top[0].at("config"), parent.at("config"));
  for (std::size_t i = 1; i < top.size(); ++i) {
    EXPECT_LE(top[i - 1].at("geomean_ms").get<double>(), top[i].at("geomean_ms").get<double>());
    EXPECT_NE(top[i - 1].at("config"), top[i].at("config"));
  }
}

TEST(IdeaLand, TheKitsIdeaMdAnswersWhatTheAuthorsAsked) {
  const std::string kit = fixture_kit(fixture_db());
  const std::string md = read_text_file(kit + "/IDEA.md");
  // Serialisation: the window is issue to retire, every code the check knows is listed, with the check's causes.
  EXPECT_NE(md.find("between the issue of a wgmma and the `wgmma.wait_group` that retires it"), std::string::npos) << md;
  EXPECT_NE(md.find("(wgmma serialised: C7520, C7514, C7515, C7510, C7511 / C7512)"), std::string::npos);
  for (const auto& p : serialisation_patterns())
    EXPECT_NE(md.find(fmt::format("  - {} \"{}\": {};", p.codes, p.message, p.cause)), std::string::npos) << p.codes;
  // A partial --config is completed from the JSON default; the parent's best is the check without --config.
  EXPECT_NE(md.find("the values it does not name come from the parent's\nJSON default (`default` in "
                    "`template/fake_healthy.json`), not from `parent.json`'s best config"), std::string::npos) << md;
  // The line that proves the default unchanged, the compile cache, and no constraint from an idea.
  EXPECT_NE(md.find("`default config: cubin\nbyte-identical to the parent's (<hash>)` is the proof that your default is "
                    "unchanged"), std::string::npos);
  EXPECT_NE(md.find("--cache CACHE"), std::string::npos);
  EXPECT_NE(md.find("repeated check took 15-55 s"), std::string::npos);
  EXPECT_NE(md.find("an idea cannot add a constraint to the space"), std::string::npos);
  EXPECT_NE(md.find("`#error \"MY_AXIS needs BLOCK_N 128\"`"), std::string::npos);
}

/// The research DB of runs 1-11 (125 MB unpacked), once for the file.
const std::string& research_db() {
  static const std::string path =
      unpack(std::string(ATTN_SOURCE_DIR) + "/lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz",
             "research.db");
  return path;
}

TEST(IdeaLand, TheRepositorysFa3TmaHoldsTheResearchDbsWinsAndIsTheParent) {
  auto db = ExperimentDb::open(research_db(), ExperimentDb::Mode::read_only);
  const std::string templates = ATTN_TEMPLATES_DIR;
  const TemplateSpace fa3 = TemplateSpace::load_named(templates, "fa3_tma");
  std::vector<std::int64_t> ids;
  for (const auto& l : landed_ideas(fa3)) ids.push_back(l.idea);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{42, 59}));
  EXPECT_EQ(fa3.default_config().at("V_UNPACK"), 0);  // configs recorded before the landing keep their kernel
  EXPECT_EQ(fa3.default_config().at("EPI_LEAN"), 0);

  // full: the parent is the landed fa3_tma, measured as p59 (the champion's template p66 holds SFU_TURN, no gain).
  const ParentTemplate full = load_parent_template(db, "full", "fa3_tma", templates, test::temp_dir("p"));
  EXPECT_EQ(full.rule.code, "fa3_tma");
  EXPECT_TRUE(full.rule.landed);
  EXPECT_EQ(full.rule.measured, "fa3_tma_p59");
  EXPECT_EQ(full.rule.win_ideas, (std::vector<std::int64_t>{59, 42}));
  ASSERT_TRUE(full.best);
  EXPECT_EQ(full.best->template_name, "fa3_tma_p59");
  EXPECT_EQ(full.config.at("V_UNPACK"), 1);
  EXPECT_EQ(full.config.at("EPI_LEAN"), 1);
  // quick: EPI_LEAN won there too (idea 72, the same hash): landed; p72 lacks V_UNPACK, so fa3_tma's own rows.
  const ParentTemplate quick = load_parent_template(db, "quick", "fa3_tma", templates, test::temp_dir("p"));
  EXPECT_EQ(quick.rule.code, "fa3_tma");
  EXPECT_EQ(quick.rule.measured, "fa3_tma");
  // Nothing left to land.
  LandRequest req;
  req.suite = "full";
  req.templates_dir = templates;
  req.out_dir = test::temp_dir("attn-idea-land-out") + "/x";
  EXPECT_TRUE(land_lineage(db, req, compiler()).landed.empty());
}

/// The repository's fa3_tma written into a fresh folder under the file name `name`.cu (NVRTC writes the file name
/// into the cubin's internal symbols: a recorded cubin is reproduced under the name it was compiled with).
TemplateSpace fa3_as(const std::string& name) {
  const std::string dir = test::temp_dir("attn-idea-land-as"), src = std::string(ATTN_TEMPLATES_DIR) + "/fa3_tma.cu";
  write_text_file(dir + "/" + name + ".cu", read_text_file(src));
  for (const auto& [inc, text] : local_includes(src)) write_text_file(dir + "/" + inc, text);
  write_text_file(dir + "/" + name + ".json",
                  renamed_space_json(read_text_file(std::string(ATTN_TEMPLATES_DIR) + "/fa3_tma.json"), name, name + ".cu"));
  return TemplateSpace::load(dir + "/" + name + ".json");
}

std::string nvrtc_cubin_hash(const TemplateSpace& t, const std::string& config_json) {
  CompilerOptions o;
  o.use_cache = false;  // the cache's key is the text, not the file name
  const CompiledVariant v = Compiler(o).compile(compile_request(t, in_space_of(t, config_from_json(config_json))));
  EXPECT_TRUE(v.ok) << v.log;
  return v.cubin_hash;
}

// Done when (issue 51): kernels_templates/fa3_tma compiled at the full champion's config gives that champion's cubin,
// byte for byte, and a config recorded before the landing (quick's sliding_window champion, fa3_tma itself) still
// gives its own. The hashes are the research DB's variants.cubin_hash (NVRTC 13.0).
TEST(IdeaLand, TheLandedFa3TmaBuildsTheResearchDbsRecordedCubins) {
  if (nvrtc_version_string() != "13.0") GTEST_SKIP() << "recorded with NVRTC 13.0, this is " << nvrtc_version_string();
  // iter 89394, template fa3_tma_p66 (SFU_TURN 0: the idea's code is off in it).
  EXPECT_EQ(nvrtc_cubin_hash(fa3_as("fa3_tma_p66"),
                             R"({"BLOCK_N":128,"CMEM_PARAMS":0,"CONSUMERS":2,"CONVERTERS":3,"CTAS_PER_SM":1,"EPILOGUE":2,)"
                             R"("EPI_LEAN":1,"KV_ORDER":0,"ORDER":2,"OVERLAP":1,"PINGPONG":0,"PRODUCER_REGS":40,"Q_BUFFERS":1,)"
                             R"("RESCALE_SKIP":0,"SCHEDULE":2,"SFU_TURN":0,"SOFTMAX":2,"STAGES":2,"V_CONVERT":0,"V_UNPACK":1})"),
            "30c58139fe9235f37def22505116d255");
  // iter 50667, template fa3_tma, recorded before V_UNPACK and EPI_LEAN existed: completed with their default 0.
  EXPECT_EQ(nvrtc_cubin_hash(fa3_as("fa3_tma"),
                             R"({"BLOCK_N":128,"CONSUMERS":2,"CONVERTERS":3,"CTAS_PER_SM":1,"EPILOGUE":2,"KV_ORDER":0,)"
                             R"("ORDER":0,"OVERLAP":1,"PINGPONG":1,"PRODUCER_REGS":40,"Q_BUFFERS":1,"RESCALE_SKIP":0,)"
                             R"("SCHEDULE":2,"SOFTMAX":2,"STAGES":2,"V_CONVERT":0})"),
            "a9ced6f65a787ef8a63fe19e641c0cd7");
}

TEST(IdeaLand, TheKitOfTheResearchDbIsWrittenAgainstTheLandedTemplate) {
  auto db = ExperimentDb::open(research_db(), ExperimentDb::Mode::read_only);
  IdeaContextRequest req;
  req.templates_dir = ATTN_TEMPLATES_DIR;
  req.cache_dir = test::temp_dir("attn-idea-land-kit-cache");
  const auto same_as_repository = [](const std::string& kit, const std::string& file) {
    return read_text_file(kit + "/template/" + file) == read_text_file(std::string(ATTN_TEMPLATES_DIR) + "/" + file);
  };
  // quick: the champion's template fa3_tma_p73 holds EPI_EARLY (no gain); the parent is the repository's fa3_tma,
  // whose source holds the lineage's win (EPI_LEAN, idea 72), and its headers as they are in the repository.
  const std::string quick_kit = test::temp_dir("attn-idea-land-kit") + "/kit";
  req.suite = "quick";
  const IdeaContextSummary q = write_idea_context(quick_kit, db, req);
  EXPECT_EQ(q.parent_template, "fa3_tma");
  EXPECT_TRUE(same_as_repository(quick_kit, "fa3_tma.cu"));
  EXPECT_TRUE(same_as_repository(quick_kit, "blocks/epilogue.cuh"));
  const auto quick_parent = nlohmann::json::parse(read_text_file(quick_kit + "/parent.json"));
  EXPECT_EQ(quick_parent.at("landed"), true);
  EXPECT_EQ(quick_parent.at("wins"), nlohmann::json::array({72}));
  // full: the champion (runs 13-14, fa4_g4_p89) holds SCHED_EARLY, judged no gain; the parent is the repository's
  // fa4_g4 (no win in its lineage), measured by its own rows, without the idea's axis.
  const std::string kit = test::temp_dir("attn-idea-land-kit") + "/kit";
  req.suite = "full";
  const IdeaContextSummary s = write_idea_context(kit, db, req);
  EXPECT_EQ(s.parent_template, "fa4_g4");
  EXPECT_EQ(s.champion_iter, 106165);
  EXPECT_TRUE(same_as_repository(kit, "fa4_g4.cu"));
  EXPECT_TRUE(same_as_repository(kit, "blocks/producer.cuh"));
  EXPECT_EQ(read_text_file(kit + "/template/blocks/producer.cuh").find("SCHED_EARLY"), std::string::npos);
  const auto parent = nlohmann::json::parse(read_text_file(kit + "/parent.json"));
  EXPECT_EQ(parent.at("template"), "fa4_g4");
  EXPECT_EQ(parent.at("measured"), "fa4_g4");
  EXPECT_EQ(parent.at("wins"), nlohmann::json::array());
  EXPECT_FALSE(parent.at("config").contains("SCHED_EARLY"));
  // Its top configs on full, the ones the daemon tunes an idea from first: fa4_g4's best, fastest first.
  const auto& top = parent.at("top");
  ASSERT_EQ(top.size(), kIdeaTopConfigs) << parent.dump(2);
  EXPECT_EQ(top[0].at("iteration"), parent.at("iteration"));
  EXPECT_EQ(top[0].at("config"), parent.at("config"));
  for (std::size_t i = 1; i < top.size(); ++i) {
    EXPECT_LE(top[i - 1].at("geomean_ms").get<double>(), top[i].at("geomean_ms").get<double>());
    EXPECT_NE(top[i - 1].at("config"), top[i].at("config"));
  }
  // What an author could not see from parent.json alone: the schedule differs among them (SCHEDULE 3 first, the
  // template's default with SCHEDULE 2, iter 102801, third).
  EXPECT_EQ(top[0].at("config").at("SCHEDULE"), 3);
  EXPECT_EQ(top[2].at("iteration"), 102801);
  EXPECT_EQ(top[2].at("config").at("SCHEDULE"), 2);
  // ideas_tried.tsv names each idea's suite and hash (what `idea check --kit` reads for already_judged).
  const std::string tried = read_text_file(kit + "/ideas_tried.tsv");
  EXPECT_NE(tried.find("\tfull\t4af37e28fcb05e3219eeb5a5cd4758d1\n"), std::string::npos);
  // PROFILE.md: the resources from the champion's build (the DB cleared the compile logs), the trace's units.
  const std::string profile = read_text_file(kit + "/profile/PROFILE.md");
  EXPECT_EQ(profile.find("Not in the compile log"), std::string::npos) << profile;
  EXPECT_NE(profile.find("registers per thread"), std::string::npos) << profile;
  EXPECT_NE(profile.find("per CTA for the producer and the converters"), std::string::npos) << profile;
  const std::string idea_md = read_text_file(kit + "/IDEA.md");
  EXPECT_NE(idea_md.find("`parent.json`"), std::string::npos);
  EXPECT_NE(idea_md.find("| 10 | `already_judged` |"), std::string::npos);
  EXPECT_NE(idea_md.find("C7520 \"program dependence on compiler-inserted WG.AR in divergent path\""), std::string::npos);
}

}  // namespace
}  // namespace attn
