// The agent path end to end on the CPU (docs/proposer.md, "The shipped proposers"): the real binary with
// --proposer scripts/proposers/llm_example.sh, whose agent CLI ($AGENT) is tests/daemon/fake_agent_cli.sh, a
// scripted stand-in for an LLM that reads the prompt on stdin and writes a proposal (the parent template with
// one parameter narrowed). Real NVRTC compiles and ABI checks, the fake worker as the GPU. The DB holds judged
// ideas from the idea queue before the proposer leg: the prompt the stand-in received must list them.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "db/store.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

using Output = test::CommandOutput;
std::string read_file(const std::string& path) { return test::read_text(path); }
void write_file(const std::string& path, const std::string& text) { test::write_text(path, text); }

std::string src_root() { return fs::path(test::data_dir()).parent_path().parent_path().string(); }

/// A run folder: the test template fake.cu with a space of healthy configs in its own templates folder, the
/// DB in runs/ (the proposals' working directories go to runs/proposals/).
struct AgentFixture {
  std::string dir = test::temp_dir("agent");
  std::string tpl = dir + "/templates", db = dir + "/runs/t.db", tsv = dir + "/runs/iters.tsv";

  AgentFixture() {
    fs::create_directories(tpl);
    fs::copy_file(test::data_dir() + "/fake_templates/fake.cu", tpl + "/fake.cu");
    write_file(tpl + "/fake.json", R"({"name": "fake", "source": "fake.cu", "kernel": "block_sparse_attn_fwd",
  "parameters": {"A": {"values": [1, 2, 3, 4, 5, 6]}, "B": {"values": [1, 2, 3]}, "F": {"values": [0]}},
  "default": {"A": 1, "B": 1, "F": 0}}
)");
  }
  std::string args(const std::string& extra) const {
    return "run --db '" + db + "' --tsv '" + tsv + "' --suite smoke --templates '" + tpl +
           "' --template fake --strategy local --worker-exe '" + src_root() +
           "/tests/daemon/fake_worker.py' --cache '" + dir +
           "/cache' --jobs 2 --watchdog-min 5 --watchdog-cap 10 " + extra;  // no config hangs here
  }
};

/// An idea row of run `run_id` as the idea queue leaves it: added (checking), then judged.
std::int64_t judged_idea(ExperimentDb& db, std::int64_t run_id, const std::string& file, const std::string& description,
                         const std::string& status, const std::string& verdict, const std::string& kind,
                         std::optional<double> delta_pct, std::optional<double> noise_pct, const std::string& reason) {
  IdeaRecord i;
  i.run_id = run_id;
  i.file = file;
  i.idea_hash = "hash-of-" + file;
  i.description = description;
  i.parent_template = "fake";
  i.id = db.add_idea(i);
  i.status = parse_idea_status(status);
  i.verdict = parse_idea_verdict(verdict);
  i.broken_kind = parse_idea_broken_kind(kind);
  i.delta_pct = delta_pct;
  i.noise_pct = noise_pct;
  i.reason = reason;
  db.update_idea(i);
  return i.id;
}

TEST(AgentPath, LlmExampleWithAStandInCliProposesFromAPromptThatListsTheIdeasTried) {
  AgentFixture f;
  // Leg 1: a champion to propose from.
  const Output first = test::run_binary(f.args("--iterations 6"));
  ASSERT_EQ(first.code, 0) << first.text;
  {  // The idea queue judged two ideas on this lineage; a third was cut off before its verdict.
    auto db = ExperimentDb::open(f.db);
    const std::int64_t run_id = db.runs().back().id;
    judged_idea(db, run_id, "unroll_more.idea", "unroll the PV loop 4x", "done", "slower", "", 3.1, 0.6,
                "slower than its parent by 3.10 % (noise 0.60 %)");
    judged_idea(db, run_id, "cpp_linkage.idea", "drop extern C", "done", "broken", "proposal",
                std::nullopt, std::nullopt, "wrong ABI: no kernel entry with C linkage");
    judged_idea(db, run_id, "cut_off.idea", "never judged", "tuning", "", "", std::nullopt, std::nullopt, "");
  }

  // Leg 2: llm_example.sh builds the prompt and hands it to the stand-in CLI ($AGENT).
  const std::string agent = src_root() + "/tests/daemon/fake_agent_cli.sh";
  const std::string proposer = src_root() + "/scripts/proposers/llm_example.sh";
  // A slow fake GPU (0.4 s an evaluation, well inside the hang deadline): the proposer may run beside the
  // tuning, and its template needs iterations left after it joins.
  const Output out = test::run_binary(
      f.args("--iterations 18 --proposer '" + proposer + "' --propose-every 6 --proposer-timeout 60s"),
      "AGENT='" + agent + "' FAKE_WORKER_DELAY=0.4");
  ASSERT_EQ(out.code, 0) << out.text;

  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto proposals = db.proposals();
  ASSERT_GE(proposals.size(), 1u) << out.text;
  const ProposalRecord& p = proposals.front();
  // Accepted: the stand-in's proposal passed the space, NVRTC and ABI checks.
  EXPECT_EQ(p.status, ProposalStatus::accepted) << p.reason << "\n" << p.output;
  EXPECT_EQ(p.template_name, "fake_p1");
  EXPECT_EQ(p.description.rfind("stand-in agent: narrowed A to [", 0), 0u) << p.description;
  EXPECT_EQ(p.exit_status, "exited with code 0");
  EXPECT_NE(p.output.find("llm_example.sh: proposal 1, prompt"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("fake_agent_cli: proposed A in ["), std::string::npos) << p.output;
  EXPECT_NE(p.diff.find("+++ fake_p1.json"), std::string::npos) << p.diff;
  // Its template was tuned: whole-suite timings of fake_p1's configs, every one inside the narrowed space.
  int timed = 0;
  for (const auto& it : db.iterations())
    if (it.template_name == "fake_p1") {
      EXPECT_EQ(it.proposal_id, 1);
      if (it.geomean_ms) ++timed;
    }
  EXPECT_GE(timed, 1) << out.text;

  // The prompt the stand-in received (llm_example.sh's prompt.md, on its stdin): the contract, and the ideas
  // already tried with their verdicts; the idea without a verdict is not among them.
  const std::string work = f.dir + "/runs/proposals/1/work";
  const std::string prompt = read_file(work + "/agent_prompt.txt");
  EXPECT_EQ(prompt, read_file(work + "/prompt.md"));
  EXPECT_NE(prompt.find("# Proposal 1: a new kernel template for attn-tuner"), std::string::npos);
  const auto tried = prompt.find("## Ideas already tried, with their verdicts: do not repeat them");
  ASSERT_NE(tried, std::string::npos) << prompt;
  const std::string list = prompt.substr(tried, prompt.find("\n## ", tried + 4) - tried);
  EXPECT_NE(list.find("idea\tfile\tdescription\tparent\ttemplate\tverdict\tbroken_kind\tdelta_pct\tnoise_pct\treason"),
            std::string::npos)
      << list;
  EXPECT_NE(list.find("unroll_more.idea\tunroll the PV loop 4x\tfake\t-\tslower\t-\t3.10\t0.60\t"), std::string::npos)
      << list;
  EXPECT_NE(list.find("cpp_linkage.idea\tdrop extern C\tfake\t-\tbroken\tproposal\t-\t-\twrong ABI"),
            std::string::npos)
      << list;
  EXPECT_EQ(list.find("cut_off.idea"), std::string::npos) << list;
  EXPECT_EQ(list.find("(none yet)"), std::string::npos) << list;
  // The working directory's own copy, and PROPOSE.md names it.
  EXPECT_NE(read_file(work + "/results/ideas_tried.tsv").find("unroll_more.idea"), std::string::npos);
  EXPECT_NE(read_file(work + "/PROPOSE.md").find("`results/ideas_tried.tsv`: the 2 kernel ideas already tried"),
            std::string::npos);

  // query proposals shows the stand-in's description.
  const Output q = test::run_binary("query proposals --db '" + f.db + "'");
  ASSERT_EQ(q.code, 0) << q.text;
  EXPECT_NE(q.text.find(p.description), std::string::npos) << q.text;
  EXPECT_NE(q.text.find("fake_p1"), std::string::npos) << q.text;
}

TEST(AgentPath, WithoutIdeasThePromptSaysNoneYetAndAnAgentThatWritesNothingIsAnEmptyProposal) {
  AgentFixture f;
  const std::string agent = src_root() + "/tests/daemon/fake_agent_cli.sh";
  const std::string proposer = src_root() + "/scripts/proposers/llm_example.sh";
  const Output out = test::run_binary(
      f.args("--iterations 8 --proposer '" + proposer + "' --propose-every 3 --proposer-timeout 60s"),
      "AGENT='" + agent + "' FAKE_AGENT_MODE=none FAKE_WORKER_DELAY=0.4");
  ASSERT_EQ(out.code, 0) << out.text;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto proposals = db.proposals();
  ASSERT_GE(proposals.size(), 1u) << out.text;
  EXPECT_EQ(proposals.front().status, ProposalStatus::empty) << proposals.front().reason;
  EXPECT_NE(proposals.front().output.find("the agent wrote no proposal"), std::string::npos)
      << proposals.front().output;
  const std::string prompt = read_file(f.dir + "/runs/proposals/1/work/agent_prompt.txt");
  const auto tried = prompt.find("## Ideas already tried, with their verdicts: do not repeat them");
  ASSERT_NE(tried, std::string::npos) << prompt;
  EXPECT_NE(prompt.find("(none yet)", tried), std::string::npos) << prompt;
  EXPECT_EQ(read_file(f.dir + "/runs/proposals/1/work/results/ideas_tried.tsv"),
            "idea\tfile\tdescription\tparent\ttemplate\tverdict\tbroken_kind\tdelta_pct\tnoise_pct\treason\n");
}

}  // namespace
}  // namespace attn
