// scripts/proposers/mutate.py on the repository's real templates (no GPU needed): each edit gives a proposal
// that the daemon's checks accept (NVRTC compile of the default config + ABI), the deliberate compile error is
// refused before any GPU time, the deliberate wrong result compiles (the GPU's validation catches it), and an
// edit that does not apply writes nothing.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "proposer/proposal_check.hpp"
#include "proposer/proposal_workdir.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) { return test::read_text(path); }

struct Mutation {
  std::string dir = test::temp_dir("mutate");
  TemplateSpace parent;
  Compiler compiler;

  Mutation(const std::string& templates_dir, const std::string& name, std::int64_t proposal_id)
      : parent(TemplateSpace::load_named(templates_dir, name)), compiler([&] {
          CompilerOptions o;
          o.cache_dir = dir + "/cache";
          return o;
        }()) {
    ProposalContext c;
    c.proposal_id = proposal_id;
    c.suite = "quick";
    c.timeout_s = 60;
    c.parent = &parent;
    c.champion.iter = 7;
    c.champion.template_name = name;
    c.champion.params_json = config_to_json(parent.default_config());
    c.champion.params = config_to_compact(parent.default_config());
    c.champion.geomean_ms = 0.3;
    write_proposal_workdir(dir + "/work", c);
  }
  /// Runs mutate.py with `args` in the working directory; returns its exit code.
  int mutate(const std::string& args) const {
    const std::string script = fs::path(test::data_dir()).parent_path().parent_path().string() +
                               "/scripts/proposers/mutate.py";
    const std::string cmd = "cd '" + dir + "/work' && python3 '" + script + "' " + args + " >/dev/null 2>&1";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  ProposalCheck check(const std::string& name) const {
    return check_proposal(dir + "/work", dir + "/template", name, parent, compiler);
  }
};

std::string templates() { return ATTN_TEMPLATES_DIR; }

TEST(MutatePy, ValidEditsOfFa2MmaPassTheChecks) {
  for (const char* edit : {"unroll", "launch_bounds", "exp2_accurate"}) {
    const Mutation m(templates(), "fa2_mma", 3);
    ASSERT_EQ(m.mutate(std::string("--edit ") + edit), 0) << edit;
    const std::string source = read_file(m.dir + "/work/proposal.cu");
    EXPECT_NE(source, read_file(m.parent.source_path())) << edit << ": the source was not edited";
    const ProposalCheck c = m.check("fa2_mma_p3");
    EXPECT_EQ(c.status, ProposalStatus::accepted) << edit << ": " << c.reason;
    EXPECT_NE(c.description.find(std::string("mutate.py ") + edit), std::string::npos) << c.description;
    EXPECT_NE(c.diff.find("+++ fa2_mma_p3.cu"), std::string::npos) << edit;
    ASSERT_TRUE(c.space) << edit;
    EXPECT_EQ(c.space->default_config(), m.parent.default_config());  // the champion's config first
    ASSERT_TRUE(c.compiled);
    EXPECT_TRUE(c.compiled->ok);
  }
}

TEST(MutatePy, TheCompileErrorIsRefusedBeforeAnyGpuTime) {
  const Mutation m(templates(), "fa2_mma", 4);
  ASSERT_EQ(m.mutate("--edit compile_error"), 0);
  const ProposalCheck c = m.check("fa2_mma_p4");
  EXPECT_EQ(c.status, ProposalStatus::rejected);
  EXPECT_EQ(c.failure, FailureKind::compile);
  EXPECT_NE(c.reason.find("mutate_undeclared_identifier"), std::string::npos) << c.reason;
}

TEST(MutatePy, TheWrongResultEditsAHeaderCopyAndStillCompiles) {
  // wgmma_fa keeps kScaleLog2 in hopper_common.cuh: the edited copy in the working directory is the proposal's.
  const Mutation m(templates(), "wgmma_fa", 5);
  ASSERT_EQ(m.mutate("--edit wrong_result"), 0);
  EXPECT_NE(read_file(m.dir + "/work/hopper_common.cuh").find("* 1.25f;  // mutate.py: deliberately wrong"),
            std::string::npos);
  const ProposalCheck c = m.check("wgmma_fa_p5");
  EXPECT_EQ(c.status, ProposalStatus::accepted) << c.reason;  // only validation on the GPU can tell
  EXPECT_NE(c.diff.find("+++ wgmma_fa_p5/hopper_common.cuh"), std::string::npos) << c.diff;
  EXPECT_NE(c.headers_json.find("1.25f"), std::string::npos);
  EXPECT_NE(read_file(m.dir + "/template/hopper_common.cuh").find("1.25f"), std::string::npos);
}

TEST(MutatePy, Fa3TmaEditsANestedHeaderAndPassesTheChecks) {
  // The generation-2 template includes blocks/*.cuh, which include hopper_common.cuh by a root-relative
  // name: the working directory must hold that tree, and a proposal that edits blocks/consumer.cuh must
  // compile from it (the GPU run of the proposer mutates fa3_tma).
  const Mutation m(templates(), "fa3_tma", 1);
  ASSERT_TRUE(fs::exists(m.dir + "/work/blocks/consumer.cuh"));
  ASSERT_TRUE(fs::exists(m.dir + "/work/hopper_common.cuh"));
  ASSERT_EQ(m.mutate("--edit unroll"), 0);
  const ProposalCheck c = m.check("fa3_tma_p1");
  EXPECT_EQ(c.status, ProposalStatus::accepted) << c.reason;
  EXPECT_NE(c.diff.find("#pragma unroll 2"), std::string::npos) << c.diff;
  ASSERT_TRUE(c.compiled);
  EXPECT_TRUE(c.compiled->ok);
}

TEST(MutatePy, NoApplicableEditMeansNoProposal) {
  // The daemon tests' template has no pragma, launch bounds, fast_exp2 or scale to edit.
  const Mutation m(test::data_dir() + "/fake_templates", "fake", 1);
  ASSERT_EQ(m.mutate(""), 0);
  EXPECT_FALSE(fs::exists(m.dir + "/work/proposal.cu"));
  const ProposalCheck c = m.check("fake_p1");
  EXPECT_EQ(c.status, ProposalStatus::empty) << c.reason;
}

}  // namespace
}  // namespace attn
