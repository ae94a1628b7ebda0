// bfloat16 <-> float on the host (round to nearest even, as torch's .to(torch.bfloat16)).
#pragma once
#include <cstdint>
#include <cstring>

namespace attn {

using bf16_bits = std::uint16_t;

inline float bf16_to_float(bf16_bits b) {
  std::uint32_t u = std::uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Round-to-nearest-even; NaN stays NaN.
inline bf16_bits float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_bits((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16_bits(u >> 16);
}

}  // namespace attn
