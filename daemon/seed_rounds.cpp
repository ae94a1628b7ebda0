// Round and held-out root seeds.
#include "daemon/seed_rounds.hpp"

#include <xxhash.h>

#include <fmt/format.h>

namespace attn {

bool suite_has_root_seed(const std::string& suite) { return suite == "quick" || suite == "full" || suite == "broad"; }

std::int64_t round_root_seed(std::int64_t base, std::int64_t run_id, std::int64_t round, std::int64_t holdout_seed) {
  if (round == 0) return base;
  for (std::int64_t salt = 0;; ++salt) {
    const std::string payload = salt == 0 ? fmt::format("rotate:{}:{}:{}", base, run_id, round)
                                          : fmt::format("rotate:{}:{}:{}:{}", base, run_id, round, salt);
    const auto seed = std::int64_t(XXH64(payload.data(), payload.size(), 0) % 2147483647ull);
    if (seed != holdout_seed && seed != base) return seed;
  }
}

}  // namespace attn
