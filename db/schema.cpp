#include "db/schema.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attn::db {
namespace {

// Keep in step with docs/db-schema.md. Every *_at column is ISO-8601 UTC text with milliseconds.
constexpr const char* kHeadSql = R"sql(
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
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  cubin_hash    TEXT
);
CREATE INDEX variants_by_config ON variants (template, params_json);
)sql";

// `proposals` (since schema version 3): one call of the proposer hook (docs/proposer.md).
constexpr const char* kProposalsSql = R"sql(
CREATE TABLE proposals (
  id                   INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id               INTEGER NOT NULL REFERENCES runs (id),
  command              TEXT NOT NULL,
  started_at           TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  finished_at          TEXT,
  parent_template      TEXT NOT NULL,
  parent_iteration_id  INTEGER REFERENCES iterations (id),
  template             TEXT UNIQUE,
  status               TEXT NOT NULL DEFAULT 'running'
                       CHECK (status IN ('running','accepted','rejected','empty','interrupted')),
  reason               TEXT NOT NULL DEFAULT '',
  description          TEXT NOT NULL DEFAULT '',
  source               TEXT,
  space_json           TEXT,
  headers_json         TEXT NOT NULL DEFAULT '{}',
  diff                 TEXT NOT NULL DEFAULT '',
  exit_status          TEXT NOT NULL DEFAULT '',
  proposer_ms          REAL,
  output               TEXT NOT NULL DEFAULT ''
);
CREATE INDEX proposals_by_run ON proposals (run_id);
)sql";

// The columns of `iterations` (after "CREATE TABLE <name>"): those of version 3 (shared by the fresh DDL and
// the v2 -> v3 and v4 -> v5 rebuilds) and the ones version 4 appends. Version 2 added fidelity, screen_ms and
// root_seed; version 3 the failure kind 'proposal' and proposal_id; version 4 gpu_index, gpu_uuid and
// sm_clock_mhz; version 5 the failure kinds 'inconsistent' and 'below_floor' (@FAILURE_KINDS@: the CHECK's list,
// kFailureKindsV3Sql or kFailureKindsV5Sql).
constexpr const char* kIterationsColumnsV3Sql = R"sql( (
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
                CHECK (failure_kind IN (@FAILURE_KINDS@)),
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
  root_seed     INTEGER,
  proposal_id   INTEGER REFERENCES proposals (id))sql";

// Version 4: the GPU an iteration was timed on (one worker per GPU, docs/scale-out.md). Appended by the
// 3 -> 4 migration with ALTER TABLE, so a migrated file has the column order of a fresh one.
constexpr const char* kIterationsV4Columns[] = {"gpu_index INTEGER", "gpu_uuid TEXT", "sm_clock_mhz INTEGER"};

// The failure kinds an iteration may have (gpu/failure.hpp kFailureKindNames, in its order): versions 3 and 4,
// and since version 5 (the verification of issue 30: docs/verification.md).
constexpr const char* kFailureKindsV3Sql =
    "'none','compile','device_limit','fault','hang','wrong_result',\n"
    "                                        'worker_died','interrupted','proposal'";
constexpr const char* kFailureKindsV5Sql =
    "'none','compile','device_limit','fault','hang','wrong_result',\n"
    "                                        'worker_died','interrupted','proposal','inconsistent','below_floor'";

/// The version-3 column list (no closing parenthesis) with `failure_kinds` in the CHECK.
std::string iterations_columns_v3_sql(const char* failure_kinds) {
  std::string sql = kIterationsColumnsV3Sql;
  const std::string mark = "@FAILURE_KINDS@";
  sql.replace(sql.find(mark), mark.size(), failure_kinds);
  return sql;
}

/// The columns of the current version, closed.
std::string iterations_columns_sql() {
  std::string sql = iterations_columns_v3_sql(kFailureKindsV5Sql);
  for (const char* c : kIterationsV4Columns) sql += std::string(",\n  ") + c;
  return sql + "\n);\n";
}

// Since version 4: where a merged iteration came from (`attn-tuner db merge`, db/merge.hpp).
constexpr const char* kIterationSourcesSql = R"sql(
CREATE TABLE iteration_sources (
  iteration_id         INTEGER PRIMARY KEY REFERENCES iterations (id),
  source_db            TEXT NOT NULL,
  source_run_id        INTEGER NOT NULL,
  source_iteration_id  INTEGER NOT NULL,
  host                 TEXT NOT NULL DEFAULT '',
  merged_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
)sql";

constexpr const char* kIterationsIndexSql = R"sql(
CREATE INDEX iterations_by_suite ON iterations (suite, status, geomean_ms);
CREATE INDEX iterations_by_config ON iterations (template, params_json, suite);
CREATE INDEX iterations_by_run ON iterations (run_id);
CREATE INDEX iterations_by_proposal ON iterations (proposal_id);
)sql";

constexpr const char* kTailSql = R"sql(
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

// Since version 7: runs of the official challenge harness on an exported submission (`export --harness`,
// export/harness_check.hpp). No foreign keys: a check names the iterations it exported in iterations_json.
constexpr const char* kHarnessChecksSql = R"sql(
CREATE TABLE harness_checks (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  ran_at           TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  suite            TEXT NOT NULL,
  export_suite     TEXT NOT NULL,
  root_seed        INTEGER,
  valid            INTEGER NOT NULL CHECK (valid IN (0, 1)),
  score_ms         REAL,
  family_ms_json   TEXT NOT NULL DEFAULT '{}',
  failure_reason   TEXT,
  harness_commit   TEXT,
  harness_args     TEXT NOT NULL DEFAULT '[]',
  submission_dir   TEXT NOT NULL,
  iterations_json  TEXT NOT NULL DEFAULT '[]',
  wall_s           REAL
);
)sql";

// Since version 8: kernel ideas from the idea queue (`run --ideas DIR`, docs/ideas.md), one row per idea and
// parent template: applied, checked, tuned within a budget, judged by A/B/A against the parent, a verdict.
constexpr const char* kIdeasSql = R"sql(
CREATE TABLE ideas (
  id                   INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id               INTEGER NOT NULL REFERENCES runs (id),
  file                 TEXT NOT NULL,
  idea_hash            TEXT NOT NULL,
  description          TEXT NOT NULL DEFAULT '',
  hypothesis           TEXT NOT NULL DEFAULT '',
  diff                 TEXT NOT NULL DEFAULT '',
  space_json           TEXT NOT NULL DEFAULT '{}',
  default_json         TEXT NOT NULL DEFAULT '{}',
  parent_template      TEXT NOT NULL DEFAULT '',
  parent_iteration_id  INTEGER REFERENCES iterations (id),
  proposal_id          INTEGER REFERENCES proposals (id),
  template             TEXT NOT NULL DEFAULT '',
  status               TEXT NOT NULL CHECK (status IN ('checking','tuning','judging','done','interrupted')),
  verdict              TEXT NOT NULL DEFAULT '' CHECK (verdict IN ('','win','no_gain','slower','broken')),
  broken_kind          TEXT NOT NULL DEFAULT '',
  reason               TEXT NOT NULL DEFAULT '',
  configs              INTEGER NOT NULL DEFAULT 0,
  best_iteration_id    INTEGER REFERENCES iterations (id),
  best_ms              REAL,
  parent_ms            REAL,
  idea_ms              REAL,
  delta_pct            REAL,
  noise_pct            REAL,
  aba_json             TEXT NOT NULL DEFAULT '{}',
  holdout_parent_ms    REAL,
  holdout_idea_ms      REAL,
  gpu_s                REAL,
  wall_s               REAL,
  started_at           TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  finished_at          TEXT
);
CREATE INDEX ideas_by_hash ON ideas (idea_hash, parent_template);
)sql";

// Since version 9: the idea agent's calls (`run --idea-agent CMD`, docs/ideas.md): each call with the kit it was
// given (its files as the agent saw them), its output, and the idea files it wrote, each with the queue file
// name it went in as (`ideas.file` of its verdict row: the provenance of an agent's idea).
constexpr const char* kIdeaAgentSql = R"sql(
CREATE TABLE idea_agent_calls (
  id                     INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id                 INTEGER NOT NULL REFERENCES runs (id),
  command                TEXT NOT NULL,
  status                 TEXT NOT NULL CHECK (status IN ('running','done','failed','interrupted')),
  reason                 TEXT NOT NULL DEFAULT '',
  exit_status            TEXT NOT NULL DEFAULT '',
  agent_ms               REAL,
  output                 TEXT NOT NULL DEFAULT '',
  parent_template        TEXT NOT NULL DEFAULT '',
  champion_iteration_id  INTEGER REFERENCES iterations (id),
  context_json           TEXT NOT NULL DEFAULT '{}',
  started_at             TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  finished_at            TEXT
);
CREATE TABLE idea_agent_ideas (
  call_id    INTEGER NOT NULL REFERENCES idea_agent_calls (id),
  file       TEXT NOT NULL,
  queued_as  TEXT NOT NULL,
  idea_hash  TEXT NOT NULL,
  text       TEXT NOT NULL,
  PRIMARY KEY (call_id, file)
);
CREATE INDEX idea_agent_ideas_by_queue_file ON idea_agent_ideas (queued_as);
)sql";

// Since version 10: the whole-suite evaluations that spare GPU time gave to screened-out configs (the daemon's
// spare evaluations, docs/daemon.md): the iteration of each, and the screen iteration whose config it measured.
constexpr const char* kSpareEvaluationsSql = R"sql(
CREATE TABLE spare_evaluations (
  iteration_id           INTEGER PRIMARY KEY REFERENCES iterations (id),
  screened_iteration_id  INTEGER NOT NULL REFERENCES iterations (id)
);
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
const std::vector<std::string> kRequiredTables = {"runs",      "variants",         "iterations",     "case_results",
                                                  "champions", "champion_history", "holdout_checks", "proposals",
                                                  "iteration_sources", "harness_checks", "ideas",
                                                  "idea_agent_calls", "idea_agent_ideas"};

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

/// Version 2 -> 3: the `proposals` table; `iterations` gains proposal_id and the failure kind 'proposal'.
/// A CHECK constraint cannot be altered in SQLite, so `iterations` is rebuilt by SQLite's documented
/// procedure (create the new table, copy every row with its id, drop, rename, recreate the indexes) with
/// foreign keys off; ensure_schema runs foreign_key_check before the commit.
/// Rebuilds `iterations` with the columns `columns_sql` (after "CREATE TABLE <name>", closed), copying
/// `copied` (a column list both tables have) of every row with its id: SQLite's documented procedure (create
/// the new table, copy, drop, rename, recreate the indexes), keeping the AUTOINCREMENT counter. Runs with
/// foreign keys off; ensure_schema runs foreign_key_check before the commit.
void rebuild_iterations(sqlite::Connection& conn, const std::string& columns_sql, const char* copied) {
  conn.exec("CREATE TABLE iterations_new" + columns_sql);
  conn.exec(fmt::format("INSERT INTO iterations_new ({0}) SELECT {0} FROM iterations ORDER BY id", copied));
  // AUTOINCREMENT: an iter number is never reused, so the new table continues from the old counter.
  std::optional<std::int64_t> seq;
  {
    auto st = conn.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'iterations'");
    if (st.step()) seq = st.column_int64(0);
  }
  conn.exec("DROP TABLE iterations");
  conn.exec("ALTER TABLE iterations_new RENAME TO iterations");
  conn.exec(kIterationsIndexSql);
  if (seq) {
    conn.prepare("DELETE FROM sqlite_sequence WHERE name = 'iterations'").run();
    conn.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('iterations', ?)").bind(1, *seq).run();
  }
}

void migrate_2_to_3(sqlite::Connection& conn) {
  constexpr const char* kV2Columns =
      "id, run_id, variant_id, suite, template, params_json, params, status, failure_kind, geomean_ms, delta_ms, "
      "window_ms, global_ms, retrieval_ms, description, started_at, finished_at, gpu_ms, compile_ms, fidelity, "
      "screen_ms, root_seed";
  conn.exec(kProposalsSql);
  rebuild_iterations(conn, iterations_columns_v3_sql(kFailureKindsV3Sql) + "\n);", kV2Columns);
}

/// Version 3 -> 4 (scale-out): iterations gain gpu_index, gpu_uuid and sm_clock_mhz (NULL for every existing
/// row), and the iteration_sources table (empty) holds the provenance of merged iterations.
void migrate_3_to_4(sqlite::Connection& conn) {
  for (const char* c : kIterationsV4Columns) conn.exec(std::string("ALTER TABLE iterations ADD COLUMN ") + c);
  conn.exec(kIterationSourcesSql);
}

/// Version 4 -> 5 (issue 30, docs/verification.md): the failure kinds 'inconsistent' and 'below_floor'. The
/// CHECK of `iterations` changes, so the table is rebuilt as in 2 -> 3; every row, id and column is kept.
void migrate_4_to_5(sqlite::Connection& conn) {
  constexpr const char* kV4Columns =
      "id, run_id, variant_id, suite, template, params_json, params, status, failure_kind, geomean_ms, delta_ms, "
      "window_ms, global_ms, retrieval_ms, description, started_at, finished_at, gpu_ms, compile_ms, fidelity, "
      "screen_ms, root_seed, proposal_id, gpu_index, gpu_uuid, sm_clock_mhz";
  rebuild_iterations(conn, iterations_columns_sql(), kV4Columns);
}

/// Turns foreign-key enforcement off for a table rebuild and back on afterwards (the pragma is a no-op
/// inside a transaction, so this wraps the step's transaction).
class ForeignKeysOff {
 public:
  ForeignKeysOff(sqlite::Connection& conn, bool active) : conn_(conn), active_(active) {
    if (active_) conn_.exec("PRAGMA foreign_keys = OFF");
  }
  ~ForeignKeysOff() {
    if (active_) {
      try {
        conn_.exec("PRAGMA foreign_keys = ON");
      } catch (...) {
      }
    }
  }
  ForeignKeysOff(const ForeignKeysOff&) = delete;
  ForeignKeysOff& operator=(const ForeignKeysOff&) = delete;

 private:
  sqlite::Connection& conn_;
  bool active_;
};

}  // namespace

const std::vector<Migration>& builtin_migrations() {
  static const std::vector<Migration> chain = {
      {1,
       [](sqlite::Connection& conn) {
         conn.exec(kMigrate1To2);
         conn.exec(kHoldoutChecksSql);
       }},
      {2, migrate_2_to_3, true},
      {3, migrate_3_to_4},
      {4, migrate_4_to_5, true},
      {5, [](sqlite::Connection& conn) { conn.exec("ALTER TABLE variants ADD COLUMN cubin_hash TEXT"); }},
      {6, [](sqlite::Connection& conn) { conn.exec(kHarnessChecksSql); }, false, /*readable_without=*/true},
      {7, [](sqlite::Connection& conn) { conn.exec(kIdeasSql); }, false, /*readable_without=*/true},
      {8, [](sqlite::Connection& conn) { conn.exec(kIdeaAgentSql); }, false, /*readable_without=*/true},
      {9, [](sqlite::Connection& conn) { conn.exec(kSpareEvaluationsSql); }, false, /*readable_without=*/true},
  };
  return chain;
}

const char* schema_sql() {
  static const std::string sql = std::string(kHeadSql) + kProposalsSql + "CREATE TABLE iterations" +
                                 iterations_columns_sql() + kIterationsIndexSql + kTailSql + kHoldoutChecksSql +
                                 kIterationSourcesSql + kHarnessChecksSql + kIdeasSql + kIdeaAgentSql + kSpareEvaluationsSql;
  return sql.c_str();
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
    // Steps that only add tables a reader finds empty (harness_checks) need not have run for a read-only
    // connection: a version-6 file is read as it is (`query`, `export`, `replay`); a writer migrates it.
    bool readable = version > 0;
    for (int v = version; readable && v < target_version; ++v) {
      const auto step =
          std::find_if(chain.begin(), chain.end(), [&](const Migration& m) { return m.from_version == v; });
      readable = step != chain.end() && step->readable_without;
    }
    if (readable) {
      require_tables(conn, kVersion1Tables);
      return;
    }
    throw std::runtime_error(
        version == 0 ? fmt::format("{} is an empty database, not an attn-tuner experiment DB", conn.path())
                     : fmt::format("{} has schema version {} and needs migrating to {}: `attn-tuner db migrate "
                                   "{}` upgrades it in place, every row kept",
                                   conn.path(), version, target_version, conn.path()));
  }
  if (version > 0 && version < target_version) require_tables(conn, kVersion1Tables);  // ours, before migrating
  while (version < target_version) {
    const auto step = std::find_if(chain.begin(), chain.end(),
                                   [&](const Migration& m) { return m.from_version == version; });
    const bool rebuild = version > 0 && step != chain.end() && step->rebuilds_tables;
    ForeignKeysOff fk_off(conn, rebuild);  // before BEGIN: the pragma is a no-op inside a transaction
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
      if (step == chain.end()) {
        throw std::runtime_error(fmt::format("{} has schema version {}, and no migration to {} is known",
                                             conn.path(), version, version + 1));
      }
      step->apply(conn);
      if (rebuild) {
        auto check = conn.prepare("PRAGMA foreign_key_check");
        if (check.step())
          throw std::runtime_error(fmt::format("{}: migrating from schema version {} broke a foreign key (table {}, "
                                               "row {}); nothing was changed",
                                               conn.path(), version, check.column_text(0), check.column_text(1)));
      }
      ++version;
    }
    conn.prepare("INSERT INTO schema_version (version) VALUES (?)").bind(1, version).run();
    tx.commit();
  }
  require_tables(conn, kRequiredTables);
}

}  // namespace attn::db
