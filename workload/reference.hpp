// CPU fp32 reference of block-sparse causal attention forward, with the semantics of the harness's
// reference.py: online softmax over the CSR's kv blocks in CSR order, causal mask in the diagonal block,
// keys and queries at or past seq_len masked, col_idx entries < 0, > q_block or >= valid blocks dropped.
#pragma once
#include <cstdint>
#include <vector>

#include "workload/bf16.hpp"
#include "workload/layout.hpp"

namespace attn {

/// Outputs of one forward: o as bf16 bits [batch, heads, t_max, 128], lse as fp32 natural log
/// [batch, heads, t_max]. A row with no allowed key has o = 0 and lse = -inf.
struct AttnOutput {
  std::vector<bf16_bits> o;
  std::vector<float> lse;
};

/// q, k, v: bf16 bits [batch, heads, t_max, 128]. Scale 1/sqrt(128). fp32 throughout, o rounded to bf16
/// at the end (round to nearest even). Parallel over (batch, head) with `threads` threads (0 = all).
/// Keys and queries at or past seq_len are never read into a result (NaN there does not leak); a
/// duplicated col_idx entry counts twice and the gather index is clamped to col_width - 1, as in
/// reference.py. The result does not depend on `threads`. Throws std::invalid_argument when a tensor's
/// size does not match the layout and t_max, a seq_len is outside [0, t_max], or a used row_ptr is < 0.
AttnOutput reference_forward(const std::vector<bf16_bits>& q, const std::vector<bf16_bits>& k,
                             const std::vector<bf16_bits>& v, const BlockSparseLayout& layout, int t_max,
                             unsigned threads = 0);

}  // namespace attn
