// Shape buckets (issue 9): groups of a suite's cases by (t_max, batch*heads), optionally also by family,
// and the best whole-suite iteration on each bucket's cases. One rule for the morning report (its
// "per shape bucket" table) and for `attn-tuner export` (bucket champions as extra variants).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/records.hpp"
#include "db/store.hpp"
#include "workload/case_spec.hpp"

namespace attn {

/// Cases of one shape: t_max (tokens) and batch_size * num_heads, and the family when bucketed by family.
struct ShapeBucket {
  std::optional<Family> family;       ///< none: every family
  int t_max = 0;
  int batch_heads = 0;
  std::vector<std::string> case_ids;  ///< non-empty, sorted
  /// "t_max 8192, B·H 32", prefixed with "sliding_window " when bucketed by family.
  std::string label() const;
};

/// The buckets of `cases`, ordered by (family, t_max, batch_heads); by_family false merges the families.
std::vector<ShapeBucket> shape_buckets(const std::vector<CaseSpec>& cases, bool by_family);

/// True when `it` may be a bucket champion: keep or discard, evaluated on the whole suite (fidelity
/// full), with a geomean (the report's "scored" iterations).
bool counts_for_buckets(const IterationRecord& it);

/// Geometric mean (ms) of `it`'s per-case medians over `case_ids`; nullopt unless `it.cases` has a passed
/// row with a median for every one of them.
std::optional<double> geomean_on_cases(const IterationRecord& it, const std::vector<std::string>& case_ids);

/// One bucket's best iteration and its geomean over the bucket's cases (ms).
struct BucketBest {
  std::int64_t iter = 0;
  double geomean_ms = 0;
};

/// Per bucket (same order), the iteration of `iterations` (with their cases) that counts_for_buckets and
/// has the lowest geomean_on_cases; ties go to the lowest iter. nullopt where no iteration measured and
/// passed every case of the bucket.
std::vector<std::optional<BucketBest>> bucket_champions(const std::vector<IterationRecord>& iterations,
                                                        const std::vector<ShapeBucket>& buckets);

/// The keep/discard whole-suite iterations of `suite` with their case results (one statement for all cases),
/// oldest first; only those of `run_ids` when that is non-empty.
std::vector<IterationRecord> bucket_candidates(ExperimentDb& db, const std::string& suite,
                                               const std::vector<std::int64_t>& run_ids = {});

}  // namespace attn
