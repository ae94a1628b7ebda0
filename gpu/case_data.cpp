#include "gpu/case_data.hpp"

#include <set>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>

#include <xxhash.h>

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

std::uint64_t check_seed_for(std::uint64_t check_root, const CaseSpec& spec) {
  auto mix = [](std::uint64_t x) {  // splitmix64's finalizer
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  };
  const std::string key = case_to_json(spec).dump();
  std::uint64_t s = mix(check_root ^ XXH3_64bits(key.data(), key.size()));
  while (s == std::uint64_t(spec.seed)) s = mix(s);
  return s;
}

void DeviceCase::mask_inputs(std::uint64_t seed, CUstream stream) const {
  if (!masker) throw std::logic_error("DeviceCase::mask_inputs: case " + spec.case_id + " has no input masker");
  const std::size_t n = qkv_elems();
  masker->mask_async(q.ptr(), seed, unsigned(Tensor::q), n, stream);
  masker->mask_async(k.ptr(), seed, unsigned(Tensor::k), n, stream);
  masker->mask_async(v.ptr(), seed, unsigned(Tensor::v), n, stream);
}

void DeviceCase::flip_inputs(ColumnFlip qk, ColumnFlip v_flip, CUstream stream) const {
  if (!masker) throw std::logic_error("DeviceCase::flip_inputs: case " + spec.case_id + " has no input masker");
  const std::size_t n = qkv_elems();
  masker->flip_async(q.ptr(), qk, n, stream);
  masker->flip_async(k.ptr(), qk, n, stream);
  masker->flip_async(v.ptr(), v_flip, n, stream);
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
  if (options_.check_root) {
    check_root_ = *options_.check_root;
  } else {
    std::random_device rd;
    check_root_ = (std::uint64_t(rd()) << 32) ^ rd();
  }
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
    mask_fn_ = fill_module_->function("mask_check_bf16");
    flip_fn_ = fill_module_->function("flip_columns_bf16");
  }
}

void CaseBuilder::load_helpers() {
  load_fill();
  if (!reference_module_) {
    reference_module_ = compile_helper(compiler_, options_.reference_source, options_.reference_kernel);
    reference_ = load_attn_kernel(*reference_module_, options_.reference_kernel);
  }
}

void CaseBuilder::launch_elementwise(CUfunction fn, const char* what, CUdeviceptr x, std::uint64_t seed,
                                     unsigned tensor, std::uint64_t n, unsigned per_thread, CUstream stream) {
  const std::uint64_t blocks_needed = (n / per_thread + 255) / 256;
  const unsigned grid = unsigned(std::min<std::uint64_t>(blocks_needed, std::uint64_t(ctx_.info().sm_count) * 16));
  unsigned long long seed_arg = seed, n_arg = n;
  unsigned tensor_arg = tensor;
  void* params[] = {&x, &seed_arg, &tensor_arg, &n_arg};
  check(cu::api().cuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, 0, stream, params, nullptr), what);
}

void CaseBuilder::fill_normal(CUdeviceptr out, std::uint64_t seed, unsigned tensor, std::uint64_t n) {
  load_fill();
  if (n == 0) return;
  launch_elementwise(fill_fn_, "cuLaunchKernel(fill_normal_bf16)", out, seed, tensor, n, 1, nullptr);
  ctx_.synchronize();
}

void CaseBuilder::mask_async(CUdeviceptr x, std::uint64_t seed, unsigned tensor, std::uint64_t n, CUstream stream) {
  load_fill();
  if (n % 8 != 0) throw std::invalid_argument("mask_check_bf16 needs a multiple of 8 elements");
  if (n == 0) return;
  launch_elementwise(mask_fn_, "cuLaunchKernel(mask_check_bf16)", x, seed, tensor, n, 8, stream);
}

void CaseBuilder::flip_async(CUdeviceptr x, ColumnFlip flip, std::uint64_t n, CUstream stream) {
  load_fill();
  if (n % 128 != 0) throw std::invalid_argument("flip_columns_bf16 needs rows of 128 elements");
  if (n == 0 || flip == ColumnFlip{}) return;
  const std::uint64_t blocks_needed = (n / 8 + 255) / 256;
  const unsigned grid = unsigned(std::min<std::uint64_t>(blocks_needed, std::uint64_t(ctx_.info().sm_count) * 16));
  unsigned long long n_arg = n, lo = flip.lo, hi = flip.hi;
  void* params[] = {&x, &n_arg, &lo, &hi};
  check(cu::api().cuLaunchKernel(flip_fn_, grid, 1, 1, 256, 1, 1, 0, stream, params, nullptr),
        "cuLaunchKernel(flip_columns_bf16)");
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
  if (options_.check_sets) {
    // The check set first, then the mask again: the buffers end with the tuning inputs and their reference.
    c->masker = this;
    c->check_seed = check_seed_for(check_root_, spec);
    c->mask_inputs(c->check_seed, nullptr);
    run_reference(*c);  // synchronizes after the legacy-stream mask
    c->check_ref_o = c->o.to_vector<bf16_bits>(n);
    c->check_ref_lse = c->lse.to_vector<float>(c->lse_elems());
    c->check_ref_o_dev = DeviceBuffer(c->o.bytes());
    c->check_ref_lse_dev = DeviceBuffer(c->lse.bytes());
    check(cu::api().cuMemcpyDtoD(c->check_ref_o_dev.ptr(), c->o.ptr(), c->o.bytes()), "cuMemcpyDtoD(check o)");
    check(cu::api().cuMemcpyDtoD(c->check_ref_lse_dev.ptr(), c->lse.ptr(), c->lse.bytes()), "cuMemcpyDtoD(check lse)");
    c->mask_inputs(c->check_seed, nullptr);
  }
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
