// `attn-tuner idea check` (proposer/idea_check.hpp, docs/ideas.md): the daemon's parser and apply, NVRTC of the
// real fa3_tma on the CPU, the default cubin against the parent's, ptxas's serialised-wgmma diagnostic and spills
// as failures unless accepted, and the exit codes.
#include <gtest/gtest.h>

#include "proposer/idea_check.hpp"
#include "proposer/proposal_check.hpp"
#include "tests/test_support.hpp"
#include "core/text_file.hpp"

namespace attn {
namespace {

std::string templates() { return ATTN_TEMPLATES_DIR; }

/// One compile cache for the file: the parent's builds are compiled once.
const Compiler& compiler() {
  static const std::string cache = test::temp_dir("attn-idea-check-cache");
  static const Compiler c([] {
    CompilerOptions o;
    o.cache_dir = cache;
    return o;
  }());
  return c;
}

const TemplateSpace& fa3() {
  static const TemplateSpace s = TemplateSpace::load_named(templates(), "fa3_tma");
  return s;
}

/// A diff of `file` (relative to kernels_templates/) with the first `from` replaced by `to`.
std::string diff_of(const std::string& file, const std::string& from, const std::string& to) {
  const std::string text = read_text_file(templates() + "/" + file);
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  std::string changed = text;
  changed.replace(at, from.size(), to);
  return unified_diff("a/" + file, text, "b/" + file, changed);
}

IdeaCheckReport check(const std::string& bytes, std::set<std::string> accepted = {},
                      const TemplateSpace& parent = fa3()) {
  IdeaCheckOptions o;
  o.parent = &parent;
  o.accepted = std::move(accepted);
  o.work_dir = test::temp_dir("attn-idea-check") + "/idea";
  return check_idea_file("t.idea", bytes, o, compiler());
}

std::string all_lines(const IdeaCheckReport& r) {
  std::string s;
  for (const auto& l : r.lines) s += l + "\n";
  return s;
}

// ptxas 13's words for a serialised wgmma pipeline, as NVRTC logged them for a printf inside fa3_tma's P V issue.
const std::string kC7510 =
    "ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized due to wgmma "
    "pipeline crossing function boundary at a function call in the function 'block_sparse_attn_fwd'";

TEST(IdeaCheck, PtxasDiagnosticsThatPredictASlowKernelAreFound) {
  const std::string log = kC7510 + "\nptxas info    : 235 bytes gmem\nptxas info    : Compiling entry function "
                          "'block_sparse_attn_fwd' for 'sm_90a'\nptxas warning : Registers are spilled to local memory\n" +
                          kC7510 + "\n";
  const auto w = ptxas_warnings(log);
  ASSERT_EQ(w.size(), 2u);  // the repeated line once, the info lines without a code left out
  EXPECT_EQ(w[0].code, "C7510");
  EXPECT_TRUE(predicts_slow_kernel(w[0]));
  EXPECT_EQ(w[1].code, "");
  EXPECT_FALSE(predicts_slow_kernel(w[1]));
  EXPECT_TRUE(ptxas_warnings("ptxas info    : Used 168 registers, used 16 barriers\n").empty());
}

TEST(IdeaCheck, TheExitCodeIsTheSmallestFinding) {
  IdeaCheckReport r;
  EXPECT_EQ(r.code(), IdeaCheckCode::ok);
  r.failures.push_back({IdeaCheckCode::spills, ""});
  r.failures.push_back({IdeaCheckCode::slow_build, ""});
  EXPECT_EQ(r.code(), IdeaCheckCode::slow_build);
  r.failures.push_back({IdeaCheckCode::default_changed, ""});
  EXPECT_EQ(static_cast<int>(r.code()), 7);
}

TEST(IdeaCheck, AHeaderOverItsLimitIsBadInputBeforeAnyCompile) {
  const std::string ok = "Description: d\nHypothesis: " + std::string(kIdeaHeaderMaxBytes, 'h') +
                         "\nSpace: {\"L2_PREFETCH\": [0, 1]}\nDefault: {\"L2_PREFETCH\": 0}\n";
  EXPECT_NO_THROW(parse_idea("t.idea", ok));
  const std::string over = "Description: d\nHypothesis: " + std::string(kIdeaHeaderMaxBytes + 1, 'h') + "\n\n" +
                           diff_of("blocks/kernel.cuh", "  __syncthreads();\n", "  __syncthreads();  // x\n");
  const auto r = check(over);
  EXPECT_EQ(r.code(), IdeaCheckCode::bad_input);
  EXPECT_NE(r.failures.at(0).message.find("Hypothesis is over 300 bytes (301 given"), std::string::npos)
      << r.failures.at(0).message;
}

TEST(IdeaCheck, ADiffThatDoesNotApplyIsDoesNotApply) {
  const auto r = check("Description: d\n\n--- a/fa3_tma.cu\n+++ b/fa3_tma.cu\n@@ -1,2 +1,2 @@\n-no such line\n+nor this\n no such context\n");
  EXPECT_EQ(r.code(), IdeaCheckCode::does_not_apply) << all_lines(r);
  EXPECT_NE(r.failures.at(0).message.find("patch:"), std::string::npos);
}

TEST(IdeaCheck, ACompileErrorInTheDefaultConfigIsCompile) {
  const auto r = check("Description: d\n\n" + diff_of("fa3_tma.cu", "namespace {\nusing Traits", "int broken = ;\nnamespace {\nusing Traits"));
  EXPECT_EQ(r.code(), IdeaCheckCode::compile) << all_lines(r);
  EXPECT_NE(r.failures.at(0).message.find("error"), std::string::npos) << r.failures.at(0).message;
}

TEST(IdeaCheck, AGoodIdeaPassesWithTheDefaultCubinByteIdentical) {
  // New code behind a new axis, the parent's code in its default.
  const std::string bytes =
      "Description: an early exit test behind GUARD\nTemplate: fa3_tma\nSpace: {\"GUARD\": [0, 1]}\n"
      "Default: {\"GUARD\": 0}\n\n" +
      diff_of("blocks/kernel.cuh", "  __syncthreads();\n",
              "  __syncthreads();\n#if GUARD\n  if (tid == 0 && batch_size < 0) lse[0] = 0.f;\n#endif\n");
  const auto r = check(bytes);
  EXPECT_EQ(r.code(), IdeaCheckCode::ok) << all_lines(r);
  const std::string text = all_lines(r);
  EXPECT_NE(text.find("default config: cubin byte-identical to the parent's"), std::string::npos) << text;
  EXPECT_NE(text.find("the default config with GUARD=1: "), std::string::npos) << text;
  EXPECT_NE(text.find("RESULT ok"), std::string::npos);
}

TEST(IdeaCheck, ACodeChangeInTheDefaultPathIsDefaultChanged) {
  const auto r = check("Description: d\n\n" + diff_of("blocks/kernel.cuh", "  __syncthreads();\n",
                                                      "  __syncthreads();\n  if (tid == 0 && batch_size < 0) lse[0] = 0.f;\n"));
  EXPECT_EQ(r.code(), IdeaCheckCode::default_changed) << all_lines(r);
  EXPECT_NE(r.failures.at(0).message.find("cubin differs from the parent's"), std::string::npos);
}

TEST(IdeaCheck, ASerialisedWgmmaFailsUnlessAcceptedAndSpillsAreComparedWithTheParent) {
  // A call inside the P V issue (behind a new axis): ptxas serialises every wgmma (C7510) and the call's
  // stack spills. The default config stays the parent's.
  const std::string bytes =
      "Description: a printf beside the P V wgmma\nSpace: {\"PRINT_PROBE\": [0, 1]}\nDefault: {\"PRINT_PROBE\": 0}\n\n" +
      diff_of("blocks/consumer.cuh", "    wgmma_commit();\n  };\n  auto rescale",
              "    wgmma_commit();\n#if PRINT_PROBE\n    if (acc[0] == 12345.f) printf(\"x\");\n#endif\n  };\n  auto rescale");
  const auto r = check(bytes);
  EXPECT_EQ(r.code(), IdeaCheckCode::slow_build) << all_lines(r);
  const std::string text = all_lines(r);
  EXPECT_NE(text.find("default config: cubin byte-identical"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL slow_build: the default config with PRINT_PROBE=1: ptxas info    : (C7510) Potential "
                      "Performance Loss"), std::string::npos) << text;
  EXPECT_NE(text.find("--accept-warning C7510"), std::string::npos);
  // ptxas names no place; the check does: the printf's call, inside the P V wgmma's window, at the patched line
  // (consumer.cuh 150 is the wgmma_commit the diff's context starts on, 151 the #if), with the branch around it.
  // The lambda holding it is inlined twice (consumer.cuh 190 and 273): one line a place, each with its caller.
  for (const char* caller : {"190", "273"}) {
    const std::string at = std::string("blocks/consumer.cuh:152 (inlined at template/blocks/consumer.cuh:") + caller + "): ";
    EXPECT_NE(text.find(at + "a call inside a wgmma window (C7510's pattern): `call.uni"), std::string::npos) << text;
    EXPECT_NE(text.find(at + "a conditional branch inside a wgmma window"), std::string::npos) << text;
    EXPECT_NE(text.find(at + "reads a pending wgmma accumulator register (C7514's pattern): `setp"), std::string::npos)
        << text;  // acc[0] == 12345.f
  }
  EXPECT_EQ(text.find("writes a pending wgmma accumulator"), std::string::npos) << text;
  EXPECT_NE(text.find("per role after setmaxnreg: producer warpgroup 32, consumers 232 registers (parent 32, 232"),
            std::string::npos) << text;
  // Accepted, it passes: its spills are the parent's (fa3_tma's default config spills 4 + 4 bytes itself).
  const auto accepted = check(bytes, {"C7510"});
  EXPECT_EQ(accepted.code(), IdeaCheckCode::ok) << all_lines(accepted);
  EXPECT_NE(all_lines(accepted).find("accepted (C7510)"), std::string::npos);
}

// ptxas reports spills for the whole kernel; the check names the role: an idea that gives fa4_g4's producer
// warpgroup 24 registers instead of 40 spills in the producer's code alone (28 + 28 bytes measured), and the
// one-role builds say so.
TEST(IdeaCheck, SpillsAreTracedToTheRoleWhoseCodeSpills) {
  static const TemplateSpace g4 = TemplateSpace::load_named(templates(), "fa4_g4");
  const std::string bytes =
      "Description: a starved producer warpgroup\nSpace: {\"PRODUCER_SQUEEZE\": [0, 1]}\n"
      "Default: {\"PRODUCER_SQUEEZE\": 0}\n\n" +
      diff_of("fa4_g4.cu", "G4Traits<BLOCK_N, STAGES, PRODUCER_REGS,",
              "G4Traits<BLOCK_N, STAGES, (PRODUCER_SQUEEZE ? 24 : PRODUCER_REGS),");
  const auto r = check(bytes, {}, g4);
  const std::string text = all_lines(r);
  EXPECT_EQ(r.code(), IdeaCheckCode::spills) << text;
  EXPECT_NE(text.find("spills by role (bytes, stores + loads, of a build with only that role's code; blocks/kernel.cuh "
                      "ATTN_ONLY_ROLE): producer 56 (parent 0), converters 0 (parent 0), consumers 0 (parent 0); the "
                      "whole build 56 (parent 0)"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("no role's alone"), std::string::npos) << text;
  // The budgets that moved (the launch's 168 registers do not): the producer's 40 -> 24, the consumers' 232 -> 240.
  EXPECT_NE(text.find("per role after setmaxnreg: producer warpgroup 24, consumers 240 registers (parent 40, 232"),
            std::string::npos) << text;
}

// An author's idea (2026-11-29, a helper given only the kit): the row sum's pair added off the chain spills 4 + 4
// bytes that no role's own build has; the builds without one role each say which roles the spill needs together.
TEST(IdeaCheck, ASpillNoRoleHasAloneIsTracedToTheRolesItNeeds) {
  static const TemplateSpace g4 = TemplateSpace::load_named(templates(), "fa4_g4");
  const std::string bytes =
      "Description: the row sum's pair added off the chain\nSpace: {\"STALE_PAIR_SUM\": [0, 1]}\n"
      "Default: {\"STALE_PAIR_SUM\": 0}\n\n" +
      diff_of("blocks/softmax.cuh", "      part[hr] += p0;\n      part[hr] += p1;\n",
              "#if STALE_PAIR_SUM\n      part[hr] += p0 + p1;\n#else\n      part[hr] += p0;\n      part[hr] += p1;\n#endif\n");
  const auto r = check(bytes, {}, g4);
  const std::string text = all_lines(r);
  EXPECT_EQ(r.code(), IdeaCheckCode::spills) << text;
  EXPECT_NE(text.find("producer 0 (parent 0), converters 0 (parent 0), consumers 0 (parent 0); the whole build 8 (parent "
                      "0)"), std::string::npos) << text;
  EXPECT_NE(text.find("spills by role: 8 byte(s) of the whole build (parent 0) are no role's alone; the idea's builds "
                      "without the producer 0, without the converters 8, without the consumers 0 bytes: they need the "
                      "producer and the consumers together"), std::string::npos) << text;
}

TEST(IdeaCheck, MoreSpillsOrANewSerialisationThanTheParentsBuildAreFindings) {
  CompiledVariant parent, idea;
  parent.resources.spill_stores = parent.resources.spill_loads = 4;
  idea.resources = parent.resources;
  parent.log = idea.log = "ptxas info    : Used 168 registers\n";
  EXPECT_TRUE(compare_with_parent("c", idea, parent, {}).failures.empty());
  idea.resources.spill_loads = 12;  // 16 bytes against the parent's 8
  auto r = compare_with_parent("c", idea, parent, {});
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].code, IdeaCheckCode::spills);
  EXPECT_NE(r.failures[0].message.find("c: spills 16 bytes (stores + loads), the parent's build 8"), std::string::npos);
  EXPECT_TRUE(compare_with_parent("c", idea, parent, {"spills"}).failures.empty());
  // A serialisation the parent's build has too is a note, not the idea's finding.
  idea.resources = parent.resources;
  idea.log += kC7510 + "\n";
  EXPECT_EQ(compare_with_parent("c", idea, parent, {}).failures.at(0).code, IdeaCheckCode::slow_build);
  parent.log += kC7510 + "\n";
  r = compare_with_parent("c", idea, parent, {});
  EXPECT_TRUE(r.failures.empty());
  EXPECT_NE(r.notes.at(0).find("the parent's build has it too"), std::string::npos);
}

TEST(IdeaCheck, TheConfigsWithTheIdeaOnAreBuiltOnTheBaseConfig) {
  // The parent's space plus a new axis, as apply_idea installs it.
  const std::string dir = test::temp_dir("attn-idea-space");
  for (const auto& [inc, text] : local_includes(fa3().source_path())) test::write_text(dir + "/" + inc, text);
  test::write_text(dir + "/fa3_tma_p1.cu", read_text_file(fa3().source_path()));
  std::string json = read_text_file(fa3().json_path());
  json.replace(json.find("\"fa3_tma\""), 9, "\"fa3_tma_p1\"");
  json.replace(json.find("\"fa3_tma.cu\""), 12, "\"fa3_tma_p1.cu\"");
  json.replace(json.find("\"parameters\": {"), 15, "\"parameters\": {\"NEW\": {\"values\": [0, 1, 2], \"doc\": \"x\"},");
  json.replace(json.find("\"default\": {"), 12, "\"default\": {\"NEW\": 0, ");
  test::write_text(dir + "/fa3_tma_p1.json", json);
  const TemplateSpace idea = TemplateSpace::load(dir + "/fa3_tma_p1.json");
  // On the parent's default: NEW=1 and NEW=2 only (the default with NEW=0 is compared as the default).
  auto ks = idea_check_configs(fa3(), idea, fa3().default_config());
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].config.at("NEW"), 1);
  EXPECT_EQ(ks[1].config.at("NEW"), 2);
  EXPECT_EQ(ks[0].parent, fa3().default_config());
  // On another config: also that config with NEW at its default, which must be the parent's cubin.
  Config base = fa3().default_config();
  base["PINGPONG"] = 1 - base["PINGPONG"];
  ks = idea_check_configs(fa3(), idea, base);
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_FALSE(ks[2].idea_on);
  EXPECT_EQ(ks[2].config.at("NEW"), 0);
  EXPECT_EQ(ks[2].parent, base);
  EXPECT_EQ(ks[0].config.at("PINGPONG"), base.at("PINGPONG"));
}

TEST(IdeaCheck, TheCommandPrintsItsFindingsAndExitsWithTheirCode) {
  const std::string dir = test::temp_dir("attn-idea-cli");
  test::write_text(dir + "/long.idea", "Description: " + std::string(kIdeaHeaderMaxBytes + 1, 'd') + "\nTemplate: fa3_tma\n\n");
  auto out = test::run_binary("idea check " + dir + "/long.idea --cache " + dir + "/cache");
  EXPECT_EQ(out.code, 3) << out.text;
  EXPECT_NE(out.text.find("FAIL bad_input: line 1: Description is over 300 bytes"), std::string::npos) << out.text;
  test::write_text(dir + "/orphan.idea", "Description: no template named\nSpace: {\"X\": [0, 1]}\nDefault: {\"X\": 0}\n");
  out = test::run_binary("idea check " + dir + "/orphan.idea");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("no parent: give the idea a 'Template:' header"), std::string::npos) << out.text;
}

}  // namespace
}  // namespace attn
