#include "export/bucket_variants.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "export/plan.hpp"

namespace attn {

const char* to_string(BucketStatus s) {
  switch (s) {
    case BucketStatus::exported: return "exported";
    case BucketStatus::routed: return "routed";
    case BucketStatus::below_margin: return "below margin";
    case BucketStatus::same_variant: return "same variant";
    case BucketStatus::dropped_cap: return "dropped (16-variant cap)";
    case BucketStatus::not_exportable: return "not exportable";
    case BucketStatus::no_champion: return "no iteration measured every case";
    case BucketStatus::reference_not_measured: return "reference not measured on every case";
    case BucketStatus::unreached: return "not exported (no dispatch rule reaches it)";
  }
  return "?";
}

std::vector<BucketRow> measure_buckets(const std::vector<CaseSpec>& cases, const std::vector<IterationRecord>& candidates,
                                       const std::vector<MeasuredVariant>& measured,
                                       const std::function<int(Family)>& reference_of, double margin) {
  std::map<Family, int> family_cases;
  for (const CaseSpec& c : cases) ++family_cases[c.family];
  std::map<std::int64_t, std::int64_t> variant_of_iter;
  for (const IterationRecord& it : candidates)
    if (it.variant_id) variant_of_iter[it.iter] = *it.variant_id;

  const std::vector<ShapeBucket> buckets = shape_buckets(cases, true);
  const auto best = bucket_champions(candidates, buckets);
  std::vector<BucketRow> rows;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    BucketRow row;
    row.bucket = buckets[b];
    row.champion = best[b];
    row.reference = reference_of(*row.bucket.family);
    const MeasuredVariant& ref = measured.at(static_cast<std::size_t>(row.reference));
    if (ref.iteration) row.reference_ms = geomean_on_cases(*ref.iteration, row.bucket.case_ids);
    const auto vid = row.champion ? variant_of_iter.find(row.champion->iter) : variant_of_iter.end();
    if (!row.champion || vid == variant_of_iter.end()) {
      row.status = BucketStatus::no_champion;
    } else if (!row.reference_ms) {
      row.champion_variant_id = vid->second;
      row.status = BucketStatus::reference_not_measured;
    } else {
      row.champion_variant_id = vid->second;
      row.gain = 1.0 - row.champion->geomean_ms / *row.reference_ms;
      row.weight = std::log(*row.reference_ms / row.champion->geomean_ms) *
                   static_cast<double>(row.bucket.case_ids.size()) / family_cases[*row.bucket.family];
      if (row.champion_variant_id == ref.variant_id) row.status = BucketStatus::same_variant;
      else if (!(row.gain > margin)) row.status = BucketStatus::below_margin;
      else row.status = BucketStatus::dropped_cap;  // open: choose_bucket_variants decides
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void choose_bucket_variants(std::vector<BucketRow>& rows, int variant_count,
                            std::map<std::int64_t, int>& index_of_variant,
                            const std::function<int(std::int64_t iter)>& add_variant) {
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (rows[a].weight != rows[b].weight) return rows[a].weight > rows[b].weight;
    return rows[a].gain > rows[b].gain;
  });
  for (std::size_t i : order) {
    BucketRow& row = rows[i];
    if (row.status != BucketStatus::dropped_cap) continue;
    if (const auto it = index_of_variant.find(row.champion_variant_id); it != index_of_variant.end()) {
      row.status = BucketStatus::routed;
      row.variant = it->second;
      continue;
    }
    if (variant_count >= kMaxExportVariants) continue;
    try {
      row.variant = add_variant(row.champion->iter);
    } catch (const std::invalid_argument& e) {
      row.status = BucketStatus::not_exportable;
      row.note = e.what();
      continue;
    }
    row.status = BucketStatus::exported;
    index_of_variant[row.champion_variant_id] = row.variant;
    ++variant_count;
  }
}

nlohmann::json bucket_rows_json(const std::vector<BucketRow>& rows, const std::vector<std::string>& names) {
  auto opt = [](const std::optional<double>& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); };
  nlohmann::json out = nlohmann::json::array();
  for (const BucketRow& r : rows) {
    const bool measured = r.champion && r.reference_ms;
    out.push_back({{"bucket", r.bucket.label()},
                   {"family", family_name(*r.bucket.family)},
                   {"t_max", r.bucket.t_max},
                   {"batch_heads", r.bucket.batch_heads},
                   {"case_ids", r.bucket.case_ids},
                   {"champion_iter", r.champion ? nlohmann::json(r.champion->iter) : nlohmann::json(nullptr)},
                   {"champion_ms", r.champion ? nlohmann::json(r.champion->geomean_ms) : nlohmann::json(nullptr)},
                   {"reference", names.at(static_cast<std::size_t>(r.reference))},
                   {"reference_ms", opt(r.reference_ms)},
                   {"gain", measured ? nlohmann::json(r.gain) : nlohmann::json(nullptr)},
                   {"weight", measured ? nlohmann::json(r.weight) : nlohmann::json(nullptr)},
                   {"status", to_string(r.status)},
                   {"note", r.note},
                   {"variant", r.variant >= 0 ? nlohmann::json(names.at(static_cast<std::size_t>(r.variant)))
                                              : nlohmann::json(nullptr)}});
  }
  return out;
}

}  // namespace attn
