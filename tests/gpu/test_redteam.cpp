// Issue 30: kernels that cheat must lose (docs/verification.md). The red-team templates of
// tests/data/redteam each cheat the evaluation in one way; here each ends with its failure kind and a
// message naming the case, each check alone catches what it should, without the checks the memoizers pass
// (the red team is real), the honest templates pass with the checks on, and a daemon run over honest and
// red-team templates never crowns a cheat.
// Without a GPU: the floor verdict, the fresh-launch limit, the ceilings by GPU name, the new failure kinds'
// names, the protocol fields, and NVRTC on every red-team template (past_end does not compile).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "core/templates_dir.hpp"
#include "db/store.hpp"
#include "gpu/case_data.hpp"
#include "gpu/compiler.hpp"
#include "gpu/device_validation.hpp"
#include "gpu/driver.hpp"
#include "gpu/evaluate.hpp"
#include "gpu/failure.hpp"
#include "gpu/worker_client.hpp"
#include "gpu/worker_protocol.hpp"
#include "tests/test_support.hpp"
#include "tuner/space.hpp"
#include "workload/roofline.hpp"

namespace attn {
namespace {
using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string redteam_dir() { return test::data_dir() + "/redteam"; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------------------------------------
// Without a GPU.

TEST(Verification, BelowFloorVerdictNamesTheCaseTheTimeAndTheFloor) {
  // The cheat: 4.85 us where the floor is 16.15 us.
  const auto v = below_floor_verdict("quick-window-1", 0.00485, 0.01615, 0.9);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v,
            "case quick-window-1: 4.85 us is below its roofline floor of 16.15 us (x 0.9 margin = 14.54 us): "
            "impossible for a kernel that does the work");
  EXPECT_FALSE(below_floor_verdict("c", 0.0146, 0.01615, 0.9));  // within the margin (a clock above the datasheet)
  EXPECT_FALSE(below_floor_verdict("c", 0.0937, 0.01615, 0.9));  // the honest fa2_mma
  EXPECT_TRUE(below_floor_verdict("c", 0.0145, 0.01615, 0.9));
  EXPECT_TRUE(below_floor_verdict("c", 0.0, 0.01615, 0.9));      // an empty kernel below event resolution
  EXPECT_TRUE(below_floor_verdict("c", 0.0159, 0.01615, 1.0));   // no margin
  EXPECT_FALSE(below_floor_verdict("c", 0.001, 0.0, 0.9));       // unknown floor: never
  EXPECT_FALSE(below_floor_verdict("c", 0.001, -1.0, 0.9));
}

TEST(Verification, FreshLaunchLimitIsTwiceTheMedianPlusFiveMicroseconds) {
  EXPECT_DOUBLE_EQ(fresh_too_slow_ms(0.0), 0.005);
  EXPECT_DOUBLE_EQ(fresh_too_slow_ms(0.1), 0.205);
  EXPECT_DOUBLE_EQ(fresh_too_slow_ms(0.00485), 0.0147);
}

TEST(Verification, FloorCeilingsFitTheGpu) {
  EXPECT_EQ(floor_check_ceilings("NVIDIA H100 80GB HBM3"), (Ceilings{989e12, 3.35e12}));
  EXPECT_EQ(floor_check_ceilings("NVIDIA H100 PCIe"), (Ceilings{756e12, 2.0e12}));
  EXPECT_EQ(floor_check_ceilings("NVIDIA H100 NVL"), (Ceilings{835e12, 3.9e12}));
  EXPECT_EQ(floor_check_ceilings("NVIDIA H200"), (Ceilings{989e12, 4.8e12}));
  EXPECT_EQ(floor_check_ceilings("NVIDIA H200 NVL"), (Ceilings{835e12, 4.8e12}));
  EXPECT_EQ(floor_check_ceilings("NVIDIA GH200 480GB"), (Ceilings{989e12, 4.9e12}));
  EXPECT_EQ(floor_check_ceilings("FakeGPU"), (Ceilings{989e12, 4.9e12}));  // unknown: the lowest floor
  // The H200's HBM3e lowers a memory-bound floor: quick-window-1 moves 54.11 MB.
  const CaseSpec spec = builtin_suite("quick").at(0);
  const CaseWork w = case_work(build_layout(spec), spec.t_max);
  EXPECT_NEAR(w.floor_s(floor_check_ceilings("NVIDIA H100 80GB HBM3")) * 1e6, 16.15, 0.01);
  EXPECT_NEAR(w.floor_s(floor_check_ceilings("NVIDIA H200")) * 1e6, 54.11 / 4.8, 0.01);
}

TEST(Verification, NewFailureKindsAreAppendedAndRoundTrip) {
  // The DB stores the names and the enum's order is the on-disk order of older builds: appended only.
  EXPECT_EQ(int(FailureKind::proposal), 8);
  EXPECT_EQ(int(FailureKind::inconsistent), 9);
  EXPECT_EQ(int(FailureKind::below_floor), 10);
  EXPECT_STREQ(to_string(FailureKind::inconsistent), "inconsistent");
  EXPECT_STREQ(to_string(FailureKind::below_floor), "below_floor");
  for (std::size_t i = 0; i < std::size(kFailureKindNames); ++i) {
    const auto k = static_cast<FailureKind>(i);
    EXPECT_EQ(parse_failure_kind(to_string(k)), k) << i;
  }
  try {
    parse_failure_kind("cheat");
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "proposal, inconsistent or below_floor")) << e.what();
  }
  EXPECT_TRUE(is_result_check_failure(FailureKind::wrong_result));
  EXPECT_TRUE(is_result_check_failure(FailureKind::inconsistent));
  EXPECT_TRUE(is_result_check_failure(FailureKind::below_floor));
  EXPECT_FALSE(is_result_check_failure(FailureKind::fault));
  EXPECT_FALSE(is_result_check_failure(FailureKind::none));
  // As a worker status.
  nlohmann::json j;
  put_status(j, {FailureKind::inconsistent, false, "case x: ..."});
  EXPECT_EQ(j["status"], "inconsistent");
  EXPECT_EQ(reply_status_from_json(j).failure, FailureKind::inconsistent);
  put_status(j, {FailureKind::below_floor, false, "case x: ..."});
  EXPECT_EQ(reply_status_from_json(j).failure, FailureKind::below_floor);
}

TEST(Verification, ProtocolCarriesTheSwitchesAndTheFigures) {
  EvalRequest r{"/c/x.cubin", "block_sparse_attn_fwd", {}, true, true, {}};
  // Default on: a request is byte for byte what it was before the checks.
  EXPECT_FALSE(to_json(r).contains("check_floor"));
  EXPECT_FALSE(to_json(r).contains("check_fresh"));
  EXPECT_EQ(eval_request_from_json(to_json(r)), r);
  r.check_floor = false;
  r.check_fresh = false;
  EXPECT_EQ(to_json(r)["check_floor"], false);
  EXPECT_EQ(eval_request_from_json(to_json(r)), r);

  CaseResult c;
  c.case_id = "quick-window-1";
  c.median_ms = 0.09;
  c.passed = c.validated = c.timed = true;
  EXPECT_FALSE(to_json(c).contains("floor_ms"));  // not checked: as before
  EXPECT_EQ(case_result_from_json(to_json(c)), c);
  c.floor_ms = 0.01615;
  c.fresh_ms = 0.091;
  c.fresh_o_max_abs_diff = 0.0078;
  c.fresh_lse_max_abs_diff = std::numeric_limits<double>::infinity();
  EXPECT_EQ(case_result_from_json(to_json(c)), c);
}

/// The template `name` of tests/data/redteam (or of `dir`) compiled at its default config with `overrides`.
CompiledVariant compile_template(const Compiler& compiler, const std::string& dir, const std::string& name,
                                 const Config& overrides = {}) {
  const TemplateSpace space = TemplateSpace::load_named(dir, name);
  Config cfg = space.default_config();
  for (const auto& [k, v] : overrides) cfg[k] = v;
  return compiler.compile({space.source_path(), space.kernel(), cfg, {}});
}

TEST(RedTeamTemplates, EveryCheatCompilesButTheDeviceLaunch) {
  // NVRTC needs no GPU: every red-team template is a real kernel (fa2_mma.cu included by path), and the
  // device-side launch of past_end cannot be linked (no -rdc, no cudadevrt): a compile failure.
  CompilerOptions o;
  o.cache_dir = test::temp_dir("redteam-compile");
  const Compiler compiler(o);
  for (const char* name :
       {"honest", "memo_o", "memo_inputs", "skip_finite", "sampled_rows", "seed_specific", "memo_content"}) {
    const CompiledVariant v = compile_template(compiler, redteam_dir(), name);
    EXPECT_TRUE(v.ok) << name << ":\n" << v.log;
  }
  const CompiledVariant mode0 = compile_template(compiler, redteam_dir(), "sampled_rows", {{"MODE", 0}});
  EXPECT_TRUE(mode0.ok) << mode0.log;
  const CompiledVariant past_end = compile_template(compiler, redteam_dir(), "past_end");
  EXPECT_FALSE(past_end.ok);
  EXPECT_EQ(past_end.error, FailureKind::compile);
  EXPECT_TRUE(contains(past_end.log, "Unresolved extern function '__cudaCDP2")) << past_end.log;
}

// ---------------------------------------------------------------------------------------------------------
// On the GPU (skipped without one): the in-process Evaluator as the worker builds it (device validation,
// the GPU's ceilings).

class RedTeam : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::gpu_available()) GTEST_SKIP() << "no CUDA device";
    ctx_ = std::make_unique<Context>(0);
    CompilerOptions o;
    o.cache_dir = test::temp_dir("redteam-cache");
    compiler_ = std::make_unique<Compiler>(o);
    builder_ = std::make_unique<CaseBuilder>(*ctx_, *compiler_);
    validator_ = std::make_unique<DeviceValidator>(*ctx_, *compiler_, builder_->templates_dir());
    evaluator_ = std::make_unique<Evaluator>(*ctx_, validator_.get());
    std::printf("GPU %s: floor ceilings %.0f TFLOP/s, %.2f TB/s\n", ctx_->info().name.c_str(),
                options().ceilings.flops_per_s / 1e12, options().ceilings.bytes_per_s / 1e12);
  }
  /// The worker's options, with shorter timing.
  EvalOptions options(bool floor = true, bool fresh = true) const {
    EvalOptions opts;
    opts.timing = {3, 10, 50, 1.0, 0.02};
    opts.ceilings = floor_check_ceilings(ctx_->info().name);
    opts.check_floor = floor;
    opts.check_fresh = fresh;
    return opts;
  }
  std::vector<const DeviceCase*> cases(const std::string& suite, std::int64_t root_seed = 0) {
    std::vector<const DeviceCase*> out;
    for (const auto& s : builtin_suite(suite, root_seed)) out.push_back(&builder_->get(s));
    return out;
  }
  std::vector<char> cubin(const std::string& name, const Config& overrides = {},
                          const std::string& dir = redteam_dir()) {
    const CompiledVariant v = compile_template(*compiler_, dir, name, overrides);
    EXPECT_TRUE(v.ok) << name << ":\n" << v.log;
    return v.cubin;
  }
  EvalResult eval(const std::string& name, const Config& overrides, const std::string& suite, const EvalOptions& o,
                  std::int64_t root_seed = 0) {
    return evaluator_->evaluate(cubin(name, overrides), "block_sparse_attn_fwd", cases(suite, root_seed), o);
  }

  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<CaseBuilder> builder_;
  std::unique_ptr<DeviceValidator> validator_;
  std::unique_ptr<Evaluator> evaluator_;
};

constexpr const char* kWrongOnFresh = ": a timed launch on fresh inputs in the same buffers is wrong (o diff ";
constexpr const char* kSlowOnFresh = ": timed launches on fresh inputs in the same buffers took ";
constexpr const char* kBelowFloor = " us is below its roofline floor of ";

struct Expectation {
  const char* name;
  Config overrides;
  const char* suite;
  std::set<FailureKind> kinds;  ///< one, or (where the GPU's speed decides which check fires first) two
  std::string message;          ///< a part of the message, naming the case
};

void expect_caught(const EvalResult& r, const Expectation& e) {
  const std::string what = std::string(e.name) + " on " + e.suite + ": " + to_string(r.status) + ": " + r.message;
  EXPECT_TRUE(e.kinds.count(r.status)) << what;
  EXPECT_TRUE(std::isnan(r.score_ms)) << what;
  if (r.status == FailureKind::below_floor || r.status == FailureKind::inconsistent) {
    // The first case failed a check after it was timed: it names that case, and nothing after it was timed.
    const std::string first = r.cases.at(0).case_id;
    EXPECT_TRUE(contains(r.message, "case " + first + ": ")) << what;
    const bool slow = contains(r.message, kSlowOnFresh);
    EXPECT_TRUE(contains(r.message, r.status == FailureKind::below_floor ? kBelowFloor
                                    : slow                               ? kSlowOnFresh
                                                                         : kWrongOnFresh))
        << what;
    EXPECT_TRUE(r.cases[0].timed && r.cases[0].passed) << what;
    for (std::size_t i = 1; i < r.cases.size(); ++i) EXPECT_FALSE(r.cases[i].timed) << what;
    if (r.status == FailureKind::below_floor) {
      EXPECT_GT(r.cases[0].floor_ms, 0) << what;
      EXPECT_LT(r.cases[0].median_ms, 0.9 * r.cases[0].floor_ms) << what;
    } else if (slow) {  // right on fresh inputs, but slow: the speed came from seeing the same inputs
      EXPECT_GT(r.cases[0].fresh_ms, fresh_too_slow_ms(r.cases[0].median_ms)) << what;
      EXPECT_LT(r.cases[0].fresh_o_max_abs_diff, 0.05) << what;
    } else {
      EXPECT_GT(r.cases[0].fresh_ms, 0) << what;
      EXPECT_GT(r.cases[0].fresh_o_max_abs_diff, 0.01) << what;
    }
  }
  if (e.kinds.size() == 1) {
    EXPECT_TRUE(contains(r.message, e.message)) << what;
  }
}

TEST_F(RedTeam, EveryCheatFailsWithItsKindOnSmokeAndQuick) {
  // The worker's configuration: both checks on. Smoke's floors (0.13-0.29 us) are below any launch, so
  // there the check set catches every memoizer; on quick (floors 16-22 us on the H100, 11-22 on the H200)
  // a launch that returns at once is below the floor first. memo_inputs copies about 34 MB per quick case: whether
  // that beats 0.9 x the floor depends on the GPU, so either check may fire first.
  const std::string wrong_fresh = kWrongOnFresh, slow_fresh = kSlowOnFresh;
  const FailureKind inc = FailureKind::inconsistent, below = FailureKind::below_floor;
  const std::vector<Expectation> table = {
      {"memo_o", {}, "smoke", {inc}, "case smoke-window-1" + wrong_fresh},
      {"memo_o", {}, "quick", {below}, "case quick-window-1: "},
      {"memo_inputs", {}, "smoke", {inc}, "case smoke-window-1" + wrong_fresh},
      {"memo_inputs", {}, "quick", {inc, below}, "case quick-window-1: "},
      {"skip_finite", {}, "smoke", {inc}, "case smoke-window-1" + wrong_fresh},
      {"skip_finite", {}, "quick", {below}, "case quick-window-1: "},
      {"sampled_rows", {{"MODE", 0}}, "smoke", {FailureKind::wrong_result},
       "3 of 3 cases outside the tolerances, first: smoke-window-1 ("},
      {"sampled_rows", {{"MODE", 0}}, "quick", {FailureKind::wrong_result},
       "3 of 3 cases outside the tolerances, first: quick-window-1 ("},
      {"sampled_rows", {{"MODE", 1}}, "smoke", {inc}, "case smoke-window-1" + wrong_fresh},
      {"sampled_rows", {{"MODE", 1}}, "quick", {inc}, "case quick-window-1" + wrong_fresh},
      {"seed_specific", {}, "smoke", {inc}, "case smoke-window-1" + wrong_fresh},
      {"seed_specific", {}, "quick", {inc}, "case quick-window-1" + wrong_fresh},
      {"memo_content", {}, "smoke", {inc}, "case smoke-window-1" + slow_fresh},
      {"memo_content", {}, "quick", {below}, "case quick-window-1: "},
  };
  for (const auto& e : table) {
    const EvalResult r = eval(e.name, e.overrides, e.suite, options());
    std::printf("%-14s %-8s %-6s -> %s: %s\n", e.name, e.overrides.empty() ? "" : "MODE", e.suite,
                to_string(r.status), r.message.c_str());
    expect_caught(r, e);
  }
}

TEST_F(RedTeam, EachCheckAloneCatchesWhatItShould) {
  // The floor alone: the launches that return at once, not the ones that do some work.
  for (const char* name : {"memo_o", "skip_finite", "memo_content"}) {
    const EvalResult r = eval(name, {}, "quick", options(true, false));
    expect_caught(r, {name, {}, "quick", {FailureKind::below_floor}, "case quick-window-1: "});
  }
  for (const auto& [name, overrides] : std::vector<std::pair<const char*, Config>>{{"sampled_rows", {{"MODE", 1}}},
                                                                                  {"seed_specific", {}}}) {
    const EvalResult r = eval(name, overrides, "quick", options(true, false));
    EXPECT_EQ(r.status, FailureKind::none) << name << ": the floor is a guard, not the cure: " << r.message;
  }
  // The check set alone: every memoizer, as a wrong result on fresh inputs.
  const std::string wrong_fresh = kWrongOnFresh;
  for (const auto& [name, overrides] :
       std::vector<std::pair<const char*, Config>>{{"memo_o", {}}, {"memo_inputs", {}}, {"skip_finite", {}},
                                                   {"sampled_rows", {{"MODE", 1}}}, {"seed_specific", {}}}) {
    const EvalResult r = eval(name, overrides, "quick", options(false, true));
    expect_caught(r, {name, overrides, "quick", {FailureKind::inconsistent}, "case quick-window-1" + wrong_fresh});
  }
  // ... and, by time, the one that is right on every launch.
  const EvalResult content = eval("memo_content", {}, "quick", options(false, true));
  expect_caught(content, {"memo_content", {}, "quick", {FailureKind::inconsistent},
                          std::string("case quick-window-1") + kSlowOnFresh});
}

TEST_F(RedTeam, WithoutTheChecksEveryMemoizerPasses) {
  // The evaluation before issue 30 (NaN poison, one validated launch per case, timed samples on the same
  // inputs): every one of these passes, so the red team is real. memo_o is the reproduction: a score
  // below the floor score (18.18 us on the H100).
  const auto quick = cases("quick");
  std::vector<Family> fams;
  std::vector<double> floors;
  const Ceilings ceil = floor_check_ceilings(ctx_->info().name);
  for (const DeviceCase* c : quick) {
    fams.push_back(c->spec.family);
    floors.push_back(c->work.floor_s(ceil) * 1e3);
  }
  const double floor_score = suite_score(fams, floors).geomean;
  for (const auto& [name, overrides] :
       std::vector<std::pair<const char*, Config>>{{"memo_o", {}}, {"memo_inputs", {}}, {"skip_finite", {}},
                                                   {"sampled_rows", {{"MODE", 1}}}, {"seed_specific", {}},
                                                   {"memo_content", {}}}) {
    const EvalResult r = eval(name, overrides, "quick", options(false, false));
    ASSERT_EQ(r.status, FailureKind::none) << name << ": " << r.message;
    for (const auto& c : r.cases) EXPECT_TRUE(c.passed && c.timed && c.floor_ms == 0 && c.fresh_ms == 0) << name;
    std::printf("%-14s passes unchecked: %.2f us (floor score %.2f us)\n", name, r.score_ms * 1e3, floor_score * 1e3);
    if (std::string(name) == "memo_o") {
      EXPECT_LT(r.score_ms, floor_score);
    }
  }
}

TEST_F(RedTeam, HonestTemplatesPassWithTheChecks) {
  for (const char* tpl : {"fa2_mma", "fa3_tma"})
    for (const char* suite : {"smoke", "quick"}) {
      const EvalResult r = evaluator_->evaluate(cubin(tpl, {}, default_templates_dir()), "block_sparse_attn_fwd",
                                                cases(suite), options());
      ASSERT_EQ(r.status, FailureKind::none) << tpl << " on " << suite << ": " << r.message;
      for (const auto& c : r.cases) {
        EXPECT_GT(c.floor_ms, 0) << tpl << " " << c.case_id;
        EXPECT_GE(c.median_ms, c.floor_ms) << tpl << " " << c.case_id;  // not even inside the margin
        EXPECT_GT(c.fresh_ms, 0) << tpl << " " << c.case_id;
        EXPECT_LE(c.fresh_ms, fresh_too_slow_ms(c.median_ms)) << tpl << " " << c.case_id;
        EXPECT_LT(c.fresh_o_max_abs_diff, 0.05) << tpl << " " << c.case_id;
        EXPECT_LT(c.fresh_lse_max_abs_diff, 1e-3) << tpl << " " << c.case_id;
        std::printf("%s %-18s median %8.2f us, fresh launch %8.2f us, floor %6.2f us\n", tpl, c.case_id.c_str(),
                    c.median_ms * 1e3, c.fresh_ms * 1e3, c.floor_ms * 1e3);
      }
    }
}

TEST_F(RedTeam, TheCheckPutsTheTuningInputsBack) {
  const auto smoke = cases("smoke");
  std::vector<std::vector<bf16_bits>> before;
  for (const DeviceCase* c : smoke)
    for (const DeviceBuffer* b : {&c->q, &c->k, &c->v}) before.push_back(b->to_vector<bf16_bits>(c->qkv_elems()));
  EXPECT_EQ(eval("memo_inputs", {}, "smoke", options()).status, FailureKind::inconsistent);
  EXPECT_EQ(eval("honest", {}, "smoke", options()).status, FailureKind::none);
  std::size_t i = 0;
  for (const DeviceCase* c : smoke) {
    EXPECT_NE(c->check_seed, std::uint64_t(c->spec.seed));
    for (const DeviceBuffer* b : {&c->q, &c->k, &c->v})
      EXPECT_EQ(b->to_vector<bf16_bits>(c->qkv_elems()), before[i++]) << c->spec.case_id;
  }
}

TEST_F(RedTeam, TheCheckSetIsEveryInputChangedAndTheMaskUndoesItself) {
  // The check set is the tuning inputs under an XOR mask keyed by the worker's secret seed: every element
  // changes (sign and mantissa), none leaves its binade, the tensor stays N(0,1)-like, and the mask applied
  // twice gives the tuning inputs back bit for bit.
  const DeviceCase& c = *cases("quick").at(0);
  const Stream stream;
  const std::size_t n = c.qkv_elems();
  const auto q = c.q.to_vector<bf16_bits>(n);
  c.mask_inputs(c.check_seed, stream.get());
  stream.synchronize();
  const auto masked = c.q.to_vector<bf16_bits>(n);
  std::size_t same = 0, other_binade = 0;
  double sum = 0, sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    same += masked[i] == q[i];
    other_binade += (masked[i] & 0x7F80) != (q[i] & 0x7F80);
    const double x = bf16_to_float(masked[i]);
    sum += x;
    sq += x * x;
  }
  EXPECT_EQ(same, 0u);
  EXPECT_EQ(other_binade, 0u);
  EXPECT_NEAR(sum / double(n), 0.0, 0.01);
  EXPECT_NEAR(sq / double(n), 1.0, 0.02);
  c.mask_inputs(c.check_seed, stream.get());
  stream.synchronize();
  EXPECT_EQ(c.q.to_vector<bf16_bits>(n), q);
  EXPECT_NE(c.check_ref_o, c.ref_o);
}

TEST_F(RedTeam, HostValidationGivesTheSameVerdicts) {
  Evaluator host(*ctx_);  // ATTN_TUNER_HOST_VALIDATION=1 in the worker
  for (const auto& [name, kind] : std::vector<std::pair<const char*, FailureKind>>{
           {"memo_inputs", FailureKind::inconsistent}, {"honest", FailureKind::none}}) {
    const auto bin = cubin(name);
    const EvalResult h = host.evaluate(bin, "block_sparse_attn_fwd", cases("smoke"), options());
    const EvalResult d = evaluator_->evaluate(bin, "block_sparse_attn_fwd", cases("smoke"), options());
    EXPECT_EQ(h.status, kind) << name << ": " << h.message;
    EXPECT_EQ(d.status, kind) << name << ": " << d.message;
    EXPECT_EQ(h.cases[0].fresh_o_max_abs_diff, d.cases[0].fresh_o_max_abs_diff) << name;
    EXPECT_EQ(h.cases[0].fresh_lse_max_abs_diff, d.cases[0].fresh_lse_max_abs_diff) << name;
  }
}

TEST_F(RedTeam, SeedSpecificFailsAHeldOutRootSeedAtOnce) {
  // Its memorised seeds are quick's at root seed 0; a held-out root seed's cases fail the first validation.
  const EvalResult r = eval("seed_specific", {}, "quick", options(), 7);
  EXPECT_EQ(r.status, FailureKind::wrong_result) << r.message;
  EXPECT_TRUE(contains(r.message, "3 of 3 cases outside the tolerances, first: quick-window-1 (")) << r.message;
}

TEST_F(RedTeam, TheWorkerReportsTheKindsAndTheSwitches) {
  // Through the worker process (the daemon's path): the kinds as response statuses, the switches in the
  // request, the figures in the cases.
  const std::string cache = test::temp_dir("redteam-worker-cache");
  WorkerClient client(WorkerCommand{test::binary_path(), {"worker", "--cache", cache}, {}});
  const auto quick = builtin_suite("quick");
  const PrepareResponse p = client.prepare(quick, 600s);
  ASSERT_TRUE(p.status.ok()) << p.status.message;
  CompilerOptions o;
  o.cache_dir = cache;
  const CompiledVariant memo = compile_template(Compiler(o), redteam_dir(), "memo_o");
  ASSERT_TRUE(memo.ok) << memo.log;
  EvalRequest req{memo.cubin_path, "block_sparse_attn_fwd", {3, 10, 50, 1.0, 0.02}, true, true, {}};
  EvalResponse r = client.eval(req, 300s);
  EXPECT_EQ(r.status.failure, FailureKind::below_floor) << r.status.name() << ": " << r.status.message;
  EXPECT_TRUE(contains(r.status.message, "case quick-window-1: ")) << r.status.message;
  EXPECT_GT(r.cases.at(0).floor_ms, 0);
  req.check_floor = false;
  r = client.eval(req, 300s);
  EXPECT_EQ(r.status.failure, FailureKind::inconsistent) << r.status.name() << ": " << r.status.message;
  EXPECT_GT(r.cases.at(0).fresh_ms, 0);
  req.check_fresh = false;
  r = client.eval(req, 300s);
  EXPECT_TRUE(r.status.ok()) << r.status.name() << ": " << r.status.message;
  EXPECT_TRUE(client.alive());  // neither kind costs the worker
}

TEST_F(RedTeam, ADaemonRunNeverCrownsACheat) {
  // honest (fa2_mma, 2 configs) and every cheat (8 configs), the whole space on quick with the held-out seed.
  const std::string dir = test::temp_dir("redteam-daemon"), db_path = dir + "/t.db";
  std::string args = "run --db '" + db_path + "' --tsv '" + dir + "/iters.tsv' --cache '" + dir +
                     "/cache' --suite quick --templates '" + redteam_dir() + "' --strategy exhaustive --iterations 20" +
                     " --min-samples 5 --max-samples 20";
  const std::map<std::string, std::set<FailureKind>> expected = {
      {"memo_o", {FailureKind::below_floor}},
      {"memo_inputs", {FailureKind::below_floor, FailureKind::inconsistent}},
      {"skip_finite", {FailureKind::below_floor}},
      {"sampled_rows", {FailureKind::wrong_result, FailureKind::inconsistent}},  // MODE 0, MODE 1
      {"seed_specific", {FailureKind::inconsistent}},
      {"memo_content", {FailureKind::below_floor}},
      {"past_end", {FailureKind::compile}}};
  args += " --template honest";
  for (const auto& [name, kinds] : expected) args += " --template " + name;
  const test::CommandOutput out = test::run_binary(args);
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(contains(out.text, "search space exhausted: all 10 valid configs evaluated")) << out.text;

  auto db = ExperimentDb::open(db_path, ExperimentDb::Mode::read_only);
  const auto champ = db.champion("quick", ChampionScope::overall);
  ASSERT_TRUE(champ) << out.text;
  EXPECT_EQ(db.iteration(champ->iteration_id)->template_name, "honest");
  for (const auto& c : db.champions()) EXPECT_EQ(db.iteration(c.iteration_id)->template_name, "honest");
  std::map<std::string, std::set<FailureKind>> got;
  int honest = 0;
  for (const auto& it : db.iterations()) {
    if (it.template_name == "honest") {
      EXPECT_NE(it.status, IterationStatus::crash) << it.description;
      ++honest;
      continue;
    }
    EXPECT_EQ(it.status, IterationStatus::crash) << it.template_name << ": " << it.description;
    got[it.template_name].insert(it.failure_kind);
    if (it.failure_kind != FailureKind::compile) {
      EXPECT_TRUE(contains(it.description, "quick-window-1")) << it.description;
    }
    std::printf("iter %lld %-14s %-8s %s\n", static_cast<long long>(it.iter), it.template_name.c_str(),
                to_string(it.failure_kind), it.description.c_str());
  }
  EXPECT_EQ(honest, 2);
  for (const auto& [name, kinds] : expected) {
    ASSERT_TRUE(got.count(name)) << name;
    if (name == "sampled_rows") {
      EXPECT_EQ(got[name], kinds);
    } else {
      for (FailureKind k : got[name]) EXPECT_TRUE(kinds.count(k)) << name << ": " << to_string(k);
    }
  }
}

}  // namespace
}  // namespace attn
