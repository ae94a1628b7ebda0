// On the GPU (skipped without one): device-side inputs equal the host formula, the fp32 reference kernel
// agrees with the CPU reference, the device validation gives the host validation's verdicts and diffs, and
// the in-process Evaluator classifies the non-sticky outcomes with either.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "gpu/case_data.hpp"
#include "gpu/compiler.hpp"
#include "gpu/device_validation.hpp"
#include "gpu/driver.hpp"
#include "gpu/evaluate.hpp"
#include "tests/test_support.hpp"
#include "workload/inputs.hpp"
#include "workload/reference.hpp"
#include "workload/validation.hpp"

namespace attn {
namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::gpu_available()) GTEST_SKIP() << "no CUDA device";
    ctx_ = std::make_unique<Context>(0);
    CompilerOptions o;
    o.cache_dir = test::temp_dir("attn-gpu-cache");
    compiler_ = std::make_unique<Compiler>(o);
    builder_ = std::make_unique<CaseBuilder>(*ctx_, *compiler_);
  }
  std::vector<char> cubin(const std::string& faulty_name) {
    const CompiledVariant v =
        compiler_->compile({test::data_dir() + "/faulty_kernels/" + faulty_name, "block_sparse_attn_fwd", {}, {}});
    EXPECT_TRUE(v.ok) << v.log;
    return v.cubin;
  }
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<CaseBuilder> builder_;
};

/// Elements whose bf16 bits differ, and the largest difference in bf16 units in the last place.
struct BitDiff {
  std::size_t mismatches = 0;
  int max_ulps = 0;
};
BitDiff compare_bits(const std::vector<bf16_bits>& a, const std::vector<bf16_bits>& b) {
  BitDiff d;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) {
      ++d.mismatches;
      d.max_ulps = std::max(d.max_ulps, std::abs(int(a[i]) - int(b[i])));
    }
  return d;
}

TEST_F(Gpu, FillNormalMatchesHostFormula) {
  const std::uint64_t n = 3'000'001;  // not a multiple of the block size
  const std::uint64_t seed = 987654321;
  DeviceBuffer buf(n * sizeof(bf16_bits));
  builder_->fill_normal(buf.ptr(), seed, unsigned(Tensor::k), n);
  const auto dev = buf.to_vector<bf16_bits>(n);
  std::vector<bf16_bits> host(n);
  for (std::uint64_t i = 0; i < n; ++i) host[i] = float_to_bf16(normal_sample(seed, Tensor::k, i));
  const BitDiff d = compare_bits(dev, host);
  // log/cos/sqrt on the device and in libm may differ in the last float bit, which changes the bf16
  // rounding only for values on a rounding boundary: a negligible fraction, by one unit.
  EXPECT_LE(d.mismatches, n / 10000) << d.mismatches << " of " << n << " differ";
  EXPECT_LE(d.max_ulps, 1);
  double sum = 0, sq = 0;
  for (auto b : dev) {
    sum += bf16_to_float(b);
    sq += double(bf16_to_float(b)) * bf16_to_float(b);
  }
  EXPECT_NEAR(sum / double(n), 0.0, 0.01);
  EXPECT_NEAR(sq / double(n), 1.0, 0.01);
}

TEST_F(Gpu, CaseInputsAreTheHostTensors) {
  const CaseSpec spec = builtin_suite("smoke").at(0);
  const DeviceCase& c = builder_->get(spec);
  EXPECT_TRUE(builder_->contains(spec));
  EXPECT_EQ(&builder_->get(spec), &c);  // cached
  for (Tensor t : {Tensor::q, Tensor::k, Tensor::v}) {
    const DeviceBuffer& buf = t == Tensor::q ? c.q : t == Tensor::k ? c.k : c.v;
    const BitDiff d = compare_bits(buf.to_vector<bf16_bits>(c.qkv_elems()), make_tensor(spec, t));
    EXPECT_LE(d.mismatches, c.qkv_elems() / 10000 + 1);
    EXPECT_LE(d.max_ulps, 1);
  }
  EXPECT_EQ(c.layout.row_ptr, build_layout(spec).row_ptr);
}

TEST_F(Gpu, ReferenceKernelMatchesCpuReference) {
  std::vector<CaseSpec> specs = builtin_suite("smoke");
  specs.push_back(test::batched_case("batched-retrieval", 4711));  // two sequences of different lengths, more heads
  for (const CaseSpec& spec : specs) {
    const DeviceCase& c = builder_->get(spec);
    // The CPU reference on the very bytes the GPU used.
    const auto q = c.q.to_vector<bf16_bits>(c.qkv_elems());
    const auto k = c.k.to_vector<bf16_bits>(c.qkv_elems());
    const auto v = c.v.to_vector<bf16_bits>(c.qkv_elems());
    const AttnOutput cpu = reference_forward(q, k, v, c.layout, spec.t_max);
    const ValidationResult r = validate_outputs(c.ref_o, c.ref_lse, cpu.o, cpu.lse);
    EXPECT_TRUE(r.passed) << spec.case_id << ": " << r.message;
    EXPECT_LT(r.o_max_abs_diff, 1e-2) << spec.case_id;
    EXPECT_LT(r.lse_max_abs_diff, 1e-4) << spec.case_id;
    std::size_t empty_rows = 0;
    for (float x : c.ref_lse) empty_rows += std::isinf(x) && x < 0;
    if (spec.case_id == "batched-retrieval") {
      EXPECT_GT(empty_rows, 0u) << "rows past seq_len must be -inf";
    }
  }
}

/// A synthetic case of B=1, H=2, t_max=256 with the given outputs and reference on the device.
struct SyntheticOutputs {
  std::vector<bf16_bits> o, ref_o;
  std::vector<float> lse, ref_lse;
};
DeviceCase upload_case(const SyntheticOutputs& s) {
  DeviceCase c;
  c.spec.batch_size = 1;
  c.spec.num_heads = 2;
  c.spec.t_max = 256;
  c.o = DeviceBuffer::from_vector(s.o);
  c.lse = DeviceBuffer::from_vector(s.lse);
  c.ref_o_dev = DeviceBuffer::from_vector(s.ref_o);
  c.ref_lse_dev = DeviceBuffer::from_vector(s.ref_lse);
  return c;
}

TEST_F(Gpu, DeviceValidationAgreesWithTheHost) {
  const DeviceValidator validator(*ctx_, *compiler_, builder_->templates_dir());
  const Stream stream;
  SyntheticOutputs base;
  const std::size_t n = 2 * 256 * 128, rows = 2 * 256;
  std::uint64_t x = 12345;
  auto next = [&] {  // splitmix-style, values in [-2, 2)
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return float(double(x >> 11) * 0x1p-53 * 4.0 - 2.0);
  };
  for (std::size_t i = 0; i < n; ++i) base.ref_o.push_back(float_to_bf16(next()));
  for (std::size_t i = 0; i < rows; ++i)
    base.ref_lse.push_back(i % 97 == 5 ? -std::numeric_limits<float>::infinity() : 3.0f + next());
  base.o = base.ref_o;
  base.lse = base.ref_lse;
  const float inf = std::numeric_limits<float>::infinity();

  std::vector<std::pair<std::string, SyntheticOutputs>> cases;
  cases.emplace_back("identical", base);
  auto o_within = base;  // one bf16 ulp on many elements: inside atol 1e-3 + rtol 1e-2
  for (std::size_t i = 0; i < n; i += 7) o_within.o[i] = bf16_bits(o_within.o[i] ^ 1);
  cases.emplace_back("o within tolerance", o_within);
  auto o_off = base;
  o_off.o[4242] = float_to_bf16(bf16_to_float(base.ref_o[4242]) + 0.25f);
  cases.emplace_back("o one element off", o_off);
  auto o_nan = base;
  o_nan.o[n - 1] = 0xFFFF;  // the poison value: an unwritten element
  cases.emplace_back("o NaN", o_nan);
  auto lse_near = base;
  lse_near.lse[10] = std::nextafter(base.ref_lse[10], 100.0f);
  cases.emplace_back("lse one ulp", lse_near);
  auto lse_off = base;
  lse_off.lse[11] = base.ref_lse[11] + 1e-3f;
  cases.emplace_back("lse off", lse_off);
  auto lse_finite = base;
  lse_finite.lse[5] = 0.0f;  // the reference row is empty (-inf)
  cases.emplace_back("lse finite where -inf", lse_finite);
  auto lse_sign = base;
  lse_sign.lse[5] = inf;
  cases.emplace_back("lse +inf where -inf", lse_sign);

  int failing = 0;
  for (const auto& [name, s] : cases) {
    const ValidationResult host = validate_outputs(s.o, s.lse, s.ref_o, s.ref_lse);
    const ValidationResult dev = validator.validate(upload_case(s), stream.get(), Tolerances{});
    EXPECT_EQ(dev.passed, host.passed) << name;
    EXPECT_EQ(dev.o_max_abs_diff, host.o_max_abs_diff) << name;
    EXPECT_EQ(dev.lse_max_abs_diff, host.lse_max_abs_diff) << name;
    EXPECT_EQ(dev.message, host.message) << name;
    failing += !host.passed;
  }
  // The scenarios cover both verdicts and both kinds of diff: otherwise agreement would prove little.
  EXPECT_EQ(failing, 5);
  EXPECT_TRUE(std::isinf(validate_outputs(o_nan.o, o_nan.lse, o_nan.ref_o, o_nan.ref_lse).o_max_abs_diff));
  EXPECT_GT(validate_outputs(o_within.o, o_within.lse, o_within.ref_o, o_within.ref_lse).o_max_abs_diff, 0);
}

TEST_F(Gpu, EvaluatorGoodWrongAndDeviceLimit) {
  std::vector<const DeviceCase*> cases;
  for (const auto& s : builtin_suite("smoke")) cases.push_back(&builder_->get(s));
  Evaluator ev(*ctx_);
  EXPECT_GE(ev.flusher().bytes(), std::size_t(2 * ctx_->info().l2_bytes));
  EvalOptions opts;
  opts.timing = {1, 3, 20, 0.5, 0.05};

  const EvalResult good = ev.evaluate(cubin("slow_correct.cu"), "block_sparse_attn_fwd", cases, opts);
  ASSERT_EQ(good.status, FailureKind::none) << good.message;
  EXPECT_EQ(good.launch.smem_bytes, 65536);
  for (const auto& c : good.cases) {
    EXPECT_TRUE(c.passed && c.validated && c.timed) << c.case_id;
    EXPECT_GT(c.median_ms, 0);
    EXPECT_GE(c.samples, 3);
    EXPECT_LE(c.samples, 20);
  }
  EXPECT_GT(good.score_ms, 0);
  EXPECT_EQ(good.family_median_ms.size(), 3u);

  const EvalResult wrong = ev.evaluate(cubin("wrong_values.cu"), "block_sparse_attn_fwd", cases, opts);
  EXPECT_EQ(wrong.status, FailureKind::wrong_result) << wrong.message;
  for (const auto& c : wrong.cases) {
    EXPECT_FALSE(c.passed);
    EXPECT_FALSE(c.timed);
    EXPECT_GT(c.o_max_abs_diff, 0.01);
  }
  EXPECT_TRUE(std::isnan(wrong.score_ms));

  // Validating on the device gives the same verdicts and diffs, case by case.
  const DeviceValidator validator(*ctx_, *compiler_, builder_->templates_dir());
  Evaluator dev_ev(*ctx_, &validator);
  EvalOptions no_timing = opts;
  no_timing.time = false;
  for (const char* kernel : {"slow_correct.cu", "wrong_values.cu"}) {
    const EvalResult h = ev.evaluate(cubin(kernel), "block_sparse_attn_fwd", cases, no_timing);
    const EvalResult d = dev_ev.evaluate(cubin(kernel), "block_sparse_attn_fwd", cases, no_timing);
    EXPECT_EQ(d.status, h.status) << kernel;
    ASSERT_EQ(d.cases.size(), h.cases.size());
    for (std::size_t i = 0; i < h.cases.size(); ++i) EXPECT_EQ(d.cases[i], h.cases[i]) << kernel << " " << h.cases[i].case_id;
  }

  const EvalResult smem = ev.evaluate(cubin("too_much_smem.cu"), "block_sparse_attn_fwd", cases, opts);
  EXPECT_EQ(smem.status, FailureKind::device_limit) << smem.message;

  const EvalResult no_kernel = ev.evaluate(cubin("slow_correct.cu"), "not_a_kernel", cases, opts);
  EXPECT_EQ(no_kernel.status, FailureKind::compile) << no_kernel.message;

  // The context is still healthy after all of these.
  const EvalResult again = ev.evaluate(cubin("slow_correct.cu"), "block_sparse_attn_fwd", cases, opts);
  EXPECT_EQ(again.status, FailureKind::none) << again.message;
}

}  // namespace
}  // namespace attn
