// Issues 30, 37 and 50: kernels that cheat must lose (docs/verification.md). The red-team templates of
// tests/data/redteam each cheat the evaluation in one way; here each ends with its failure kind and a
// message naming the case, each check alone catches what it should, without the checks the memoizers pass
// (the red team is real), the honest templates pass with the checks on, and a daemon run over honest and
// red-team templates never crowns a cheat. The timed samples' inputs, drawn rows and the device side of their
// check are checked against the host formulas here too (the host side: test_sample_rules.cpp).
// Without a GPU: the floor verdict, the ceilings by GPU name, the new failure kinds' names, the protocol
// fields, and NVRTC on every red-team template and check kernel (past_end does not compile).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "core/templates_dir.hpp"
#include "db/store.hpp"
#include "gpu/case_data.hpp"
#include "gpu/compiler.hpp"
#include "gpu/device_validation.hpp"
#include "gpu/driver.hpp"
#include "gpu/driver_api.hpp"
#include "gpu/evaluate.hpp"
#include "gpu/failure.hpp"
#include "gpu/sample_checks.hpp"
#include "gpu/sample_inputs.hpp"
#include "gpu/worker_client.hpp"
#include "gpu/worker_protocol.hpp"
#include "tests/test_support.hpp"
#include "kernels_templates/sample_rules.h"
#include "tuner/proposal_template.hpp"
#include "tuner/space.hpp"
#include "workload/roofline.hpp"

namespace attn {
namespace {
using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string redteam_dir() { return test::data_dir() + "/redteam"; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// `count` values of type T at device address `p`.
template <class T>
std::vector<T> download(CUdeviceptr p, std::size_t count) {
  std::vector<T> v(count);
  check(cu::api().cuMemcpyDtoH(v.data(), p, count * sizeof(T)), "cuMemcpyDtoH(test)");
  return v;
}
template <class T>
void upload(CUdeviceptr p, const std::vector<T>& v) {
  check(cu::api().cuMemcpyHtoD(p, v.data(), v.size() * sizeof(T)), "cuMemcpyHtoD(test)");
}

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
  EXPECT_FALSE(to_json(r).contains("check_samples"));
  EXPECT_EQ(eval_request_from_json(to_json(r)), r);
  r.check_samples = false;
  EXPECT_EQ(to_json(r)["check_samples"], false);
  EXPECT_EQ(eval_request_from_json(to_json(r)), r);
  r.check_samples = true;
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
  c.checked_samples = 12;
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

TEST(RedTeamTemplates, TheCheckKernelsCompile) {
  // The timed samples' helpers (NVRTC needs no GPU), each with kernels_templates/sample_rules.h: the masks of a
  // sample's inputs, the drawn rows' reference beside the case reference, the sample check beside the
  // validation.
  CompilerOptions o;
  o.cache_dir = test::temp_dir("redteam-helpers");
  const Compiler compiler(o);
  for (const auto& [source, kernel] : std::vector<std::pair<std::string, std::string>>{
           {"fill_normal.cu", "xor_inputs_bf16"},
           {"reference_fp32.cu", "reference_rows_fp32"},
           {"validate_outputs.cu", "validate_sample"}}) {
    const CompiledVariant v = compiler.compile({default_templates_dir() + "/" + source, kernel, {}, {}});
    ASSERT_TRUE(v.ok) << source << ":\n" << v.log;
    EXPECT_EQ(v.resources.spill_stores, 0) << source;
  }
}

TEST(RedTeamTemplates, EveryCheatCompilesButTheDeviceLaunch) {
  // NVRTC needs no GPU: every red-team template is a real kernel (fa2_mma.cu included by path), and the
  // device-side launch of past_end cannot be linked (no -rdc, no cudadevrt): a compile failure.
  CompilerOptions o;
  o.cache_dir = test::temp_dir("redteam-compile");
  const Compiler compiler(o);
  for (const char* name : {"honest", "memo_o", "memo_inputs", "skip_finite", "sampled_rows", "seed_specific",
                           "memo_content", "partial_content", "partial_count", "abs_memo", "partial_masked"}) {
    const CompiledVariant v = compile_template(compiler, redteam_dir(), name);
    EXPECT_TRUE(v.ok) << name << ":\n" << v.log;
  }
  for (const auto& [name, overrides] : std::vector<std::pair<const char*, Config>>{
           {"partial_content", {{"SKIP_PCT", 40}}},
           {"sampled_rows", {{"MODE", 0}}},
           {"abs_memo", {{"SKIP", 2}, {"KEY", 1}}},
           {"partial_masked", {{"SKIP_PCT", 5}}}}) {
    const CompiledVariant v = compile_template(compiler, redteam_dir(), name, overrides);
    EXPECT_TRUE(v.ok) << name << " " << config_to_compact(overrides) << ":\n" << v.log;
  }
  const CompiledVariant past_end = compile_template(compiler, redteam_dir(), "past_end");
  EXPECT_FALSE(past_end.ok);
  EXPECT_EQ(past_end.error, FailureKind::compile);
  EXPECT_TRUE(contains(past_end.log, "Unresolved extern function '__cudaCDP2")) << past_end.log;
}

/// A variant of the false-positive run: its templates folder, template and config.
struct HonestVariant {
  std::string dir, tpl;
  Config config;
};

/// The committed research DB's overall champion on full (`attn-tuner query best --db DB --suite full`: since
/// 2026-11-29 iter 106165, template fa4_g4_p89, an idea's, whose files live only in the DB; before, iter 89394,
/// fa3_tma_p66), its template written out of the DB.
/// The DB (lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz) is unpacked once into a
/// temporary folder. Throws std::runtime_error when it cannot be read.
HonestVariant research_champion() {
  static const HonestVariant champion = [] {
    const std::string dir = test::temp_dir("redteam-champion");
    const std::string xz =
        std::string(ATTN_SOURCE_DIR) + "/lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz";
    const std::string db_path = dir + "/research.db";
    const std::string unpack = "python3 -c \"import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), "
                               "open(sys.argv[2], 'wb'))\" '" + xz + "' '" + db_path + "'";
    if (std::system(unpack.c_str()) != 0) throw std::runtime_error("cannot unpack the research DB " + xz);
    auto db = ExperimentDb::open(db_path, ExperimentDb::Mode::read_only);
    const auto record = db.champion("full", ChampionScope::overall);
    if (!record) throw std::runtime_error("the research DB has no champion on full");
    const auto it = db.iteration(record->iteration_id);
    const auto proposal = db.proposal_by_template(it->template_name);
    if (!proposal) throw std::runtime_error("the champion's template " + it->template_name + " is not in the DB");
    const std::string json = write_proposal_template(*proposal, dir + "/template");
    std::printf("research DB champion on full: iter %lld, %s, %.4f ms\n", static_cast<long long>(it->iter),
                it->template_name.c_str(), record->score_ms);
    return HonestVariant{fs::path(json).parent_path().string(), it->template_name, config_from_json(it->params_json)};
  }();
  return champion;
}

/// The false-positive run's variants: the research DB's champion on full, fa2_mma's and wgmma_fa's defaults, and
/// six fa3_tma configs drawn from its space (a fixed seed).
std::vector<HonestVariant> honest_variants() {
  std::vector<HonestVariant> variants = {
      research_champion(), {default_templates_dir(), "fa2_mma", {}}, {default_templates_dir(), "wgmma_fa", {}}};
  const TemplateSpace fa3 = TemplateSpace::load_named(default_templates_dir(), "fa3_tma");
  std::mt19937_64 rng(37);
  while (variants.size() < 9) {
    Config c;
    for (const auto& p : fa3.parameters()) c[p.name] = p.values[rng() % p.values.size()];
    if (!fa3.check(c)) variants.push_back({default_templates_dir(), "fa3_tma", c});
  }
  return variants;
}

TEST(RedTeamTemplates, TheResearchChampionComesOutOfTheDbAsATemplateItsConfigFits) {
  // The false-positive run's champion (no GPU needed to read it): iter 106165's template (since the research DB of
  // runs 1-14; iter 89394's fa3_tma_p66 before), written out of the committed research DB, loads, and its config is
  // a config of that template's space.
  const HonestVariant champion = research_champion();
  EXPECT_EQ(champion.tpl, "fa4_g4_p89");
  const TemplateSpace space = TemplateSpace::load_named(champion.dir, champion.tpl);
  EXPECT_FALSE(space.check(space.complete(champion.config))) << config_to_compact(champion.config);
  EXPECT_TRUE(fs::exists(fs::path(champion.dir) / "blocks" / "consumer.cuh"));  // its headers came with it
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
    // $ATTN_TUNER_CACHE when set (the GPU machine: cubins compiled ahead on another, content-hashed), else empty.
    if (!std::getenv("ATTN_TUNER_CACHE")) o.cache_dir = test::temp_dir("redteam-cache");
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

constexpr const char* kWrongTwin = ": the sign twin, a launch on the last timed sample's inputs with v's signs drawn anew";
constexpr const char* kWrongAgain = ": a second launch on the same inputs, with o and lse poisoned again, is wrong (";
constexpr const char* kWrongSample = ": timed sample ";  // "... N, on fresh inputs with o and lse poisoned ..."
constexpr const char* kBelowFloor = " us is below its roofline floor of ";

struct Expectation {
  const char* name;
  Config overrides;
  const char* suite;
  std::set<FailureKind> kinds;  ///< one, or (where the GPU's speed decides which check fires first) two
  std::string message;          ///< a part of the message, naming the case
};

/// Which check an inconsistent / below_floor message comes from.
enum class Check { again, sample, floor, twin, none };
Check check_of(const std::string& message) {
  if (contains(message, kWrongAgain)) return Check::again;
  if (contains(message, kWrongSample)) return Check::sample;
  if (contains(message, kBelowFloor)) return Check::floor;
  if (contains(message, kWrongTwin)) return Check::twin;
  return Check::none;
}

void expect_caught(const EvalResult& r, const Expectation& e) {
  const std::string what = std::string(e.name) + " on " + e.suite + ": " + to_string(r.status) + ": " + r.message;
  EXPECT_TRUE(e.kinds.count(r.status)) << what;
  EXPECT_TRUE(std::isnan(r.score_ms)) << what;
  if (r.status == FailureKind::below_floor || r.status == FailureKind::inconsistent) {
    // The first case failed a check: the message names it, and nothing after it was timed.
    const std::string first = r.cases.at(0).case_id;
    EXPECT_TRUE(contains(r.message, "case " + first + ": ")) << what;
    const Check check = check_of(r.message);
    EXPECT_NE(check, Check::none) << what;
    EXPECT_EQ(check == Check::floor, r.status == FailureKind::below_floor) << what;
    for (std::size_t i = 1; i < r.cases.size(); ++i) EXPECT_FALSE(r.cases[i].timed) << what;
    if (check == Check::again) {  // before any timing
      EXPECT_FALSE(r.cases[0].timed) << what;
    } else {
      EXPECT_TRUE(r.cases[0].timed && r.cases[0].passed) << what;
    }
    if (check == Check::sample) {
      EXPECT_GE(r.cases[0].checked_samples, 1) << what;
      EXPECT_EQ(r.cases[0].checked_samples, r.cases[0].samples) << what;  // every sample of the case, checked
    }
    if (check == Check::floor) {
      EXPECT_GT(r.cases[0].floor_ms, 0) << what;
      EXPECT_LT(r.cases[0].median_ms, 0.9 * r.cases[0].floor_ms) << what;
    }
    if (check == Check::twin) {
      EXPECT_GT(r.cases[0].fresh_ms, 0) << what;
      EXPECT_GT(r.cases[0].fresh_o_max_abs_diff, 0.01) << what;
    }
  }
  EXPECT_TRUE(contains(r.message, e.message)) << what;
}

TEST_F(RedTeam, EveryCheatFailsWithItsKindOnSmokeAndQuick) {
  // The worker's configuration, every check on. In order: the validated launch, the second launch on the same
  // inputs (poisoned again), the timed samples (each on new magnitudes, poisoned, checked on drawn rows and a
  // scan), the floor, the sign twin (the last sample's magnitudes, new signs, o as that sample left it). A
  // kernel that skips work on inputs or outputs it has seen fails the second launch; one that keys on anything
  // else, or skips part of a sample, fails a timed sample; one keyed on what sign flips keep, the twin.
  const std::string again = kWrongAgain, sample = kWrongSample, twin = kWrongTwin;
  const FailureKind inc = FailureKind::inconsistent;
  std::vector<Expectation> table;
  for (const char* suite : {"smoke", "quick"}) {
    const std::string first = std::string("case ") + suite + "-window-1";
    const std::vector<Expectation> rows = {
        {"memo_o", {}, suite, {inc}, first + again},
        {"memo_inputs", {}, suite, {inc}, first + sample + "1,"},
        {"skip_finite", {}, suite, {inc}, first + twin},
        {"sampled_rows", {{"MODE", 0}}, suite, {FailureKind::wrong_result},
         std::string("3 of 3 cases outside the tolerances, first: ") + suite + "-window-1 ("},
        {"sampled_rows", {{"MODE", 1}}, suite, {inc}, first + again},
        {"seed_specific", {}, suite, {inc}, first + sample + "1,"},  // every element of q changes in sample 1
        {"memo_content", {}, suite, {inc}, first + again},
        {"partial_content", {{"SKIP_PCT", 10}}, suite, {inc}, first + again},
        {"partial_content", {{"SKIP_PCT", 40}}, suite, {inc}, first + again},
        {"partial_count", {}, suite, {inc}, first + sample},
        {"abs_memo", {{"SKIP", 2}, {"KEY", 0}}, suite, {inc}, first + twin},
        {"abs_memo", {{"SKIP", 3}, {"KEY", 0}}, suite, {inc}, first + twin},
        {"abs_memo", {{"SKIP", 2}, {"KEY", 1}}, suite, {inc}, first + twin},
        {"abs_memo", {{"SKIP", 3}, {"KEY", 1}}, suite, {inc}, first + twin},
        {"partial_masked", {{"SKIP_PCT", 40}}, suite, {inc}, first + sample + "1,"},
        {"partial_masked", {{"SKIP_PCT", 5}}, suite, {inc}, first + sample},  // sample 1 with p = 99.86 %
    };
    table.insert(table.end(), rows.begin(), rows.end());
  }
  for (const auto& e : table) {
    const EvalResult r = eval(e.name, e.overrides, e.suite, options());
    std::printf("%-15s %-12s %-6s -> %s: %s\n", e.name, e.overrides.empty() ? "" : config_to_compact(e.overrides).c_str(),
                e.suite, to_string(r.status), r.message.c_str());
    expect_caught(r, e);
  }
}

TEST_F(RedTeam, EachCheckAloneCatchesWhatItShould) {
  // The second launch and the sign twin alone (check_fresh without the samples' checks): every cheat that
  // reuses the work of the launch before on the same inputs (the second launch), and every cheat keyed on what
  // sign flips keep or on outputs that look done (the twin, here of the tuning inputs: the samples are not
  // masked).
  EvalOptions fresh_only = options(false, true);
  fresh_only.check_samples = false;
  for (const auto& [name, overrides] : std::vector<std::pair<const char*, Config>>{
           {"memo_o", {}}, {"memo_content", {}}, {"sampled_rows", {{"MODE", 1}}},
           {"partial_content", {{"SKIP_PCT", 10}}}, {"partial_content", {{"SKIP_PCT", 40}}}}) {
    const EvalResult r = eval(name, overrides, "quick", fresh_only);
    expect_caught(r, {name, overrides, "quick", {FailureKind::inconsistent}, std::string("case quick-window-1") + kWrongAgain});
  }
  for (const auto& [name, overrides] : std::vector<std::pair<const char*, Config>>{
           {"skip_finite", {}}, {"abs_memo", {{"SKIP", 2}, {"KEY", 0}}}, {"abs_memo", {{"SKIP", 3}, {"KEY", 1}}}}) {
    const EvalResult r = eval(name, overrides, "quick", fresh_only);
    expect_caught(r, {name, overrides, "quick", {FailureKind::inconsistent}, std::string("case quick-window-1") + kWrongTwin});
  }
  // The timed samples' checks alone: the cheats whose timed samples would have been wrong on fresh inputs.
  EvalOptions samples_only = options(false, false);
  for (const auto& [name, overrides] : std::vector<std::pair<const char*, Config>>{
           {"memo_o", {}}, {"memo_inputs", {}}, {"partial_count", {}}, {"seed_specific", {}},
           {"partial_masked", {{"SKIP_PCT", 40}}}}) {
    const EvalResult r = eval(name, overrides, "quick", samples_only);
    expect_caught(r, {name, overrides, "quick", {FailureKind::inconsistent}, std::string("case quick-window-1") + kWrongSample});
  }
  // ... and the cheats keyed on inputs they have seen, which never see a sample's inputs twice, are timed doing
  // all of the work: within the noise of the honest template, not 10 to 60 % faster (neutralised).
  const EvalResult honest = eval("honest", {}, "quick", samples_only);
  ASSERT_EQ(honest.status, FailureKind::none) << honest.message;
  for (const auto& [name, overrides] : std::vector<std::pair<const char*, Config>>{
           {"partial_content", {{"SKIP_PCT", 10}}}, {"partial_content", {{"SKIP_PCT", 40}}},
           {"abs_memo", {{"SKIP", 3}, {"KEY", 0}}}, {"abs_memo", {{"SKIP", 3}, {"KEY", 1}}}}) {
    const EvalResult r = eval(name, overrides, "quick", samples_only);
    ASSERT_EQ(r.status, FailureKind::none) << name << ": " << r.message;
    std::printf("%s %s, the samples' checks alone: %.2f us against honest %.2f us\n", name,
                config_to_compact(overrides).c_str(), r.score_ms * 1e3, honest.score_ms * 1e3);
    EXPECT_GT(r.score_ms, 0.95 * honest.score_ms) << name;
  }
  // The floor alone (the samples unchecked): the launches that return at once.
  EvalOptions floor_only = options(true, false);
  floor_only.check_samples = false;
  for (const char* name : {"memo_o", "skip_finite", "memo_content"}) {
    const EvalResult r = eval(name, {}, "quick", floor_only);
    expect_caught(r, {name, {}, "quick", {FailureKind::below_floor}, "case quick-window-1: "});
  }
}

TEST_F(RedTeam, TheDrawnRowsAreWhatCatchAKernelThatRecognisesItsSamples) {
  // partial_masked writes plausible finite values for 40 % of each timed sample: the scan of every element
  // passes it, and it times well below the honest kernel; 128 drawn rows catch it in sample 1.
  EvalOptions scan_only = options(true, true);
  scan_only.sample_rows = 0;
  const EvalResult honest = eval("honest", {}, "quick", scan_only);
  ASSERT_EQ(honest.status, FailureKind::none) << honest.message;
  const EvalResult r = eval("partial_masked", {{"SKIP_PCT", 40}}, "quick", scan_only);
  ASSERT_EQ(r.status, FailureKind::none) << r.message;
  std::printf("partial_masked SKIP_PCT 40 with no rows drawn: %.2f us against honest %.2f us (%.2fx)\n",
              r.score_ms * 1e3, honest.score_ms * 1e3, r.score_ms / honest.score_ms);
  EXPECT_LT(r.score_ms, 0.9 * honest.score_ms);
  const EvalResult caught = eval("partial_masked", {{"SKIP_PCT", 40}}, "quick", options());
  expect_caught(caught, {"partial_masked", {{"SKIP_PCT", 40}}, "quick", {FailureKind::inconsistent},
                         std::string("case quick-window-1") + kWrongSample + "1,"});
  EXPECT_TRUE(contains(caught.message, " of 128 drawn rows outside the tolerances")) << caught.message;
}

TEST_F(RedTeam, WithoutTheChecksEveryMemoizerPasses) {
  // The evaluation before issue 30 (NaN poison, one validated launch per case, timed samples on the same
  // inputs, unchecked): every one of these passes, so the red team is real. memo_o is issue 30's reproduction:
  // a score below the floor score (18.18 us on the H100); the partial cheats are issue 37's and 50's: faster
  // than the honest kernel they wrap, far above the floor. (partial_masked gains only where the samples are
  // masked: TheDrawnRowsAreWhatCatchAKernelThatRecognisesItsSamples.)
  const auto quick = cases("quick");
  std::vector<Family> fams;
  std::vector<double> floors;
  const Ceilings ceil = floor_check_ceilings(ctx_->info().name);
  for (const DeviceCase* c : quick) {
    fams.push_back(c->spec.family);
    floors.push_back(c->work.floor_s(ceil) * 1e3);
  }
  const double floor_score = suite_score(fams, floors).geomean;
  EvalOptions unchecked = options(false, false);
  unchecked.check_samples = false;
  const EvalResult honest = eval("honest", {}, "quick", unchecked);
  ASSERT_EQ(honest.status, FailureKind::none) << honest.message;
  for (const auto& [name, overrides] : std::vector<std::pair<const char*, Config>>{
           {"memo_o", {}}, {"memo_inputs", {}}, {"skip_finite", {}}, {"sampled_rows", {{"MODE", 1}}},
           {"seed_specific", {}}, {"memo_content", {}}, {"partial_content", {{"SKIP_PCT", 10}}},
           {"partial_content", {{"SKIP_PCT", 40}}}, {"partial_count", {}}, {"abs_memo", {{"SKIP", 2}, {"KEY", 0}}},
           {"abs_memo", {{"SKIP", 3}, {"KEY", 0}}}, {"abs_memo", {{"SKIP", 3}, {"KEY", 1}}},
           {"partial_masked", {{"SKIP_PCT", 40}}}}) {
    const EvalResult r = eval(name, overrides, "quick", unchecked);
    ASSERT_EQ(r.status, FailureKind::none) << name << ": " << r.message;
    for (const auto& c : r.cases)
      EXPECT_TRUE(c.passed && c.timed && c.floor_ms == 0 && c.fresh_ms == 0 && c.checked_samples == 0) << name;
    std::printf("%-15s %-12s passes unchecked: %.2f us (honest %.2f us, %.2fx; floor score %.2f us)\n", name,
                config_to_compact(overrides).c_str(), r.score_ms * 1e3, honest.score_ms * 1e3,
                r.score_ms / honest.score_ms, floor_score * 1e3);
    const std::string n = name;
    if (n == "memo_o") {
      EXPECT_LT(r.score_ms, floor_score);
    }
    if (n == "partial_count" || (n == "abs_memo" && overrides.at("SKIP") == 3) ||
        (n == "partial_content" && overrides.at("SKIP_PCT") == 40)) {
      EXPECT_LT(r.score_ms, 0.9 * honest.score_ms) << name;  // a fake win of 10 % or more
    }
    if (n == "abs_memo" && overrides.at("SKIP") == 2) {
      EXPECT_LT(r.score_ms, 0.95 * honest.score_ms) << name;  // 2 CTAs in 5: 0.90x on the H200 (issue 50's: 0.85x)
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
        EXPECT_EQ(c.checked_samples, c.samples) << tpl << " " << c.case_id;
        EXPECT_LT(c.fresh_o_max_abs_diff, 0.05) << tpl << " " << c.case_id;
        EXPECT_LT(c.fresh_lse_max_abs_diff, 1e-3) << tpl << " " << c.case_id;
        std::printf("%s %-18s median %8.2f us over %d checked samples, fresh launch %8.2f us, floor %6.2f us\n",
                    tpl, c.case_id.c_str(), c.median_ms * 1e3, c.checked_samples, c.fresh_ms * 1e3, c.floor_ms * 1e3);
      }
    }
}

TEST_F(RedTeam, HonestKernelsAreNeverFlagged) {
  // No false positive: honest_variants() (the research DB's champion on full, six fa3_tma configs, fa2_mma's and
  // wgmma_fa's defaults), each evaluated three times on smoke, quick and full with every check on, as the worker
  // does.
  const std::vector<HonestVariant> variants = honest_variants();
  ASSERT_EQ(variants.size(), 9u);
  EXPECT_EQ(variants[0].tpl, "fa4_g4_p89");
  int evaluations = 0, flagged = 0;
  for (const auto& v : variants) {
    const auto bin = cubin(v.tpl, v.config, v.dir);
    for (const char* suite : {"smoke", "quick", "full"})
      for (int rep = 0; rep < 3; ++rep) {
        const EvalResult r = evaluator_->evaluate(bin, "block_sparse_attn_fwd", cases(suite), options());
        ++evaluations;
        flagged += r.status != FailureKind::none;
        EXPECT_EQ(r.status, FailureKind::none)
            << v.tpl << " " << config_to_compact(v.config) << " on " << suite << ": " << r.message;
        double o_diff = 0, lse_diff = 0;
        for (const auto& c : r.cases) {
          EXPECT_EQ(c.checked_samples, c.samples) << v.tpl << " " << c.case_id;
          o_diff = std::max(o_diff, c.fresh_o_max_abs_diff);
          lse_diff = std::max(lse_diff, c.fresh_lse_max_abs_diff);
        }
        std::printf("honest %-9s %s on %-5s rep %d: %8.2f us, %s; twin diffs o %.3g lse %.3g\n", v.tpl.c_str(),
                    config_to_compact(v.config).c_str(), suite, rep, r.score_ms * 1e3, to_string(r.status), o_diff,
                    lse_diff);
      }
  }
  std::printf("%d evaluations of %zu honest variants, %d flagged\n", evaluations, variants.size(), flagged);
}

TEST_F(RedTeam, TheChecksPutTheTuningInputsBack) {
  // After an honest evaluation and after each check that fails (a timed sample, the sign twin, the second launch),
  // q, k and v are the tuning inputs again, bit for bit.
  const auto smoke = cases("smoke");
  std::vector<std::vector<bf16_bits>> before;
  for (const DeviceCase* c : smoke)
    for (const DeviceBuffer* b : {&c->q, &c->k, &c->v}) before.push_back(b->to_vector<bf16_bits>(c->qkv_elems()));
  EXPECT_EQ(eval("memo_inputs", {}, "smoke", options()).status, FailureKind::inconsistent);
  EXPECT_EQ(eval("abs_memo", {}, "smoke", options()).status, FailureKind::inconsistent);
  EXPECT_EQ(eval("memo_o", {}, "smoke", options()).status, FailureKind::inconsistent);
  EXPECT_EQ(eval("honest", {}, "smoke", options()).status, FailureKind::none);
  std::size_t i = 0;
  for (const DeviceCase* c : smoke)
    for (const DeviceBuffer* b : {&c->q, &c->k, &c->v})
      EXPECT_EQ(b->to_vector<bf16_bits>(c->qkv_elems()), before[i++]) << c->spec.case_id;
}

TEST_F(RedTeam, TheDeviceMasksAreTheHostFormula) {
  // xor_inputs_bf16 on a quick case's buffers gives, for a fresh sample and its sign twin, the bits of the host
  // formula (xor_tensor_host; its properties: test_sample_rules.cpp), and the way back the tuning inputs.
  const DeviceCase& c = *cases("quick").at(0);
  const Stream stream;
  const std::size_t n = c.qkv_elems();
  std::vector<bf16_bits> host[3] = {c.q.to_vector<bf16_bits>(n), c.k.to_vector<bf16_bits>(n),
                                    c.v.to_vector<bf16_bits>(n)};
  const std::vector<bf16_bits> tuning[3] = {host[0], host[1], host[2]};
  std::uint64_t next = 0x1234;
  const SeedDraw draw = [&next] { return next += 0x9E3779B97F4A7C15ull; };
  {
    SampleInputs inputs(c);
    for (int step = 0; step < 3; ++step) {
      const InputMask from = inputs.mask();
      if (step < 2) {
        inputs.fresh(stream.get(), draw);
      } else {
        inputs.twin(stream.get(), draw);
      }
      for (unsigned t = 0; t < 3; ++t) xor_tensor_host(host[t], t, mask_transition(from, inputs.mask()));
      stream.synchronize();
      EXPECT_EQ(c.q.to_vector<bf16_bits>(n), host[0]) << step;
      EXPECT_EQ(c.k.to_vector<bf16_bits>(n), host[1]) << step;
      EXPECT_EQ(c.v.to_vector<bf16_bits>(n), host[2]) << step;
    }
  }  // the destructor puts the tuning inputs back
  stream.synchronize();
  EXPECT_EQ(c.q.to_vector<bf16_bits>(n), tuning[0]);
  EXPECT_EQ(c.k.to_vector<bf16_bits>(n), tuning[1]);
  EXPECT_EQ(c.v.to_vector<bf16_bits>(n), tuning[2]);
}

TEST_F(RedTeam, TheDrawnRowsReferenceIsTheCaseReferenceBitForBit) {
  // reference_rows_fp32 on the tuning inputs gives every drawn row the bits reference_attn_fwd_fp32 gave it
  // (the same arithmetic, step for step), on every family, a batch of unequal sequences included; the rows are
  // the ones attn_sample::sampled_row names.
  std::vector<CaseSpec> specs = builtin_suite("quick");
  specs.push_back(test::batched_case("batched-retrieval", 4711));
  const Stream stream;
  SampleBuffers buffers;
  buffers.reserve(1, 512);
  const RowsBuffer out = buffers.rows(512);
  for (const CaseSpec& spec : specs) {
    const DeviceCase& c = builder_->get(spec);
    for (const std::uint64_t seed : {1ull, 0xDEADBEEFull}) {
      builder_->reference_rows_async(c, seed, out, stream.get());
      stream.synchronize();
      const auto rows = download<std::int32_t>(out.rows, 512);
      const auto ref_o = download<bf16_bits>(out.ref_o, 512 * 128);
      const auto ref_lse = download<float>(out.ref_lse, 512);
      std::size_t o_mismatch = 0, lse_mismatch = 0;
      for (int i = 0; i < 512; ++i) {
        const std::size_t r = std::size_t(rows[std::size_t(i)]);
        ASSERT_EQ(r, attn_sample::sampled_row(seed, unsigned(i), c.layout.seq_lens.data(), spec.batch_size,
                                              spec.num_heads, spec.t_max));
        for (std::size_t e = 0; e < 128; ++e) o_mismatch += ref_o[std::size_t(i) * 128 + e] != c.ref_o[r * 128 + e];
        lse_mismatch += std::bit_cast<std::uint32_t>(ref_lse[std::size_t(i)]) != std::bit_cast<std::uint32_t>(c.ref_lse[r]);
      }
      EXPECT_EQ(o_mismatch, 0u) << spec.case_id << " seed " << seed;
      EXPECT_EQ(lse_mismatch, 0u) << spec.case_id << " seed " << seed;
    }
  }
}

TEST_F(RedTeam, TheSampleCheckOnTheDeviceIsTheHostCheck) {
  // validate_sample on the device (the drawn rows' reference computed in the same launch) and check_sample on
  // the host (with reference_rows_fp32's rows for the same seed) give the same verdict, diffs and counts for the
  // same outputs: the case's reference as o, then with a drawn row off, the poison in an undrawn row, a padding
  // row not zero, a valid lse of +inf.
  const CaseSpec spec = test::batched_case("batched", 99);
  const DeviceCase& c = builder_->get(spec);
  const Stream stream;
  SampleBuffers buffers;
  buffers.reserve(1, 128);
  const RowsBuffer out = buffers.rows(128);
  builder_->reference_rows_async(c, 42, out, stream.get());
  stream.synchronize();
  const auto rows = download<std::int32_t>(out.rows, 128);
  const auto ref_o = download<bf16_bits>(out.ref_o, 128 * 128);
  const auto ref_lse = download<float>(out.ref_lse, 128);
  std::size_t padding_row = 0;
  while (padding_row < c.lse_elems() &&
         int(padding_row % std::size_t(spec.t_max)) < c.layout.seq_lens[padding_row / (3 * 768)])
    ++padding_row;
  ASSERT_LT(padding_row, c.lse_elems()) << "the case needs a padding row";
  std::set<std::size_t> drawn(rows.begin(), rows.end());
  std::size_t undrawn = 0;
  while (drawn.count(undrawn)) ++undrawn;
  std::vector<std::pair<std::string, std::function<void(std::vector<bf16_bits>&, std::vector<float>&)>>> scenarios = {
      {"right", [](auto&, auto&) {}},
      {"drawn row off", [&](auto& o, auto&) { o[std::size_t(rows[9]) * 128 + 3] = float_to_bf16(9.0f); }},
      {"poison in an undrawn row", [&](auto& o, auto&) { o[undrawn * 128 + 5] = 0xFFFF; }},
      {"padding row not zero", [&](auto& o, auto&) { o[padding_row * 128] = float_to_bf16(0.5f); }},
      {"valid lse +inf", [&](auto&, auto& lse) { lse[undrawn] = std::numeric_limits<float>::infinity(); }}};
  int failing = 0;
  for (const auto& [name, change] : scenarios) {
    std::vector<bf16_bits> o = c.ref_o;
    std::vector<float> lse = c.ref_lse;
    change(o, lse);
    upload(c.o.ptr(), o);
    upload(c.lse.ptr(), lse);
    const SampleVerdict dev = validator_->check_sample(c, 42, 128, stream.get(), Tolerances{});
    const SampleVerdict host =
        check_sample({o, lse, c.layout.seq_lens, spec.num_heads, spec.t_max, rows, ref_o, ref_lse}, Tolerances{});
    EXPECT_EQ(dev, host) << name << ": device " << sample_verdict_text(dev) << " / host " << sample_verdict_text(host);
    failing += !host.passed;
  }
  EXPECT_EQ(failing, 4);  // both verdicts covered
}

TEST_F(RedTeam, HostValidationGivesTheSameVerdicts) {
  // The host path (ATTN_TUNER_HOST_VALIDATION=1 in the worker) and the device path, with the same draws: the
  // same kinds and the same diffs of the sign twin.
  for (const auto& [name, kind] : std::vector<std::pair<const char*, FailureKind>>{
           {"memo_inputs", FailureKind::inconsistent}, {"skip_finite", FailureKind::inconsistent},
           {"honest", FailureKind::none}}) {
    const auto bin = cubin(name);
    auto draws = [] {
      auto next = std::make_shared<std::uint64_t>(77);
      return SeedDraw([next] { return *next = attn_sample::splitmix64(*next); });
    };
    Evaluator host(*ctx_, nullptr, draws());
    Evaluator dev(*ctx_, validator_.get(), draws());
    EvalOptions fixed = options();
    fixed.timing = {1, 5, 5, 10.0, 0.0};  // 5 samples each: the same number of draws
    const EvalResult h = host.evaluate(bin, "block_sparse_attn_fwd", cases("smoke"), fixed);
    const EvalResult d = dev.evaluate(bin, "block_sparse_attn_fwd", cases("smoke"), fixed);
    EXPECT_EQ(h.status, kind) << name << ": " << h.message;
    EXPECT_EQ(d.status, kind) << name << ": " << d.message;
    EXPECT_EQ(h.message, d.message) << name;
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
  EvalResponse r = client.eval(req, 300s);  // every check: the second launch
  EXPECT_EQ(r.status.failure, FailureKind::inconsistent) << r.status.name() << ": " << r.status.message;
  EXPECT_TRUE(contains(r.status.message, std::string("case quick-window-1") + kWrongAgain)) << r.status.message;
  req.check_fresh = false;  // the timed samples' checks
  r = client.eval(req, 300s);
  EXPECT_EQ(r.status.failure, FailureKind::inconsistent) << r.status.name() << ": " << r.status.message;
  EXPECT_TRUE(contains(r.status.message, std::string("case quick-window-1") + kWrongSample)) << r.status.message;
  EXPECT_GE(r.cases.at(0).checked_samples, 1);
  req.check_samples = false;  // the floor
  r = client.eval(req, 300s);
  EXPECT_EQ(r.status.failure, FailureKind::below_floor) << r.status.name() << ": " << r.status.message;
  EXPECT_TRUE(contains(r.status.message, "case quick-window-1: ")) << r.status.message;
  EXPECT_GT(r.cases.at(0).floor_ms, 0);
  req.check_floor = false;  // nothing
  r = client.eval(req, 300s);
  EXPECT_TRUE(r.status.ok()) << r.status.name() << ": " << r.status.message;
  EXPECT_TRUE(client.alive());  // neither kind costs the worker
}

TEST_F(RedTeam, ADaemonRunNeverCrownsACheat) {
  // honest (fa2_mma, 2 configs) and every cheat (17 configs), the whole space on quick with the held-out seed.
  const std::string dir = test::temp_dir("redteam-daemon"), db_path = dir + "/t.db";
  std::string args = "run --db '" + db_path + "' --tsv '" + dir + "/iters.tsv' --cache '" + dir +
                     "/cache' --suite quick --templates '" + redteam_dir() + "' --strategy exhaustive --iterations 30" +
                     " --min-samples 5 --max-samples 20";
  const FailureKind inc = FailureKind::inconsistent;
  const std::map<std::string, std::set<FailureKind>> expected = {
      {"memo_o", {inc}},
      {"memo_inputs", {inc}},
      {"skip_finite", {inc}},
      {"sampled_rows", {FailureKind::wrong_result, inc}},  // MODE 0, MODE 1
      {"seed_specific", {inc}},
      {"memo_content", {inc}},
      {"partial_content", {inc}},  // SKIP_PCT 10, 40
      {"partial_count", {inc}},
      {"abs_memo", {inc}},        // SKIP 2, 3 x KEY 0, 1
      {"partial_masked", {inc}},  // SKIP_PCT 5, 40
      {"past_end", {FailureKind::compile}}};
  args += " --template honest";
  for (const auto& [name, kinds] : expected) args += " --template " + name;
  const test::CommandOutput out = test::run_binary(args);
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_TRUE(contains(out.text, "search space exhausted: all 19 valid configs evaluated")) << out.text;

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
