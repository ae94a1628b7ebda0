// Cubin hashes for a DB recorded before schema version 6: export accepts a changed template source when
// the recompiled cubin is byte-identical to the variant's (export/db_variant.cpp), which needs the cubin
// hash recorded while the source still builds that cubin. This records it, without a GPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "db/store.hpp"

namespace attn {

/// What backfill_cubin_hashes did.
struct CubinBackfill {
  int considered = 0;                 ///< variants looked at
  int recorded = 0;                   ///< cubin hashes written
  int already = 0;                    ///< had one
  std::vector<std::string> skipped;   ///< "variant N (template params): why", one per variant not recorded
};

/// For the variants an export of `db` takes (those of every champion, and each suite's bucket champions),
/// or with `all` every variant that compiled: compiles each whose cubin hash is unknown from the templates
/// in `templates_dir` (empty: default_templates_dir()) and records the cubin's hash (gpu/compiler.hpp
/// cubin_hash), but only where today's source still hashes to the variant's content hash (otherwise the
/// cubin would be another: skipped, with the reason). Proposals' templates are skipped: their source is in
/// the DB and never goes stale. Needs a writable DB; throws std::invalid_argument for a read-only one.
CubinBackfill backfill_cubin_hashes(ExperimentDb& db, const std::string& templates_dir, bool all);

}  // namespace attn
