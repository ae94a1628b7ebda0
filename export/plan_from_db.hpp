// ExportPlan from the experiment DB: the champions of one suite (overall and per family), their
// variants' cubins and template sources, and dispatch rules from the suite's case shapes.
#pragma once
#include <string>

#include "db/store.hpp"
#include "export/plan.hpp"

namespace attn {

struct DbExportOptions {
  std::string suite;          ///< empty: the read commands' rule (db/suite_choice.hpp: the only suite, else the latest run's)
  std::string templates_dir;  ///< empty: default_templates_dir()
  /// Export even when the template source (or NVRTC version / options) no longer hashes to the
  /// variant's content_hash, i.e. the shipped source may not be what the cubin was built from.
  bool allow_stale_source = false;
  /// A case goes to another exported variant than its family champion only when that variant's
  /// measured median on the case is lower by more than this fraction (noise margin).
  double override_margin = 0.03;
  /// Export bucket champions (docs/export.md): per (family, t_max, batch*heads) bucket of the tuned cases,
  /// the whole-suite iteration fastest on the bucket's cases, when it beats the variant those cases get
  /// otherwise by more than bucket_margin.
  bool buckets = true;
  /// Noise guard of the bucket champions: the fraction by which a bucket champion's geomean over the
  /// bucket's cases must be below the family champion's there (0.03 = 3 %); in [0, 1).
  double bucket_margin = 0.03;
};

/// Builds the plan:
/// - default variant = the suite's overall champion; one more variant per family champion with a
///   different variant (deduplicated by variant id); named "<template>_i<iteration>".
/// - each variant: template source and local headers from `templates_dir` (a template of the proposer
///   hook, named in the `proposals` table, from its DB row instead: docs/proposer.md), the cubin from its
///   cubin_path (recompiled with NVRTC when that file is gone and the source still hashes to the
///   variant's content_hash), NVRTC options as gpu/compiler.hpp uses them less -arch, -I, -D and
///   --ptxas-options.
/// - bucket champions (when options.buckets): per (family, t_max, batch*heads) bucket of the tuned cases,
///   the fastest keep/discard whole-suite iteration measured on every case of the bucket (db/shape_buckets,
///   the report's rule; iterations of runs with the same case shapes), when its geomean over the bucket's
///   cases is below the family champion's by more than bucket_margin: a variant more (named as above;
///   none when its variant is exported already), largest weighted gain first while there are fewer than
///   kMaxExportVariants; a bucket champion that cannot be exported is skipped. provenance["buckets"] lists
///   every bucket with its decision (export/bucket_variants.hpp).
/// - rules: every case of the champion run's suite (runs.suite_json; the built-in suite of that name
///   when empty) goes to its bucket champion when one is exported for its bucket, else to its family
///   champion (the default when none), or to another exported variant measured faster on it by more than
///   override_margin; build_shape_rules makes them disjoint.
/// Throws std::invalid_argument with a message for the user when there is no champion (none at all, none
/// for the suite, an explicit suite without a run, no overall champion), when a champion's iteration or variant is missing, failed to
/// compile, or has no cubin that can be found or rebuilt, when a template is missing, or when its
/// source changed since the variant was compiled (unless allow_stale_source), or when bucket_margin is
/// not in [0, 1).
ExportPlan build_export_plan(ExperimentDb& db, const DbExportOptions& options);

}  // namespace attn
