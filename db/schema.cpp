#include "db/schema.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "db/configs.hpp"

namespace attn::db {
namespace {

// Version 1, where every file begins (a fresh file takes every step of the chain from here: ensure_schema); the
// tables are documented as they are now in docs/db-schema.md. Every *_at column is ISO-8601 UTC text with
// milliseconds. tests/data/db/schema_v1.sql is the same DDL, frozen: tests/db/test_migration.cpp.
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
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
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

// The columns of `iterations` (after "CREATE TABLE <name>"): those of version 1, and the ones version 3 appends (shared
// by the v2 -> v3 and v4 -> v5 rebuilds; version 2 added fidelity, screen_ms and root_seed with ALTER TABLE, version 3
// the failure kind 'proposal' and proposal_id; version 4 appends gpu_index, gpu_uuid and sm_clock_mhz; version 5 the
// failure kinds 'inconsistent' and 'below_floor'). @FAILURE_KINDS@: the CHECK's list (kFailureKindsV1Sql, V3 or V5).
constexpr const char* kIterationsColumnsV1Sql = R"sql( (
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
  compile_ms    REAL)sql";
constexpr const char* kIterationsColumnsV3Added = R"sql(,
  fidelity      TEXT NOT NULL DEFAULT 'full' CHECK (fidelity IN ('screen','full')),
  screen_ms     REAL,
  root_seed     INTEGER,
  proposal_id   INTEGER REFERENCES proposals (id))sql";

// Version 4: the GPU an iteration was timed on (one worker per GPU, docs/scale-out.md). Appended by the
// 3 -> 4 migration with ALTER TABLE, so a migrated file has the column order of a fresh one.
constexpr const char* kIterationsV4Columns[] = {"gpu_index INTEGER", "gpu_uuid TEXT", "sm_clock_mhz INTEGER"};

// The failure kinds an iteration may have (core/failure_kind.hpp kFailureKindNames, in its order): versions 1 and 2,
// 3 and 4, and since version 5 (the verification of issue 30: docs/verification.md).
constexpr const char* kFailureKindsV1Sql =
    "'none','compile','device_limit','fault','hang','wrong_result',\n"
    "                                        'worker_died','interrupted'";
constexpr const char* kFailureKindsV3Sql =
    "'none','compile','device_limit','fault','hang','wrong_result',\n"
    "                                        'worker_died','interrupted','proposal'";
constexpr const char* kFailureKindsV5Sql =
    "'none','compile','device_limit','fault','hang','wrong_result',\n"
    "                                        'worker_died','interrupted','proposal','inconsistent','below_floor'";

/// The version-1 column list (no closing parenthesis) with `failure_kinds` in the CHECK.
std::string iterations_columns_v1_sql(const char* failure_kinds) {
  std::string sql = kIterationsColumnsV1Sql;
  const std::string mark = "@FAILURE_KINDS@";
  sql.replace(sql.find(mark), mark.size(), failure_kinds);
  return sql;
}

/// The version-3 column list (no closing parenthesis) with `failure_kinds` in the CHECK.
std::string iterations_columns_v3_sql(const char* failure_kinds) {
  return iterations_columns_v1_sql(failure_kinds) + kIterationsColumnsV3Added;
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

// The indexes of `iterations`: of version 1, and since version 3 (its rebuilds create them again).
constexpr const char* kIterationsIndexV1Sql = R"sql(
CREATE INDEX iterations_by_suite ON iterations (suite, status, geomean_ms);
CREATE INDEX iterations_by_config ON iterations (template, params_json, suite);
CREATE INDEX iterations_by_run ON iterations (run_id);
)sql";
const std::string kIterationsIndexSql =
    std::string(kIterationsIndexV1Sql) + "CREATE INDEX iterations_by_proposal ON iterations (proposal_id);\n";

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

// Version 10 (issue 38, a night's DB): a config is stored once, and a case's name and family once (`cases`,
// the per-case rows in `case_rows`, shown by the view `case_results`). `param_names` holds each distinct list of
// parameter names (sorted, as JSON), `configs` a template with one list of values in that order, so that a
// config costs its values' bytes (~40) instead of its JSON text twice in `iterations`, twice in `variants`
// and once in each of their config indexes (~1.2 KB). The rows live in `iteration_rows` and `variant_rows`;
// the views `iterations` and `variants` show them with the columns of version 8 (template, params_json,
// params rendered from the config), so every reader and every documented query keeps working.
constexpr const char* kConfigsSql = R"sql(
CREATE TABLE param_names (
  id     INTEGER PRIMARY KEY,
  names  TEXT NOT NULL UNIQUE
);
CREATE TABLE configs (
  id            INTEGER PRIMARY KEY,
  template      TEXT NOT NULL,
  names_id      INTEGER NOT NULL REFERENCES param_names (id),
  param_values  TEXT NOT NULL,
  UNIQUE (template, param_values, names_id)
);
CREATE TABLE gpus (
  id    INTEGER PRIMARY KEY,
  uuid  TEXT NOT NULL UNIQUE
);
CREATE TABLE cases (
  id       INTEGER PRIMARY KEY,
  case_id  TEXT NOT NULL,
  family   TEXT NOT NULL
           CHECK (family IN ('sliding_window','sliding_window_global','sliding_window_retrieval')),
  UNIQUE (case_id, family)
);
)sql";

// The stored rows of version 10 (created as *_new by the 9 -> 10 step, then renamed).
constexpr const char* kRowTablesV10Sql = R"sql(
CREATE TABLE variant_rows_new (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  config_id     INTEGER NOT NULL REFERENCES configs (id),
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
CREATE TABLE iteration_rows_new (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id        INTEGER NOT NULL REFERENCES runs (id),
  variant_id    INTEGER REFERENCES variant_rows (id),
  suite         TEXT NOT NULL,
  config_id     INTEGER NOT NULL REFERENCES configs (id),
  status        TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running','keep','discard','crash','interrupted')),
  failure_kind  TEXT NOT NULL DEFAULT 'none'
                CHECK (failure_kind IN ('none','compile','device_limit','fault','hang','wrong_result',
                                        'worker_died','interrupted','proposal','inconsistent','below_floor')),
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
  proposal_id   INTEGER REFERENCES proposals (id),
  gpu_index     INTEGER,
  gpu_key       INTEGER REFERENCES gpus (id),
  sm_clock_mhz  INTEGER
);
CREATE TABLE case_rows_new (
  iteration_id      INTEGER NOT NULL REFERENCES iteration_rows (id),
  case_key          INTEGER NOT NULL REFERENCES cases (id),
  median_ms         REAL,
  spread            REAL,
  samples           INTEGER NOT NULL DEFAULT 0,
  sm_clock_mhz      INTEGER,
  o_max_abs_diff    REAL,
  lse_max_abs_diff  REAL,
  passed            INTEGER NOT NULL CHECK (passed IN (0, 1)),
  PRIMARY KEY (iteration_id, case_key)
) WITHOUT ROWID;
)sql";

constexpr const char* kRowIndexesV10Sql = R"sql(
CREATE INDEX variants_by_config ON variant_rows (config_id);
CREATE INDEX iterations_by_suite ON iteration_rows (suite, status, geomean_ms);
CREATE INDEX iterations_by_config ON iteration_rows (config_id, suite);
CREATE INDEX iterations_by_run ON iteration_rows (run_id);
CREATE INDEX iterations_by_proposal ON iteration_rows (proposal_id) WHERE proposal_id IS NOT NULL;
)sql";

// The views of version 10: the columns of version 8's tables, in their order (config_id appended to
// iterations). params_json is the canonical JSON (keys sorted, compact: canonical_params_json), params the
// compact form (compact_params: strings unquoted, true/false as 1/0); tests/db/test_configs.cpp checks both
// against the C++ rules.
constexpr const char* kViewsV10Sql = R"sql(
CREATE VIEW variants AS SELECT v.id, c.template,
  (SELECT '{' || coalesce(group_concat(json_quote(k.value) || ':' || (c.param_values -> k.key), ','), '') || '}'
   FROM json_each(n.names) AS k) AS params_json,
  (SELECT coalesce(group_concat(k.value || '=' || CASE json_type(c.param_values, '$[' || k.key || ']')
     WHEN 'true' THEN '1' WHEN 'false' THEN '0' WHEN 'text' THEN c.param_values ->> k.key
     ELSE c.param_values -> k.key END, ','), '') FROM json_each(n.names) AS k) AS params,
  v.content_hash, v.compile_ok, v.compile_ms, v.compile_log, v.registers, v.smem_bytes, v.spill_bytes, v.cubin_path,
  v.created_at, v.cubin_hash, v.config_id
FROM variant_rows v JOIN configs c ON c.id = v.config_id JOIN param_names n ON n.id = c.names_id;
CREATE VIEW iterations AS SELECT i.id, i.run_id, i.variant_id, i.suite, c.template,
  (SELECT '{' || coalesce(group_concat(json_quote(k.value) || ':' || (c.param_values -> k.key), ','), '') || '}'
   FROM json_each(n.names) AS k) AS params_json,
  (SELECT coalesce(group_concat(k.value || '=' || CASE json_type(c.param_values, '$[' || k.key || ']')
     WHEN 'true' THEN '1' WHEN 'false' THEN '0' WHEN 'text' THEN c.param_values ->> k.key
     ELSE c.param_values -> k.key END, ','), '') FROM json_each(n.names) AS k) AS params,
  i.status, i.failure_kind, i.geomean_ms, i.delta_ms, i.window_ms, i.global_ms, i.retrieval_ms, i.description,
  i.started_at, i.finished_at, i.gpu_ms, i.compile_ms, i.fidelity, i.screen_ms, i.root_seed, i.proposal_id,
  i.gpu_index, g.uuid AS gpu_uuid, i.sm_clock_mhz, i.config_id
FROM iteration_rows i JOIN configs c ON c.id = i.config_id JOIN param_names n ON n.id = c.names_id
LEFT JOIN gpus g ON g.id = i.gpu_key;
CREATE VIEW case_results AS SELECT r.iteration_id, k.case_id, k.family, r.median_ms, r.spread, r.samples,
  r.sm_clock_mhz, r.o_max_abs_diff, r.lse_max_abs_diff, r.passed
FROM case_rows r JOIN cases k ON k.id = r.case_key;
)sql";

// Since version 11: the whole-suite evaluations that spare GPU time gave to screened-out configs (the daemon's
// spare evaluations, docs/daemon.md): the iteration of each, and the screen iteration whose config it measured.
constexpr const char* kSpareEvaluationsSql = R"sql(
CREATE TABLE spare_evaluations (
  iteration_id           INTEGER PRIMARY KEY REFERENCES iteration_rows (id),
  screened_iteration_id  INTEGER NOT NULL REFERENCES iteration_rows (id)
);
)sql";

// Since version 12: an idea judged again on the same parent and suite (its file's Verdicts: N, docs/ideas.md): the
// row of the new verdict and the row of the verdict it repeats, both kept in `ideas`.
constexpr const char* kIdeaRepeatsSql = R"sql(
CREATE TABLE idea_repeats (
  idea_id    INTEGER PRIMARY KEY REFERENCES ideas (id),
  repeat_of  INTEGER NOT NULL REFERENCES ideas (id)
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
const std::vector<std::string> kRequiredTables = {
    "runs",      "variant_rows",     "iteration_rows", "case_rows", "cases",  "champions",      "champion_history",
    "holdout_checks", "proposals",   "iteration_sources", "harness_checks", "ideas", "idea_agent_calls",
    "idea_agent_ideas", "configs", "param_names", "gpus"};

/// The file's tables and views (since version 10 iterations, variants and case_results are views), sorted.
std::vector<std::string> table_names(sqlite::Connection& conn) {
  auto st = conn.prepare(
      "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name");
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

/// Sets the AUTOINCREMENT counter of `table` to `seq` (when known), as the rebuilt table continues the old one.
void set_sequence(sqlite::Connection& conn, const char* table, const std::optional<std::int64_t>& seq) {
  if (!seq) return;
  conn.prepare("DELETE FROM sqlite_sequence WHERE name = ?").bind(1, table).run();
  conn.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)").bind(1, table).bind(2, *seq).run();
}

std::optional<std::int64_t> sequence_of(sqlite::Connection& conn, const char* table) {
  auto st = conn.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?");
  st.bind(1, table);
  if (st.step()) return st.column_int64(0);
  return std::nullopt;
}

/// Version 9 -> 10 (issue 38): every distinct (template, params_json) of `iterations` and `variants` becomes a
/// `configs` row; the two tables are rebuilt as `iteration_rows` / `variant_rows` with a config_id in place of
/// template, params_json and params (every row, id, other column and AUTOINCREMENT counter kept), and the views
/// `iterations` / `variants` show them as before. Renaming the old tables first makes SQLite rewrite the other
/// tables' foreign keys to the new names. Runs with foreign keys off; ensure_schema checks them before the commit.
void migrate_9_to_10(sqlite::Connection& conn) {
  conn.exec(kConfigsSql);
  conn.exec("CREATE TEMP TABLE config_map (template TEXT NOT NULL, params_json TEXT NOT NULL, config_id INTEGER "
            "NOT NULL, PRIMARY KEY (template, params_json)) WITHOUT ROWID");
  {
    auto st = conn.prepare("SELECT template, params_json FROM variants UNION SELECT template, params_json FROM "
                           "iterations ORDER BY 1, 2");
    auto map = conn.prepare("INSERT INTO temp.config_map (template, params_json, config_id) VALUES (?, ?, ?)");
    while (st.step()) {
      const std::string tmpl = st.column_text(0), pj = st.column_text(1);
      std::int64_t id = 0;
      try {
        id = *config_id(conn, tmpl, pj, true);
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format("{}: a config of template {} cannot be migrated: {}", conn.path(), tmpl,
                                             e.what()));
      }
      map.reset();
      map.bind(1, tmpl).bind(2, pj).bind(3, id).run();
    }
  }
  conn.exec("INSERT INTO gpus (uuid) SELECT DISTINCT gpu_uuid FROM iterations WHERE gpu_uuid IS NOT NULL ORDER BY 1");
  const auto variants_seq = sequence_of(conn, "variants");
  const auto iterations_seq = sequence_of(conn, "iterations");
  conn.exec(kRowTablesV10Sql);
  conn.exec(
      "INSERT INTO variant_rows_new (id, config_id, content_hash, compile_ok, compile_ms, compile_log, registers, "
      "smem_bytes, spill_bytes, cubin_path, created_at, cubin_hash) SELECT v.id, m.config_id, v.content_hash, "
      "v.compile_ok, v.compile_ms, v.compile_log, v.registers, v.smem_bytes, v.spill_bytes, v.cubin_path, "
      "v.created_at, v.cubin_hash FROM variants v JOIN temp.config_map m ON m.template = v.template AND "
      "m.params_json = v.params_json ORDER BY v.id");
  conn.exec(
      "INSERT INTO iteration_rows_new (id, run_id, variant_id, suite, config_id, status, failure_kind, geomean_ms, "
      "delta_ms, window_ms, global_ms, retrieval_ms, description, started_at, finished_at, gpu_ms, compile_ms, "
      "fidelity, screen_ms, root_seed, proposal_id, gpu_index, gpu_key, sm_clock_mhz) SELECT i.id, i.run_id, "
      "i.variant_id, i.suite, m.config_id, i.status, i.failure_kind, i.geomean_ms, i.delta_ms, i.window_ms, "
      "i.global_ms, i.retrieval_ms, i.description, i.started_at, i.finished_at, i.gpu_ms, i.compile_ms, "
      "i.fidelity, i.screen_ms, i.root_seed, i.proposal_id, i.gpu_index, g.id, i.sm_clock_mhz FROM "
      "iterations i JOIN temp.config_map m ON m.template = i.template AND m.params_json = i.params_json LEFT JOIN "
      "gpus g ON g.uuid = i.gpu_uuid ORDER BY i.id");
  for (const char* t : {"variant", "iteration"}) {
    // The rename rewrites the REFERENCES of the other tables (SQLite >= 3.26); the old rows then go.
    conn.exec(fmt::format("ALTER TABLE {0}s RENAME TO {0}_rows", t));
    conn.exec(fmt::format("DROP TABLE {0}_rows", t));
    conn.exec(fmt::format("ALTER TABLE {0}_rows_new RENAME TO {0}_rows", t));
  }
  // case_results -> case_rows: (case_id, family) once in `cases`.
  conn.exec("INSERT INTO cases (case_id, family) SELECT DISTINCT case_id, family FROM case_results ORDER BY 1, 2");
  conn.exec("INSERT INTO case_rows_new (iteration_id, case_key, median_ms, spread, samples, sm_clock_mhz, "
            "o_max_abs_diff, lse_max_abs_diff, passed) SELECT r.iteration_id, k.id, r.median_ms, r.spread, "
            "r.samples, r.sm_clock_mhz, r.o_max_abs_diff, r.lse_max_abs_diff, r.passed FROM case_results r JOIN "
            "cases k ON k.case_id = r.case_id AND k.family = r.family");
  conn.exec("DROP TABLE case_results");
  conn.exec("ALTER TABLE case_rows_new RENAME TO case_rows");
  set_sequence(conn, "variant_rows", variants_seq);
  set_sequence(conn, "iteration_rows", iterations_seq);
  conn.exec("DROP TABLE temp.config_map");
  conn.exec(kRowIndexesV10Sql);
  conn.exec(kViewsV10Sql);
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
      {9, migrate_9_to_10, true},
      {10, [](sqlite::Connection& conn) { conn.exec(kSpareEvaluationsSql); }, false, /*readable_without=*/true},
      {11, [](sqlite::Connection& conn) { conn.exec(kIdeaRepeatsSql); }, false, /*readable_without=*/true},
  };
  return chain;
}

const char* version1_sql() {
  static const std::string sql = std::string(kHeadSql) + "\nCREATE TABLE iterations" +
                                 iterations_columns_v1_sql(kFailureKindsV1Sql) + "\n);\n" + kIterationsIndexV1Sql +
                                 kTailSql;
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
    // A fresh file runs the 9 -> 10 rebuild on its empty tables: foreign keys off as for any rebuild.
    ForeignKeysOff fk_off(conn, rebuild || version == 0);  // before BEGIN: the pragma is a no-op inside a transaction
    // Take the write lock, then look again: another process may have created or migrated meanwhile.
    sqlite::Transaction tx(conn);
    if (int now = read_schema_version(conn); now != version) {
      refuse_newer(now);
      version = now;
      continue;
    }
    if (version == 0) {
      // A fresh file: version 1, then every step of the chain on its empty tables, in this one transaction (a
      // version row each, as a migrated file has): one schema, built one way.
      conn.exec(version1_sql());
      conn.prepare("INSERT INTO schema_version (version) VALUES (1)").run();
      for (version = 1; version < target_version; ++version) {
        const auto next = std::find_if(chain.begin(), chain.end(),
                                       [&](const Migration& m) { return m.from_version == version; });
        if (next == chain.end())
          throw std::runtime_error(fmt::format("{}: no migration from schema version {} to build a fresh file",
                                               conn.path(), version));
        next->apply(conn);
        if (version + 1 < target_version)
          conn.prepare("INSERT INTO schema_version (version) VALUES (?)").bind(1, version + 1).run();
      }
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
