// The idea queue end to end on the CPU (docs/ideas.md): the real binary with --ideas, real patch(1) and NVRTC,
// the fake worker as the GPU (an idea's effect is a fake_speed_pct_<N> symbol in its cubin, scaling the score).
// One run covers each verdict (win, no_gain, slower, broken: does_not_apply, compile, wrong_result, bad_input),
// stacking (the second win applies only to the first's code), no re-run of a known idea, and no GPU time for
// an idea broken before tuning; a second run drops an idea into a running daemon and removes its folder.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "daemon/seed_rounds.hpp"
#include "db/idea_repeats.hpp"
#include "db/store.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "workload/case_spec.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using test::Output;

/// A run folder: fake.cu with a space of 18 healthy configs, the queue folder, the DB.
struct IdeaFixture {
  std::string dir = test::temp_dir("ideas");
  std::string tpl = dir + "/templates", queue = dir + "/queue", db = dir + "/runs/t.db";
  IdeaFixture() {
    fs::create_directories(tpl);
    fs::create_directories(queue);
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
  }
  std::string args(const std::string& extra) const {
    return "run --db '" + db + "' --suite smoke --templates '" + tpl + "' --template fake --strategy local --worker-exe '" +
           test::fake_worker_path() + "' --cache '" + dir + "/cache' --jobs 2 --watchdog-min 0.5 --watchdog-cap 2 --ideas '" +
           queue + "' --idea-budget 4 --idea-poll 0.2 " + extra;
  }
  /// Queues `name` with `text`, its modification time `age_s` seconds ago (the queue runs oldest first).
  void queue_idea(const std::string& name, const std::string& text, int age_s = 0) const {
    test::write_text(queue + "/" + name, text);
    fs::last_write_time(queue + "/" + name, fs::file_time_type::clock::now() - std::chrono::seconds(age_s));
  }
};

// Hunks against fake.cu (tests/data/fake_templates): after its F default, and after its config symbol.
const std::string kWin = test::fake_axis_idea("a faster path behind FAST", "the fake worker scales the score by 80 %",
                                              "FAST", "FAST", "extern \"C\" __device__ int fake_speed_pct_80 = 1;");
// Applies only where kWin's lines are: stacking.
const std::string kStack = R"(Description: even faster on top of FAST

--- a/kernels_templates/fake.cu
+++ b/kernels_templates/fake.cu
@@ -20,6 +20,6 @@
 extern "C" __device__ int FAKE_MARK(A, B, F) = 1;
 #if FAST
-extern "C" __device__ int fake_speed_pct_80 = 1;
+extern "C" __device__ int fake_speed_pct_60 = 1;
 #endif
 extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};
 
)";
std::string after_f(const std::string& description, const std::string& added) {
  return "Description: " + description + "\n\n--- a/fake.cu\n+++ b/fake.cu\n@@ -10,5 +10,6 @@\n #ifndef F\n #define F 0\n"
         " #endif\n+" + added + "\n #if F == 5\n #error \"deliberate compile error (F = 5)\"\n";
}

/// The DB of a daemon that is starting: none until the file exists with its schema (a DB opened while the daemon
/// creates it is empty).
std::optional<ExperimentDb> open_when_ready(const std::string& path) {
  if (!fs::exists(path)) return std::nullopt;
  try {
    return ExperimentDb::open(path, ExperimentDb::Mode::read_only);
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

std::int64_t count_iterations_of(ExperimentDb& db, const std::string& tname) {
  const auto r = db.sql_readonly("SELECT count(*) FROM iterations WHERE template = '" + tname + "'");
  return std::stoll(*r.rows.at(0).at(0));
}

/// The configs an idea's template got because its parent's champion moved on while the idea was tuned
/// (IdeaBench::catch_up: the parent's new champion with the idea's values; how often depends on the machine's load).
std::int64_t catch_ups_of(ExperimentDb& db, const std::string& tname) {
  const auto r = db.sql_readonly("SELECT count(*) FROM iterations WHERE template = '" + tname +
                                 "' AND description LIKE 'idea: the parent''s champion now%'");
  return std::stoll(*r.rows.at(0).at(0));
}

TEST(Ideas, EachVerdictStackingNoRerunAndNoGpuTimeForBrokenOnes) {
  IdeaFixture f;
  int age = 100;
  f.queue_idea("01_win.idea", kWin, age--);
  f.queue_idea("02_stack.idea", kStack, age--);
  f.queue_idea("03_slower.idea", after_f("slower everywhere", "extern \"C\" __device__ int fake_speed_pct_150 = 1;"), age--);
  f.queue_idea("04_nogain.idea", after_f("a comment changes nothing", "// nothing"), age--);
  f.queue_idea("05_conflict.idea", "Description: a hunk that is not there\n\n--- a/fake.cu\n+++ b/fake.cu\n@@ -1,2 +1,2 @@\n-no such line\n+nor this\n no such context\n", age--);
  f.queue_idea("06_compile.idea", after_f("does not compile", "this is not C++;"), age--);
  std::string wrong = after_f("wrong results", "#undef F\n+#define F 3");
  wrong.replace(wrong.find("@@ -10,5 +10,6 @@"), 17, "@@ -10,5 +10,7 @@");
  f.queue_idea("07_wrong.idea", wrong, age--);
  f.queue_idea("08_bad_bytes.idea", "Description: \xff\xfe not UTF-8\n\n", age--);
  f.queue_idea("09_missing_file.idea", "Description: patches a header the template lacks\n\n--- a/blocks/none.cuh\n+++ b/blocks/none.cuh\n@@ -1 +1 @@\n-a\n+b\n", age--);
  f.queue_idea("10_same_as_04.idea", after_f("the same code as 04, other words", "// nothing"), age--);
  f.queue_idea("11_bad_space.idea", "Description: a value twice\nSpace: {\"FAST2\": [0, 0]}\nDefault: {\"FAST2\": 0}\n\n", age--);
  f.queue_idea("12_malformed.idea", "Description: counts wrong\n\n--- a/fake.cu\n+++ b/fake.cu\n@@ -1,5 +1,5 @@\n-x\n+y\n", age--);
  // A value added to an existing axis (a JSON-only diff): only configs with A = 7 run it. Its fastest config
  // overall has the idea off (the parent's code at its best config); the verdict is on A = 7, slower.
  f.queue_idea("13_new_value.idea", "Description: A = 7 too\n\n--- a/fake.json\n+++ b/fake.json\n@@ -4,4 +4,4 @@\n"
                "   \"kernel\": \"block_sparse_attn_fwd\",\n   \"parameters\": {\n"
                "-    \"A\": {\"values\": [1, 2, 3, 4, 5, 6]},\n+    \"A\": {\"values\": [1, 2, 3, 4, 5, 6, 7]},\n"
                "     \"B\": {\"values\": [1, 2, 3]},\n", age--);
  test::write_text(f.queue + "/notes.txt", "not an idea: ignored");

  const Output out = test::run_tuner(f.args(""));
  ASSERT_EQ(out.code, 0) << out.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  std::map<std::string, IdeaRecord> by_file;
  for (const auto& i : db.ideas()) {
    EXPECT_FALSE(by_file.count(i.file)) << i.file << " judged twice";
    by_file[i.file] = i;
  }
  const auto verdict = [&](const std::string& file) {
    const auto it = by_file.find(file);
    return it == by_file.end() ? std::string("(none)")
                               : std::string(to_string(it->second.verdict)) + ":" + to_string(it->second.broken_kind);
  };
  EXPECT_EQ(verdict("01_win.idea"), "win:");
  EXPECT_EQ(verdict("02_stack.idea"), "win:");
  EXPECT_EQ(verdict("03_slower.idea"), "slower:");
  EXPECT_EQ(verdict("04_nogain.idea"), "no_gain:");
  EXPECT_EQ(verdict("05_conflict.idea"), "broken:does_not_apply");
  EXPECT_EQ(verdict("06_compile.idea"), "broken:compile");
  EXPECT_EQ(verdict("07_wrong.idea"), "broken:wrong_result");
  EXPECT_EQ(verdict("08_bad_bytes.idea"), "broken:bad_input");
  EXPECT_EQ(verdict("09_missing_file.idea"), "broken:does_not_apply");
  EXPECT_EQ(verdict("10_same_as_04.idea"), "(none)") << "the same diff on the same parent ran twice";
  EXPECT_EQ(verdict("11_bad_space.idea"), "broken:bad_input");
  EXPECT_EQ(verdict("12_malformed.idea"), "broken:bad_input");
  EXPECT_EQ(verdict("13_new_value.idea"), "slower:");
  EXPECT_NE(by_file["13_new_value.idea"].reason.find("has the idea off"), std::string::npos)
      << by_file["13_new_value.idea"].reason;
  EXPECT_EQ(by_file.size(), 12u);
  EXPECT_NE(by_file["08_bad_bytes.idea"].reason.find("UTF-8"), std::string::npos) << by_file["08_bad_bytes.idea"].reason;
  EXPECT_NE(by_file["12_malformed.idea"].reason.find("ends early"), std::string::npos) << by_file["12_malformed.idea"].reason;
  EXPECT_NE(by_file["10_same_as_04.idea"].reason, "x");
  EXPECT_NE(out.text.find("10_same_as_04.idea: already judged no_gain"), std::string::npos) << out.text;

  // Stacking: the second win is applied to the first's template, later ideas to the second's.
  const auto& win = by_file["01_win.idea"];
  const auto& stack = by_file["02_stack.idea"];
  EXPECT_EQ(win.parent_template, "fake");
  EXPECT_EQ(stack.parent_template, win.template_name);
  EXPECT_EQ(by_file["03_slower.idea"].parent_template, stack.template_name);
  EXPECT_NEAR(*win.delta_pct, -20.0, 0.01);
  EXPECT_NEAR(*stack.delta_pct, -25.0, 0.01);
  EXPECT_NEAR(*by_file["03_slower.idea"].delta_pct, 50.0, 0.01);
  EXPECT_NEAR(*by_file["04_nogain.idea"].delta_pct, 0.0, 0.01);
  EXPECT_GT(*win.noise_pct, 0.0);
  // The budget (4), plus the parent's champion with and without FAST each time the parent moved on while the idea
  // was tuned (once or twice on an idle machine, more under load); a win is tuned on (its whole space of 36), a loser
  // leaves the search at its verdict.
  EXPECT_EQ(win.configs, 4 + catch_ups_of(db, win.template_name));
  EXPECT_EQ(count_iterations_of(db, win.template_name), 36);
  const auto& slower = by_file["03_slower.idea"];
  EXPECT_EQ(count_iterations_of(db, slower.template_name), slower.configs);
  EXPECT_EQ(slower.configs, 4 + catch_ups_of(db, slower.template_name));
  // Broken before tuning: no iteration, no GPU time.
  for (const char* file : {"05_conflict.idea", "06_compile.idea", "09_missing_file.idea"}) {
    const auto& i = by_file[file];
    EXPECT_EQ(i.configs, 0) << file;
    if (!i.template_name.empty()) {
      EXPECT_EQ(count_iterations_of(db, i.template_name), 0) << file;
    }
  }
  // The best config overall is the stacked win's (A=4, B=2, FAST=1: 0.1 x 0.6).
  const auto best = db.best("smoke");
  ASSERT_TRUE(best);
  EXPECT_NEAR(best->geomean_ms.value_or(0), 0.06, 1e-6);

  // query ideas: wins first, the diff of one in full.
  const Output q = test::run_tuner("query ideas --db '" + f.db + "'");
  ASSERT_EQ(q.code, 0) << q.text;
  EXPECT_LT(q.text.find("02_stack.idea"), q.text.find("04_nogain.idea")) << q.text;
  EXPECT_LT(q.text.find("04_nogain.idea"), q.text.find("03_slower.idea")) << q.text;
  const Output one = test::run_tuner("query ideas --db '" + f.db + "' --id " + std::to_string(stack.id));
  ASSERT_EQ(one.code, 0) << one.text;
  EXPECT_NE(one.text.find("+extern \"C\" __device__ int fake_speed_pct_60 = 1;"), std::string::npos) << one.text;
  EXPECT_NE(one.text.find("verdict: win"), std::string::npos) << one.text;
  const Output unknown = test::run_tuner("query ideas --db '" + f.db + "' --id 999");
  EXPECT_EQ(unknown.code, 2) << unknown.text;
  EXPECT_NE(unknown.text.find("no idea 999"), std::string::npos) << unknown.text;

  // A second run on the same DB and queue runs nothing again.
  const Output again = test::run_tuner(f.args(""));
  ASSERT_EQ(again.code, 0) << again.text;
  auto db2 = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  EXPECT_EQ(db2.ideas().size(), 12u);
}

TEST(Ideas, AnIdeaDroppedIntoARunningDaemonIsJudgedAndAVanishedQueueIsReported) {
  IdeaFixture f;
  const std::string log = f.dir + "/daemon.log";
  const pid_t pid = test::spawn_tuner(f.args("--budget 40s"), "FAKE_WORKER_DELAY=0.3", log);
  // Wait for the daemon to have a champion, then drop the idea.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto finished = [&] {
    auto db = open_when_ready(f.db);
    return db ? db->iterations().size() : std::size_t(0);
  };
  while (finished() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(finished(), 2u) << test::read_text(log);
  f.queue_idea("late.idea", kWin);
  std::optional<IdeaRecord> judged;
  while (!judged && std::chrono::steady_clock::now() < deadline + std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
    for (const auto& i : db.ideas())
      if (i.file == "late.idea" && i.status == IdeaStatus::done) judged = i;
  }
  ASSERT_TRUE(judged) << test::read_text(log);
  EXPECT_EQ(judged->verdict, IdeaVerdict::win) << judged->reason;
  fs::remove_all(f.queue);  // the folder goes away while the daemon runs: reported, the run goes on
  std::optional<IdeaRecord> missing;
  while (!missing && std::chrono::steady_clock::now() < deadline + std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
    for (const auto& i : db.ideas())
      if (i.reason.find("is missing") != std::string::npos) missing = i;
  }
  const int status = test::wait_exit(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << test::read_text(log);
  ASSERT_TRUE(missing) << test::read_text(log);
  EXPECT_EQ(missing->broken_kind, IdeaBrokenKind::bad_input);
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  EXPECT_EQ(db.runs().back().status, RunStatus::finished);
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

TEST(Ideas, ALosingIdeaRunsOnANewParentOnlyWithRetryYes) {
  IdeaFixture f;
  const std::string comment = after_f("a comment changes nothing", "// nothing");
  f.queue_idea("a.idea", comment, 300);
  const test::Output first = test::run_tuner(f.args(""));
  ASSERT_EQ(first.code, 0) << first.text;
  // A second run: a win, then the same code twice more, once without and once with Retry: yes.
  f.queue_idea("w.idea", kWin, 200);
  f.queue_idea("b_no_retry.idea", "Description: the same code again\n" + comment.substr(comment.find('\n') + 1), 100);
  f.queue_idea("c_retry.idea", "Retry: yes\n" + comment, 50);
  const test::Output second = test::run_tuner(f.args(""));
  ASSERT_EQ(second.code, 0) << second.text;
  EXPECT_NE(second.text.find("a.idea: already judged no_gain on fake on smoke"), std::string::npos) << second.text;
  EXPECT_NE(second.text.find("b_no_retry.idea: already judged no_gain on fake on smoke (idea 1); add 'Retry: yes'"),
            std::string::npos) << second.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  std::map<std::string, IdeaRecord> by_file;
  for (const auto& i : db.ideas()) by_file[i.file] = i;
  ASSERT_EQ(by_file.size(), 3u);  // a, w, c_retry
  EXPECT_EQ(by_file["a.idea"].parent_template, "fake");
  EXPECT_EQ(by_file["w.idea"].verdict, IdeaVerdict::win);
  EXPECT_EQ(by_file["c_retry.idea"].idea_hash, by_file["a.idea"].idea_hash);  // one idea, whatever its words
  EXPECT_EQ(by_file["c_retry.idea"].parent_template, by_file["w.idea"].template_name);
  EXPECT_EQ(by_file["c_retry.idea"].verdict, IdeaVerdict::no_gain);
}

// Verdicts measured for trust (issue 47): an idea judged on a parent is judged there again when its file asks for more
// verdicts (Verdicts: 2), one judgment a run; both verdicts stay, the second names the first (idea_repeats).
TEST(Ideas, AnIdeaIsJudgedAgainOnTheSameParentUpToTheVerdictsItsFileAsks) {
  IdeaFixture f;
  const std::string comment = after_f("a comment changes nothing", "// nothing");
  f.queue_idea("a.idea", comment, 100);
  const test::Output first = test::run_tuner(f.args(""));
  ASSERT_EQ(first.code, 0) << first.text;
  f.queue_idea("a.idea", "Verdicts: 2\n" + comment, 100);
  const test::Output second = test::run_tuner(f.args(""));
  ASSERT_EQ(second.code, 0) << second.text;
  EXPECT_NE(second.text.find("judged again (idea 1 was judged there)"), std::string::npos) << second.text;
  const test::Output third = test::run_tuner(f.args(""));
  ASSERT_EQ(third.code, 0) << third.text;
  EXPECT_NE(third.text.find("a.idea: already judged no_gain on fake on smoke (idea 2); 2 verdicts there, as its "
                            "Verdicts: 2 asks"), std::string::npos) << third.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto ideas = db.ideas();
  ASSERT_EQ(ideas.size(), 2u);
  EXPECT_EQ(ideas[0].idea_hash, ideas[1].idea_hash);
  EXPECT_EQ(ideas[0].parent_template, ideas[1].parent_template);
  EXPECT_EQ(ideas[0].verdict, IdeaVerdict::no_gain);
  EXPECT_EQ(ideas[1].verdict, IdeaVerdict::no_gain);
  EXPECT_EQ(idea_repeats(db), (std::map<std::int64_t, std::int64_t>{{ideas[1].id, ideas[0].id}}));
  const test::Output shown = test::run_tuner("query ideas --db '" + f.db + "' --id " + std::to_string(ideas[1].id));
  EXPECT_NE(shown.text.find("judged again: idea 1 had no_gain on fake"), std::string::npos) << shown.text;
}

// A verdict holds for the suite it was measured on: the same idea on the same parent is judged again on another
// suite (an idea for the small shapes, first judged on full), once.
TEST(Ideas, AnIdeaJudgedOnOneSuiteIsJudgedAgainOnAnother) {
  IdeaFixture f;
  f.queue_idea("w.idea", kWin, 100);
  const test::Output smoke = test::run_tuner(f.args(""));
  ASSERT_EQ(smoke.code, 0) << smoke.text;
  std::string on_local_dev = f.args("");
  on_local_dev.replace(on_local_dev.find("--suite smoke"), 13, "--suite local-dev");
  const test::Output local = test::run_tuner(on_local_dev);
  ASSERT_EQ(local.code, 0) << local.text;
  EXPECT_EQ(local.text.find("already judged"), std::string::npos) << local.text;
  const test::Output again = test::run_tuner(on_local_dev);
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_NE(again.text.find("w.idea: already judged win on fake on local-dev (idea 2)"), std::string::npos) << again.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto ideas = db.ideas();
  ASSERT_EQ(ideas.size(), 2u);
  EXPECT_EQ(ideas[0].idea_hash, ideas[1].idea_hash);
  EXPECT_EQ(ideas[0].parent_template, "fake");
  EXPECT_EQ(ideas[1].parent_template, "fake");
  EXPECT_EQ(ideas[1].verdict, IdeaVerdict::win) << ideas[1].reason;
  EXPECT_EQ(db.run(ideas[0].run_id)->suite, "smoke");
  EXPECT_EQ(db.run(ideas[1].run_id)->suite, "local-dev");
  // query ideas names each verdict's suite.
  const test::Output q = test::run_tuner("query ideas --db '" + f.db + "' --format tsv");
  ASSERT_EQ(q.code, 0) << q.text;
  EXPECT_NE(q.text.find("\tw.idea\tsmoke\tfake\t"), std::string::npos) << q.text;
  EXPECT_NE(q.text.find("\tw.idea\tlocal-dev\tfake\t"), std::string::npos) << q.text;
}

// Found on an H200 (2026-11-26, the probe leg of docs/results.md): a no-op idea was judged slower, because its
// contender was its fastest config with the idea on, another config than the parent's best, whose one look had
// been lucky. The verdict now rests on the paired config (the parent's best with the idea on) unless another
// config wins; here every config but the parent's best is lucky once (0.5x) and slow after (1.5x).
// The parent's search runs first, to its end: the idea must meet the parent's best (A 4, B 2) when it is judged.
// Queued at the start, it raced the parent's local search and met A 3 or 5 under load (seen 2026-11-26 with the
// CPU busy: 2 failures in 3 runs, paired 0.165 ms).
TEST(Ideas, AVerdictMeasuresTheIdeasCodeNotALuckyConfig) {
  IdeaFixture f;
  const test::Output parent = test::run_tuner(f.args(""));
  ASSERT_EQ(parent.code, 0) << parent.text;
  f.queue_idea("lucky.idea", test::fake_axis_idea("a new axis that changes no code at the parent's best config", "",
                                                 "LUCKY", "LUCKY && !(A == 4 && B == 2)",
                                                 "extern \"C\" __device__ int fake_lucky_50 = 1;"));

  const test::Output out = test::run_tuner(f.args(""));
  ASSERT_EQ(out.code, 0) << out.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  ASSERT_EQ(db.ideas().size(), 1u);
  const IdeaRecord i = db.ideas()[0];
  // Its fastest config in the tuning is a lucky one (A or B off the parent's best, LUCKY 1: half the score).
  ASSERT_TRUE(i.best_ms && i.best_iteration_id) << i.reason;
  EXPECT_LT(*i.best_ms, 0.1 * 0.75) << i.reason;
  EXPECT_EQ(i.verdict, IdeaVerdict::no_gain) << i.reason;
  EXPECT_NEAR(*i.delta_pct, 0.0, 0.01) << i.reason;
  const auto aba = nlohmann::json::parse(i.aba_json);
  EXPECT_EQ(aba.at("judged"), "paired") << i.aba_json;
  ASSERT_EQ(aba.at("looks").size(), 2u) << i.aba_json;
  EXPECT_EQ(aba["looks"][1].at("what"), "fastest") << i.aba_json;
  EXPECT_EQ(aba["looks"][1].at("iter"), *i.best_iteration_id) << i.aba_json;
  EXPECT_NEAR(aba["looks"][1].at("delta_pct").get<double>(), 65.0, 0.01) << i.aba_json;  // 0.11 x 1.5 vs 0.1
  EXPECT_NE(i.reason.find("paired: the parent's config with the idea on"), std::string::npos) << i.reason;
}

// Found on the H100 (2026-11-25, the proposer A/B of docs/results.md): with the cubin cache inside the DB's
// folder, the daemon's own compiles while a proposer slept were taken for the proposer's writes and its
// proposal rejected. The cache, the idea queue and the ideas' proposal folders are the daemon's own.
TEST(Ideas, AProposerBesideIdeasIsNotBlamedForTheDaemonsWritesInItsFolder) {
  IdeaFixture f;
  const std::string runs = f.dir + "/runs", queue = runs + "/queue", cache = runs + "/cache";
  fs::create_directories(queue);
  // The queue starts empty: the proposer's first call drops the idea in (as a person would) and sleeps, so the
  // daemon applies and checks the idea in runs/proposals/<N> while that call runs.
  test::write_text(f.dir + "/w.idea", kWin);
  const std::string script = f.dir + "/proposer.sh";
  test::write_text(script, "#!/bin/sh\n[ \"$ATTN_PROPOSAL_ID\" = 1 ] && cp '" + f.dir + "/w.idea' '" + queue +
                               "/'\nsleep 3\necho 'thought about it' > notes.txt\n");
  fs::permissions(script, fs::perms::owner_all);
  // Ended once the idea has its verdict (not by a wall-clock budget, which a loaded machine would outrun), 120 s at most.
  std::string args = f.args("--budget 120s --proposer '" + script + "' --propose-every 1 --proposer-timeout 30");
  args.replace(args.find("'" + f.queue + "'"), f.queue.size() + 2, "'" + queue + "'");
  args.replace(args.find("'" + f.dir + "/cache'"), f.dir.size() + 8, "'" + cache + "'");
  const std::string log = f.dir + "/daemon.log";
  const pid_t daemon = test::spawn_tuner(args, "FAKE_WORKER_DELAY=0.2", log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  const auto judged = [&] {
    auto seen = open_when_ready(f.db);
    if (!seen) return false;
    const auto ideas = seen->ideas();
    return !ideas.empty() && ideas[0].status == IdeaStatus::done;
  };
  while (!judged() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  test::run_tuner("stop --db '" + f.db + "'");
  const int status = test::wait_exit(daemon);
  const std::string text = test::read_text(log);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_EQ(text.find("wrote outside its directory"), std::string::npos) << text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  int proposer_calls = 0;
  for (const auto& p : db.proposals()) {
    if (p.command.rfind("idea ", 0) == 0) continue;
    ++proposer_calls;
    EXPECT_NE(p.status, ProposalStatus::rejected) << p.reason;
  }
  EXPECT_GE(proposer_calls, 1);
  ASSERT_EQ(db.ideas().size(), 1u);
  EXPECT_EQ(db.ideas()[0].verdict, IdeaVerdict::win)
      << to_string(db.ideas()[0].status) << ": " << db.ideas()[0].reason << "\n" << text;
  ASSERT_TRUE(db.ideas()[0].proposal_id);
  EXPECT_GT(*db.ideas()[0].proposal_id, 1);  // begun after the first proposer call (proposal 1) started
  EXPECT_TRUE(fs::exists(cache)) << "the test must compile into the DB's folder";
}

// A held-out failure keeps its kind: an idea that wins the A/B/A on the tuning seed but times below its roofline floor
// on the held-out seed (fake_verdict_below_floor_seed_<S>: only an eval of a case of seed S) is broken, below_floor.
TEST(Ideas, AnIdeaThatFailsOnTheHeldOutSeedIsBrokenWithThatFailuresKind) {
  IdeaFixture f;
  const std::int64_t held_out = builtin_suite("quick", kDefaultHoldoutSeed).front().seed;
  for (const auto& c : builtin_suite("quick", 0)) ASSERT_NE(c.seed, held_out) << c.case_id;  // the tuning seed's cases
  f.queue_idea("cheat.idea", test::fake_axis_idea("faster, and below the floor on the held-out seed", "", "CHEAT", "CHEAT",
                                                  "extern \"C\" __device__ int fake_speed_pct_80 = 1, "
                                                  "fake_verdict_below_floor_seed_" + std::to_string(held_out) + " = 1;"));
  std::string args = f.args("");
  args.replace(args.find("--suite smoke"), 13, "--suite quick");
  const test::Output out = test::run_tuner(args);
  ASSERT_EQ(out.code, 0) << out.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  ASSERT_EQ(db.ideas().size(), 1u) << out.text;
  const IdeaRecord i = db.ideas()[0];
  EXPECT_EQ(i.verdict, IdeaVerdict::broken) << i.reason;
  EXPECT_EQ(i.broken_kind, IdeaBrokenKind::below_floor) << to_string(i.broken_kind) << ": " << i.reason;
  EXPECT_EQ(i.reason.rfind("on the held-out seed: below_floor: case quick-", 0), 0u) << i.reason;
  EXPECT_NEAR(*i.delta_pct, -20.0, 0.01) << i.reason;  // it won the A/B/A on the tuning seed
  EXPECT_TRUE(i.holdout_parent_ms);
  EXPECT_FALSE(i.holdout_idea_ms);
}

TEST(Ideas, AnIdeaCutOffByAKilledDaemonRunsAgainFromTheStart) {
  IdeaFixture f;
  f.queue_idea("w.idea", kWin);
  const std::string log = f.dir + "/daemon.log";
  const pid_t pid = test::spawn_tuner(f.args(""), "FAKE_WORKER_DELAY=0.4", log);
  std::optional<IdeaRecord> tuning;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (!tuning && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto db = open_when_ready(f.db);
    if (!db) continue;
    for (const auto& i : db->ideas())
      if (i.status == IdeaStatus::tuning) tuning = i;
  }
  ASSERT_TRUE(tuning) << test::read_text(log);
  const test::Output status = test::run_tuner("status --db '" + f.db + "'");
  EXPECT_NE(status.text.find("idea " + std::to_string(tuning->id) + " (w.idea): tuning"), std::string::npos)
      << status.text;
  ::kill(pid, SIGKILL);
  test::wait_exit(pid);
  const test::Output again = test::run_tuner(f.args(""));
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_NE(again.text.find("1 idea(s) left without a verdict were marked interrupted"), std::string::npos) << again.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto ideas = db.ideas();
  ASSERT_EQ(ideas.size(), 2u);
  EXPECT_EQ(ideas[0].status, IdeaStatus::interrupted);
  EXPECT_NE(ideas[0].reason.find("the daemon ended before its verdict"), std::string::npos) << ideas[0].reason;
  EXPECT_EQ(ideas[1].file, "w.idea");
  EXPECT_EQ(ideas[1].verdict, IdeaVerdict::win);
  EXPECT_NE(ideas[1].template_name, ideas[0].template_name);
  // The cut-off idea's template left the search: no iteration of it in the second run.
  const auto r = db.sql_readonly("SELECT count(*) FROM iterations WHERE template = '" + ideas[0].template_name +
                                 "' AND run_id = " + std::to_string(ideas[1].run_id));
  EXPECT_EQ(*r.rows.at(0).at(0), "0");
}

}  // namespace
}  // namespace attn
