#include "report/report_cases.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "db/shape_buckets.hpp"
#include "workload/case_spec.hpp"
#include "workload/layout.hpp"

namespace attn {
namespace {

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

std::vector<CaseSpec> suite_of(const RunRecord& run) {
  if (!run.suite_json.empty()) {
    try {
      return suite_from_manifest_json(run.suite_json);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("run {}: its suite_json is not a suite manifest: {}", run.id, e.what()));
    }
  }
  const auto& names = builtin_suite_names();
  if (std::find(names.begin(), names.end(), run.suite) != names.end()) return builtin_suite(run.suite);
  return {};
}

nlohmann::json case_json(const CaseSpec& c, const Ceilings& ceil) {
  const CaseWork w = case_work(build_layout(c), c.t_max);
  const int bh = c.batch_size * c.num_heads;
  return {{"case_id", c.case_id},
          {"family", family_name(c.family)},
          {"batch_size", c.batch_size},
          {"num_heads", c.num_heads},
          {"t_max", c.t_max},
          {"batch_heads", bh},
          {"bucket", fmt::format("t_max {}, B·H {}", c.t_max, bh)},
          {"flops", w.flops},
          {"bytes", w.bytes},
          {"floor_us", w.floor_s(ceil) * 1e6},
          {"bound", w.compute_bound(ceil) ? "compute" : "memory"}};
}

}  // namespace

NamedCeilings ceilings_for_gpu(const std::string& gpu_name) {
  if (contains(gpu_name, "H200")) return {{989e12, 4.8e12}, "H200 datasheet: dense bf16, HBM3e"};
  if (contains(gpu_name, "H100") && contains(gpu_name, "PCIe"))
    return {{756e12, 2.0e12}, "H100 PCIe datasheet: dense bf16, HBM2e"};
  if (contains(gpu_name, "H100")) return {{989e12, 3.35e12}, "H100 SXM datasheet: dense bf16, HBM3"};
  return {Ceilings{}, fmt::format("H100 SXM datasheet; GPU '{}' not recognised", gpu_name)};
}

nlohmann::json report_case_work(const std::vector<RunRecord>& runs, const NamedCeilings& ceilings) {
  nlohmann::json sets = nlohmann::json::array();
  nlohmann::json run_set = nlohmann::json::object();
  std::map<std::string, std::size_t> set_of_suite;  // suite_json (or name) -> index in sets
  for (const auto& run : runs) {
    const std::string key = run.suite_json.empty() ? "name:" + run.suite : run.suite_json;
    auto [it, fresh] = set_of_suite.try_emplace(key, sets.size());
    if (fresh) {
      nlohmann::json cases = nlohmann::json::array();
      for (const auto& c : suite_of(run)) cases.push_back(case_json(c, ceilings.ceilings));
      sets.push_back(std::move(cases));
    }
    run_set[std::to_string(run.id)] = it->second;
  }
  return {{"ceilings",
           {{"tflops", ceilings.ceilings.flops_per_s / 1e12},
            {"tbps", ceilings.ceilings.bytes_per_s / 1e12},
            {"source", ceilings.source}}},
          {"case_sets", std::move(sets)},
          {"run_case_set", std::move(run_set)}};
}

nlohmann::json report_bucket_champions(ExperimentDb& db, const std::vector<RunRecord>& runs) {
  std::map<std::string, std::vector<std::int64_t>> runs_of_set;  // suite_json (or name) -> run ids
  std::map<std::string, const RunRecord*> first_of_set;
  for (const auto& run : runs) {
    const std::string key = run.suite_json.empty() ? "name:" + run.suite : run.suite_json;
    runs_of_set[key].push_back(run.id);
    first_of_set.try_emplace(key, &run);
  }
  std::map<std::tuple<int, int>, nlohmann::json> best;  // (t_max, batch*heads) -> row
  for (const auto& [key, run_ids] : runs_of_set) {
    const RunRecord& run = *first_of_set.at(key);
    const std::vector<ShapeBucket> buckets = shape_buckets(suite_of(run), false);
    if (buckets.empty()) continue;
    const auto champions = bucket_champions(bucket_candidates(db, run.suite, run_ids), buckets);
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      if (!champions[b]) continue;
      nlohmann::json& row = best[{buckets[b].t_max, buckets[b].batch_heads}];
      if (row.is_null() || champions[b]->geomean_ms < row["score_ms"].get<double>())
        row = {{"bucket", {buckets[b].t_max, buckets[b].batch_heads}},
               {"case_ids", buckets[b].case_ids},
               {"iter", champions[b]->iter},
               {"score_ms", champions[b]->geomean_ms}};
    }
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto& [key, row] : best) out.push_back(std::move(row));
  return out;
}

}  // namespace attn
