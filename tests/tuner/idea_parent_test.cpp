// The parent of the next idea (tuner/idea_parent.hpp) on the research DB's lineages as recorded
// (lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz): on full, V_UNPACK (idea 42, a win on
// fa3_tma), EPI_LEAN (59, a win on fa3_tma_p42), SFU_TURN (66, no gain on p59: the champion's template) and Q_IN_O
// (70, slower on p59); on quick, V_UNPACK again (71, no gain) and EPI_LEAN again (72, a win on fa3_tma, the same
// file and hash as 59).
#include <gtest/gtest.h>

#include "tuner/idea_parent.hpp"

namespace attn {
namespace {

const std::string kVUnpack = "450de2fed96776495f4e5bfe1fcec4f1", kEpiLean = "4af37e28fcb05e3219eeb5a5cd4758d1";

IdeaRecord idea(std::int64_t id, std::int64_t run, const std::string& hash, const std::string& parent,
                const std::string& tmpl, IdeaVerdict v) {
  return {.id = id, .run_id = run, .idea_hash = hash, .parent_template = parent, .template_name = tmpl,
          .status = IdeaStatus::done, .verdict = v};
}

std::vector<IdeaRecord> full_ideas() {
  return {idea(42, 9, kVUnpack, "fa3_tma", "fa3_tma_p42", IdeaVerdict::win),
          idea(59, 10, kEpiLean, "fa3_tma_p42", "fa3_tma_p59", IdeaVerdict::win),
          idea(66, 10, "sfu_turn", "fa3_tma_p59", "fa3_tma_p66", IdeaVerdict::no_gain),
          idea(70, 10, "q_in_o", "fa3_tma_p59", "fa3_tma_p70", IdeaVerdict::slower)};
}

std::vector<IdeaRecord> quick_ideas() {
  return {idea(71, 11, kVUnpack, "fa3_tma", "fa3_tma_p71", IdeaVerdict::no_gain),
          idea(72, 11, kEpiLean, "fa3_tma", "fa3_tma_p72", IdeaVerdict::win)};
}

const std::set<std::string> kBase = {"BLOCK_N", "CONSUMERS", "EPILOGUE"};  // a stand-in for fa3_tma's axes

std::set<std::string> with(std::set<std::string> s, std::initializer_list<const char*> more) {
  for (const char* m : more) s.insert(m);
  return s;
}

/// The templates a DB reader can build, each with its parameters; `root_axes` those of the repository's fa3_tma.
auto templates(std::set<std::string> root_axes, std::set<std::string> missing = {}) {
  return [root_axes, missing](const std::string& t) -> std::optional<ParentCandidate> {
    if (missing.count(t)) return std::nullopt;
    if (t == "fa3_tma") return ParentCandidate{root_axes};
    if (t == "fa3_tma_p42" || t == "fa3_tma_p71") return ParentCandidate{with(kBase, {"V_UNPACK"})};
    if (t == "fa3_tma_p59") return ParentCandidate{with(kBase, {"V_UNPACK", "EPI_LEAN"})};
    if (t == "fa3_tma_p72") return ParentCandidate{with(kBase, {"EPI_LEAN"})};
    if (t == "fa3_tma_p66") return ParentCandidate{with(kBase, {"V_UNPACK", "EPI_LEAN", "SFU_TURN"})};
    if (t == "fa3_tma_p70") return ParentCandidate{with(kBase, {"V_UNPACK", "EPI_LEAN", "Q_IN_O"})};
    return std::nullopt;
  };
}

TEST(IdeaParent, TheLatestWinNotTheChampionsTemplateBeforeLanding) {
  // The champion's template on full is p66 (SFU_TURN, no gain): the parent is p59, the latest win.
  const auto p = idea_parent(full_ideas(), "fa3_tma", {}, templates(kBase));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->code, "fa3_tma_p59");
  EXPECT_EQ(p->measured, "fa3_tma_p59");
  EXPECT_FALSE(p->landed);
  EXPECT_EQ(p->wins, (std::vector<std::string>{"fa3_tma_p59", "fa3_tma_p42"}));
  EXPECT_EQ(p->win_ideas, (std::vector<std::int64_t>{59, 42}));
  EXPECT_NE(p->why.find("not landed"), std::string::npos) << p->why;
}

TEST(IdeaParent, OnceEveryWinIsLandedTheRepositoryTemplateIsTheParent) {
  const auto landed_root = with(kBase, {"V_UNPACK", "EPI_LEAN"});
  const auto p = idea_parent(full_ideas(), "fa3_tma", {kVUnpack, kEpiLean}, templates(landed_root));
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->landed);
  EXPECT_EQ(p->code, "fa3_tma");
  // p59's axes are the landed template's: its rows are the landed template's measurements.
  EXPECT_EQ(p->measured, "fa3_tma_p59");
}

TEST(IdeaParent, APartLandedLineageKeepsTheDbTemplate) {
  const auto p = idea_parent(full_ideas(), "fa3_tma", {kVUnpack}, templates(with(kBase, {"V_UNPACK"})));
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->landed);
  EXPECT_EQ(p->code, "fa3_tma_p59");
}

TEST(IdeaParent, AVerdictHoldsForItsSuiteOnly) {
  // quick's lineage: EPI_LEAN won on fa3_tma itself (72, the hash of 59), V_UNPACK did not (71).
  const auto before = idea_parent(quick_ideas(), "fa3_tma", {}, templates(kBase));
  ASSERT_TRUE(before);
  EXPECT_EQ(before->code, "fa3_tma_p72");
  // Landed (by hash: 72 is 59's file), the landed template is the parent; p72 lacks V_UNPACK, so its rows cannot
  // stand for the landed template, whose own rows do.
  const auto after = idea_parent(quick_ideas(), "fa3_tma", {kVUnpack, kEpiLean}, templates(with(kBase, {"V_UNPACK", "EPI_LEAN"})));
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->landed);
  EXPECT_EQ(after->code, "fa3_tma");
  EXPECT_EQ(after->measured, "fa3_tma");
}

TEST(IdeaParent, WinsThatCannotBeBuiltAreSkippedAndNoRootIsNoParent) {
  const auto p = idea_parent(full_ideas(), "fa3_tma", {}, templates(kBase, {"fa3_tma_p59"}));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->code, "fa3_tma_p42");
  EXPECT_EQ(p->win_ideas, (std::vector<std::int64_t>{42}));
  EXPECT_FALSE(idea_parent(full_ideas(), "fa3_tma", {}, templates(kBase, {"fa3_tma"})));
  const auto none = idea_parent({}, "fa3_tma", {}, templates(kBase));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->code, "fa3_tma");
  EXPECT_TRUE(none->wins.empty());
  // An idea still running is no win.
  auto running = full_ideas();
  running[1].status = IdeaStatus::judging;
  running[1].verdict = IdeaVerdict::none;
  EXPECT_EQ(idea_parent(running, "fa3_tma", {}, templates(kBase))->code, "fa3_tma_p42");
}

TEST(IdeaParent, IdeasOnASuiteAreThoseOfItsRuns) {
  std::vector<RunRecord> runs(3);
  runs[0].id = 9, runs[0].suite = "full";
  runs[1].id = 10, runs[1].suite = "full";
  runs[2].id = 11, runs[2].suite = "quick";
  auto all = full_ideas();
  for (const auto& q : quick_ideas()) all.push_back(q);
  const auto quick = ideas_on_suite(all, runs, "quick");
  ASSERT_EQ(quick.size(), 2u);
  EXPECT_EQ(quick[0].id, 71);
  EXPECT_EQ(ideas_on_suite(all, runs, "full").size(), 4u);
  EXPECT_TRUE(ideas_on_suite(all, runs, "broad").empty());
}

TEST(IdeaParent, DecideRerunIsTheDaemonsSkipRule) {
  const auto ideas = full_ideas();
  // SFU_TURN was judged on p59: the same parent skips it, Retry or not.
  auto d = decide_rerun(ideas, "sfu_turn", "fa3_tma_p59", true, 1, "agent_g_sfu_turn.idea", "full");
  ASSERT_FALSE(d.judge);
  EXPECT_EQ(d.skipped_for->id, 66);
  EXPECT_EQ(d.skip_note, "idea agent_g_sfu_turn.idea: already judged no_gain on fa3_tma_p59 on full (idea 66)");
  // Verdicts: 2 has it judged once more there, the new verdict linked to the one it repeats.
  d = decide_rerun(ideas, "sfu_turn", "fa3_tma_p59", false, 2, "x.idea", "full");
  EXPECT_TRUE(d.judge);
  EXPECT_EQ(d.repeat_of, 66);
  auto twice = ideas;  // ... and no more once it has its two there
  twice.push_back(idea(80, 10, "sfu_turn", "fa3_tma_p59", "fa3_tma_p80", IdeaVerdict::slower));
  d = decide_rerun(twice, "sfu_turn", "fa3_tma_p59", false, 2, "x.idea", "full");
  EXPECT_FALSE(d.judge);
  EXPECT_NE(d.skip_note.find("(idea 80); 2 verdicts there, as its Verdicts: 2 asks"), std::string::npos) << d.skip_note;
  // On a newer parent only with Retry: yes.
  d = decide_rerun(ideas, "sfu_turn", "fa3_tma_p80", false, 1, "x.idea", "full");
  ASSERT_FALSE(d.judge);
  EXPECT_NE(d.skip_note.find("add 'Retry: yes' to run it on fa3_tma_p80"), std::string::npos);
  d = decide_rerun(ideas, "sfu_turn", "fa3_tma_p80", true, 1, "x.idea", "full");
  EXPECT_TRUE(d.judge);
  EXPECT_FALSE(d.repeat_of);
  EXPECT_TRUE(decide_rerun(ideas, "never_seen", "fa3_tma_p59", false, 1, "x.idea", "full").judge);
  auto running = ideas;
  running[2].status = IdeaStatus::interrupted;
  EXPECT_TRUE(decide_rerun(running, "sfu_turn", "fa3_tma_p59", false, 1, "x.idea", "full").judge);
}

}  // namespace
}  // namespace attn
