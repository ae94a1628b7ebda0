-- The version-1 schema of the experiment DB, frozen (db/schema.cpp at schema version 1), for the
-- migration tests (tests/db/test_migration.cpp). Never edit: it is what old files on disk look like.
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
  compile_ms    REAL
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
