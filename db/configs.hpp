// How schema version 10 stores a config (docs/db-schema.md, `configs`): its parameter names once per distinct
// name list (`param_names`), its values as a JSON list in that order (`configs`). The views `iterations` and
// `variants` render params_json / params back from them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "db/sqlite.hpp"
#include "workload/case_spec.hpp"

namespace attn::db {

/// A config JSON object split for storage: the sorted parameter names as a JSON list
/// (["BLOCK_N","STAGES"]) and the values in that order as a JSON list ([64,2]).
struct StoredConfig {
  std::string names_json;
  std::string values_json;
  bool operator==(const StoredConfig&) const = default;
};

/// Splits a config JSON object (any key order). Throws std::invalid_argument, as canonical_params_json,
/// when `params_json` is not a JSON object of numbers, strings and bools.
StoredConfig split_params(const std::string& params_json);

/// The `configs` id of (template_name, params_json). With `create` a missing config (and its name list) is
/// inserted; without, a missing one is nullopt. Needs a version-9 file; `create` needs a writable connection
/// (run it inside the caller's transaction).
std::optional<std::int64_t> config_id(sqlite::Connection& conn, const std::string& template_name,
                                      const std::string& params_json, bool create);

/// The `cases` key of (case_id, family), inserted when missing (run it inside the caller's transaction).
std::int64_t case_key(sqlite::Connection& conn, const std::string& case_id, Family family);

/// The `gpus` key of a GPU UUID ("GPU-..."), inserted when missing (inside the caller's transaction).
std::int64_t gpu_key(sqlite::Connection& conn, const std::string& uuid);

/// True when `variant_rows` has a row `variant_id` (the write path's check, without rendering the view).
bool variant_exists(sqlite::Connection& conn, std::int64_t variant_id);

}  // namespace attn::db
