#include "gpu/case_data.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/templates_dir.hpp"
#include "gpu/driver_api.hpp"
#include "workload/inputs.hpp"

namespace attn {

std::unique_ptr<Module> compile_helper(const Compiler& compiler, const std::string& source,
                                       const std::string& kernel) {
  const CompiledVariant v = compiler.compile({source, kernel, {}, {}});
  if (!v.ok) throw std::runtime_error(fmt::format("helper kernel {} ({}) does not compile:\n{}", kernel, source, v.log));
  return std::make_unique<Module>(v.cubin);
}

std::size_t DeviceCase::qkv_elems() const {
  return std::size_t(spec.batch_size) * spec.num_heads * spec.t_max * kHeadDim;
}
std::size_t DeviceCase::lse_elems() const { return std::size_t(spec.batch_size) * spec.num_heads * spec.t_max; }

AttnArgs DeviceCase::args() const {
  AttnArgs a;
  a.q = q.ptr();
  a.k = k.ptr();
  a.v = v.ptr();
  a.row_ptr = row_ptr.ptr();
  a.col_idx = col_idx.ptr();
  a.seq_lens = seq_lens.ptr();
  a.o = o.ptr();
  a.lse = lse.ptr();
  a.batch_size = spec.batch_size;
  a.num_heads = spec.num_heads;
  a.t_max = spec.t_max;
  a.col_width = layout.col_width;
  return a;
}

CaseBuilder::CaseBuilder(const Context& ctx, const Compiler& compiler, CaseBuilderOptions options)
    : ctx_(ctx), compiler_(compiler), options_(std::move(options)) {
  namespace fs = std::filesystem;
  if (options_.templates_dir.empty()) options_.templates_dir = default_templates_dir();
  if (options_.fill_source.empty())
    options_.fill_source = (fs::path(options_.templates_dir) / "fill_normal.cu").string();
  if (options_.reference_source.empty())
    options_.reference_source = (fs::path(options_.templates_dir) / "reference_fp32.cu").string();
}

CaseBuilder::~CaseBuilder() = default;

void CaseBuilder::load_fill() {
  if (!fill_module_) {
    fill_module_ = compile_helper(compiler_, options_.fill_source, "fill_normal_bf16");
    fill_fn_ = fill_module_->function("fill_normal_bf16");
    xor_fn_ = fill_module_->function("xor_inputs_bf16");
  }
}

void CaseBuilder::load_helpers() {
  load_fill();
  if (!reference_module_) {
    reference_module_ = compile_helper(compiler_, options_.reference_source, options_.reference_kernel);
    reference_ = load_attn_kernel(*reference_module_, options_.reference_kernel);
    rows_fn_ = reference_module_->function("reference_rows_fp32");
  }
}

unsigned CaseBuilder::elementwise_grid(std::uint64_t n) const {
  const std::uint64_t blocks_needed = (n + 255) / 256;
  return unsigned(
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(blocks_needed, std::uint64_t(ctx_.info().sm_count) * 16)));
}

void CaseBuilder::fill_normal(CUdeviceptr out, std::uint64_t seed, unsigned tensor, std::uint64_t n) {
  load_fill();
  if (n == 0) return;
  unsigned long long seed_arg = seed, n_arg = n;
  unsigned tensor_arg = tensor;
  void* params[] = {&out, &seed_arg, &tensor_arg, &n_arg};
  check(cu::api().cuLaunchKernel(fill_fn_, elementwise_grid(n), 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
        "cuLaunchKernel(fill_normal_bf16)");
  ctx_.synchronize();
}

void CaseBuilder::xor_inputs_async(const DeviceCase& c, const InputXor& x, CUstream stream) {
  load_fill();
  const std::uint64_t n = c.qkv_elems();
  if (n % 8 != 0) throw std::invalid_argument("xor_inputs_bf16 needs a multiple of 8 elements");
  if (n == 0 || x == InputXor{}) return;
  const std::uint64_t n_lse = c.lse_elems();
  if (x.poison && n_lse % 4 != 0) throw std::invalid_argument("xor_inputs_bf16 poisons lse in groups of 4");
  CUdeviceptr q = c.q.ptr(), k = c.k.ptr(), v = c.v.ptr(), o = c.o.ptr(), lse = c.lse.ptr();
  unsigned long long n_arg = n, mag_a = x.mag_a, mag_b = x.mag_b, sign_a = x.sign_a, sign_b = x.sign_b,
                     n_lse_arg = n_lse;
  int poison = x.poison ? 1 : 0;
  void* params[] = {&q, &k, &v, &n_arg, &mag_a, &mag_b, &sign_a, &sign_b, &poison, &o, &lse, &n_lse_arg};
  const std::uint64_t tensors = (x.mag_a | x.mag_b) ? 3 : 1;  // a sign mask alone touches v only
  const std::uint64_t items = tensors * n / 8 + (x.poison ? n / 8 + n_lse / 4 : 0);
  check(cu::api().cuLaunchKernel(xor_fn_, elementwise_grid(items), 1, 1, 256, 1, 1, 0, stream, params, nullptr),
        "cuLaunchKernel(xor_inputs_bf16)");
}

void CaseBuilder::reference_rows_async(const DeviceCase& c, std::uint64_t seed, const RowsBuffer& out,
                                       CUstream stream) {
  load_helpers();
  if (out.count <= 0) return;
  const AttnArgs a = c.args();
  CUdeviceptr q = a.q, k = a.k, v = a.v, row_ptr = a.row_ptr, col_idx = a.col_idx, seq_lens = a.seq_lens;
  int batch = a.batch_size, heads = a.num_heads, t_max = a.t_max, col_width = a.col_width;
  unsigned long long seed_arg = seed;
  CUdeviceptr rows = out.rows, ref_o = out.ref_o, ref_lse = out.ref_lse;
  void* params[] = {&q, &k, &v, &row_ptr, &col_idx, &seq_lens, &batch, &heads, &t_max, &col_width, &seed_arg,
                    &rows, &ref_o, &ref_lse};
  check(cu::api().cuLaunchKernel(rows_fn_, unsigned(out.count), 1, 1, 128, 1, 1, 0, stream, params, nullptr),
        "cuLaunchKernel(reference_rows_fp32)");
}

void CaseBuilder::run_reference(DeviceCase& c) {
  c.o.fill_bytes(0xFF);  // NaN: the reference must write every element
  c.lse.fill_bytes(0xFF);
  launch_attn(reference_, c.args(), nullptr);
  ctx_.synchronize();
}

bool CaseBuilder::contains(const CaseSpec& spec) const { return cases_.count(case_to_json(spec).dump()) > 0; }

std::size_t CaseBuilder::retain(const std::vector<CaseSpec>& keep) {
  std::set<std::string> keys;
  for (const auto& spec : keep) keys.insert(case_to_json(spec).dump());
  std::size_t freed = 0;
  for (auto it = cases_.begin(); it != cases_.end();) {
    if (keys.count(it->first)) {
      ++it;
    } else {
      it = cases_.erase(it);
      ++freed;
    }
  }
  return freed;
}

const DeviceCase& CaseBuilder::get(const CaseSpec& spec) {
  const std::string key = case_to_json(spec).dump();
  if (auto it = cases_.find(key); it != cases_.end()) return *it->second;
  validate_case_spec(spec);
  load_helpers();
  const auto t0 = std::chrono::steady_clock::now();

  auto c = std::make_unique<DeviceCase>();
  c->spec = spec;
  c->layout = build_layout(spec);
  c->work = case_work(c->layout, spec.t_max);
  c->row_ptr = DeviceBuffer::from_vector(c->layout.row_ptr);
  c->col_idx = DeviceBuffer::from_vector(c->layout.col_idx);
  c->seq_lens = DeviceBuffer::from_vector(c->layout.seq_lens);
  const std::size_t n = c->qkv_elems();
  c->q = DeviceBuffer(n * sizeof(bf16_bits));
  c->k = DeviceBuffer(n * sizeof(bf16_bits));
  c->v = DeviceBuffer(n * sizeof(bf16_bits));
  c->o = DeviceBuffer(n * sizeof(bf16_bits));
  c->lse = DeviceBuffer(c->lse_elems() * sizeof(float));
  const auto seed = std::uint64_t(spec.seed);
  fill_normal(c->q.ptr(), seed, unsigned(Tensor::q), n);
  fill_normal(c->k.ptr(), seed, unsigned(Tensor::k), n);
  fill_normal(c->v.ptr(), seed, unsigned(Tensor::v), n);
  c->kernels = this;
  run_reference(*c);
  c->ref_o = c->o.to_vector<bf16_bits>(n);
  c->ref_lse = c->lse.to_vector<float>(c->lse_elems());
  c->ref_o_dev = DeviceBuffer(c->o.bytes());
  c->ref_lse_dev = DeviceBuffer(c->lse.bytes());
  check(cu::api().cuMemcpyDtoD(c->ref_o_dev.ptr(), c->o.ptr(), c->o.bytes()), "cuMemcpyDtoD(reference o)");
  check(cu::api().cuMemcpyDtoD(c->ref_lse_dev.ptr(), c->lse.ptr(), c->lse.bytes()), "cuMemcpyDtoD(reference lse)");
  c->build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const DeviceCase& out = *c;
  cases_.emplace(key, std::move(c));
  return out;
}

}  // namespace attn
