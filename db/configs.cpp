#include "db/configs.hpp"

#include <nlohmann/json.hpp>

#include "db/records.hpp"

namespace attn::db {

StoredConfig split_params(const std::string& params_json) {
  // canonical_params_json validates; nlohmann objects iterate in key order (std::map).
  const nlohmann::json obj = nlohmann::json::parse(canonical_params_json(params_json));
  nlohmann::json names = nlohmann::json::array(), values = nlohmann::json::array();
  for (const auto& [key, value] : obj.items()) {
    names.push_back(key);
    values.push_back(value);
  }
  return {names.dump(), values.dump()};
}

std::optional<std::int64_t> config_id(sqlite::Connection& conn, const std::string& template_name,
                                      const std::string& params_json, bool create) {
  const StoredConfig sc = split_params(params_json);
  std::optional<std::int64_t> names_id;
  {
    auto st = conn.prepare("SELECT id FROM param_names WHERE names = ?");
    st.bind(1, sc.names_json);
    if (st.step()) names_id = st.column_int64(0);
  }
  if (!names_id) {
    if (!create) return std::nullopt;
    conn.prepare("INSERT INTO param_names (names) VALUES (?)").bind(1, sc.names_json).run();
    names_id = conn.last_insert_rowid();
  }
  {
    auto st = conn.prepare("SELECT id FROM configs WHERE template = ? AND param_values = ? AND names_id = ?");
    st.bind(1, template_name).bind(2, sc.values_json).bind(3, *names_id);
    if (st.step()) return st.column_int64(0);
  }
  if (!create) return std::nullopt;
  conn.prepare("INSERT INTO configs (template, names_id, param_values) VALUES (?, ?, ?)")
      .bind(1, template_name)
      .bind(2, *names_id)
      .bind(3, sc.values_json)
      .run();
  return conn.last_insert_rowid();
}

std::int64_t case_key(sqlite::Connection& conn, const std::string& case_id, Family family) {
  {
    auto st = conn.prepare("SELECT id FROM cases WHERE case_id = ? AND family = ?");
    st.bind(1, case_id).bind(2, family_name(family));
    if (st.step()) return st.column_int64(0);
  }
  conn.prepare("INSERT INTO cases (case_id, family) VALUES (?, ?)").bind(1, case_id).bind(2, family_name(family)).run();
  return conn.last_insert_rowid();
}

std::int64_t gpu_key(sqlite::Connection& conn, const std::string& uuid) {
  {
    auto st = conn.prepare("SELECT id FROM gpus WHERE uuid = ?");
    st.bind(1, uuid);
    if (st.step()) return st.column_int64(0);
  }
  conn.prepare("INSERT INTO gpus (uuid) VALUES (?)").bind(1, uuid).run();
  return conn.last_insert_rowid();
}

bool variant_exists(sqlite::Connection& conn, std::int64_t variant_id) {
  auto st = conn.prepare("SELECT 1 FROM variant_rows WHERE id = ?");
  st.bind(1, variant_id);
  return st.step();
}

}  // namespace attn::db
