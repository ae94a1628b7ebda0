// compile_request (tuner/compile_request.hpp): the one CompileRequest of a config, and the callers that build
// theirs with it (the proposal checks, export's db_variant) getting the patchable parameters and the JSON defaults.
#include <gtest/gtest.h>

#include <filesystem>

#include "db/records.hpp"
#include "export/db_variant.hpp"
#include "gpu/compiler.hpp"
#include "proposer/proposal_check.hpp"
#include "proposer/proposal_workdir.hpp"
#include "tests/test_support.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;

/// tests/data/fake_templates/fake.cu with a patchable parameter P (read from constant memory), as template
/// "share" in a fresh folder: A, B and P in the space, F left to fake.cu's fallback.
struct ShareTemplate {
  std::string dir = test::temp_dir("compile_request");
  std::string source = test::read_text(test::data_dir() + "/fake_templates/fake.cu") +
                       "#ifndef P\n#error \"P not given\"\n#endif\nextern \"C\" __constant__ int attn_param_P = P;\n";
  std::string json = R"({"name": "share", "source": "share.cu", "kernel": "block_sparse_attn_fwd",
      "parameters": {"P": {"values": [0, 1, 2], "patchable": true}, "A": {"values": [1, 2]}, "B": {"values": [1, 2]}},
      "default": {"A": 1, "B": 2, "P": 0}})";
  ShareTemplate() {
    test::write_text(dir + "/share.cu", source);
    test::write_text(dir + "/share.json", json);
  }
  TemplateSpace space() const { return TemplateSpace::load(dir + "/share.json"); }
};

TEST(CompileRequest, CarriesSourceKernelConfigExtraOptionsAndThePatchableParameters) {
  const ShareTemplate t;
  const TemplateSpace space = t.space();
  const Config c{{"A", 2}, {"B", 1}, {"P", 1}};
  const CompileRequest r = compile_request(space, c, {"--use_fast_math"});
  EXPECT_EQ(r.source_path, space.source_path());
  EXPECT_EQ(r.kernel, "block_sparse_attn_fwd");
  EXPECT_EQ(r.defines, c);
  EXPECT_EQ(r.extra_options, std::vector<std::string>{"--use_fast_math"});
  EXPECT_EQ(r.patchable, std::vector<std::string>{"P"});
  EXPECT_TRUE(compile_request(space, c).extra_options.empty());
}

TEST(CompileRequest, ACompleteConfigIsKeptAndAMissingParameterGetsItsJsonDefault) {
  const TemplateSpace space = ShareTemplate().space();
  // A config recorded before B and P were parameters, and one with a key the space no longer has.
  EXPECT_EQ(compile_request(space, {{"A", 2}}).defines, (Config{{"A", 2}, {"B", 2}, {"P", 0}}));
  EXPECT_EQ(compile_request(space, {{"A", 2}, {"B", 1}, {"P", 2}, {"OLD", 7}}).defines,
            (Config{{"A", 2}, {"B", 1}, {"OLD", 7}, {"P", 2}}));
}

// The proposal checks compile the default config with the patchable parameters (before, their request had none:
// the compile was not shared with the configs the tuning then queued beside it).
TEST(CompileRequest, TheProposalChecksCompileWithThePatchableParameters) {
  const ShareTemplate t;
  const TemplateSpace parent = t.space();
  const std::string work = t.dir + "/work";
  test::write_text(work + "/" + kProposalSource, t.source);
  test::write_text(work + "/" + kProposalSpace, t.json);
  test::write_text(work + "/" + kProposalDescription, "the same template\n");
  CompilerOptions o;
  o.cache_dir = t.dir + "/cache";
  const ProposalCheck r = check_proposal(work, t.dir + "/installed", "share_p1", parent, Compiler(o));
  ASSERT_EQ(r.status, ProposalStatus::accepted) << r.reason;
  ASSERT_TRUE(r.compiled && r.compiled->ok) << (r.compiled ? r.compiled->log : "");
  EXPECT_TRUE(r.compiled->patchable);
  // A sibling of the default config (P 1) is then patched from it, not compiled.
  const CompiledVariant sibling = Compiler(o).compile(compile_request(*r.space, {{"A", 1}, {"B", 2}, {"P", 1}}));
  ASSERT_TRUE(sibling.ok) << sibling.log;
  EXPECT_TRUE(sibling.cache_hit);
  EXPECT_FALSE(sibling.patched_from.empty());
}

// Export takes a recorded config as the compile gets it: a parameter it lacks (added to the template after the
// run) is exported with its JSON default, which the template's source needs now that it keeps no fallback.
TEST(CompileRequest, ExportCompletesARecordedConfigWithTheJsonDefaults) {
  const ShareTemplate t;
  const TemplateSpace space = t.space();
  CompilerOptions o;
  o.cache_dir = t.dir + "/cache";
  const CompiledVariant cv = Compiler(o).compile(compile_request(space, {{"A", 2}}));
  ASSERT_TRUE(cv.ok) << cv.log;
  IterationRecord it;
  it.iter = 7;
  it.template_name = "share";
  VariantRecord vr;
  vr.template_name = "share";
  vr.params_json = R"({"A":2})";
  vr.params = "A=2";
  vr.content_hash = cv.hash;
  vr.cubin_hash = cv.cubin_hash;
  vr.cubin_path = cv.cubin_path;
  const ExportVariant v = load_export_variant(it, vr, {"overall"}, false, t.dir, std::nullopt);
  EXPECT_EQ(v.defines, (Config{{"A", 2}, {"B", 2}, {"P", 0}}));
  EXPECT_EQ(v.provenance.at("source_matches_cubin"), true);
}

}  // namespace
}  // namespace attn
