// The experiment store: the tuning daemon's source of truth (runs, compiled variants, iterations with
// their per-case results, champions). One SQLite file in WAL mode; schema in docs/db-schema.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "db/records.hpp"
#include "db/sqlite.hpp"

namespace attn {

/// Filter and order for ExperimentDb::iterations().
struct IterationQuery {
  enum class Order {
    iter_asc,     ///< oldest first
    iter_desc,    ///< newest first
    geomean_asc,  ///< fastest first; rows without a geomean last
  };
  std::optional<std::string> suite;
  std::optional<std::int64_t> run_id;
  std::vector<IterationStatus> statuses;  ///< empty = every status
  std::optional<Fidelity> fidelity{};     ///< none = both
  Order order = Order::iter_asc;
  std::optional<std::int64_t> limit;      ///< none = all rows
};

/// One finished iteration in ExperimentDb::search_history: its config is SearchHistory::configs[config]
/// (a config evaluated several times is stored once).
struct HistoryRow {
  std::int64_t iter = 0;
  std::size_t config = 0;  ///< index into SearchHistory::configs
  IterationStatus status = IterationStatus::keep;
  FailureKind failure_kind = FailureKind::none;
  std::optional<double> geomean_ms;  ///< the whole-suite score; none for a screened-out or failed one
  std::optional<double> screen_ms;
};
/// A config as stored (docs/db-schema.md `configs`): its template, its sorted parameter names and its values in
/// that order, both JSON lists (["BLOCK_N","STAGES"], [64,2]).
struct HistoryConfig {
  std::string template_name;
  std::string names_json;
  std::string values_json;
};
struct SearchHistory {
  std::vector<HistoryRow> rows;        ///< iter order
  std::vector<HistoryConfig> configs;  ///< each config of `rows` once
};

/// Result of ExperimentDb::sql_readonly: column names and rows, every value as SQLite renders it as
/// text (nullopt for NULL).
struct SqlResult {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

/// A proposal with what its template achieved (ExperimentDb::proposal_summaries).
struct ProposalSummary {
  ProposalRecord proposal;
  std::int64_t iterations = 0;          ///< iterations of its template (its crash one included)
  std::int64_t crashes = 0;             ///< of which crashed
  std::optional<double> best_ms;        ///< lowest geomean of its keep/discard iterations
  std::optional<std::int64_t> best_iter;
  std::vector<std::string> champion_of; ///< "suite:scope" of every champion it holds now
};

/// One kernel idea from the idea queue on one parent template (table ideas since schema version 8,
/// docs/ideas.md). Scores in ms (suite score: geomean of the family medians); delta_pct = (idea_ms /
/// parent_ms - 1) * 100 from the A/B/A re-timing (parent_ms = mean of A1 and A2), noise_pct the champion
/// rule's noise (tuner/champion.hpp) relative to parent_ms.
struct IdeaRecord {
  std::int64_t id = 0;                   ///< set by the DB
  std::int64_t run_id = 0;
  std::string file;                      ///< the queue file's name
  std::string idea_hash;                 ///< of the space change and the diff: one idea, whatever its file name
  std::string description, hypothesis;
  std::string diff;                      ///< as queued (paths relative to kernels_templates/)
  std::string space_json = "{}";         ///< new parameter axes {"NAME": [values]}
  std::string default_json = "{}";       ///< their defaults (the parent's behaviour)
  std::string parent_template;           ///< the template it was applied to
  std::optional<std::int64_t> parent_iteration_id;  ///< the parent's best iteration when it started
  std::optional<std::int64_t> proposal_id;          ///< the proposal row of its installed template
  std::string template_name;             ///< its template ("" when it did not get one)
  IdeaStatus status = IdeaStatus::checking;
  IdeaVerdict verdict = IdeaVerdict::none;           ///< none until done
  IdeaBrokenKind broken_kind = IdeaBrokenKind::none; ///< for broken (db/records.hpp)
  std::string reason;                    ///< the verdict in words
  std::int64_t configs = 0;              ///< configs of its template evaluated
  std::optional<std::int64_t> best_iteration_id;
  std::optional<double> best_ms;         ///< its best first-look score
  std::optional<double> parent_ms, idea_ms, delta_pct, noise_pct;
  std::string aba_json = "{}";           ///< {"a1_ms", "b_ms", "a2_ms", "gpu_index", ...}
  std::optional<double> holdout_parent_ms, holdout_idea_ms;  ///< on the held-out root seed
  std::optional<double> gpu_s;           ///< GPU time of its iterations and its judging
  std::optional<double> wall_s;          ///< from taken off the queue to the verdict
  std::string started_at, finished_at;   ///< set by the DB
};

/// One run of the official challenge harness on an exported submission (`export --harness`, table
/// harness_checks since schema version 7, docs/db-schema.md).
struct HarnessCheckRecord {
  std::int64_t id = 0;                 ///< set by the DB
  std::string ran_at;                  ///< set by the DB (ISO-8601 UTC)
  std::string suite;                   ///< the harness suite it ran
  std::string export_suite;            ///< the DB suite whose champions were exported
  std::optional<std::int64_t> root_seed;  ///< ATTENTION_KERNEL_CHALLENGE_PUBLIC_SUITE_ROOT_SEED; none: the harness's default
  bool valid = false;                  ///< the harness's overall_valid
  std::optional<double> score_ms;      ///< geometric_mean_family_latency_ms (none when invalid)
  std::string family_ms_json = "{}";   ///< {"sliding_window": median ms, ...}
  std::optional<std::string> failure_reason;
  std::optional<std::string> harness_commit;  ///< HEAD of the harness checkout; none when not a git checkout
  std::string harness_args = "[]";     ///< JSON list of the extra arguments passed through
  std::string submission_dir;
  std::string iterations_json = "[]";  ///< [{"variant": name, "iteration": iter, "template": t}, ...]
  std::optional<double> wall_s;        ///< how long the harness ran
};

/// The experiment DB. Methods that write do so in one transaction each (all or nothing). One instance
/// per thread; several processes may open the same file (WAL; writers wait up to busy_timeout).
/// Errors: std::invalid_argument for bad arguments (unknown ids, inconsistent statuses, non-finite
/// numbers), std::runtime_error / sqlite::Error naming the file for everything else.
class ExperimentDb {
 public:
  enum class Mode {
    read_write,  ///< creates the file, its folder and the schema when missing; migrates an older schema
    read_only,   ///< SQLITE_OPEN_READONLY; the file must exist with the current schema
  };

  /// Opens `path`. Throws std::runtime_error naming the file when it is missing (read_only), is not a
  /// SQLite database, is a database of another schema, or has a newer schema version than this build.
  static ExperimentDb open(const std::string& path, Mode mode = Mode::read_write);

  const std::string& path() const { return conn_.path(); }
  bool read_only() const { return conn_.read_only(); }
  /// Opened read-only on read-only storage, where SQLite reads it as immutable (open()); another reader of the
  /// file (report.py) must open it the same way.
  bool immutable() const { return conn_.mode() == sqlite::OpenMode::read_only_immutable; }
  /// The underlying connection, for tests and ad-hoc statements.
  sqlite::Connection& connection() { return conn_; }
  /// When a commit reaches the disk (the DB is in WAL mode). full (every connection opens so): each commit syncs
  /// the WAL. normal (the tuning loop's default, `run --db-sync`): the WAL is synced at checkpoints only; a killed
  /// process (SIGKILL) still loses no commit, an OS crash or power loss may lose the commits since the last
  /// checkpoint, and the DB stays consistent. No-op on a read-only DB.
  void set_sync_full(bool full);

  // --- runs ------------------------------------------------------------------------------------
  /// Inserts a run with status running and started_at now; returns its id. Uses every field of `run`
  /// but id, started_at, ended_at and status.
  std::int64_t begin_run(const RunRecord& run);
  /// Sets status (not running) and stop_reason, ended_at now. Throws std::invalid_argument for an
  /// unknown run, a run already ended, or status running.
  void end_run(std::int64_t run_id, RunStatus status, const std::string& stop_reason = "");
  /// Every run still `running` becomes `interrupted` (for daemon start-up); returns their ids.
  std::vector<std::int64_t> mark_interrupted_runs();
  std::optional<RunRecord> run(std::int64_t run_id);
  std::vector<RunRecord> runs();
  /// Iteration counts by status, time spent, best keep geomean of the run.
  RunProgress run_progress(std::int64_t run_id);

  // --- variants --------------------------------------------------------------------------------
  /// Inserts a variant, or updates the compile results (compile_ok, compile_ms, compile_log,
  /// registers, smem_bytes, spill_bytes, cubin_path; cubin_hash when given) of the one with the same content_hash; returns
  /// its id. params_json is canonicalised and params derived from it. Throws std::invalid_argument
  /// when content_hash is empty or the stored variant of that hash has another template/params.
  std::int64_t upsert_variant(const VariantRecord& variant);
  std::optional<VariantRecord> find_variant_by_hash(const std::string& content_hash);
  /// Records the cubin hash of variant `variant_id` (back-fill of a DB older than schema version 6).
  /// Throws std::invalid_argument for an unknown id or a hash that is not 32 hex chars.
  void set_variant_cubin_hash(std::int64_t variant_id, const std::string& cubin_hash);
  std::optional<VariantRecord> variant(std::int64_t variant_id);

  // --- iterations ------------------------------------------------------------------------------
  /// True when (template, config, suite) already has an iteration with status keep, discard or crash
  /// ("never re-evaluate a config"; interrupted and running ones do not count). `params_json` is
  /// canonicalised first, so key order does not matter.
  bool has_evaluated(const std::string& template_name, const std::string& params_json,
                     const std::string& suite);
  /// Inserts a `running` iteration from run_id, variant_id (optional), suite, template_name,
  /// params_json and description of `it`; returns its iter number. Throws std::invalid_argument for
  /// an unknown or ended run, an unknown variant, an empty suite/template or malformed params_json.
  std::int64_t begin_iteration(const IterationRecord& it);
  /// upsert_variant(`variant`) and begin_iteration(`it` with that variant) in ONE transaction (one commit, where
  /// the two calls make two): the tuning loop begins an iteration once its config compiled. With `spare_of`, the
  /// iteration is a spare evaluation of the config that iteration `spare_of` screened (a `spare_evaluations` row
  /// in the same transaction). Returns (iter, variant id); throws as the two do (and for an unknown `spare_of`),
  /// and then writes nothing.
  std::pair<std::int64_t, std::int64_t> begin_iteration_with_variant(const IterationRecord& it,
                                                                     const VariantRecord& variant,
                                                                     std::optional<std::int64_t> spare_of = {});
  /// The spare evaluations (iteration -> the screen iteration of its config), in iteration order; empty for a
  /// file older than version 10.
  std::vector<std::pair<std::int64_t, std::int64_t>> spare_evaluations();
  /// Attaches the compiled variant to a running iteration.
  void set_iteration_variant(std::int64_t iter, std::int64_t variant_id);
  /// Finishes running iteration `it.iter` in ONE transaction: status, failure_kind, scores,
  /// description, gpu_ms, compile_ms, variant_id (when set), finished_at now, and it.cases. Rules
  /// (std::invalid_argument): the iteration is running; status is not running; keep and discard have
  /// failure_kind none and keep has a geomean; crash has a failure kind other than none/interrupted;
  /// interrupted has failure_kind interrupted. Any failure (e.g. two cases with one case_id) leaves
  /// the row as it was.
  void finish_iteration(const IterationRecord& it);
  /// Every `running` iteration becomes `interrupted` (failure_kind interrupted, finished_at now);
  /// returns them as updated. For daemon start-up after a crash or kill.
  std::vector<IterationRecord> mark_interrupted_iterations();
  /// Iterations without their case results.
  std::vector<IterationRecord> iterations(const IterationQuery& query = {});
  /// The finished (keep, discard, crash) iterations of `suite`, oldest first, with only what the search's
  /// history needs (a resume): a few columns and the config as stored, without rendering it (a night's million
  /// rows read in a few seconds, where iterations() takes ten times as long).
  SearchHistory search_history(const std::string& suite);
  /// The finished iterations after iter `after` (every one when none), in iter order, up to the first one still
  /// running, without their case results: what iters.tsv can append and stay in iter order (ItersTsvWriter).
  std::vector<IterationRecord> finished_after(std::optional<std::int64_t> after);
  /// The number of finished iterations (every status but running) of every suite and the last one's iter
  /// (none without any): what the end of iters.tsv must be (ItersTsvWriter::rebuild_unless_current).
  std::pair<std::size_t, std::optional<std::int64_t>> finished_tail();
  /// The first finished iteration's iter (every suite; none without any): where the DB's iters.tsv starts
  /// (db/iters_tsv_owner.hpp).
  std::optional<std::int64_t> first_finished();
  /// One iteration with its case results (ordered by case_id); nullopt when unknown.
  std::optional<IterationRecord> iteration(std::int64_t iter);
  std::vector<CaseResultRecord> case_results(std::int64_t iter);
  /// The keep iteration of `suite` with the lowest geomean (ties: lowest iter); nullopt when none.
  std::optional<IterationRecord> best(const std::string& suite);

  // --- champions -------------------------------------------------------------------------------
  std::optional<ChampionRecord> champion(const std::string& suite, ChampionScope scope);
  /// Champions of one suite, or of all suites; ordered by suite, then scope as in ChampionScope.
  std::vector<ChampionRecord> champions(const std::optional<std::string>& suite = std::nullopt);
  /// Makes `c` the champion of (suite, scope), promoted_at now, and appends to champion_history the
  /// promotion with the incumbent it replaced and `aba_json` (the A/B/A timings; must be JSON) in the
  /// same transaction. Throws std::invalid_argument when the iteration is unknown, of another suite,
  /// not keep/discard, or score_ms is not a positive finite number.
  void set_champion(const ChampionRecord& c, const std::string& aba_json = "{}");
  /// Promotions, oldest first.
  std::vector<ChampionPromotion> champion_history(const std::optional<std::string>& suite = std::nullopt);

  // --- held-out checks --------------------------------------------------------------------------
  /// Appends a held-out check (id and checked_at are set by the DB); returns its id. Throws
  /// std::invalid_argument for an unknown run or iteration, an iteration of another suite, a
  /// non-finite score, or cases_json that is not a JSON list.
  std::int64_t add_holdout_check(const HoldoutCheckRecord& check);
  /// Checks of one iteration's config (or of every iteration of `suite`, or all), oldest first.
  std::vector<HoldoutCheckRecord> holdout_checks(const std::optional<std::int64_t>& iteration_id = std::nullopt,
                                                 const std::optional<std::string>& suite = std::nullopt);
  // --- harness checks (export --harness) ---------------------------------------------------------
  /// Appends a harness check (id and ran_at are set by the DB); returns its id. Throws
  /// std::invalid_argument for an empty suite or submission dir, a non-finite score, or family_ms_json /
  /// harness_args / iterations_json that do not parse as JSON.
  std::int64_t add_harness_check(const HarnessCheckRecord& check);
  /// Every harness check, oldest first; none in a version-6 file opened read-only (no such table yet).
  std::vector<HarnessCheckRecord> harness_checks();

  // --- ideas (the idea queue, docs/ideas.md) ----------------------------------------------------
  /// Inserts an idea row (id, started_at set by the DB); returns its id. Throws std::invalid_argument for
  /// an unknown run, an empty file name or hash, a status or verdict outside IdeaRecord's lists, or JSON
  /// fields that do not parse.
  std::int64_t add_idea(const IdeaRecord& idea);
  /// Replaces every field of idea `idea.id` but run_id, file, idea_hash and started_at (finished_at is set
  /// now when the status becomes done or interrupted). Same errors as add_idea, plus an unknown id.
  void update_idea(const IdeaRecord& idea);
  std::optional<IdeaRecord> idea(std::int64_t id);
  /// Every idea, oldest first; none in a version-7 file opened read-only (no such table yet).
  std::vector<IdeaRecord> ideas();
  /// Every idea still checking, tuning or judging becomes interrupted (daemon start-up); their ids.
  std::vector<std::int64_t> mark_interrupted_ideas();

  // --- proposals (docs/proposer.md) --------------------------------------------------------------
  /// Inserts a `running` proposal from run_id, command, parent_template and parent_iteration_id of `p`,
  /// started_at now; returns its id. Throws std::invalid_argument for an unknown or ended run, an empty
  /// command or parent template, or an unknown parent iteration.
  std::int64_t begin_proposal(const ProposalRecord& p);
  /// Finishes running proposal `p.id` in one transaction: status, reason, description, template, source,
  /// space_json, headers_json, diff, exit_status, proposer_ms, output, finished_at now. Throws
  /// std::invalid_argument for an unknown or finished proposal, status running, status accepted without a
  /// template name, source and space JSON, a template name another proposal has, or headers_json that is
  /// not a JSON object.
  void finish_proposal(const ProposalRecord& p);
  std::optional<ProposalRecord> proposal(std::int64_t id);
  std::optional<ProposalRecord> proposal_by_template(const std::string& template_name);
  /// Every proposal, oldest first.
  std::vector<ProposalRecord> proposals();
  /// Every proposal still `running` becomes `interrupted` (daemon start-up); returns their ids.
  std::vector<std::int64_t> mark_interrupted_proposals();
  /// Every proposal, oldest first, with the results of its template's iterations on `suite` (every suite
  /// when none).
  std::vector<ProposalSummary> proposal_summaries(const std::optional<std::string>& suite = std::nullopt);

  // --- ad-hoc SQL ------------------------------------------------------------------------------
  /// Runs one statement on a read-only connection (SQLITE_OPEN_READONLY) and returns all its rows.
  /// A statement that would write (sqlite3_stmt_readonly false) is refused with std::invalid_argument
  /// before it runs; SQL errors throw sqlite::Error with SQLite's message.
  SqlResult sql_readonly(const std::string& query);

 private:
  explicit ExperimentDb(sqlite::Connection conn) : conn_(std::move(conn)) {}
  void require_writable(const char* what) const;
  /// The bodies of upsert_variant and begin_iteration, inside the caller's transaction.
  std::int64_t upsert_variant_row(const VariantRecord& variant);
  std::int64_t insert_iteration_row(const IterationRecord& it);
  sqlite::Connection conn_;
};

}  // namespace attn
