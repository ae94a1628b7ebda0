// Loader of the golden data that scripts/dump_golden.py makes with the challenge harness
// (tests/data/golden/<case_id>.json + raw tensors; format described in the script and docs/workload.md).
#pragma once
#include <string>
#include <vector>

#include "workload/bf16.hpp"
#include "workload/case_spec.hpp"
#include "workload/layout.hpp"

namespace attn::test {

/// One case as the harness materialized it, with the harness reference's outputs.
struct GoldenCase {
  std::string case_id;
  CaseSpec spec;
  BlockSparseLayout layout;             ///< the harness's seq_lens, row_ptr, col_idx and density
  std::vector<bf16_bits> q, k, v;       ///< [batch, heads, t_max, 128]; rows at or past seq_len = fill
  std::vector<bf16_bits> o;             ///< harness reference o, [batch, heads, t_max, 128]; 0 past seq_len
  std::vector<float> lse;               ///< harness reference lse, [batch, heads, t_max]
  bool edited = false;                  ///< col_idx hand-edited (breaks the layout invariants on purpose)
  std::vector<std::string> edits;       ///< what was edited, in words
};

/// tests/data/golden in the source tree.
std::string golden_dir();
/// Case ids of the *.json files in `dir`, sorted; empty when the folder is absent or empty.
std::vector<std::string> golden_case_ids(const std::string& dir = golden_dir());
/// Reads <dir>/<case_id>.json and its tensors. q/k/v rows at or past seq_len (not stored) are set to
/// bf16(masked_fill). Throws std::runtime_error naming the file on a missing file or a size mismatch.
GoldenCase load_golden(const std::string& case_id, float masked_fill = 0.0f, const std::string& dir = golden_dir());

}  // namespace attn::test
