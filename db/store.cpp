// ExperimentDb: opening, runs, variants and read-only SQL. Iterations and champions live in
// store_iterations.cpp and store_champions.cpp.
#include "db/store.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/configs.hpp"
#include "db/schema.hpp"
#include "db/store_rows.hpp"

namespace attn {

using sqlite::kNowSql;
namespace rows = db::rows;

namespace {

/// True when the folder of `path` cannot be written (a read-only file system or folder), so that SQLite
/// cannot create the DB's -shm there.
bool on_read_only_storage(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  return ::access(parent.empty() ? "." : parent.c_str(), W_OK) != 0;
}

}  // namespace

ExperimentDb ExperimentDb::open(const std::string& path, Mode mode) {
  if (path.empty()) throw std::invalid_argument("experiment DB path is empty");
  if (mode == Mode::read_only && !std::filesystem::exists(path)) {
    throw std::runtime_error(fmt::format("{}: no such experiment DB file", path));
  }
  if (mode == Mode::read_write) {
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
  }
  if (mode == Mode::read_only) {
    try {
      auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
      db::configure_connection(conn);
      db::ensure_schema(conn);
      return ExperimentDb(std::move(conn));
    } catch (const sqlite::Error& e) {
      // CANTOPEN on a read-only file system; READONLY (cannot initialise -shm) in a read-only folder.
      if ((e.code() != SQLITE_CANTOPEN && e.code() != SQLITE_READONLY) || !on_read_only_storage(path)) throw;
    }
    // A DB in WAL mode (ours) on read-only storage: SQLite cannot create <db>-shm, so even a read-only
    // connection fails. Nothing can write there either, so the file can be read as immutable, unless a
    // -wal file holds commits that only a writer can fold in (a daemon killed before the storage became
    // read-only): then reading the main file alone would miss rows, and it is an error.
    std::error_code ec;
    if (std::filesystem::file_size(path + "-wal", ec) > 0 && !ec)
      throw std::runtime_error(fmt::format(
          "{}: on read-only storage with unmerged commits in {}-wal: copy the DB and its -wal file to a "
          "writable folder to read it",
          path, path));
    auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only_immutable);
    db::configure_connection(conn);
    db::ensure_schema(conn);
    return ExperimentDb(std::move(conn));
  }
  auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_write_create);
  db::configure_connection(conn);
  db::ensure_schema(conn);
  return ExperimentDb(std::move(conn));
}

void ExperimentDb::require_writable(const char* what) const {
  if (conn_.read_only()) {
    throw std::logic_error(fmt::format("{}: {} needs a read-write ExperimentDb (opened read-only)", path(), what));
  }
}

// ---------------------------------------------------------------------------------------------------
// runs

std::int64_t ExperimentDb::begin_run(const RunRecord& run) {
  require_writable("begin_run");
  if (run.suite.empty()) throw std::invalid_argument("begin_run: empty suite name");
  if (run.strategy.empty()) throw std::invalid_argument("begin_run: empty strategy name");
  auto st = conn_.prepare(
      "INSERT INTO runs (suite, suite_json, strategy, templates, gpu_name, driver, sm_clock_mhz, git_commit, "
      "host, stop_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''))");
  st.bind(1, run.suite)
      .bind(2, run.suite_json)
      .bind(3, run.strategy)
      .bind(4, nlohmann::json(run.templates).dump())
      .bind(5, run.gpu_name)
      .bind(6, run.driver)
      .bind(7, run.sm_clock_mhz)
      .bind(8, run.git_commit)
      .bind(9, run.host)
      .bind(10, run.stop_reason);
  st.run();
  return conn_.last_insert_rowid();
}

void ExperimentDb::end_run(std::int64_t run_id, RunStatus status, const std::string& stop_reason) {
  require_writable("end_run");
  if (status == RunStatus::running) throw std::invalid_argument("end_run: status must not be running");
  sqlite::Transaction tx(conn_);
  auto current = run(run_id);
  if (!current) throw std::invalid_argument(fmt::format("end_run: no run {} in {}", run_id, path()));
  if (current->status != RunStatus::running) {
    throw std::invalid_argument(fmt::format("end_run: run {} has already ended ({})", run_id,
                                            to_string(current->status)));
  }
  auto st = conn_.prepare(fmt::format(
      "UPDATE runs SET status = ?, stop_reason = NULLIF(?, ''), ended_at = {} WHERE id = ?", kNowSql));
  st.bind(1, to_string(status)).bind(2, stop_reason).bind(3, run_id).run();
  tx.commit();
}

std::vector<std::int64_t> ExperimentDb::mark_interrupted_runs() {
  require_writable("mark_interrupted_runs");
  auto st = conn_.prepare(fmt::format(
      "UPDATE runs SET status = 'interrupted', ended_at = {}, "
      "stop_reason = COALESCE(stop_reason, 'the process ended without closing the run') "
      "WHERE status = 'running' RETURNING id",
      kNowSql));
  std::vector<std::int64_t> ids;
  while (st.step()) ids.push_back(st.column_int64(0));
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::optional<RunRecord> ExperimentDb::run(std::int64_t run_id) {
  auto st = conn_.prepare(fmt::format("SELECT {} FROM runs WHERE id = ?", rows::kRunColumns));
  st.bind(1, run_id);
  if (!st.step()) return std::nullopt;
  return rows::read_run(st);
}

std::vector<RunRecord> ExperimentDb::runs() {
  auto st = conn_.prepare(fmt::format("SELECT {} FROM runs ORDER BY id", rows::kRunColumns));
  std::vector<RunRecord> out;
  while (st.step()) out.push_back(rows::read_run(st));
  return out;
}

RunProgress ExperimentDb::run_progress(std::int64_t run_id) {
  auto st = conn_.prepare(
      "SELECT count(*), "
      "  count(*) FILTER (WHERE status = 'running'), count(*) FILTER (WHERE status = 'keep'), "
      "  count(*) FILTER (WHERE status = 'discard'), count(*) FILTER (WHERE status = 'crash'), "
      "  count(*) FILTER (WHERE status = 'interrupted'), "
      "  total(gpu_ms), total(compile_ms), min(geomean_ms) FILTER (WHERE status = 'keep'), "
      "  count(*) FILTER (WHERE fidelity = 'screen' AND status = 'discard'), "
      "  count(*) FILTER (WHERE fidelity = 'full' AND status IN ('keep', 'discard')) "
      "FROM iteration_rows WHERE run_id = ?");
  st.bind(1, run_id);
  st.step();
  RunProgress p;
  p.iterations = st.column_int64(0);
  p.running = st.column_int64(1);
  p.keep = st.column_int64(2);
  p.discard = st.column_int64(3);
  p.crash = st.column_int64(4);
  p.interrupted = st.column_int64(5);
  p.gpu_ms = st.column_double(6);
  p.compile_ms = st.column_double(7);
  p.best_geomean_ms = st.column_opt_double(8);
  p.screened_out = st.column_int64(9);
  p.full_evaluations = st.column_int64(10);
  return p;
}

// ---------------------------------------------------------------------------------------------------
// variants

void ExperimentDb::set_sync_full(bool full) {
  if (!read_only()) conn_.exec(full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
}

std::int64_t ExperimentDb::upsert_variant(const VariantRecord& variant) {
  require_writable("upsert_variant");
  sqlite::Transaction tx(conn_);
  const std::int64_t id = upsert_variant_row(variant);
  tx.commit();
  return id;
}

std::int64_t ExperimentDb::upsert_variant_row(const VariantRecord& variant) {
  if (variant.content_hash.empty()) throw std::invalid_argument("upsert_variant: empty content_hash");
  if (variant.template_name.empty()) throw std::invalid_argument("upsert_variant: empty template name");
  const std::string params_json = canonical_params_json(variant.params_json);
  const std::int64_t config = *db::config_id(conn_, variant.template_name, params_json, true);
  {
    auto stored = conn_.prepare("SELECT config_id FROM variant_rows WHERE content_hash = ?");
    stored.bind(1, variant.content_hash);
    if (stored.step() && stored.column_int64(0) != config) {
      stored.run();
      const auto existing = find_variant_by_hash(variant.content_hash);
      throw std::invalid_argument(fmt::format(
          "upsert_variant: content_hash {} is stored for {} {} but given for {} {}", variant.content_hash,
          existing->template_name, existing->params, variant.template_name, compact_params(params_json)));
    }
  }
  auto st = conn_.prepare(
      "INSERT INTO variant_rows (config_id, content_hash, compile_ok, compile_ms, compile_log, "
      "registers, smem_bytes, spill_bytes, cubin_path, cubin_hash) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, '')) "
      "ON CONFLICT (content_hash) DO UPDATE SET compile_ok = excluded.compile_ok, "
      "compile_ms = excluded.compile_ms, compile_log = excluded.compile_log, registers = excluded.registers, "
      "smem_bytes = excluded.smem_bytes, spill_bytes = excluded.spill_bytes, cubin_path = excluded.cubin_path, "
      "cubin_hash = COALESCE(excluded.cubin_hash, variant_rows.cubin_hash) "
      "RETURNING id");
  st.bind(1, config)
      .bind(2, variant.content_hash)
      .bind(3, variant.compile_ok)
      .bind(4, variant.compile_ms)
      .bind(5, variant.compile_log)
      .bind(6, variant.registers)
      .bind(7, variant.smem_bytes)
      .bind(8, variant.spill_bytes)
      .bind(9, variant.cubin_path)
      .bind(10, variant.cubin_hash);
  st.step();
  std::int64_t id = st.column_int64(0);
  st.run();  // finish the statement before COMMIT
  return id;
}

void ExperimentDb::set_variant_cubin_hash(std::int64_t variant_id, const std::string& cubin_hash) {
  require_writable("set_variant_cubin_hash");
  if (cubin_hash.size() != 32) throw std::invalid_argument("set_variant_cubin_hash: not a cubin hash: '" + cubin_hash + "'");
  auto st = conn_.prepare("UPDATE variant_rows SET cubin_hash = ? WHERE id = ?");
  st.bind(1, cubin_hash).bind(2, variant_id).run();
  if (conn_.changes() != 1)
    throw std::invalid_argument(fmt::format("set_variant_cubin_hash: no variant {}", variant_id));
}

std::optional<VariantRecord> ExperimentDb::find_variant_by_hash(const std::string& content_hash) {
  auto st = conn_.prepare(
      fmt::format("SELECT {} FROM {} WHERE v.content_hash = ?", rows::kVariantColumns, rows::kVariantFrom));
  st.bind(1, content_hash);
  if (!st.step()) return std::nullopt;
  return rows::read_variant(st);
}

std::optional<VariantRecord> ExperimentDb::variant(std::int64_t variant_id) {
  auto st = conn_.prepare(fmt::format("SELECT {} FROM {} WHERE v.id = ?", rows::kVariantColumns, rows::kVariantFrom));
  st.bind(1, variant_id);
  if (!st.step()) return std::nullopt;
  return rows::read_variant(st);
}

// ---------------------------------------------------------------------------------------------------
// ad-hoc SQL

SqlResult ExperimentDb::sql_readonly(const std::string& query) {
  // A separate SQLITE_OPEN_READONLY connection even when this one is writable: SQLite itself then
  // refuses any write, whatever sqlite3_stmt_readonly says about the statement. Immutable when this one is (a DB
  // on read-only storage, where SQLite cannot create the -shm a plain read-only connection needs: open()).
  auto ro = sqlite::Connection::open(path(), conn_.mode() == sqlite::OpenMode::read_only_immutable
                                                 ? sqlite::OpenMode::read_only_immutable
                                                 : sqlite::OpenMode::read_only);
  auto st = ro.prepare(query);
  if (!st.readonly()) {
    throw std::invalid_argument(fmt::format(
        "sql: refusing a statement that writes to the database: \"{}\" (the query connection is read-only; "
        "use SELECT, WITH ... SELECT, EXPLAIN or read-only PRAGMAs)",
        query));
  }
  SqlResult result;
  for (int c = 0; c < st.column_count(); ++c) result.columns.push_back(st.column_name(c));
  while (st.step()) {
    auto& row = result.rows.emplace_back();
    for (int c = 0; c < st.column_count(); ++c) row.push_back(st.column_opt_text(c));
  }
  return result;
}

}  // namespace attn
