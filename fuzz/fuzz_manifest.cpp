// libFuzzer target: the suite-manifest parser (workload/case_spec.cpp), a JSON list of CaseSpec objects in
// the harness's --suite-manifest format. Contract: std::invalid_argument for bad input, nothing else; an
// accepted suite writes back to a manifest that reads to the same suite.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "workload/case_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto suite = attn::suite_from_manifest_json(text);
    for (const auto& c : suite) attn::validate_case_spec(c);  // accepted cases keep the harness's rules
    if (attn::suite_from_manifest_json(attn::suite_to_manifest_json(suite)) != suite) std::abort();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
