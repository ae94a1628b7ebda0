// ExportPlan from the experiment DB: the champions of one suite (overall and per family), their
// variants' cubins and template sources, and dispatch rules from the suite's case shapes.
#pragma once
#include <string>

#include "db/store.hpp"
#include "export/plan.hpp"

namespace attn {

struct DbExportOptions {
  std::string suite;          ///< empty: the one suite with champions (an error when there are several)
  std::string templates_dir;  ///< empty: default_templates_dir()
  /// Export even when the template source (or NVRTC version / options) no longer hashes to the
  /// variant's content_hash, i.e. the shipped source may not be what the cubin was built from.
  bool allow_stale_source = false;
  /// A case goes to another exported variant than its family champion only when that variant's
  /// measured median on the case is lower by more than this fraction (noise margin).
  double override_margin = 0.03;
};

/// Builds the plan:
/// - default variant = the suite's overall champion; one more variant per family champion with a
///   different variant (deduplicated by variant id); named "<template>_i<iteration>".
/// - each variant: template source and local headers from `templates_dir` (a template of the proposer
///   hook, named in the `proposals` table, from its DB row instead: docs/proposer.md), the cubin from its
///   cubin_path (recompiled with NVRTC when that file is gone and the source still hashes to the
///   variant's content_hash), NVRTC options as gpu/compiler.hpp uses them less -arch, -I, -D and
///   --ptxas-options.
/// - rules: every case of the champion run's suite (runs.suite_json; the built-in suite of that name
///   when empty) goes to its family champion (the default when none), or to another exported variant
///   measured faster on it by more than override_margin; build_shape_rules makes them disjoint.
/// Throws std::invalid_argument with a message for the user when there is no champion (no suite,
/// several suites, no overall champion), when a champion's iteration or variant is missing, failed to
/// compile, or has no cubin that can be found or rebuilt, when a template is missing, or when its
/// source changed since the variant was compiled (unless allow_stale_source).
ExportPlan build_export_plan(ExperimentDb& db, const DbExportOptions& options);

}  // namespace attn
