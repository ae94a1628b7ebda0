// On the GPU (skipped without one): the worker process end to end. The good kernel evaluates; every
// faulty kernel gives its failure kind through the client; after each, a (fresh, where needed) worker
// still evaluates the good kernel. Also `attn-tuner bench` on a small template.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "gpu/compiler.hpp"
#include "gpu/worker_client.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {
using namespace std::chrono_literals;
namespace fs = std::filesystem;

class GpuWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::gpu_available()) GTEST_SKIP() << "no CUDA device";
    cache_ = test::temp_dir("attn-worker-cache");
    CompilerOptions o;
    o.cache_dir = cache_;
    compiler_ = std::make_unique<Compiler>(o);
    client_ = std::make_unique<WorkerClient>(WorkerCommand{test::binary_path(), {"worker", "--cache", cache_}});
    suite_ = builtin_suite("smoke");
  }
  CompiledVariant compile(const std::string& name) {
    return compiler_->compile({test::data_dir() + "/faulty_kernels/" + name, "block_sparse_attn_fwd", {}, {}});
  }
  EvalRequest request(const CompiledVariant& v) {
    return {v.cubin_path, "block_sparse_attn_fwd", {1, 3, 20, 0.5, 0.05}, true, true};
  }
  void prepare() {
    const PrepareResponse p = client_->prepare(suite_, 600s);
    ASSERT_TRUE(p.status.ok()) << p.status.name() << ": " << p.status.message;
    EXPECT_EQ(p.cases, int(suite_.size()));
  }
  /// The good kernel through the worker: ok, every case passed and timed.
  bool good_path_works() {
    const CompiledVariant good = compile("slow_correct.cu");
    if (!good.ok) return false;
    const EvalResponse r = client_->eval(request(good), 300s);
    EXPECT_TRUE(r.status.ok()) << r.status.name() << ": " << r.status.message;
    if (!r.status.ok() || r.cases.size() != suite_.size()) return false;
    for (const auto& c : r.cases)
      if (!c.passed || !c.timed || !(c.median_ms > 0)) return false;
    return std::isfinite(r.score_ms) && r.score_ms > 0;
  }

  std::string cache_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<WorkerClient> client_;
  std::vector<CaseSpec> suite_;
};

TEST_F(GpuWorker, GoodKernelEndToEnd) {
  const HelloResponse h = client_->hello(120s);
  ASSERT_TRUE(h.status.ok()) << h.status.message;
  EXPECT_GE(h.cc_major, 9);
  prepare();
  const PrepareResponse again = client_->prepare(suite_, 600s);
  EXPECT_EQ(again.built, 0);  // cached for the worker's lifetime
  EXPECT_TRUE(good_path_works());
  const CompiledVariant good = compile("slow_correct.cu");
  EvalRequest validate_only = request(good);
  validate_only.time = false;
  const EvalResponse r = client_->eval(validate_only, 300s);
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  for (const auto& c : r.cases) {
    EXPECT_TRUE(c.passed);
    EXPECT_FALSE(c.timed);
    EXPECT_LT(c.o_max_abs_diff, 1e-2);
  }
}

TEST_F(GpuWorker, EveryFaultIsClassifiedAndSurvived) {
  prepare();
  ASSERT_TRUE(good_path_works());
  struct Fault {
    const char* file;
    FailureKind expected;
    std::chrono::milliseconds deadline;
  };
  const Fault faults[] = {{"illegal_address.cu", FailureKind::fault, 120s},
                          {"hang.cu", FailureKind::hang, 15s},
                          {"wrong_values.cu", FailureKind::wrong_result, 120s},
                          {"too_much_smem.cu", FailureKind::device_limit, 120s},
                          {"compile_error.cu", FailureKind::compile, 120s}};
  int injected = 0, classified = 0, survived = 0;
  for (const Fault& f : faults) {
    ++injected;
    const CompiledVariant v = compile(f.file);
    FailureKind got = FailureKind::none;
    std::string message;
    if (!v.ok) {
      got = v.error;
      message = v.log;
    } else {
      const EvalResponse r = client_->eval(request(v), f.deadline);
      got = r.status.failure;
      message = r.status.message;
      if (got == FailureKind::wrong_result) {
        ASSERT_EQ(r.cases.size(), suite_.size());
        for (const auto& c : r.cases) EXPECT_FALSE(c.passed || c.timed) << c.case_id;
      }
    }
    EXPECT_EQ(got, f.expected) << f.file << ": " << message;
    classified += got == f.expected;
    if (!client_->alive()) {  // fault and hang take the worker down: a fresh one, prepared again
      client_->restart();
      prepare();
    }
    const bool ok = good_path_works();
    EXPECT_TRUE(ok) << "good kernel after " << f.file;
    survived += ok;
  }
  std::cout << "faults injected " << injected << ", classified " << classified << ", survived " << survived
            << ", workers started " << client_->starts() << "\n";
  RecordProperty("faults_injected", injected);
  RecordProperty("faults_survived", survived);
  EXPECT_EQ(survived, injected);
  EXPECT_EQ(client_->starts(), 3);  // the first, and one after each of fault and hang
}

/// A fresh templates folder holding tests/data/faulty_kernels/<kernel_file> as template `name`, with one
/// one-value parameter: `bench` on a kernel of the test data.
fs::path one_kernel_templates(const std::string& folder, const std::string& kernel_file, const std::string& name) {
  const fs::path dir = test::temp_dir(folder);
  fs::copy_file(fs::path(test::data_dir()) / "faulty_kernels" / kernel_file, dir / (name + ".cu"));
  std::ofstream(dir / (name + ".json")) << nlohmann::json{
      {"name", name}, {"source", name + ".cu"}, {"kernel", "block_sparse_attn_fwd"}, {"description", kernel_file},
      {"parameters", {{"UNUSED", {{"values", {1}}, {"doc", "none"}}}}}, {"constraints", nlohmann::json::array()},
      {"default", {{"UNUSED", 1}}}}.dump();
  return dir;
}

TEST_F(GpuWorker, BenchCommandOnASmallTemplate) {
  // A templates folder holding only the good kernel as a one-parameter template: the worker's helper
  // kernels (fill_normal.cu, reference_fp32.cu) come from the built-in folder, as for `run`.
  const fs::path dir = one_kernel_templates("attn-bench-templates", "slow_correct.cu", "slow");
  const std::string out = (dir / "bench.json").string();
  const std::string cmd = test::binary_path() + " bench --template slow --templates " + dir.string() +
                          " --cache " + cache_ + " --suite smoke --json --min-samples 3 --max-samples 10 > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(out);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("status"), "ok");
  ASSERT_EQ(j.at("cases").size(), 3u);
  for (const auto& c : j.at("cases")) {
    EXPECT_TRUE(c.at("passed").get<bool>());
    EXPECT_GT(c.at("median_ms").get<double>(), 0);
    EXPECT_GT(c.at("floor_us").get<double>(), 0);
  }
  EXPECT_GT(j.at("score_ms").get<double>(), j.at("floor_score_ms").get<double>());  // nothing beats the floor
}

TEST_F(GpuWorker, BenchNoValidateTimesAKernelWhoseOutputsAreWrong) {
  // The ablation switches (fa3_tma ABLATE) remove work on purpose: bench refuses such a kernel, and times
  // it only with --no-validate, saying that nothing was checked.
  const fs::path dir = one_kernel_templates("attn-bench-novalidate", "wrong_values.cu", "wrong");
  const std::string base = test::binary_path() + " bench --template wrong --templates " + dir.string() + " --cache " +
                           cache_ + " --suite smoke --json --min-samples 3 --max-samples 5";
  const std::string out = (dir / "bench.json").string();
  EXPECT_NE(std::system((base + " > " + out + " 2>/dev/null").c_str()), 0) << "validated bench must fail";
  ASSERT_EQ(std::system((base + " --no-validate > " + out).c_str()), 0);
  std::ifstream f(out);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("status"), "ok");
  ASSERT_EQ(j.at("cases").size(), 3u);
  for (const auto& c : j.at("cases")) {
    EXPECT_FALSE(c.at("validated").get<bool>());
    EXPECT_GT(c.at("median_ms").get<double>(), 0);
  }
}

}  // namespace
}  // namespace attn
