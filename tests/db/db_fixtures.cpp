#include "tests/db/db_fixtures.hpp"

#include "db/schema.hpp"

#include "tests/test_support.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace attn::test {

RunRecord sample_run(const std::string& suite) {
  RunRecord r;
  r.suite = suite;
  r.suite_json = R"([{"case_id":"q0","family":"sliding_window","batch_size":1,"num_heads":8,"t_max":4096}])";
  r.strategy = "random";
  r.templates = {"fa2_mma", "wgmma_tma"};
  r.gpu_name = "NVIDIA H200";
  r.driver = "580.65";
  r.sm_clock_mhz = 1980;
  r.git_commit = "0123abcd";
  r.host = "gpu-node-1";
  return r;
}

VariantRecord sample_variant(std::int64_t block_n, std::int64_t warps, std::int64_t stages) {
  VariantRecord v;
  v.template_name = "fa2_mma";
  // Deliberately unsorted keys: the DB canonicalises.
  v.params_json = "{\"stages\":" + std::to_string(stages) + ",\"BLOCK_N\":" + std::to_string(block_n) +
                  ",\"num_warps\":" + std::to_string(warps) + "}";
  v.content_hash = "h-" + std::to_string(block_n) + "-" + std::to_string(warps) + "-" + std::to_string(stages);
  v.compile_ok = true;
  v.compile_ms = 151.5;
  v.compile_log = "ptxas info: Used 128 registers";
  v.registers = 96 + warps;
  v.smem_bytes = block_n * 128 * 2 * stages;
  v.spill_bytes = 0;
  v.cubin_path = "runs/cubins/" + v.content_hash + ".cubin";
  return v;
}

std::vector<CaseResultRecord> sample_cases(double scale) {
  std::vector<CaseResultRecord> cases;
  int i = 0;
  for (Family f : kAllFamilies) {
    CaseResultRecord c;
    c.case_id = std::string(family_short_name(f)) + "-t4096";
    c.family = f;
    c.median_ms = 0.07 * scale * (1.0 + 0.1 * i);
    c.spread = 0.004 + 0.001 * i;
    c.samples = 20 + i;
    c.sm_clock_mhz = 1980;
    c.o_max_abs_diff = 0.0078;
    c.lse_max_abs_diff = 1.4e-6;
    c.passed = true;
    cases.push_back(c);
    ++i;
  }
  return cases;
}

std::int64_t add_scored_iteration(ExperimentDb& db, std::int64_t run_id, const VariantRecord& variant,
                                  std::int64_t variant_id, double scale, IterationStatus status,
                                  const std::string& description) {
  IterationRecord it;
  it.run_id = run_id;
  it.suite = db.run(run_id)->suite;
  it.template_name = variant.template_name;
  it.params_json = variant.params_json;
  it.description = "started";
  it.iter = db.begin_iteration(it);
  it.variant_id = variant_id;
  it.status = status;
  it.cases = sample_cases(scale);
  it.window_ms = *it.cases[0].median_ms;
  it.global_ms = *it.cases[1].median_ms;
  it.retrieval_ms = *it.cases[2].median_ms;
  it.geomean_ms = std::cbrt(*it.window_ms * *it.global_ms * *it.retrieval_ms);
  it.delta_ms = *it.geomean_ms - 0.08;
  it.description = description;
  it.gpu_ms = 1234.5;
  it.compile_ms = 151.5;
  db.finish_iteration(it);
  return it.iter;
}

std::string dump_rows(sqlite::Connection& conn, const std::string& columns, const std::string& table,
                      const std::string& order) {
  auto st = conn.prepare("SELECT " + columns + " FROM " + table + " ORDER BY " + order);
  std::string out;
  while (st.step()) {
    for (int c = 0; c < st.column_count(); ++c) out += st.column_opt_text(c).value_or("NULL") + "|";
    out += "\n";
  }
  return out;
}

sqlite::Connection create_v1_db(const std::string& path) {
  auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_write_create);
  conn.exec("PRAGMA foreign_keys = ON");
  conn.exec(read_text(data_dir() + "/db/schema_v1.sql"));
  return conn;
}

void create_db_at_version(const std::string& path, int version) {
  auto conn = create_v1_db(path);
  conn.exec("INSERT INTO schema_version (version) VALUES (1)");
  db::configure_connection(conn);
  std::vector<db::Migration> steps;
  for (const auto& m : db::builtin_migrations())
    if (m.from_version < version) steps.push_back(m);
  // Each step commits on its own; the chain ends at `version` with "no migration ... known".
  try {
    db::ensure_schema(conn, db::kSchemaVersion, steps);
  } catch (const std::runtime_error&) {
  }
  if (db::read_schema_version(conn) != version)
    throw std::runtime_error("create_db_at_version: could not make a version-" + std::to_string(version) + " file");
}

}  // namespace attn::test

namespace attn {
void PrintTo(const CaseResultRecord& c, std::ostream* os) { *os << nlohmann::json(c).dump(); }
void PrintTo(const IterationRecord& it, std::ostream* os) { *os << nlohmann::json(it).dump(); }
void PrintTo(const VariantRecord& v, std::ostream* os) { *os << nlohmann::json(v).dump(); }
void PrintTo(const RunRecord& r, std::ostream* os) { *os << nlohmann::json(r).dump(); }
void PrintTo(const ChampionRecord& c, std::ostream* os) { *os << nlohmann::json(c).dump(); }
}  // namespace attn
