// Work and floor of a case: kv-block pairs, FLOPs, the fewest bytes that must move, and the roofline
// floor max(FLOPs / rate, bytes / bandwidth).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workload/layout.hpp"

namespace attn {

/// Machine ceilings. Defaults: H100 SXM datasheet, dense bf16 989 TFLOP/s, HBM3 3.35 TB/s.
struct Ceilings {
  double flops_per_s = 989e12;
  double bytes_per_s = 3.35e12;
  bool operator==(const Ceilings&) const = default;
};

/// The ceilings of the floor check (gpu/evaluate.hpp) for a GPU by its name (CUDA's device name, e.g.
/// "NVIDIA H100 80GB HBM3", "NVIDIA H200"): the datasheet's dense bf16 rate and HBM bandwidth, H100 SXM 989
/// TFLOP/s / 3.35 TB/s, H100 PCIe 756 / 2.0, H100 NVL 835 / 3.9, H200 989 / 4.8, H200 NVL 835 / 4.8, GH200
/// 989 / 4.9. An unknown name gets the highest of each (989 TFLOP/s, 4.9 TB/s): the lowest floor, so that
/// the check never fails a kernel for a GPU it does not know. (The report's ceilings_for_gpu,
/// report/report_cases.hpp, names its source and falls back to the H100 SXM instead.)
Ceilings floor_check_ceilings(const std::string& gpu_name);

/// Work of one case. FLOPs count the useful work only: 4 * 128 (head dim) per allowed (query, key)
/// pair (Q.K^T and P.V, 2 FLOPs per multiply-add), with causal and seq_len masking applied exactly.
/// Bytes, the fewest that must move: q (bf16) of every query row before seq_len; o (bf16) and lse
/// (fp32) of every row, masked rows included (the kernel writes them); k and v (bf16) of the tokens
/// before seq_len of every kv block referenced by at least one q_block of a head; plus
/// row_ptr/col_idx/seq_lens (int32, whole tensors).
struct CaseWork {
  std::int64_t kv_block_pairs = 0;  ///< allowed (q_block, kv block) pairs
  double flops = 0;
  double bytes = 0;
  double floor_s(const Ceilings& c) const;  ///< max(flops / rate, bytes / bandwidth), seconds
  bool compute_bound(const Ceilings& c) const;
};

/// Throws std::invalid_argument when the layout breaks check_layout_invariants.
CaseWork case_work(const BlockSparseLayout& layout, int t_max);

/// The harness's score (evaluator.py): per family the median of its cases' latencies, then the geometric
/// mean over the families present. Any unit; NaN geomean for an empty input.
struct SuiteScore {
  double geomean = 0;
  std::map<Family, double> family_median;
};
/// `families` and `latencies` are parallel; throws std::invalid_argument on a size mismatch or a
/// non-positive latency.
SuiteScore suite_score(const std::vector<Family>& families, const std::vector<double>& latencies);

}  // namespace attn
