// CaseSpec, families and suites: the challenge harness's workload description (spec.py, cases.py of
// github.com/paradigmxyz/attention-kernel-challenge), with its validation rules and manifest JSON format.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace attn {

/// Fixed by the challenge (spec.py): tokens per q_block / kv block, and head dimension.
inline constexpr int kBlockSize = 128;
inline constexpr int kHeadDim = 128;

/// The three sparsity families of the challenge.
enum class Family { sliding_window, sliding_window_global, sliding_window_retrieval };
inline constexpr Family kAllFamilies[] = {Family::sliding_window, Family::sliding_window_global,
                                          Family::sliding_window_retrieval};

/// "sliding_window" etc., exactly as the harness spells them.
const char* family_name(Family f);
/// Short name used in iters.tsv columns and CLI output: "window", "global", "retrieval".
const char* family_short_name(Family f);
/// Inverse of family_name; throws std::invalid_argument naming the unknown family.
Family parse_family(const std::string& name);

/// One benchmark case, field for field the harness's CaseSpec (spec.py).
struct CaseSpec {
  std::string case_id;
  Family family = Family::sliding_window;
  int batch_size = 1;
  int num_heads = 1;
  int t_max = kBlockSize;  ///< tokens; a positive multiple of kBlockSize
  int window_blocks = 1;
  int global_blocks = 0;
  int retrieval_blocks = 0;
  double retrieval_local_bias = 0.7;
  double seq_len_min_ratio = 0.625;
  std::int64_t seed = 0;
  std::string profile = "smoke";

  int q_blocks() const { return t_max / kBlockSize; }
  bool operator==(const CaseSpec&) const = default;
};

/// Throws std::invalid_argument with the harness's rule that `c` breaks (cases.py validate_case_spec):
/// t_max a positive multiple of 128, known family, batch/heads >= 1, window_blocks >= 1, no negative
/// counts, retrieval_local_bias in [0, 1], seq_len_min_ratio in (0, 1]; plus one of ours: seed >= 0
/// (the harness fails on a negative seed later, in numpy). Message: "case '<id>': <rule broken>".
void validate_case_spec(const CaseSpec& c);

/// JSON object with the harness's field names (manifest item). from_json applies the dataclass
/// defaults to missing optional fields, validates, and throws std::invalid_argument naming the field
/// on an unknown, missing or mistyped field (integer fields must be JSON integers), or the broken rule.
nlohmann::json case_to_json(const CaseSpec& c);
CaseSpec case_from_json(const nlohmann::json& j);

/// Built-in suite names, as the harness: smoke, local-dev, quick, full, broad.
const std::vector<std::string>& builtin_suite_names();
/// The harness's built-in suite with exactly its shapes. quick/full/broad get per-case seeds derived
/// from `root_seed` and the case_id: XXH64("<root_seed>:<suite>:<case_id>") mod (2^31 - 1), the
/// structure of the harness's _derive_public_case_seed with XXH64 for SHA-256 (the harness hides its
/// seeds; ours differ, the shapes do not).
/// Throws std::invalid_argument on an unknown name (the message lists the known names).
std::vector<CaseSpec> builtin_suite(const std::string& name, std::int64_t root_seed = 0);

/// Suite manifest: a JSON list of CaseSpec objects (harness --suite-manifest format). Readers throw
/// std::invalid_argument on bad JSON, a bad item, or two items with one case_id (not a harness rule:
/// our results are keyed by case_id); the file reader prefixes the path. The writer keeps the
/// dataclass field order, indent 2.
std::vector<CaseSpec> suite_from_manifest_json(const std::string& text);
std::vector<CaseSpec> suite_from_manifest_file(const std::string& path);
std::string suite_to_manifest_json(const std::vector<CaseSpec>& suite);

}  // namespace attn
