#include "workload/inputs.hpp"

#include <cmath>
#include <stdexcept>
#include <thread>

namespace attn {
namespace {

// splitmix64 finaliser (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number generators").
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

// Keep in step with kernels_templates/fill_normal.cu (same constants, same double-precision Box-Muller).
float normal_sample(std::uint64_t seed, Tensor tensor, std::uint64_t index) {
  const std::uint64_t stream = splitmix64(seed ^ (std::uint64_t(tensor) << 60));
  const std::uint64_t h = splitmix64(stream + index * 0xD1B54A32D192ED03ull);
  const double u1 = double((h >> 40) + 1) * 0x1p-24;         // (0, 1]
  const double u2 = double((h >> 16) & 0xFFFFFFull) * 0x1p-24;  // [0, 1)
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

std::vector<bf16_bits> make_tensor(const CaseSpec& spec, Tensor tensor) {
  const std::size_t n = std::size_t(spec.batch_size) * spec.num_heads * spec.t_max * kHeadDim;
  std::vector<bf16_bits> out(n);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (std::size_t i = t; i < n; i += threads)
        out[i] = float_to_bf16(normal_sample(std::uint64_t(spec.seed), tensor, i));
    });
  }
  for (auto& th : pool) th.join();
  return out;
}

}  // namespace attn
