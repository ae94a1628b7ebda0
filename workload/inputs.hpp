// Random q/k/v of a case: bf16 values of N(0, 1), counter-based so the host and the GPU (gpu/ fills the
// same formula on the device) produce the same tensors from (seed, tensor, element index).
#pragma once
#include <cstdint>
#include <vector>

#include "workload/bf16.hpp"
#include "workload/case_spec.hpp"

namespace attn {

/// Which tensor of a case: q = 0, k = 1, v = 2 (part of the counter, so the three differ).
enum class Tensor : std::uint32_t { q = 0, k = 1, v = 2 };

/// N(0,1) sample for element `index` of `tensor`: splitmix64 of (seed, tensor, index) gives two 24-bit
/// uniforms, Box-Muller gives the normal. Declared `inline` with the formula in the header so that
/// kernels_templates/fill_normal.cu can copy it line for line.
float normal_sample(std::uint64_t seed, Tensor tensor, std::uint64_t index);

/// The whole tensor (batch, heads, t_max, 128) as bf16 bits, row-major. Uses all hardware threads.
std::vector<bf16_bits> make_tensor(const CaseSpec& spec, Tensor tensor);

}  // namespace attn
