#include "db/shape_buckets.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "db/store_rows.hpp"

namespace attn {

std::string ShapeBucket::label() const {
  const std::string shape = fmt::format("t_max {}, B·H {}", t_max, batch_heads);
  return family ? fmt::format("{} {}", family_name(*family), shape) : shape;
}

std::vector<ShapeBucket> shape_buckets(const std::vector<CaseSpec>& cases, bool by_family) {
  using Key = std::tuple<int, int, int>;  // family (-1: any), t_max, batch*heads
  std::map<Key, ShapeBucket> buckets;
  for (const CaseSpec& c : cases) {
    const int bh = c.batch_size * c.num_heads;
    ShapeBucket& b = buckets[{by_family ? static_cast<int>(c.family) : -1, c.t_max, bh}];
    if (by_family) b.family = c.family;
    b.t_max = c.t_max;
    b.batch_heads = bh;
    b.case_ids.push_back(c.case_id);
  }
  std::vector<ShapeBucket> out;
  for (auto& [key, b] : buckets) {
    std::sort(b.case_ids.begin(), b.case_ids.end());
    out.push_back(std::move(b));
  }
  return out;
}

bool counts_for_buckets(const IterationRecord& it) {
  return (it.status == IterationStatus::keep || it.status == IterationStatus::discard) &&
         it.fidelity == Fidelity::full && it.geomean_ms.has_value();
}

std::optional<double> geomean_on_cases(const IterationRecord& it, const std::vector<std::string>& case_ids) {
  if (case_ids.empty()) return std::nullopt;
  double log_sum = 0;
  for (const std::string& id : case_ids) {
    const auto row = std::find_if(it.cases.begin(), it.cases.end(),
                                  [&](const CaseResultRecord& r) { return r.case_id == id; });
    if (row == it.cases.end() || !row->passed || !row->median_ms || !(*row->median_ms > 0)) return std::nullopt;
    log_sum += std::log(*row->median_ms);
  }
  return std::exp(log_sum / static_cast<double>(case_ids.size()));
}

std::vector<std::optional<BucketBest>> bucket_champions(const std::vector<IterationRecord>& iterations,
                                                        const std::vector<ShapeBucket>& buckets) {
  std::vector<std::optional<BucketBest>> best(buckets.size());
  for (const IterationRecord& it : iterations) {
    if (!counts_for_buckets(it)) continue;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const auto g = geomean_on_cases(it, buckets[b].case_ids);
      if (!g) continue;
      auto& cur = best[b];
      if (!cur || *g < cur->geomean_ms || (*g == cur->geomean_ms && it.iter < cur->iter)) cur = BucketBest{it.iter, *g};
    }
  }
  return best;
}

std::vector<IterationRecord> bucket_candidates(ExperimentDb& db, const std::string& suite,
                                               const std::vector<std::int64_t>& run_ids) {
  IterationQuery q;
  q.suite = suite;
  q.statuses = {IterationStatus::keep, IterationStatus::discard};
  q.fidelity = Fidelity::full;  // in SQL: a night's DB has four screened-out rows for one evaluated in full
  std::vector<IterationRecord> out;
  std::unordered_map<std::int64_t, std::size_t> at;  // iter -> index in out
  for (IterationRecord& it : db.iterations(q)) {
    if (!counts_for_buckets(it)) continue;
    if (!run_ids.empty() && std::find(run_ids.begin(), run_ids.end(), it.run_id) == run_ids.end()) continue;
    at.emplace(it.iter, out.size());
    out.push_back(std::move(it));
  }
  // Their cases in one statement (one query an iteration took ~20 s on a night's DB of 200,000 whole-suite rows).
  // Driven by a scan of the iterations in id order and their case rows by primary key (through the suite index
  // and a sort of every case row it took three times as long on a night's DB).
  auto st = db.connection().prepare(
      "SELECT r.iteration_id, k.case_id, k.family, r.median_ms, r.spread, r.samples, r.sm_clock_mhz, r.o_max_abs_diff, "
      "r.lse_max_abs_diff, r.passed FROM iteration_rows i CROSS JOIN case_rows r ON r.iteration_id = i.id JOIN cases k "
      "ON k.id = r.case_key WHERE +i.suite = ? AND i.fidelity = 'full' AND i.status IN ('keep', 'discard') "
      "ORDER BY i.id, k.case_id");
  st.bind(1, suite);
  while (st.step()) {
    const auto found = at.find(st.column_int64(0));
    if (found != at.end()) out[found->second].cases.push_back(db::rows::read_case(st, 1));
  }
  return out;
}

}  // namespace attn
