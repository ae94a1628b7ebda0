// Inputs of the morning report that come from the project's C++ code rather than the DB: the machine
// ceilings of the GPU a run used, and each run's cases with their FLOPs, bytes and roofline floor
// (workload/roofline), written as cases.json for report/report.py.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/records.hpp"
#include "db/store.hpp"
#include "workload/roofline.hpp"

namespace attn {

/// Ceilings with where they come from, for the report's text.
struct NamedCeilings {
  Ceilings ceilings;
  std::string source;
};

/// Dense bf16 tensor-core peak and HBM bandwidth from NVIDIA's datasheets, by the GPU name the worker
/// recorded (runs.gpu_name): H200 989 TFLOP/s, 4.8 TB/s; H100 PCIe 756 TFLOP/s, 2.0 TB/s; other H100
/// (SXM) 989 TFLOP/s, 3.35 TB/s. Any other name gets the H100 SXM figures (roofline.hpp's defaults),
/// and the source says that the GPU was not recognised.
NamedCeilings ceilings_for_gpu(const std::string& gpu_name);

/// cases.json: {"ceilings": {"tflops", "tbps", "source"}, "case_sets": [[case, ...], ...],
/// "run_case_set": {"<run id>": index into case_sets}}. One case set per distinct suite among `runs`
/// (runs.suite_json; the built-in suite of runs.suite when that is empty; no cases for a manifest run
/// without suite_json). Each case: case_id, family, batch_size, num_heads, t_max, batch_heads, bucket
/// ("t_max 4096, B·H 32"), flops, bytes, floor_us, bound ("compute" | "memory"). Throws
/// std::invalid_argument naming the run when its suite_json is not a valid manifest.
nlohmann::json report_case_work(const std::vector<RunRecord>& runs, const NamedCeilings& ceilings);

/// cases.json "buckets": per shape bucket (t_max, batch*heads, families merged) of each case set of `runs`
/// (all of one suite), the best iteration of the runs with that case set by db/shape_buckets.hpp's rule
/// (the export's bucket champions use it too): [{"bucket": [t_max, batch_heads], "case_ids": [...], "iter",
/// "score_ms"}], ordered by bucket; a bucket in several case sets keeps the lowest score. Buckets that no
/// iteration measured on every case are left out. Throws std::invalid_argument like report_case_work.
nlohmann::json report_bucket_champions(ExperimentDb& db, const std::vector<RunRecord>& runs);

}  // namespace attn
