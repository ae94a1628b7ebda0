#include "gpu/sample_checks.hpp"

#include <algorithm>

#include "gpu/driver_api.hpp"

namespace attn {

ValidationResult validate_case(const DeviceCase& c, const DeviceValidator* validator, CUstream stream,
                               const Tolerances& tol) {
  if (validator) return validator->validate(c, stream, tol);
  ::attn::check(cu::api().cuStreamSynchronize(stream), "cuStreamSynchronize(validation)");
  return validate_outputs(c.o.to_vector<bf16_bits>(c.qkv_elems()), c.lse.to_vector<float>(c.lse_elems()), c.ref_o,
                          c.ref_lse, tol);
}

void poison_outputs(const DeviceCase& c, CUstream stream) {
  check(cu::api().cuMemsetD8Async(c.o.ptr(), 0xFF, c.o.bytes(), stream), "cuMemsetD8Async(o)");
  check(cu::api().cuMemsetD8Async(c.lse.ptr(), 0xFF, c.lse.bytes(), stream), "cuMemsetD8Async(lse)");
}

void SampleBuffers::reserve(int slots, int rows) {
  if (slots > slots_) {
    counters_ = DeviceBuffer(std::size_t(slots) * DeviceValidator::kSampleCounters * sizeof(unsigned));
    slots_ = slots;
  }
  if (rows > rows_count_) {
    rows_ = DeviceBuffer(std::size_t(rows) * sizeof(std::int32_t));
    ref_o_ = DeviceBuffer(std::size_t(rows) * 128 * sizeof(bf16_bits));
    ref_lse_ = DeviceBuffer(std::size_t(rows) * sizeof(float));
    rows_count_ = rows;
  }
}

CUdeviceptr SampleBuffers::slot(int i) const {
  return counters_.ptr() + CUdeviceptr(i) * DeviceValidator::kSampleCounters * sizeof(unsigned);
}

RowsBuffer SampleBuffers::rows(int count) const {
  if (count <= 0) return {};
  return {rows_.ptr(), ref_o_.ptr(), ref_lse_.ptr(), std::min(count, rows_count_)};
}

SampleChecks::SampleChecks(const DeviceCase& c, const DeviceValidator* validator, const Tolerances& tol,
                           SampleBuffers& buffers, int rows)
    : c_(c), validator_(validator), tol_(tol), buffers_(buffers), rows_(std::max(rows, 0)) {
  if (!c.kernels) throw std::logic_error("SampleChecks: case " + c.spec.case_id + " has no helper kernels");
}

void SampleChecks::record(int sample, const SampleVerdict& v) {
  ++validated_;
  o_diff_ = std::max(o_diff_, v.o_max_abs_diff);
  lse_diff_ = std::max(lse_diff_, v.lse_max_abs_diff);
  if (!v.passed && !failure_) failure_ = sample_failure_message(c_.spec.case_id, sample + 1, v);
}

bool SampleChecks::after(CUstream s, int sample, std::uint64_t row_seed) {
  if (validator_ && int(pending_.size()) < buffers_.slots()) {
    if (!slots_zeroed_) {  // one memset for the case's checks, not one per sample
      check(cu::api().cuMemsetD32Async(buffers_.slot(0), 0, std::size_t(buffers_.slots()) * DeviceValidator::kSampleCounters, s),
            "cuMemsetD32Async(sample counters)");
      slots_zeroed_ = true;
    }
    validator_->enqueue_sample(c_, row_seed, rows_, s, tol_, buffers_.slot(int(pending_.size())));
    pending_.push_back(sample);
    return true;
  }
  record(sample, check_now(s, row_seed));
  return !failure_;
}

void SampleChecks::finish(CUstream s) {
  if (pending_.empty()) return;
  check(cu::api().cuStreamSynchronize(s), "cuStreamSynchronize(sample checks)");
  std::vector<unsigned> h(pending_.size() * DeviceValidator::kSampleCounters);
  check(cu::api().cuMemcpyDtoH(h.data(), buffers_.slot(0), h.size() * sizeof(unsigned)), "cuMemcpyDtoH(sample counters)");
  for (std::size_t i = 0; i < pending_.size(); ++i)
    record(pending_[i], DeviceValidator::sample_verdict_of(&h[i * DeviceValidator::kSampleCounters], rows_));
  pending_.clear();
  slots_zeroed_ = false;
}

SampleVerdict SampleChecks::check_now(CUstream s, std::uint64_t row_seed) {
  if (validator_) return validator_->check_sample(c_, row_seed, rows_, s, tol_);
  // The host path: the drawn rows' reference on the device (the same rows, the same bits), compared here.
  const RowsBuffer rows = buffers_.rows(rows_);
  c_.kernels->reference_rows_async(c_, row_seed, rows, s);
  check(cu::api().cuStreamSynchronize(s), "cuStreamSynchronize(sample check)");
  const auto o = c_.o.to_vector<bf16_bits>(c_.qkv_elems());
  const auto lse = c_.lse.to_vector<float>(c_.lse_elems());
  std::vector<std::int32_t> drawn(std::size_t(rows.count));
  std::vector<bf16_bits> ref_o(std::size_t(rows.count) * 128);
  std::vector<float> ref_lse(std::size_t(rows.count));
  if (rows.count > 0) {
    check(cu::api().cuMemcpyDtoH(drawn.data(), rows.rows, drawn.size() * sizeof(std::int32_t)), "cuMemcpyDtoH(rows)");
    check(cu::api().cuMemcpyDtoH(ref_o.data(), rows.ref_o, ref_o.size() * sizeof(bf16_bits)), "cuMemcpyDtoH(rows o)");
    check(cu::api().cuMemcpyDtoH(ref_lse.data(), rows.ref_lse, ref_lse.size() * sizeof(float)), "cuMemcpyDtoH(rows lse)");
  }
  return check_sample({o, lse, c_.layout.seq_lens, c_.spec.num_heads, c_.spec.t_max, drawn, ref_o, ref_lse}, tol_);
}

}  // namespace attn
