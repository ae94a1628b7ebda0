// libFuzzer target: the compact config parser (core/config.cpp), "BLOCK_M=128,BLOCK_N=64" (iters.tsv's
// params column), and the config JSON parser {"BLOCK_M":128}. Contract: std::invalid_argument for bad
// input, nothing else; what parses prints back to text that parses to the same config.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "tuner/space.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const attn::Config c = attn::config_from_compact(text);
    if (attn::config_from_compact(attn::config_to_compact(c)) != c) std::abort();
    if (attn::config_from_json(attn::config_to_json(c)) != c) std::abort();
  } catch (const std::invalid_argument&) {
  }
  try {
    const attn::Config c = attn::config_from_json(text);
    if (attn::config_from_json(attn::config_to_json(c)) != c) std::abort();
    if (attn::config_from_compact(attn::config_to_compact(c)) != c) std::abort();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
