// The idea agent end to end on the CPU (docs/ideas.md, "Agents that write ideas"): the real binary with --ideas and
// --idea-agent, a scripted stand-in agent that does something else on each call (ATTN_IDEA_AGENT_CALL), real
// patch(1) and NVRTC, the fake worker as the GPU. One run of 30 s (with an agent the run lasts its budget) of several calls: ideas queued and judged (a win, a bad
// file, a second win stacked on the first), a call that writes outside its folder, one killed at its limit, calls
// that write nothing; every call recorded with its kit, its output and which idea it wrote.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "db/store_idea_agents.hpp"
#include "proposer/idea_agent_call.hpp"
#include "tests/daemon/daemon_harness.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

const std::string kWin = test::fake_axis_idea("a faster path behind FAST", "the fake worker scales the score by 80 %",
                                              "FAST", "FAST", "extern \"C\" __device__ int fake_speed_pct_80 = 1;");
// Applies only on top of kWin's lines: the agent's second idea stacks on its first.
const std::string kStack = R"(Description: even faster on top of FAST
Template: fake

--- a/fake.cu
+++ b/fake.cu
@@ -20,6 +20,6 @@
 extern "C" __device__ int FAKE_MARK(A, B, F) = 1;
 #if FAST
-extern "C" __device__ int fake_speed_pct_80 = 1;
+extern "C" __device__ int fake_speed_pct_60 = 1;
 #endif
 extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};
 
)";

/// Call 1 writes a win and a file that is not an idea; 2 an idea and a write outside its folder (and into the
/// templates); 3 hangs; 4 the stacked idea; later calls nothing.
constexpr const char* kAgent = R"(#!/bin/sh
echo "agent call $ATTN_IDEA_AGENT_CALL in $(pwd); check: $ATTN_IDEA_CHECK"
test -f IDEA.md && test -f AGENT.md && test -f template/fake.cu || { echo "no kit"; exit 1; }
case "$ATTN_IDEA_AGENT_CALL" in
  1) cp "@SRC@/win.idea" a_win.idea; printf 'Description: x\nColour: red\n\n' > b_bad.idea ;;
  2) cp "@SRC@/win.idea" c_outside.idea; echo evil > ../../../evil.txt; echo '// tampered' >> '@TPL@/fake.cu' ;;
  3) sleep 60 ;;
  4) grep -q agent1_a_win ideas_tried.tsv || { echo "the kit lacks the first idea's verdict"; exit 1; }
     cp "@SRC@/stack.idea" d_stack.idea ;;
  *) echo "nothing this time" ;;
esac
)";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at; (at = s.find(from)) != std::string::npos;) s.replace(at, from.size(), to);
  return s;
}

TEST(IdeaAgent, ADueCallNeedsAChampionAFewIdeasQueuedAndAPauseAfterNothing) {
  IdeaAgentOptions o;
  EXPECT_FALSE(o.due(0, true, -1, false)) << "no command: off";
  o.command = "agent";
  o.min_queued = 2;
  o.retry_s = 60;
  EXPECT_TRUE(o.due(0, true, -1, false));
  EXPECT_TRUE(o.due(1, true, -1, false));
  EXPECT_FALSE(o.due(2, true, -1, false)) << "enough ideas waiting";
  EXPECT_FALSE(o.due(0, false, -1, false)) << "no champion to start from";
  EXPECT_FALSE(o.due(0, true, 10, true)) << "the last call queued nothing, 10 s ago";
  EXPECT_TRUE(o.due(0, true, 61, true));
  EXPECT_TRUE(o.due(0, true, 10, false)) << "the last call queued ideas: no pause";
  EXPECT_EQ(agent_queue_name(7, "x.idea"), "agent7_x.idea");
  EXPECT_EQ(agent_queue_name(7, "x.txt"), "agent7_x.txt.idea");
}

TEST(IdeaAgent, SeveralCallsOfAWholeRunQueueTheirIdeasWithProvenance) {
  const std::string dir = test::temp_dir("idea-agent");
  const std::string tpl = dir + "/templates", queue = dir + "/queue", db_path = dir + "/runs/t.db", src = dir + "/src";
  fs::create_directories(tpl);
  fs::copy_file(test::data_dir() + "/fake_templates/fake.cu", tpl + "/fake.cu");
  test::write_text(tpl + "/fake.json", R"({
  "name": "fake",
  "source": "fake.cu",
  "kernel": "block_sparse_attn_fwd",
  "parameters": {
    "A": {"values": [1, 2, 3, 4, 5, 6]},
    "B": {"values": [1, 2, 3]},
    "F": {"values": [0]}
  },
  "default": {"A": 1, "B": 1, "F": 0}
}
)");
  const std::string fake_cu = test::read_text(tpl + "/fake.cu");
  test::write_text(src + "/win.idea", kWin);
  test::write_text(src + "/stack.idea", kStack);
  test::write_text(dir + "/agent.sh", replaced(replaced(kAgent, "@SRC@", src), "@TPL@", tpl));
  const std::string args = "run --db '" + db_path + "' --suite smoke --templates '" + tpl +
                           "' --template fake --strategy local --worker-exe '" + test::fake_worker_path() + "' --cache '" +
                           dir + "/cache' --jobs 2 --watchdog-min 0.5 --watchdog-cap 2 --ideas '" + queue +
                           "' --idea-budget 4 --idea-poll 0.2 --idea-agent 'sh " + dir + "/agent.sh' --idea-agent-min 1 "
                           "--idea-agent-timeout 3 --idea-agent-retry 0.5 --budget 30s";
  const test::Output out = test::run_tuner(args, "FAKE_WORKER_DELAY=0.1");
  ASSERT_EQ(out.code, 0) << out.text;

  auto db = ExperimentDb::open(db_path, ExperimentDb::Mode::read_only);
  const auto calls = idea_agent_calls(db);
  ASSERT_GE(calls.size(), 5u) << out.text;
  EXPECT_EQ(calls[0].status, "done") << calls[0].reason;
  EXPECT_NE(calls[0].reason.find("queued agent1_a_win.idea, agent1_b_bad.idea"), std::string::npos) << calls[0].reason;
  EXPECT_EQ(calls[1].status, "failed");
  EXPECT_NE(calls[1].reason.find("wrote outside its folder"), std::string::npos) << calls[1].reason;
  EXPECT_NE(calls[1].reason.find("nothing queued"), std::string::npos) << calls[1].reason;
  EXPECT_EQ(test::read_text(tpl + "/fake.cu"), fake_cu) << "the templates were put back";
  EXPECT_EQ(calls[2].status, "failed");
  EXPECT_NE(calls[2].exit_status.find("3 s limit"), std::string::npos) << calls[2].exit_status;
  EXPECT_EQ(calls[3].status, "done") << calls[3].reason << "\n" << calls[3].output;
  EXPECT_NE(calls[3].reason.find("queued agent4_d_stack.idea"), std::string::npos) << calls[3].reason;
  for (std::size_t i = 4; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].status, "done") << i;
    EXPECT_NE(calls[i].reason.find("it wrote no idea"), std::string::npos) << calls[i].reason;
  }
  // The output and the kit, as the agent saw them.
  EXPECT_NE(calls[0].output.find("agent call 1 in "), std::string::npos) << calls[0].output;
  EXPECT_EQ(calls[0].parent_template, "fake");
  const auto kit = nlohmann::json::parse(calls[0].context_json);
  for (const char* f : {"IDEA.md", "AGENT.md", "template/fake.cu", "template/fake.json", "champion.json",
                        "champion_cases.tsv", "ideas_tried.tsv", "profile/PROFILE.md"})
    EXPECT_TRUE(kit.contains(f)) << f;
  const auto kit4 = nlohmann::json::parse(calls[3].context_json);
  EXPECT_NE(kit4.at("ideas_tried.tsv").get<std::string>().find("agent1_a_win.idea"), std::string::npos);
  EXPECT_NE(calls[3].parent_template, "fake") << "the first idea won: the kit's parent is its template";

  // Which call wrote which idea, and the verdicts of those ideas.
  std::map<std::string, IdeaRecord> by_file;
  for (const auto& i : db.ideas()) by_file[i.file] = i;
  const auto written = idea_agent_ideas(db);
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written[0].call_id, calls[0].id);
  EXPECT_EQ(written[0].file, "a_win.idea");
  EXPECT_EQ(written[0].queued_as, "agent1_a_win.idea");
  EXPECT_EQ(written[0].text, kWin);
  EXPECT_EQ(written[2].call_id, calls[3].id);
  for (const auto& w : written) ASSERT_TRUE(by_file.count(w.queued_as)) << w.queued_as;
  EXPECT_EQ(by_file["agent1_a_win.idea"].verdict, IdeaVerdict::win) << by_file["agent1_a_win.idea"].reason;
  EXPECT_EQ(by_file["agent1_a_win.idea"].idea_hash, written[0].idea_hash);
  EXPECT_EQ(by_file["agent1_b_bad.idea"].broken_kind, IdeaBrokenKind::bad_input);
  EXPECT_EQ(by_file["agent4_d_stack.idea"].verdict, IdeaVerdict::win) << by_file["agent4_d_stack.idea"].reason;
  EXPECT_EQ(by_file["agent4_d_stack.idea"].parent_template, by_file["agent1_a_win.idea"].template_name);
  EXPECT_FALSE(by_file.count("agent2_c_outside.idea")) << "a call that wrote outside queues nothing";
  EXPECT_NE(out.text.find("idea agent: `sh "), std::string::npos) << out.text;

  // The same kit by hand, from the DB: the parent is the stacked win, written out of the DB under the
  // repository's names, so an idea's diff against it applies to the champion's lineage.
  const std::string kitdir = dir + "/kit";
  const test::Output ctx = test::run_tuner("idea context --db '" + db_path + "' --out '" + kitdir + "' --templates '" +
                                           tpl + "' --cache '" + dir + "/cache'");
  ASSERT_EQ(ctx.code, 0) << ctx.text;
  EXPECT_NE(ctx.text.find("3 idea(s) tried"), std::string::npos) << ctx.text;
  const std::string parent = test::read_text(kitdir + "/template/fake.cu");
  EXPECT_NE(parent.find("fake_speed_pct_60"), std::string::npos) << parent;
  EXPECT_EQ(parent.find("// attn-tuner: template"), std::string::npos) << "the daemon's install line is not the parent's";
  EXPECT_NE(test::read_text(kitdir + "/template/fake.json").find("\"name\": \"fake\""), std::string::npos);
  const std::string idea_md = test::read_text(kitdir + "/IDEA.md");
  EXPECT_NE(idea_md.find("at most **300 bytes** each"), std::string::npos);
  EXPECT_NE(idea_md.find("at most **1200 bytes** each"), std::string::npos);
  EXPECT_NE(idea_md.find("| 8 | `slow_build` |"), std::string::npos);
  EXPECT_EQ(test::read_text(kitdir + "/ideas_tried/" + std::to_string(by_file["agent1_a_win.idea"].id) +
                            "_agent1_a_win.idea").find("Description: a faster path behind FAST"), 0u);
  EXPECT_NE(test::read_text(kitdir + "/ideas_tried.tsv").find("agent4_d_stack.idea"), std::string::npos);
  const std::string profile = test::read_text(kitdir + "/profile/PROFILE.md");
  EXPECT_NE(profile.find("attn-tuner trace --templates template --template fake"), std::string::npos) << profile;
  const auto champion = nlohmann::json::parse(test::read_text(kitdir + "/champion.json"));
  EXPECT_EQ(champion.at("template_root"), "fake");
  EXPECT_EQ(champion.at("config").at("FAST"), 1);
  // Not into a folder with files in it.
  const test::Output again = test::run_tuner("idea context --db '" + db_path + "' --out '" + kitdir + "'");
  EXPECT_EQ(again.code, 2) << again.text;
}

/// A stand-in that thinks 2 s and writes one idea of its own (a new axis named after its call, nothing reads it), and
/// logs when it started and ended: "<call> <start> <end>" (seconds since the epoch).
constexpr const char* kSlowAgent = R"SH(#!/bin/sh
start=$(date +%s.%N)
sleep 2
axis=P$ATTN_IDEA_AGENT_CALL
cat > "idea_$axis.idea" <<IDEA
Description: axis $axis nothing reads
Template: fake
Space: {"$axis": [0, 1]}
Default: {"$axis": 0}

--- a/fake.cu
+++ b/fake.cu
@@ -19,3 +19,6 @@
 extern "C" __device__ int FAKE_MARK(A, B, F) = 1;
+#if $axis
+extern "C" __device__ int fake_probe_$axis = 1;
+#endif
 extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};
 
IDEA
echo "$ATTN_IDEA_AGENT_CALL $start $(date +%s.%N) $(pwd)" >> "@LOG@"
)SH";

TEST(IdeaAgent, KCallsRunAtOnceEachInAKitOfItsOwnEachRecorded) {
  const std::string dir = test::temp_dir("idea-agents"), queue = dir + "/queue", db_path = dir + "/runs/t.db";
  const std::string log = dir + "/calls.log", tpl = dir + "/templates";
  fs::create_directories(tpl);
  fs::copy_file(test::data_dir() + "/fake_templates/fake.cu", tpl + "/fake.cu");
  test::write_text(tpl + "/fake.json", R"({"name": "fake", "source": "fake.cu", "kernel": "block_sparse_attn_fwd",
 "parameters": {"A": {"values": [4, 3, 5]}, "B": {"values": [2, 1]}, "F": {"values": [0]}}, "default": {"A": 4, "B": 2, "F": 0}}
)");
  test::write_text(dir + "/agent.sh", replaced(kSlowAgent, "@LOG@", log));
  const std::string args = "run --db '" + db_path + "' --suite smoke --templates '" + tpl +
                           "' --template fake --strategy exhaustive --worker-exe '" +
                           test::fake_worker_path() + "' --cache '" + dir + "/cache' --jobs 2 --ideas '" + queue +
                           "' --idea-budget 2 --idea-poll 0.2 --idea-agent 'sh " + dir + "/agent.sh' --idea-agent-min 3 "
                           "--idea-agent-parallel 3 --idea-agent-retry 0 --budget 12s";
  const test::Output out = test::run_tuner(args);
  ASSERT_EQ(out.code, 0) << out.text;
  auto db = ExperimentDb::open(db_path, ExperimentDb::Mode::read_only);
  const auto calls = idea_agent_calls(db);
  ASSERT_GE(calls.size(), 3u) << out.text;
  std::vector<std::pair<double, double>> spans;
  std::set<std::string> kits;
  std::istringstream lines(test::read_text(log));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::int64_t call = 0;
    double start = 0, end = 0;
    std::string kit;
    in >> call >> start >> end >> kit;
    spans.emplace_back(start, end);
    kits.insert(kit);
  }
  ASSERT_GE(spans.size(), 3u);
  EXPECT_EQ(kits.size(), spans.size()) << "each call in a kit of its own";
  std::sort(spans.begin(), spans.end());
  EXPECT_LT(spans[1].first, spans[0].second) << "the first calls ran at once";
  EXPECT_LT(spans[2].first, spans[0].second);
  // Each call recorded, its idea queued under its call's name and judged.
  std::map<std::string, IdeaRecord> by_file;
  for (const auto& i : db.ideas()) by_file[i.file] = i;
  for (const auto& w : idea_agent_ideas(db)) {
    EXPECT_EQ(w.queued_as, fmt::format("agent{}_idea_P{}.idea", w.call_id, w.call_id));
    if (by_file.count(w.queued_as) && by_file[w.queued_as].status == IdeaStatus::done) {  // not cut off by the run's end
      EXPECT_EQ(by_file[w.queued_as].verdict, IdeaVerdict::no_gain) << w.queued_as;
    }
  }
  std::size_t judged = 0;
  for (const auto& [file, i] : by_file) judged += i.verdict == IdeaVerdict::no_gain ? 1 : 0;
  EXPECT_GE(judged, 3u) << out.text;
}

}  // namespace
}  // namespace attn
