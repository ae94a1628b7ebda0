// ExportPlan: everything `attn-tuner export` writes into a challenge submission directory, independent of
// where it came from (the experiment DB: export/plan_from_db.hpp; or a test that builds one by hand).
// The writer (export/writer.hpp) turns a plan into files; the dispatch rule here is the same one the
// generated attn_tuner_dispatch.py applies.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/attn_kernel.hpp"
#include "tuner/space.hpp"
#include "workload/case_spec.hpp"

namespace attn {

/// The harness's cap on VARIANT_MANIFEST entries (spec.py MAX_VARIANT_COUNT); also our cap on variants.
inline constexpr int kMaxExportVariants = 16;

/// One exported variant: a compiled config of a template, with what setup() needs to load it (cubin)
/// or to rebuild it with NVRTC on another GPU (source, headers, defines, options).
struct ExportVariant {
  std::string name;           ///< unique, [A-Za-z0-9_]{1,64}; the files are kernels/<name>.*
  std::string template_name;  ///< kernels_templates/<template_name>.cu
  std::string kernel;         ///< entry symbol (ABI.md: block_sparse_attn_fwd), a C identifier
  Config defines;             ///< the config: -DNAME=VALUE each
  /// NVRTC options the tuner compiled with besides -arch, -I and -D (e.g. "-std=c++17").
  std::vector<std::string> nvrtc_options;
  std::string source;         ///< CUDA C++ text of the template
  /// Files the source includes with #include "name": (name as written, text).
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::uint8_t> cubin;  ///< sm_90a cubin (non-empty)
  std::optional<LaunchInfo> launch;  ///< attn_launch_info when known (informative: setup() reads the module)
  /// Where it comes from (iteration, content hash, scores, resources): export_plan.json only.
  nlohmann::json provenance = nlohmann::json::object();
};

/// A tuned workload class: call shapes served by one variant. Bounds are inclusive; col_width is
/// col_idx.shape[-1] (the most kv blocks of any (batch, head)).
struct ShapeRule {
  int variant = 0;  ///< index into ExportPlan::variants
  int min_batch_size = 1, max_batch_size = 1;
  int min_num_heads = 1, max_num_heads = 1;
  int min_t_max = kBlockSize, max_t_max = kBlockSize;
  int min_col_width = 1, max_col_width = 1;
  std::string label;  ///< the tuned cases it stands for, e.g. "full-window-1"

  bool matches(int batch_size, int num_heads, int t_max, int col_width) const;
  bool operator==(const ShapeRule&) const = default;
};

/// What the submission directory holds.
struct ExportPlan {
  std::string suite;                   ///< the suite the variants were tuned on
  std::vector<ExportVariant> variants;  ///< 1..kMaxExportVariants, distinct
  int default_variant = 0;             ///< the overall champion: every shape no rule matches
  std::vector<ShapeRule> rules;         ///< first match wins (plans from the DB have disjoint rules)
  /// The champion of each tuned family (index into variants); families absent here are labelled with
  /// the default variant in VARIANT_MANIFEST.
  std::map<Family, int> family_variants;
  nlohmann::json provenance = nlohmann::json::object();  ///< db path, iterations, scores: export_plan.json
};

/// Throws std::invalid_argument naming the first problem: no variants or more than kMaxExportVariants;
/// a name that is empty, duplicated or not [A-Za-z0-9_]{1,64}; an empty template name, source or cubin;
/// a kernel or define name that is not a C identifier; an -arch/-I/-D option in nvrtc_options; a
/// header name that is absolute, holds "..", a quote or a backslash; an index (default, rule, family) out of range; a rule
/// with min > max or a bound below 1 (t_max below 128).
void check_export_plan(const ExportPlan& plan);

/// Removes every variant that no call reaches, neither the default nor any rule's: setup() would load and
/// self-check it and no call would ever launch it (issue 48 item 6: the research DB's global-family champion lost all
/// its cases to the overall champion, which is faster on each). The others keep their order; rules, the default
/// and family_variants are renumbered; a family whose variant is removed is served by, and labelled with, the
/// default. Returns the old index -> new index (-1: removed).
std::vector<int> drop_unreached_variants(ExportPlan& plan);

/// The variant a call with these sizes gets: the first matching rule's, else default_variant. The same
/// rule as pick_variant() in the generated attn_tuner_dispatch.py.
int pick_variant(const ExportPlan& plan, int batch_size, int num_heads, int t_max, int col_width);

/// One VARIANT_MANIFEST entry: `name` serves the cases of `families` (empty = every family).
struct ManifestEntry {
  std::string name;
  std::vector<Family> families;
  bool operator==(const ManifestEntry&) const = default;
};

/// VARIANT_MANIFEST: one entry per variant that serves a family (its family champion, the default for
/// families without one), with that variant's families, in variant order. The entries partition the
/// three families, so every case matches exactly one entry (the harness rejects a case matched by
/// none or by several); when one variant serves all three families its entry has no "families" key (a
/// catch-all). The harness uses the names as labels only: the kernel is chosen per call by shape.
std::vector<ManifestEntry> variant_manifest(const ExportPlan& plan);
/// The manifest as the JSON list the submission declares ([{"name": ..., "families": [...]}, ...]).
nlohmann::ordered_json variant_manifest_json(const ExportPlan& plan);

/// attn_launch_info as the export tables write it: the 8 entries of ABI.md, or null when unknown.
nlohmann::ordered_json launch_info_json(const std::optional<LaunchInfo>& info);

/// export_plan.json: the plan without sources and cubins (suite, variants with defines, options,
/// cubin sizes and provenance, default, rules, manifest, provenance).
nlohmann::ordered_json plan_summary_json(const ExportPlan& plan);

}  // namespace attn
