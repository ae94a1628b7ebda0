// Block-sparse layout of one materialized case: seq_lens and the CSR (row_ptr, col_idx) over kv blocks,
// generated with the distribution of the harness's cases.py (build_csr_metadata, _sample_seq_lens).
#pragma once
#include <cstdint>
#include <vector>

#include "workload/case_spec.hpp"

namespace attn {

/// CSR over kv blocks for every (batch, head, q_block), the harness's tensor layout flattened row-major.
struct BlockSparseLayout {
  int batch_size = 0, num_heads = 0, q_blocks = 0;
  int col_width = 0;                 ///< col_idx.shape[-1] = max nnz over heads (>= 1), zero padded
  std::vector<std::int32_t> seq_lens;  ///< [batch]
  std::vector<std::int32_t> row_ptr;   ///< [batch, heads, q_blocks + 1]
  std::vector<std::int32_t> col_idx;   ///< [batch, heads, col_width]
  double density = 0;                  ///< harness's density: mean over heads of nnz / valid_blocks^2

  std::int32_t row_begin(int b, int h, int qb) const { return row_ptr[(std::size_t(b) * num_heads + h) * (q_blocks + 1) + qb]; }
  std::int32_t row_end(int b, int h, int qb) const { return row_begin(b, h, qb + 1); }
  std::int32_t col(int b, int h, int i) const { return col_idx[(std::size_t(b) * num_heads + h) * col_width + i]; }
  /// kv block pairs that the harness's reference treats as allowed (entries < 0, > q_block or
  /// >= valid blocks are dropped, as reference.py does).
  std::int64_t allowed_pairs() const;
};

/// seq_lens[b] uniform in [max(128, int(t_max * seq_len_min_ratio)), t_max] (all t_max when that
/// minimum reaches t_max), as cases.py _sample_seq_lens. Deterministic in spec.seed (generator seeded
/// with seed ^ 0xABCDEF, as the harness). Throws std::invalid_argument on an invalid spec.
std::vector<std::int32_t> sample_seq_lens(const CaseSpec& spec);

/// CSR with cases.py's distribution: window blocks [q-w+1, q]; global: blocks [0, global_blocks);
/// retrieval: retrieval_blocks distinct blocks outside the window, each drawn from the local range
/// [q - 4w, q) with probability retrieval_local_bias (else from [0, q - 4w)); q_blocks at or past
/// ceil(seq_len/128) left empty. Our PRNG is std::mt19937_64, not numpy's PCG64: same distribution,
/// other realizations (documented in docs/workload.md).
/// The second form takes given seq_lens (e.g. the harness's) instead of sampling them. Throws
/// std::invalid_argument on an invalid spec or a seq_lens of the wrong size or outside [1, t_max].
BlockSparseLayout build_layout(const CaseSpec& spec);
BlockSparseLayout build_layout(const CaseSpec& spec, const std::vector<std::int32_t>& seq_lens);

/// Throws std::invalid_argument naming the first broken invariant: sizes consistent with t_max,
/// seq_lens in [1, t_max], row_ptr monotone from 0, rows past the valid blocks empty, cols sorted,
/// unique, within [0, q_block], diagonal block present in every valid row, nnz <= col_width.
void check_layout_invariants(const BlockSparseLayout& layout, int t_max);

}  // namespace attn
