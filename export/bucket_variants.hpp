// Bucket champions for the export (issue 9, per-shape buckets): per (family, t_max, batch*heads) bucket of
// the tuned cases, the iteration fastest on the bucket's cases (db/shape_buckets.hpp, the report's rule),
// compared with the variant those cases get otherwise, and which of them become extra variants within the
// harness's 16-variant limit.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/shape_buckets.hpp"

namespace attn {

/// What the export did with a bucket.
enum class BucketStatus {
  exported,                ///< its champion became a new variant and serves the bucket's cases
  routed,                  ///< its champion's variant is exported anyway (a champion); the cases go to it
  below_margin,            ///< gain not above the margin (noise guard): the cases keep their variant
  same_variant,            ///< the champion is the variant the cases get anyway
  dropped_cap,             ///< would gain, but the 16-variant cap was reached by larger weighted gains
  not_exportable,          ///< would gain, but its cubin / source cannot be exported (note says why)
  no_champion,             ///< no whole-suite iteration measured and passed every case of the bucket
  reference_not_measured,  ///< the variant the cases get otherwise has no passed median on every case
  unreached,               ///< would gain, but no dispatch rule reaches its variant (outvoted): not exported
};
const char* to_string(BucketStatus s);

/// One bucket of the tuned cases and the decision about it.
struct BucketRow {
  ShapeBucket bucket;                  ///< family, t_max, batch*heads, case ids
  std::optional<BucketBest> champion;  ///< fastest iteration on the bucket's cases (geomean, ms)
  std::int64_t champion_variant_id = 0;
  int reference = 0;                   ///< plan index of the variant the cases get otherwise
  std::optional<double> reference_ms;  ///< its geomean on the same cases (ms)
  double gain = 0;                     ///< 1 - champion / reference: 0.10 = 10 % faster
  /// ln(reference / champion) * bucket cases / the family's cases: the drop of ln(family geomean) if the
  /// bucket's cases speed up. The suite score is a geomean over families, so each family weighs the same,
  /// and within a family a bucket counts by its share of the cases (the family median moves with it).
  double weight = 0;
  BucketStatus status = BucketStatus::no_champion;
  std::string note;                    ///< why not exportable
  int variant = -1;                    ///< plan index serving the bucket's cases (exported / routed)
};

/// What the bucket step knows about a plan index: its variant id and the iteration whose per-case medians
/// stand for it (with cases).
struct MeasuredVariant {
  std::int64_t variant_id = 0;
  const IterationRecord* iteration = nullptr;
};

/// Rows for the family buckets of `cases` (shape_buckets by family): champions among `candidates` (with
/// their cases and variant ids), the reference `reference_of(family)` (plan index into `measured`), gain and
/// weight. Statuses: no_champion, reference_not_measured, same_variant, below_margin (gain <= margin), and
/// dropped_cap for the rest until choose_bucket_variants decides.
std::vector<BucketRow> measure_buckets(const std::vector<CaseSpec>& cases, const std::vector<IterationRecord>& candidates,
                                       const std::vector<MeasuredVariant>& measured,
                                       const std::function<int(Family)>& reference_of, double margin);

/// Decides the rows still open, largest weight first (ties: larger gain, then bucket order): a champion
/// whose variant id is in `index_of_variant` is `routed` to it; otherwise, while the plan has fewer than
/// kMaxExportVariants (`variant_count`), `add_variant(iter)` exports it and returns its plan index
/// (`exported`; index_of_variant learns it, so another bucket with that champion variant is routed), or
/// throws std::invalid_argument (`not_exportable`, note = the message). The rest stay dropped_cap.
void choose_bucket_variants(std::vector<BucketRow>& rows, int variant_count,
                            std::map<std::int64_t, int>& index_of_variant,
                            const std::function<int(std::int64_t iter)>& add_variant);

/// One JSON object per row for export_plan.json and the printout: bucket, family, t_max, batch_heads,
/// case_ids, champion_iter, champion_ms, reference (variant name), reference_ms, gain, weight, status,
/// note, variant (name or null). `names` are the plan's variant names.
nlohmann::json bucket_rows_json(const std::vector<BucketRow>& rows, const std::vector<std::string>& names);

}  // namespace attn
