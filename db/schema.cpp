#include "db/schema.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attn::db {
namespace {

// Keep in step with docs/db-schema.md. Every *_at column is ISO-8601 UTC text with milliseconds.
constexpr const char* kSchemaSql = R"sql(
CREATE TABLE schema_version (
  version     INTEGER PRIMARY KEY,
  applied_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);

CREATE TABLE runs (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  ended_at      TEXT,
  suite         TEXT NOT NULL,
  suite_json    TEXT NOT NULL,
  strategy      TEXT NOT NULL,
  templates     TEXT NOT NULL DEFAULT '[]',
  gpu_name      TEXT NOT NULL DEFAULT '',
  driver        TEXT NOT NULL DEFAULT '',
  sm_clock_mhz  INTEGER,
  git_commit    TEXT NOT NULL DEFAULT '',
  host          TEXT NOT NULL DEFAULT '',
  status        TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running','finished','stopped','interrupted','failed')),
  stop_reason   TEXT
);

CREATE TABLE variants (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  template      TEXT NOT NULL,
  params_json   TEXT NOT NULL,
  params        TEXT NOT NULL,
  content_hash  TEXT NOT NULL UNIQUE,
  compile_ok    INTEGER NOT NULL CHECK (compile_ok IN (0, 1)),
  compile_ms    REAL,
  compile_log   TEXT NOT NULL DEFAULT '',
  registers     INTEGER,
  smem_bytes    INTEGER,
  spill_bytes   INTEGER,
  cubin_path    TEXT,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX variants_by_config ON variants (template, params_json);

CREATE TABLE iterations (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id        INTEGER NOT NULL REFERENCES runs (id),
  variant_id    INTEGER REFERENCES variants (id),
  suite         TEXT NOT NULL,
  template      TEXT NOT NULL,
  params_json   TEXT NOT NULL,
  params        TEXT NOT NULL,
  status        TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running','keep','discard','crash','interrupted')),
  failure_kind  TEXT NOT NULL DEFAULT 'none'
                CHECK (failure_kind IN ('none','compile','device_limit','fault','hang','wrong_result',
                                        'worker_died','interrupted')),
  geomean_ms    REAL,
  delta_ms      REAL,
  window_ms     REAL,
  global_ms     REAL,
  retrieval_ms  REAL,
  description   TEXT NOT NULL DEFAULT '',
  started_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  finished_at   TEXT,
  gpu_ms        REAL,
  compile_ms    REAL,
  fidelity      TEXT NOT NULL DEFAULT 'full' CHECK (fidelity IN ('screen','full')),
  screen_ms     REAL,
  root_seed     INTEGER
);
CREATE INDEX iterations_by_suite ON iterations (suite, status, geomean_ms);
CREATE INDEX iterations_by_config ON iterations (template, params_json, suite);
CREATE INDEX iterations_by_run ON iterations (run_id);

CREATE TABLE case_results (
  iteration_id      INTEGER NOT NULL REFERENCES iterations (id),
  case_id           TEXT NOT NULL,
  family            TEXT NOT NULL
                    CHECK (family IN ('sliding_window','sliding_window_global','sliding_window_retrieval')),
  median_ms         REAL,
  spread            REAL,
  samples           INTEGER NOT NULL DEFAULT 0,
  sm_clock_mhz      INTEGER,
  o_max_abs_diff    REAL,
  lse_max_abs_diff  REAL,
  passed            INTEGER NOT NULL CHECK (passed IN (0, 1)),
  PRIMARY KEY (iteration_id, case_id)
) WITHOUT ROWID;

CREATE TABLE champions (
  suite         TEXT NOT NULL,
  scope         TEXT NOT NULL
                CHECK (scope IN ('overall','sliding_window','sliding_window_global','sliding_window_retrieval')),
  iteration_id  INTEGER NOT NULL REFERENCES iterations (id),
  score_ms      REAL NOT NULL,
  promoted_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  PRIMARY KEY (suite, scope)
);

CREATE TABLE champion_history (
  id                     INTEGER PRIMARY KEY AUTOINCREMENT,
  suite                  TEXT NOT NULL,
  scope                  TEXT NOT NULL,
  iteration_id           INTEGER NOT NULL REFERENCES iterations (id),
  score_ms               REAL NOT NULL,
  previous_iteration_id  INTEGER REFERENCES iterations (id),
  previous_score_ms      REAL,
  aba_json               TEXT NOT NULL DEFAULT '{}',
  promoted_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX champion_history_by_suite ON champion_history (suite, scope, id);
)sql";

// Since version 2: held-out confirmations of champions (created fresh and by the 1 -> 2 migration).
constexpr const char* kHoldoutChecksSql = R"sql(
CREATE TABLE holdout_checks (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id        INTEGER NOT NULL REFERENCES runs (id),
  iteration_id  INTEGER NOT NULL REFERENCES iterations (id),
  suite         TEXT NOT NULL,
  root_seed     INTEGER NOT NULL,
  role          TEXT NOT NULL CHECK (role IN ('challenger','incumbent','champion')),
  ok            INTEGER NOT NULL CHECK (ok IN (0, 1)),
  score_ms      REAL,
  window_ms     REAL,
  global_ms     REAL,
  retrieval_ms  REAL,
  tuned_ms      REAL,
  verdict       TEXT NOT NULL DEFAULT '',
  cases_json    TEXT NOT NULL DEFAULT '[]',
  checked_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX holdout_checks_by_iteration ON holdout_checks (iteration_id, id);
)sql";

// Version 1 -> 2: the fidelity ladder and held-out seeds. Every existing iteration was a whole-suite
// evaluation (fidelity 'full'); its root seed was not recorded (NULL). Columns are appended, so a
// migrated file has the same column order as a fresh one.
constexpr const char* kMigrate1To2 = R"sql(
ALTER TABLE iterations ADD COLUMN fidelity TEXT NOT NULL DEFAULT 'full' CHECK (fidelity IN ('screen','full'));
ALTER TABLE iterations ADD COLUMN screen_ms REAL;
ALTER TABLE iterations ADD COLUMN root_seed INTEGER;
)sql";

// The tables of version 1 (a file must have them before it is migrated), and of the current version.
const std::vector<std::string> kVersion1Tables = {"runs",      "variants",        "iterations",
                                                  "case_results", "champions", "champion_history"};
const std::vector<std::string> kRequiredTables = {"runs",      "variants",         "iterations",    "case_results",
                                                  "champions", "champion_history", "holdout_checks"};

std::vector<std::string> table_names(sqlite::Connection& conn) {
  auto st = conn.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
  std::vector<std::string> names;
  while (st.step()) names.push_back(st.column_text(0));
  return names;
}

/// Throws std::runtime_error naming the file and the missing tables unless it has all of `required`.
void require_tables(sqlite::Connection& conn, const std::vector<std::string>& required) {
  const auto tables = table_names(conn);
  std::vector<std::string> missing;
  for (const auto& t : required)
    if (std::find(tables.begin(), tables.end(), t) == tables.end()) missing.push_back(t);
  if (!missing.empty()) {
    throw std::runtime_error(fmt::format("{} has a schema_version table but lacks the table(s) {}; "
                                         "not an attn-tuner experiment DB",
                                         conn.path(), fmt::join(missing, ", ")));
  }
}

}  // namespace

const std::vector<Migration>& builtin_migrations() {
  static const std::vector<Migration> chain = {
      {1,
       [](sqlite::Connection& conn) {
         conn.exec(kMigrate1To2);
         conn.exec(kHoldoutChecksSql);
       }},
  };
  return chain;
}

const char* schema_sql() {
  static const std::string full = std::string(kSchemaSql) + kHoldoutChecksSql;
  return full.c_str();
}

void configure_connection(sqlite::Connection& conn) {
  try {
    // The first statement that reads the file: SQLITE_NOTADB surfaces here.
    conn.prepare("SELECT count(*) FROM sqlite_master").run();
  } catch (const sqlite::Error& e) {
    if (e.code() == SQLITE_NOTADB) {
      throw std::runtime_error(fmt::format("{} is not a SQLite database (not an attn-tuner experiment DB)",
                                           conn.path()));
    }
    throw;
  }
  conn.exec("PRAGMA foreign_keys = ON");
  if (!conn.read_only()) {
    conn.exec("PRAGMA journal_mode = WAL");
    conn.exec("PRAGMA synchronous = FULL");
  }
}

int read_schema_version(sqlite::Connection& conn) {
  auto tables = table_names(conn);
  if (tables.empty()) return 0;
  bool has_version = std::find(tables.begin(), tables.end(), "schema_version") != tables.end();
  if (!has_version) {
    throw std::runtime_error(fmt::format(
        "{} is a SQLite database of another schema (no schema_version table; tables: {}), "
        "not an attn-tuner experiment DB",
        conn.path(), fmt::join(tables, ", ")));
  }
  auto st = conn.prepare("SELECT MAX(version) FROM schema_version");
  st.step();
  if (st.is_null(0)) {
    throw std::runtime_error(fmt::format("{}: the schema_version table is empty; not an attn-tuner "
                                         "experiment DB, or a damaged one", conn.path()));
  }
  return static_cast<int>(st.column_int64(0));
}

void ensure_schema(sqlite::Connection& conn, int target_version, const std::vector<Migration>& chain) {
  if (target_version < kSchemaVersion) {
    throw std::invalid_argument(fmt::format("ensure_schema: target version {} is older than the built-in {}",
                                            target_version, kSchemaVersion));
  }
  auto refuse_newer = [&](int version) {
    if (version > target_version) {
      throw std::runtime_error(fmt::format(
          "{} has schema version {}, newer than the {} this attn-tuner understands; use a newer attn-tuner",
          conn.path(), version, target_version));
    }
  };
  int version = read_schema_version(conn);
  refuse_newer(version);
  if (version < target_version && conn.read_only()) {
    throw std::runtime_error(
        version == 0 ? fmt::format("{} is an empty database, not an attn-tuner experiment DB", conn.path())
                     : fmt::format("{} has schema version {} and needs migrating to {}; open it read-write "
                                   "once (e.g. with `attn-tuner run`)",
                                   conn.path(), version, target_version));
  }
  if (version > 0 && version < target_version) require_tables(conn, kVersion1Tables);  // ours, before migrating
  while (version < target_version) {
    // Take the write lock, then look again: another process may have created or migrated meanwhile.
    sqlite::Transaction tx(conn);
    if (int now = read_schema_version(conn); now != version) {
      refuse_newer(now);
      version = now;
      continue;
    }
    if (version == 0) {
      conn.exec(schema_sql());
      version = kSchemaVersion;
    } else {
      auto step = std::find_if(chain.begin(), chain.end(),
                               [&](const Migration& m) { return m.from_version == version; });
      if (step == chain.end()) {
        throw std::runtime_error(fmt::format("{} has schema version {}, and no migration to {} is known",
                                             conn.path(), version, version + 1));
      }
      step->apply(conn);
      ++version;
    }
    conn.prepare("INSERT INTO schema_version (version) VALUES (?)").bind(1, version).run();
    tx.commit();
  }
  require_tables(conn, kRequiredTables);
}

}  // namespace attn::db
