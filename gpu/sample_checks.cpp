#include "gpu/sample_checks.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "gpu/driver_api.hpp"

namespace attn {

ValidationResult validate_case(const DeviceCase& c, const DeviceValidator* validator, CUstream stream,
                               const Tolerances& tol, CaseReference which, ColumnFlip o_flip) {
  const bool check = which == CaseReference::check;
  if (validator)
    return validator->validate_against(c, check ? c.check_ref_o_dev.ptr() : c.ref_o_dev.ptr(),
                                       check ? c.check_ref_lse_dev.ptr() : c.ref_lse_dev.ptr(), stream, tol, o_flip);
  ::attn::check(cu::api().cuStreamSynchronize(stream), "cuStreamSynchronize(validation)");
  auto o = c.o.to_vector<bf16_bits>(c.qkv_elems());
  const auto lse = c.lse.to_vector<float>(c.lse_elems());
  // Negating the candidate's flipped columns instead of the reference's: |a - (-b)| = |-a - b|, same verdict.
  if (!(o_flip == ColumnFlip{}))
    for (std::size_t i = 0; i < o.size(); ++i)
      if (o_flip.flips(unsigned(i % kHeadDim))) o[i] ^= 0x8000;
  return validate_outputs(o, lse, check ? c.check_ref_o : c.ref_o, check ? c.check_ref_lse : c.ref_lse, tol);
}

void poison_outputs(const DeviceCase& c, CUstream stream) {
  check(cu::api().cuMemsetD8Async(c.o.ptr(), 0xFF, c.o.bytes(), stream), "cuMemsetD8Async(o)");
  check(cu::api().cuMemsetD8Async(c.lse.ptr(), 0xFF, c.lse.bytes(), stream), "cuMemsetD8Async(lse)");
}

FreshSamples::FreshSamples(const DeviceCase& c, const DeviceValidator* validator, const Tolerances& tol,
                           std::mt19937_64& rng, CUdeviceptr slots, int max_samples)
    : c_(c), validator_(slots ? validator : nullptr), tol_(tol), rng_(rng), slots_(slots), max_samples_(max_samples) {}

FreshSamples::~FreshSamples() {
  try {
    if (last_stream_) restore(last_stream_);
  } catch (const CudaError&) {  // a dead context: the worker exits anyway
  }
}

void FreshSamples::before(CUstream s) {
  last_stream_ = s;
  ColumnFlip qk = qk_, v{rng_(), rng_()};
  while (qk == ColumnFlip{}) qk = {rng_(), rng_()};            // once per case: q and k unlike the tuning inputs
  while (v == v_ || v == ColumnFlip{}) v = {rng_(), rng_()};  // every sample: v unlike the sample before
  c_.flip_inputs(qk_ ^ qk, v_ ^ v, s);
  qk_ = qk;
  v_ = v;
  poison_outputs(c_, s);
}

void FreshSamples::record(int sample, const ValidationResult& r) {
  ++validated_;
  o_diff_ = std::max(o_diff_, r.o_max_abs_diff);
  lse_diff_ = std::max(lse_diff_, r.lse_max_abs_diff);
  if (r.passed || failure_) return;
  failure_ = fmt::format(
      "case {}: timed sample {}, on fresh inputs with o and lse poisoned before it, is wrong (o diff {:.3g}, lse "
      "diff {:.3g}): the kernel skipped or reused work of an earlier launch",
      c_.spec.case_id, sample + 1, r.o_max_abs_diff, r.lse_max_abs_diff);
}

bool FreshSamples::after(CUstream s, int sample) {
  if (validator_ && pending_ < max_samples_) {
    const CUdeviceptr slot = slots_ + CUdeviceptr(pending_) * DeviceValidator::kCounters * sizeof(unsigned);
    check(cu::api().cuMemsetD32Async(slot, 0, DeviceValidator::kCounters, s), "cuMemsetD32Async(sample counters)");
    validator_->enqueue_against(c_, c_.ref_o_dev.ptr(), c_.ref_lse_dev.ptr(), s, tol_, v_, slot);
    ++pending_;
    return true;
  }
  record(sample, validate_case(c_, validator_, s, tol_, CaseReference::tuning, v_));
  return !failure_;
}

void FreshSamples::finish(CUstream s) {
  if (pending_ == 0) return;
  check(cu::api().cuStreamSynchronize(s), "cuStreamSynchronize(sample validations)");
  std::vector<unsigned> h(std::size_t(pending_) * DeviceValidator::kCounters);
  check(cu::api().cuMemcpyDtoH(h.data(), slots_, h.size() * sizeof(unsigned)), "cuMemcpyDtoH(sample counters)");
  for (int i = 0; i < pending_; ++i) record(i, DeviceValidator::result_of(&h[std::size_t(i) * DeviceValidator::kCounters]));
  pending_ = 0;
}

void FreshSamples::restore(CUstream s) {
  if (!(qk_ == ColumnFlip{}) || !(v_ == ColumnFlip{})) c_.flip_inputs(qk_, v_, s);
  qk_ = v_ = ColumnFlip{};
  last_stream_ = nullptr;
}

}  // namespace attn
