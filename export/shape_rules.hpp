// Dispatch rules from tuned cases: which col_idx widths a case shape can produce, and disjoint
// ShapeRules that send each tuned shape to the variant chosen for it.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "export/plan.hpp"
#include "workload/case_spec.hpp"

namespace attn {

/// kv blocks of one (batch, head) whose seq_len spans `valid_blocks` q_blocks (1 <= valid_blocks <=
/// q_blocks): over the valid q_blocks q, the window min(q + 1, w) plus min(e, max(0, q - w + 1)) blocks
/// outside it, e = global_blocks (global family) or retrieval_blocks (retrieval family; drawn at random,
/// but always that many while there are enough candidates). Source: the harness's cases.py,
/// _allowed_blocks_for_row and _retrieval_blocks. Throws std::invalid_argument when valid_blocks is out
/// of range.
std::int64_t kv_blocks_per_head(const CaseSpec& spec, int valid_blocks);

/// Inclusive range of col_width = col_idx.shape[-1] over every seq_lens draw of a case: each batch has
/// between ceil(max(128, int(t_max * seq_len_min_ratio)) / 128) and q_blocks valid blocks (cases.py
/// _sample_seq_lens), col_width is the largest head's kv block count, at least 1.
struct ColWidthRange {
  int min = 1, max = 1;
  bool operator==(const ColWidthRange&) const = default;
};
ColWidthRange col_width_range(const CaseSpec& spec);

/// A tuned case, the variant chosen for it, and each variant's measured latency on it (by variant
/// index; nullopt when not measured).
struct CaseAssignment {
  CaseSpec spec;
  int variant = 0;
  std::vector<std::optional<double>> latency_ms;
};

/// Disjoint rules covering the cases' shapes: exact batch_size, num_heads and t_max, and a col_width
/// interval. Cases of one (batch, heads, t_max) whose col_width ranges overlap are split into
/// elementary intervals; an interval covered by cases that chose different variants goes to the
/// variant with the least summed latency over those cases when every one is measured for every
/// candidate, else to the variant of the first such case in input order. Adjacent intervals with the
/// same variant merge. Labels list the case ids an interval covers ("a+b"). Output order: by
/// (batch, heads, t_max, col_width); since rules are disjoint the order does not change a pick.
std::vector<ShapeRule> build_shape_rules(const std::vector<CaseAssignment>& cases);

}  // namespace attn
