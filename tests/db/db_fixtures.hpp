// Shared by tests/db/*.cpp: realistic records for a fresh experiment DB in a temp dir.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "db/records.hpp"
#include "db/store.hpp"

namespace attn::test {

/// A run of suite `suite` with GPU/host fields filled.
RunRecord sample_run(const std::string& suite = "quick");
/// A compiled variant of template "fa2_mma" with config {BLOCK_N, num_warps, stages}.
VariantRecord sample_variant(std::int64_t block_n, std::int64_t warps, std::int64_t stages);
/// Case results for one case per family, latencies scaled by `scale` (ms around 0.07 * scale).
std::vector<CaseResultRecord> sample_cases(double scale);
/// Begins and finishes a keep/discard iteration of `variant` on run `run_id` with scores derived
/// from `scale` (geomean = scale * 0.08 ms); returns the iter number.
std::int64_t add_scored_iteration(ExperimentDb& db, std::int64_t run_id, const VariantRecord& variant,
                                  std::int64_t variant_id, double scale, IterationStatus status,
                                  const std::string& description);

}  // namespace attn::test

namespace attn {
/// GoogleTest printers (JSON) so that a failed comparison shows the fields.
void PrintTo(const CaseResultRecord& c, std::ostream* os);
void PrintTo(const IterationRecord& it, std::ostream* os);
void PrintTo(const VariantRecord& v, std::ostream* os);
void PrintTo(const RunRecord& r, std::ostream* os);
void PrintTo(const ChampionRecord& c, std::ostream* os);
}  // namespace attn
