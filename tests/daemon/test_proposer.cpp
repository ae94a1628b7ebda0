// The proposer hook end to end on the CPU (docs/proposer.md): the real binary with --proposer, a scripted
// proposer that gives a different outcome per call (ATTN_PROPOSAL_ID), real NVRTC compiles and ABI checks,
// the fake worker as the GPU. One run covers a valid proposal (tuned, timed, champion, exported from the DB),
// broken JSON, a compile error, a wrong ABI, writes outside the working directory, no proposal, a hanging
// proposer killed at the limit and a crashing one; the run goes on through all of them.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "proposer/proposal_round.hpp"
#include "daemon/supervise.hpp"
#include "db/iters_tsv.hpp"
#include "db/store.hpp"
#include "export/plan_from_db.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

using Output = test::CommandOutput;
Output run(const std::string& args) { return test::run_binary(args); }
std::string read_file(const std::string& path) { return test::read_text(path); }
void write_file(const std::string& path, const std::string& text) { test::write_text(path, text); }

std::string src_root() { return fs::path(test::data_dir()).parent_path().parent_path().string(); }

/// A run folder: the test template (fake.cu, with a space of healthy configs only) in its own templates
/// folder, the DB in runs/, and a proposer script.
struct ProposerFixture {
  std::string dir = test::temp_dir("proposer");
  std::string tpl = dir + "/templates", db = dir + "/runs/t.db", tsv = dir + "/runs/iters.tsv";
  std::string script = dir + "/proposer.sh";

  ProposerFixture() {
    fs::create_directories(tpl);
    fs::copy_file(test::data_dir() + "/fake_templates/fake.cu", tpl + "/fake.cu");
    write_file(tpl + "/fake.json", space_json("fake", "[1, 2, 3, 4, 5, 6]", R"({"A": 1, "B": 1, "F": 0})"));
  }
  static std::string space_json(const std::string& name, const std::string& a_values, const std::string& def) {
    return R"({"name": ")" + name + R"(", "source": ")" + name + R"(.cu", "kernel": "block_sparse_attn_fwd",
  "parameters": {"A": {"values": )" + a_values + R"(}, "B": {"values": [1, 2, 3]}, "F": {"values": [0]}},
  "default": )" + def + "}\n";
  }
  std::string args(const std::string& extra) const {
    return "run --db '" + db + "' --tsv '" + tsv + "' --suite smoke --templates '" + tpl +
           "' --template fake --strategy local --worker-exe '" + src_root() + "/tests/daemon/fake_worker.py' --cache '" +
           dir + "/cache' --jobs 2 --watchdog-min 0.5 --watchdog-cap 2 " + extra;
  }
};

/// Proposal N does outcome N. Every call starts from the champion's template in its working directory.
/// Proposal 1 is 10 % faster than its parent everywhere (fake_speed_pct_90), so it is the champion whether or not
/// the parent's search reached A=4,B=2 before the proposal joined (a tie would leave the parent's first finding).
constexpr const char* kDispatcher = R"(#!/bin/sh
src=$(ls *.cu | grep -v '^proposal.cu$' | head -1)
good() {
  cp "$src" proposal.cu
  cat > proposal.json <<'JSON'
@GOOD_JSON@
JSON
  echo "$1" > description.txt
}
case "$ATTN_PROPOSAL_ID" in
  1) good "narrow A to 3..5, default at the optimum"; echo 'extern "C" __device__ int fake_speed_pct_90 = 1;' >> proposal.cu ;;
  2) good "broken json"; printf '{"parameters": {"A": ' > proposal.json ;;
  3) good "a compile error"; echo 'this is not C++;' >> proposal.cu ;;
  4) good "C++ linkage"; sed 's/extern "C" __global__/__global__/' "$src" > proposal.cu ;;
  5) good "tampers"; echo evil > ../../../evil.txt; echo '// tampered' >> '@TPL@/fake.cu' ;;
  6) echo "nothing to propose this time" ;;
  7) sleep 60 & echo $! > child.pid; sleep 60 ;;
  8) echo "boom" >&2; exit 3 ;;
  *) exit 0 ;;
esac
)";

std::string dispatcher(const ProposerFixture& f) {
  std::string s = kDispatcher;
  const std::string good_json = ProposerFixture::space_json("ignored", "[3, 4, 5]", R"({"A": 4, "B": 2, "F": 0})");
  s.replace(s.find("@GOOD_JSON@"), 11, good_json);
  s.replace(s.find("@TPL@"), 5, f.tpl);
  return s;
}

/// Alive and not a zombie (a killed process whose parent is gone waits for init to reap it).
bool process_alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

TEST(Proposer, EveryOutcomeIsRecordedAndTheRunGoesOn) {
  ProposerFixture f;
  write_file(f.script, dispatcher(f));
  fs::permissions(f.script, fs::perms::owner_all);
  const std::string fake_cu = read_file(f.tpl + "/fake.cu");

  const auto t0 = std::chrono::steady_clock::now();
  const Output out =
      // The proposer runs beside the tuning: a slow fake GPU (0.3 s an evaluation, under the 0.5 s watchdog)
      // leaves it time for all 8 calls before the space (27 configs with fake_p1's) is exhausted.
      test::run_binary(f.args("--iterations 40 --proposer '" + f.script + "' --propose-every 1 --proposer-timeout 2s"),
                       "FAKE_WORKER_DELAY=0.3");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("run 1 ended"), std::string::npos) << out.text;
  RecordProperty("wall_s", std::to_string(wall));

  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  EXPECT_EQ(db.runs().back().status, RunStatus::finished);
  const auto proposals = db.proposals();
  ASSERT_GE(proposals.size(), 8u) << out.text;
  std::map<std::int64_t, ProposalRecord> by_id;
  for (const auto& p : proposals) by_id[p.id] = p;
  std::map<std::int64_t, IterationRecord> crash_of;  // proposal -> its crash iteration
  for (const auto& it : db.iterations())
    if (it.proposal_id && it.status == IterationStatus::crash) crash_of[*it.proposal_id] = it;

  // 1: accepted, tuned and timed, champion (its default is the optimum).
  const auto& p1 = by_id.at(1);
  EXPECT_EQ(p1.status, ProposalStatus::accepted) << p1.reason;
  EXPECT_EQ(p1.template_name, "fake_p1");
  EXPECT_EQ(p1.description, "narrow A to 3..5, default at the optimum");
  EXPECT_EQ(p1.exit_status, "exited with code 0");
  ASSERT_TRUE(p1.source);
  EXPECT_NE(p1.source->find("// attn-tuner: template fake_p1, proposed from fake"), std::string::npos);
  EXPECT_NE(p1.diff.find("+++ fake_p1.json"), std::string::npos) << p1.diff;
  EXPECT_NE(p1.diff.find("[3, 4, 5]"), std::string::npos) << p1.diff;
  EXPECT_FALSE(crash_of.count(1));
  int timed = 0;
  for (const auto& it : db.iterations())
    if (it.proposal_id == 1 && it.geomean_ms) ++timed;
  EXPECT_GE(timed, 1);
  const auto champ = db.champion("smoke", ChampionScope::overall);
  ASSERT_TRUE(champ);
  const auto champ_it = db.iteration(champ->iteration_id);
  EXPECT_EQ(champ_it->template_name, "fake_p1");
  EXPECT_EQ(champ_it->proposal_id, 1);
  EXPECT_EQ(champ_it->params, "A=4,B=2,F=0");

  // 2..5, 7, 8: rejected, each a crash iteration with its reason; 6: no proposal, no iteration.
  const std::map<std::int64_t, std::pair<FailureKind, std::string>> rejected = {
      {2, {FailureKind::proposal, "proposal.json: invalid JSON"}},
      {3, {FailureKind::compile, "compile error (default config)"}},
      {4, {FailureKind::proposal, "wrong ABI: no kernel entry `block_sparse_attn_fwd` with C linkage"}},
      {5, {FailureKind::proposal, "the proposer wrote outside its directory"}},
      {7, {FailureKind::proposal, "the proposer failed: killed after the 2 s limit"}},
      {8, {FailureKind::proposal, "the proposer failed: exited with code 3"}}};
  for (const auto& [id, expected] : rejected) {
    const auto& p = by_id.at(id);
    EXPECT_EQ(p.status, ProposalStatus::rejected) << id;
    EXPECT_NE(p.reason.find(expected.second), std::string::npos) << id << ": " << p.reason;
    ASSERT_TRUE(crash_of.count(id)) << id;
    EXPECT_EQ(crash_of[id].failure_kind, expected.first) << id;
    EXPECT_NE(crash_of[id].description.find(expected.second), std::string::npos) << crash_of[id].description;
  }
  EXPECT_EQ(by_id.at(6).status, ProposalStatus::empty);
  EXPECT_FALSE(crash_of.count(6));
  // The compile error's log is kept with its variant.
  ASSERT_TRUE(crash_of[3].variant_id);
  const auto v3 = db.variant(*crash_of[3].variant_id);
  EXPECT_FALSE(v3->compile_ok);
  EXPECT_NE(v3->compile_log.find("error"), std::string::npos);
  // Writes outside: named, the template folder put back byte for byte; the DB folder is reported, not undone.
  const auto& r5 = by_id.at(5).reason;
  EXPECT_NE(r5.find("created " + f.dir + "/runs/evil.txt"), std::string::npos) << r5;
  EXPECT_NE(r5.find("modified " + f.tpl + "/fake.cu"), std::string::npos) << r5;
  EXPECT_NE(r5.find("put back: restored " + f.tpl + "/fake.cu"), std::string::npos) << r5;
  EXPECT_EQ(read_file(f.tpl + "/fake.cu"), fake_cu);
  // The hanging proposer and the child it started are gone; the limit held.
  EXPECT_LT(*by_id.at(7).proposer_ms, 2000 + 2000 + 1500);
  const std::string child = read_file(f.dir + "/runs/proposals/7/work/child.pid");
  ASSERT_FALSE(child.empty());
  EXPECT_FALSE(process_alive(pid_t(std::stoi(child)))) << "the proposer's background child survived";
  EXPECT_NE(by_id.at(8).output.find("boom"), std::string::npos);
  // The proposer never saw the DB path.
  EXPECT_EQ(read_file(f.dir + "/runs/proposals/1/work/PROPOSE.md").find(f.db), std::string::npos);
  EXPECT_EQ(read_file(f.dir + "/runs/proposals/1/work/context.json").find(f.db), std::string::npos);

  // The logs agree with the DB; query proposals lists them with the best score.
  EXPECT_EQ(read_file(f.tsv), render_all(db.iterations()));
  const Output q = run("query proposals --db '" + f.db + "'");
  ASSERT_EQ(q.code, 0) << q.text;
  EXPECT_NE(q.text.find("fake_p1"), std::string::npos) << q.text;
  EXPECT_NE(q.text.find("0.0900"), std::string::npos) << q.text;
  EXPECT_NE(q.text.find("smoke:overall"), std::string::npos) << q.text;
  EXPECT_NE(q.text.find("invalid JSON"), std::string::npos) << q.text;
  const Output q1 = run("query proposals --db '" + f.db + "' --id 1");
  EXPECT_NE(q1.text.find("+++ fake_p1.json"), std::string::npos) << q1.text;

  // The export finds the champion's proposed template in the DB (it is in no templates folder).
  DbExportOptions eo;
  eo.templates_dir = f.tpl;
  const ExportPlan plan = build_export_plan(db, eo);
  ASSERT_FALSE(plan.variants.empty());
  EXPECT_EQ(plan.variants[0].template_name, "fake_p1");
  EXPECT_EQ(plan.variants[0].source, *p1.source);
  EXPECT_EQ(plan.variants[0].provenance.at("proposal"), 1);
}

TEST(Proposer, AcceptedProposalsRejoinTheSearchFromTheDb) {
  ProposerFixture f;
  write_file(f.script, dispatcher(f));
  fs::permissions(f.script, fs::perms::owner_all);
  // One call, after iteration 2: proposal 1 (accepted).
  ASSERT_EQ(run(f.args("--iterations 4 --proposer '" + f.script + "' --propose-every 2")).code, 0);
  {
    auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
    ASSERT_EQ(db.proposals().size(), 1u);
    ASSERT_EQ(db.proposals()[0].status, ProposalStatus::accepted);
  }
  fs::remove_all(f.dir + "/runs/proposals");  // the DB holds the template
  const Output again = run(f.args("--iterations 6"));
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_TRUE(fs::exists(f.dir + "/runs/proposals/1/template/fake_p1.cu"));
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  int p1_in_run2 = 0;
  for (const auto& it : db.iterations())
    if (it.run_id == 2 && it.template_name == "fake_p1") {
      ++p1_in_run2;
      EXPECT_EQ(it.proposal_id, 1);
    }
  EXPECT_GE(p1_in_run2, 1) << again.text;
  EXPECT_EQ(db.proposals().size(), 1u);  // no proposer in run 2
}

TEST(Proposer, ABrokenProposedKernelIsRetiredAfterItsFirstCrashes) {
  ProposerFixture f;
  // Every config of the proposal gives a wrong result (F = 3 in fake_worker.py); later calls propose nothing.
  const std::string broken = ProposerFixture::space_json("x", "[1, 2, 3, 4, 5, 6]", R"({"A": 4, "B": 2, "F": 3})");
  std::string json = broken;
  json.replace(json.find(R"("F": {"values": [0]})"), std::string(R"("F": {"values": [0]})").size(),
               R"("F": {"values": [3]})");
  write_file(f.script, "#!/bin/sh\n[ \"$ATTN_PROPOSAL_ID\" = 1 ] || exit 0\nsrc=$(ls *.cu | head -1)\n"
                       "cp \"$src\" proposal.cu\ncat > proposal.json <<'JSON'\n" + json +
                       "JSON\necho 'wrong everywhere' > description.txt\n");
  fs::permissions(f.script, fs::perms::owner_all);
  // The proposer runs beside a slow fake GPU. The run ends when every space is exhausted (fake's 18 configs, fake_p2's
  // 9, each cheat's first), not after a count a slow machine (ThreadSanitizer) reaches before a proposal's turn.
  const Output out = test::run_binary(f.args("--iterations 200 --proposer '" + f.script + "' --propose-every 1"),
                                      "FAKE_WORKER_DELAY=0.3");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("template fake_p1 (proposal 1) retired from the search: its first 3 configs all crashed"),
            std::string::npos)
      << out.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  int p1 = 0;
  for (const auto& it : db.iterations())
    if (it.template_name == "fake_p1") {
      ++p1;
      EXPECT_EQ(it.failure_kind, FailureKind::wrong_result);
      EXPECT_EQ(it.proposal_id, 1);
    }
  EXPECT_EQ(p1, 3);
  const auto s = db.proposal_summaries();
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s[0].proposal.status, ProposalStatus::accepted);  // it passed the checks; the GPU found it wrong
  EXPECT_EQ(s[0].crashes, 3);
  EXPECT_FALSE(s[0].best_ms);
}

TEST(Proposer, ACheatingProposalIsRetiredAtOnceAndTheOthersGoOn) {
  // Issue 30 through the proposer hook: proposal 1 memoizes (the fake worker answers `inconsistent` for a
  // cubin holding fake_verdict_inconsistent, as the real worker does for tests/data/redteam's cheats),
  // proposal 2 is honest, proposal 3 is timed below its floor. Each cheat crashes once with a reason a person
  // can read and leaves the search at once; the honest one is tuned as if they had never been there.
  ProposerFixture f;
  const std::string good_json = ProposerFixture::space_json("x", "[3, 4, 5]", R"({"A": 4, "B": 2, "F": 0})");
  write_file(f.script, "#!/bin/sh\nsrc=$(ls *.cu | grep -v '^proposal.cu$' | head -1)\n"
                       "propose() {\n  cp \"$src\" proposal.cu\n  [ -n \"$1\" ] && echo \"extern \\\"C\\\" __device__ int "
                       "fake_verdict_$1 = 1;\" >> proposal.cu\n  cat > proposal.json <<'JSON'\n" + good_json +
                       "JSON\n  echo \"$2\" > description.txt\n}\n"
                       "case \"$ATTN_PROPOSAL_ID\" in\n"
                       "  1) propose inconsistent \"a result cache keyed by the output pointer\" ;;\n"
                       "  2) propose \"\" \"narrow A to 3..5\" ;;\n"
                       "  3) propose below_floor \"skips the work on repeats\" ;;\n"
                       "  *) exit 0 ;;\nesac\n");
  fs::permissions(f.script, fs::perms::owner_all);
  // The proposer runs beside a slow fake GPU. The run ends when every space is exhausted (fake's 18 configs, fake_p2's
  // 9, each cheat's first), not after a count a slow machine (ThreadSanitizer) reaches before a proposal's turn.
  const Output out = test::run_binary(f.args("--iterations 200 --proposer '" + f.script + "' --propose-every 1"),
                                      "FAKE_WORKER_DELAY=0.3");
  ASSERT_EQ(out.code, 0) << out.text;

  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto proposals = db.proposals();
  ASSERT_GE(proposals.size(), 3u) << out.text;
  std::map<std::string, std::vector<IterationRecord>> by_template;
  for (const auto& it : db.iterations()) by_template[it.template_name].push_back(it);
  const std::map<std::string, std::pair<FailureKind, std::string>> cheats = {
      {"fake_p1",
       {FailureKind::inconsistent,
        "inconsistent: case smoke-window-1: a timed launch on fresh inputs in the same buffers is wrong"}},
      {"fake_p3", {FailureKind::below_floor, "below_floor: case smoke-window-1: 4.85 us is below its roofline floor"}}};
  for (const auto& [name, expected] : cheats) {
    const auto& its = by_template[name];
    ASSERT_EQ(its.size(), 1u) << name << " was evaluated more than once:\n" << out.text;  // retired at once
    EXPECT_EQ(its[0].status, IterationStatus::crash);
    EXPECT_EQ(its[0].failure_kind, expected.first);
    EXPECT_NE(its[0].description.find(expected.second), std::string::npos) << its[0].description;
    EXPECT_NE(out.text.find(fmt::format("template {} (proposal {}) retired from the search: iter {} failed the "
                                        "verification ({})",
                                        name, *its[0].proposal_id, its[0].iter, to_string(expected.first))),
              std::string::npos)
        << out.text;
  }
  // The honest proposal: accepted, tuned, never a crash; no champion is a cheat's.
  const auto& honest = by_template["fake_p2"];
  ASSERT_GE(honest.size(), 2u) << out.text;
  for (const auto& it : honest) EXPECT_NE(it.status, IterationStatus::crash) << it.description;
  for (const auto& c : db.champions()) {
    const auto champ = db.iteration(c.iteration_id);
    EXPECT_TRUE(champ->template_name == "fake" || champ->template_name == "fake_p2") << champ->template_name;
  }
  EXPECT_EQ(db.runs().back().status, RunStatus::finished);
}

TEST(Proposer, StopKillsARunningProposerAndRecordsItInterrupted) {
  ProposerFixture f;
  write_file(f.script, "#!/bin/sh\necho $$ > proposer.pid\nexec sleep 60\n");
  fs::permissions(f.script, fs::perms::owner_all);
  ASSERT_EQ(run(f.args("--detach --proposer '" + f.script + "' --propose-every 1")).code, 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool running = false;
  while (!running && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      if (!fs::exists(f.db)) continue;
      auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
      const auto ps = db.proposals();
      running = !ps.empty() && ps[0].status == ProposalStatus::running &&
                fs::exists(f.dir + "/runs/proposals/1/work/proposer.pid");
    } catch (const std::exception&) {
    }
  }
  ASSERT_TRUE(running);
  const auto t0 = std::chrono::steady_clock::now();
  const Output stop = run("stop --db '" + f.db + "'");
  ASSERT_EQ(stop.code, 0) << stop.text;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15.0);
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  EXPECT_EQ(db.runs().back().status, RunStatus::stopped);
  const auto p = db.proposal(1);
  EXPECT_EQ(p->status, ProposalStatus::interrupted);
  EXPECT_NE(p->reason.find("asked to stop"), std::string::npos) << p->reason;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string pid = read_file(f.dir + "/runs/proposals/1/work/proposer.pid");
  EXPECT_FALSE(process_alive(pid_t(std::stoi(pid))));
  for (const auto& it : db.iterations()) EXPECT_FALSE(it.proposal_id) << "no iteration for an interrupted proposal";
}

TEST(ProposerOptions, DueEveryNIterationsOrWhenStalled) {
  ProposerOptions o;
  o.every = 3;
  EXPECT_FALSE(o.due(3, 0, 0));  // no command: never
  o.command = "true";
  EXPECT_FALSE(o.due(2, 2, 0));
  EXPECT_TRUE(o.due(3, 0, 0));
  EXPECT_FALSE(o.due(5, 5, 3));
  EXPECT_TRUE(o.due(6, 0, 3));
  o.every = 0;
  o.when_stalled = 4;
  EXPECT_FALSE(o.due(10, 3, 0));  // a champion 3 iterations ago
  EXPECT_TRUE(o.due(10, 4, 0));
  EXPECT_FALSE(o.due(12, 6, 10));  // stalled, but called 2 iterations ago
  EXPECT_TRUE(o.due(14, 8, 10));
}

TEST(Proposer, OptionsWithoutAProposerAreAClearError) {
  ProposerFixture f;
  Output o = run(f.args("--propose-every 3"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("need --proposer CMD"), std::string::npos) << o.text;
  o = run(f.args("--proposer true --propose-every 3 --propose-when-stalled 4"));
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.text.find("excludes"), std::string::npos) << o.text;
  o = run(f.args("--proposer true --proposer-timeout 5x"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("--proposer-timeout: '5x'"), std::string::npos) << o.text;
  EXPECT_FALSE(fs::exists(f.db));
}

}  // namespace
}  // namespace attn
