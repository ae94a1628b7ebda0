// Shared by tests/db/*.cpp: realistic records for a fresh experiment DB in a temp dir.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "db/records.hpp"
#include "db/sqlite.hpp"
#include "db/store.hpp"

namespace attn::test {

/// A run of suite `suite` with GPU/host fields filled.
RunRecord sample_run(const std::string& suite = "quick");
/// A compiled variant of template "fa2_mma" with config {BLOCK_N, num_warps, stages}.
VariantRecord sample_variant(std::int64_t block_n, std::int64_t warps, std::int64_t stages);
/// Case results for one case per family, latencies scaled by `scale` (ms around 0.07 * scale).
std::vector<CaseResultRecord> sample_cases(double scale);
/// Begins and finishes a keep/discard iteration of `variant` on run `run_id` with scores derived
/// from `scale` (geomean = scale * 0.08 ms); returns the iter number.
std::int64_t add_scored_iteration(ExperimentDb& db, std::int64_t run_id, const VariantRecord& variant,
                                  std::int64_t variant_id, double scale, IterationStatus status,
                                  const std::string& description);

/// The columns of `iterations` at schema version 1 (tests/data/db/schema_v1.sql, frozen).
/// The columns of `variants` in version 1 (version 6 appends cubin_hash).
inline constexpr const char* kV1VariantColumns =
    "id, template, params_json, params, content_hash, compile_ok, compile_ms, compile_log, registers, smem_bytes, "
    "spill_bytes, cubin_path, created_at";
inline constexpr const char* kV1IterationColumns =
    "id, run_id, variant_id, suite, template, params_json, params, status, failure_kind, geomean_ms, delta_ms, "
    "window_ms, global_ms, retrieval_ms, description, started_at, finished_at, gpu_ms, compile_ms";
/// Every row of `table` (the given columns) as text, "NULL" for null, one line a row, in `order`.
std::string dump_rows(sqlite::Connection& conn, const std::string& columns, const std::string& table,
                      const std::string& order);
/// A new version-1 file at `path` with foreign keys on and the frozen version-1 DDL, no rows yet.
sqlite::Connection create_v1_db(const std::string& path);
/// A new, empty file at `path` of schema version `version` (1 .. kSchemaVersion) as an older attn-tuner left it:
/// the frozen version-1 DDL and the built-in migration steps up to `version`.
void create_db_at_version(const std::string& path, int version);

}  // namespace attn::test

namespace attn {
/// GoogleTest printers (JSON) so that a failed comparison shows the fields.
void PrintTo(const CaseResultRecord& c, std::ostream* os);
void PrintTo(const IterationRecord& it, std::ostream* os);
void PrintTo(const VariantRecord& v, std::ostream* os);
void PrintTo(const RunRecord& r, std::ostream* os);
void PrintTo(const ChampionRecord& c, std::ostream* os);
}  // namespace attn
