// Schema of the experiment store (documented for sqlite3 users in docs/db-schema.md), its version
// check, and the migration hook that brings an older file up to kSchemaVersion.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "db/sqlite.hpp"

namespace attn::db {

/// The schema this build writes. Stored as MAX(version) of the `schema_version` table.
inline constexpr int kSchemaVersion = 12;

/// One step of the migration chain: brings a file from `from_version` to `from_version + 1`. Runs
/// inside the transaction that also records the new version (all or nothing).
struct Migration {
  int from_version = 0;
  std::function<void(sqlite::Connection&)> apply;
  /// The step rebuilds tables (SQLite's create-copy-drop-rename procedure): it runs with foreign keys
  /// off, and PRAGMA foreign_key_check must find nothing before the commit.
  bool rebuilds_tables = false;
  /// The step only adds tables that a reader may find missing (ExperimentDb reads them as empty): a read-only
  /// connection accepts a file that lacks only such steps, unmigrated (6 -> 7: harness_checks).
  bool readable_without = false;
};

/// The built-in chain: 1 -> 2 adds iterations.fidelity / screen_ms / root_seed and the holdout_checks
/// table (docs/db-schema.md);
/// 2 -> 3 adds the `proposals` table, iterations.proposal_id and the failure kind 'proposal' (a rebuild
/// of `iterations`); 3 -> 4 appends iterations.gpu_index / gpu_uuid / sm_clock_mhz and adds the
/// `iteration_sources` table (provenance of merged iterations, db/merge.hpp); 4 -> 5 adds the failure kinds
/// 'inconsistent' and 'below_floor' (a rebuild of `iterations`, docs/verification.md); 5 -> 6 adds
/// variants.cubin_hash (refactor-safe champions: export/db_variant.cpp; NULL on older rows until
/// `attn-tuner db cubin-hashes` records them); 6 -> 7 adds the `harness_checks` table (`export --harness`,
/// export/harness_check.hpp); 7 -> 8 adds the `ideas` table (the idea queue, docs/ideas.md); 8 -> 9 adds
/// the idea agent's `idea_agent_calls` / `idea_agent_ideas` (docs/ideas.md); 9 -> 10 stores each config once
/// (`configs`, `param_names`; the rows in `iteration_rows` / `variant_rows`, shown by the views `iterations` /
/// `variants` with the columns of version 8; cases and GPU UUIDs once: issue 38); 10 -> 11 adds the
/// `spare_evaluations` table (the daemon's spare GPU time, docs/daemon.md); 11 -> 12 adds the `idea_repeats` table (an
/// idea judged again on the same parent: docs/ideas.md).
const std::vector<Migration>& builtin_migrations();

/// The DDL of version 1 (tables, indexes), without its schema_version row: a fresh file gets it, then every step
/// of the migration chain (ensure_schema), so that a fresh file and a migrated one have one schema.
const char* version1_sql();

/// Sets the per-connection pragmas: foreign_keys=ON, and on a writable connection journal_mode=WAL
/// and synchronous=FULL (a committed iteration survives a crash of the process or of the machine).
/// Throws std::runtime_error "<path> is not a SQLite database" when the file is something else.
void configure_connection(sqlite::Connection& conn);

/// Version recorded in the file: 0 for an empty database (no tables at all). Throws
/// std::runtime_error naming the file when it is a SQLite database of another schema (tables but no
/// schema_version table) or when schema_version is empty.
int read_schema_version(sqlite::Connection& conn);

/// Makes `conn`'s file ready at `target_version`: creates the schema in an empty file, applies the
/// migrations from `chain` in order to an older one, accepts an equal one. Throws std::runtime_error
/// naming the file for a newer version ("... has schema version 3, newer than the 1 this attn-tuner
/// understands; use a newer attn-tuner"), a missing migration step, or (on a read-only connection)
/// any change that would be needed, except steps marked `readable_without` (the file is read as it is).
void ensure_schema(sqlite::Connection& conn, int target_version = kSchemaVersion,
                   const std::vector<Migration>& chain = builtin_migrations());

}  // namespace attn::db
