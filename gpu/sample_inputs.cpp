#include "gpu/sample_inputs.hpp"

#include <stdexcept>

#include "gpu/driver.hpp"
#include "kernels_templates/sample_rules.h"

namespace attn {

InputXor mask_transition(const InputMask& from, const InputMask& to) {
  InputXor x;
  if (from.magnitude != to.magnitude) {
    x.mag_a = from.magnitude;
    x.mag_b = to.magnitude;
  }
  if (from.v_signs != to.v_signs) {
    x.sign_a = from.v_signs;
    x.sign_b = to.v_signs;
  }
  return x;
}

InputMask fresh_mask(const InputMask& now, const SeedDraw& draw) {
  InputMask m;
  do m.magnitude = draw();
  while (m.magnitude == 0 || m.magnitude == now.magnitude);
  return m;
}

InputMask twin_mask(const InputMask& now, const SeedDraw& draw) {
  InputMask m = now;
  do m.v_signs = draw();
  while (m.v_signs == 0 || m.v_signs == now.v_signs);
  return m;
}

void xor_tensor_host(std::vector<bf16_bits>& x, unsigned tensor, const InputXor& m) {
  if (x.size() % 8 != 0) throw std::invalid_argument("xor_tensor_host needs a multiple of 8 elements");
  const unsigned long long ma = attn_sample::magnitude_stream(m.mag_a, tensor);
  const unsigned long long mb = attn_sample::magnitude_stream(m.mag_b, tensor);
  const unsigned long long sa = attn_sample::sign_stream(m.sign_a), sb = attn_sample::sign_stream(m.sign_b);
  for (std::size_t g = 0; g < x.size() / 8; ++g) {
    unsigned w[4] = {0, 0, 0, 0};
    if (m.mag_a) attn_sample::add_magnitude(ma, g, w);
    if (m.mag_b) attn_sample::add_magnitude(mb, g, w);
    if (tensor == 2) {
      if (m.sign_a) attn_sample::add_signs(sa, g, w);
      if (m.sign_b) attn_sample::add_signs(sb, g, w);
    }
    for (int p = 0; p < 4; ++p) {
      x[8 * g + 2 * p] ^= bf16_bits(w[p] & 0xFFFFu);
      x[8 * g + 2 * p + 1] ^= bf16_bits(w[p] >> 16);
    }
  }
}

SampleInputs::SampleInputs(const DeviceCase& c) : c_(c) {
  if (!c.kernels) throw std::logic_error("SampleInputs: case " + c.spec.case_id + " has no helper kernels");
}

SampleInputs::~SampleInputs() {
  try {
    if (last_stream_) restore(last_stream_);
  } catch (const CudaError&) {  // a dead context: the worker exits anyway
  }
}

void SampleInputs::go_to(const InputMask& to, CUstream s, bool poison) {
  last_stream_ = s;
  InputXor x = mask_transition(now_, to);
  x.poison = poison;
  c_.kernels->xor_inputs_async(c_, x, s);
  now_ = to;
}

void SampleInputs::fresh(CUstream s, const SeedDraw& draw) { go_to(fresh_mask(now_, draw), s, true); }

void SampleInputs::twin(CUstream s, const SeedDraw& draw) { go_to(twin_mask(now_, draw), s); }

void SampleInputs::restore(CUstream s) {
  go_to(InputMask{}, s);
  last_stream_ = nullptr;
}

}  // namespace attn
