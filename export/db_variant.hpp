// One exported variant from the experiment DB: an iteration's compiled variant with its template source,
// headers, NVRTC options and cubin (export/plan_from_db.hpp uses it for champions and bucket champions).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "db/records.hpp"
#include "export/plan.hpp"

namespace attn {

/// "<template>_i<iter>", the template name reduced to [A-Za-z0-9_] and 40 characters.
std::string export_variant_name(const std::string& template_name, std::int64_t iter);

/// The variant of iteration `it` (`variant` is its row): named export_variant_name(template, it.iter); source
/// and local headers from `templates_dir` (from `proposal`, the proposer hook's row, when the template is
/// one); the cubin from variant.cubin_path, recompiled with NVRTC when that file is gone and the source
/// still hashes to variant.content_hash; NVRTC options less -arch, -I, -D and --ptxas-options; provenance
/// with iteration, variant id, scores, resources and `scopes` (what it is exported for). Throws
/// std::invalid_argument naming the iteration when the template is not usable, the source changed since the
/// compile (unless allow_stale_source), or no cubin can be read or rebuilt.
ExportVariant load_export_variant(const IterationRecord& it, const VariantRecord& variant,
                                  const std::vector<std::string>& scopes, bool allow_stale_source,
                                  const std::string& templates_dir, const std::optional<ProposalRecord>& proposal);

}  // namespace attn
