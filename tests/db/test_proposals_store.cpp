// The proposals table through ExperimentDb: begin / finish rules, lookups, interrupted proposals at start-up,
// and the summary `query proposals` prints (iterations, best score, champions held).
#include <gtest/gtest.h>

#include "db/store.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

struct ProposalDb {
  ExperimentDb db = ExperimentDb::open(test::temp_dir("db-proposals") + "/p.db");
  std::int64_t run_id = db.begin_run(test::sample_run("quick"));

  std::int64_t begin(const std::string& parent = "fa2_mma") {
    ProposalRecord p;
    p.run_id = run_id;
    p.command = "python3 scripts/proposers/mutate.py";
    p.parent_template = parent;
    return db.begin_proposal(p);
  }
  ProposalRecord accepted(std::int64_t id, const std::string& name) {
    ProposalRecord p = *db.proposal(id);
    p.status = ProposalStatus::accepted;
    p.template_name = name;
    p.description = "unroll the kv loop by 2";
    p.source = "extern \"C\" __global__ void block_sparse_attn_fwd() {}";
    p.space_json = R"({"name":")" + name + R"("})";
    p.headers_json = R"({"cta_order.cuh":"// header"})";
    p.diff = "--- parent/template.cu\n+++ proposal/template.cu\n";
    p.exit_status = "exited with code 0";
    p.proposer_ms = 812.5;
    p.output = "mutate: unroll\n";
    return p;
  }
};

TEST(ProposalStore, BeginFinishAndReadBack) {
  ProposalDb t;
  const auto id = t.begin();
  auto p = *t.db.proposal(id);
  EXPECT_EQ(p.status, ProposalStatus::running);
  EXPECT_EQ(p.command, "python3 scripts/proposers/mutate.py");
  EXPECT_FALSE(p.started_at.empty());
  EXPECT_TRUE(p.finished_at.empty());
  EXPECT_TRUE(p.template_name.empty());

  auto done = t.accepted(id, "fa2_mma_p1");
  t.db.finish_proposal(done);
  const auto back = t.db.proposal_by_template("fa2_mma_p1");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id, id);
  EXPECT_EQ(back->status, ProposalStatus::accepted);
  EXPECT_EQ(back->source, done.source);
  EXPECT_EQ(back->space_json, done.space_json);
  EXPECT_EQ(back->headers_json, done.headers_json);
  EXPECT_EQ(back->diff, done.diff);
  EXPECT_EQ(back->proposer_ms, 812.5);
  EXPECT_FALSE(back->finished_at.empty());
  EXPECT_EQ(t.db.proposals().size(), 1u);
  EXPECT_FALSE(t.db.proposal_by_template("fa2_mma"));
}

TEST(ProposalStore, RefusesBadInputNamingIt) {
  ProposalDb t;
  ProposalRecord p;
  p.run_id = 99;
  p.command = "x";
  p.parent_template = "fa2_mma";
  EXPECT_THROW(t.db.begin_proposal(p), std::invalid_argument);  // unknown run
  p.run_id = t.run_id;
  p.command = "";
  EXPECT_THROW(t.db.begin_proposal(p), std::invalid_argument);
  p.command = "x";
  p.parent_iteration_id = 42;
  EXPECT_THROW(t.db.begin_proposal(p), std::invalid_argument);  // unknown parent iteration

  const auto a = t.begin(), b = t.begin();
  auto incomplete = *t.db.proposal(a);
  incomplete.status = ProposalStatus::accepted;  // without source / space / name
  EXPECT_THROW(t.db.finish_proposal(incomplete), std::invalid_argument);
  auto bad_headers = t.accepted(a, "fa2_mma_p1");
  bad_headers.headers_json = "[1]";
  EXPECT_THROW(t.db.finish_proposal(bad_headers), std::invalid_argument);
  t.db.finish_proposal(t.accepted(a, "fa2_mma_p1"));
  EXPECT_THROW(t.db.finish_proposal(t.accepted(a, "fa2_mma_p1")), std::invalid_argument);  // finished twice
  try {
    t.db.finish_proposal(t.accepted(b, "fa2_mma_p1"));
    ADD_FAILURE() << "two proposals got one template name";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to proposal " + std::to_string(a)), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.db.proposal(b)->status, ProposalStatus::running);  // the refused finish changed nothing

  t.db.end_run(t.run_id, RunStatus::finished);
  p.parent_iteration_id.reset();
  EXPECT_THROW(t.db.begin_proposal(p), std::invalid_argument);  // ended run
}

TEST(ProposalStore, RunningProposalsBecomeInterruptedAtStartUp) {
  ProposalDb t;
  const auto a = t.begin(), b = t.begin();
  auto rejected = *t.db.proposal(b);
  rejected.status = ProposalStatus::rejected;
  rejected.reason = "proposal.json: invalid JSON";
  t.db.finish_proposal(rejected);
  EXPECT_EQ(t.db.mark_interrupted_proposals(), (std::vector<std::int64_t>{a}));
  EXPECT_EQ(t.db.proposal(a)->status, ProposalStatus::interrupted);
  EXPECT_NE(t.db.proposal(a)->reason.find("daemon ended"), std::string::npos);
  EXPECT_EQ(t.db.proposal(b)->status, ProposalStatus::rejected);
  EXPECT_EQ(t.db.proposal(b)->reason, "proposal.json: invalid JSON");
  EXPECT_TRUE(t.db.mark_interrupted_proposals().empty());
}

TEST(ProposalStore, SummariesCountIterationsBestScoreAndChampions) {
  ProposalDb t;
  const auto a = t.begin(), b = t.begin();
  t.db.finish_proposal(t.accepted(a, "fa2_mma_p1"));
  auto rejected = *t.db.proposal(b);
  rejected.status = ProposalStatus::rejected;
  rejected.template_name = "fa2_mma_p2";
  rejected.reason = "wrong ABI";
  t.db.finish_proposal(rejected);

  // Two scored iterations of proposal a's template (one becomes champion), a crash of b's.
  auto add = [&](std::int64_t proposal, const std::string& tmpl, const std::string& params, double scale,
                 IterationStatus status) {
    VariantRecord v = test::sample_variant(64, 4, 2);
    v.template_name = tmpl;
    v.params_json = params;
    v.content_hash = tmpl + params;
    const auto vid = t.db.upsert_variant(v);
    IterationRecord it;
    it.run_id = t.run_id;
    it.suite = "quick";
    it.template_name = tmpl;
    it.params_json = params;
    it.proposal_id = proposal;
    it.iter = t.db.begin_iteration(it);
    it.variant_id = vid;
    it.status = status;
    if (status == IterationStatus::crash) {
      it.failure_kind = FailureKind::proposal;
    } else {
      it.geomean_ms = 0.08 * scale;
      it.cases = test::sample_cases(scale);
    }
    t.db.finish_iteration(it);
    return it.iter;
  };
  add(a, "fa2_mma_p1", R"({"X":1})", 1.2, IterationStatus::keep);
  const auto best = add(a, "fa2_mma_p1", R"({"X":2})", 1.0, IterationStatus::keep);
  add(b, "fa2_mma_p2", "{}", 1.0, IterationStatus::crash);
  t.db.set_champion({"quick", ChampionScope::overall, best, 0.08, ""});

  const auto s = t.db.proposal_summaries();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].proposal.id, a);
  EXPECT_EQ(s[0].iterations, 2);
  EXPECT_EQ(s[0].crashes, 0);
  EXPECT_EQ(s[0].best_iter, best);
  EXPECT_DOUBLE_EQ(*s[0].best_ms, 0.08);
  EXPECT_EQ(s[0].champion_of, (std::vector<std::string>{"quick:overall"}));
  EXPECT_EQ(s[1].iterations, 1);
  EXPECT_EQ(s[1].crashes, 1);
  EXPECT_FALSE(s[1].best_ms);
  EXPECT_TRUE(s[1].champion_of.empty());
  const auto other_suite = t.db.proposal_summaries(std::string("full"));
  ASSERT_EQ(other_suite.size(), 2u);
  EXPECT_EQ(other_suite[0].iterations, 0);
  EXPECT_FALSE(other_suite[0].best_ms);
}

}  // namespace
}  // namespace attn
