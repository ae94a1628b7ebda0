// Case seeds for champions that hold on unseen cases: the root seed of each round of a --rotate-seeds run,
// and the held-out root seed that tuning never uses (docs/tuner.md, "Seeds").
#pragma once
#include <cstdint>
#include <string>

namespace attn {

/// The default held-out root seed. Tuning never uses it: `run` refuses it as --root-seed, and the
/// rotation skips it. Any fixed value would do; this one is just far from the small seeds people type.
inline constexpr std::int64_t kDefaultHoldoutSeed = 1'000'003;

/// True when `suite` is a built-in suite whose case seeds derive from a root seed (quick, full, broad);
/// false for smoke and local-dev (fixed seeds) and for any other name (a manifest's cases carry their
/// own seeds). Only such suites can rotate seeds or have a held-out seed.
bool suite_has_root_seed(const std::string& suite);

/// Root seed of round `round` (0, 1, 2, ...) of run `run_id`: round 0 is `base` (so a run without
/// rotation and the first round agree); later rounds XXH64("rotate:<base>:<run_id>:<round>") mod
/// (2^31 - 1), stepping past `holdout_seed`. Deterministic: a resumed DB's next run draws new seeds
/// because its run_id differs.
std::int64_t round_root_seed(std::int64_t base, std::int64_t run_id, std::int64_t round, std::int64_t holdout_seed);

}  // namespace attn
