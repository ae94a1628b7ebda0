// The rows of the experiment store (docs/db-schema.md), as plain structs, with the status enums and
// their exact spelling in the DB and in JSON. Times are ISO-8601 UTC text ("2026-11-05T12:34:56.789Z"),
// set by the DB; durations and latencies are milliseconds.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/failure_kind.hpp"  // FailureKind, to_string(FailureKind), parse_failure_kind (header-only)
#include "workload/case_spec.hpp"

namespace attn {

/// Life of a tuning run (one `attn-tuner run` invocation).
enum class RunStatus { running, finished, stopped, interrupted, failed };
/// Outcome of one iteration (one config evaluated on a whole suite); `running` until finished.
enum class IterationStatus { running, keep, discard, crash, interrupted };
// FailureKind (core/failure_kind.hpp) says why an iteration crashed: `none` for keep/discard, `interrupted`
// for status interrupted.
/// How much of the suite an iteration's scores come from (the fidelity ladder, docs/tuner.md): `screen`
/// = one case per family with few samples, and the config went no further; `full` = the whole suite.
enum class Fidelity { screen, full };
/// Why a config was timed on held-out seeds: a `challenger` the champion rule would promote, the
/// `incumbent` it is compared with, or a `champion` confirmed at the end of a run (before export).
enum class HoldoutRole { challenger, incumbent, champion };
/// Life of a proposal (one call of the proposer hook, docs/proposer.md): running until the proposer ended
/// and its output was checked; accepted (its template joined the search), rejected (reason says why;
/// its crash iteration says so too), empty (the proposer wrote no files), interrupted (the daemon stopped
/// or died meanwhile).
enum class ProposalStatus { running, accepted, rejected, empty, interrupted };
/// Life of an idea of the idea queue (docs/ideas.md): checking (patch, NVRTC, ABI, beside the tuning), tuning
/// (its template in the search, within its budget), judging (A/B/A against its parent, the held-out seed), done
/// (it has a verdict), interrupted (the run ended before its verdict; queued again, it runs from the start).
enum class IdeaStatus { checking, tuning, judging, done, interrupted };
/// An idea's verdict (tuner/idea_rule.hpp decide_idea): none until done ("" in the DB), then win, no_gain, slower or
/// broken.
enum class IdeaVerdict { none, win, no_gain, slower, broken };
/// Why an idea is broken; none ("" in the DB) when it is not. Before any GPU time: bad_input (not an idea file, a
/// bad header or space, a malformed diff, an unreadable queue), does_not_apply (a hunk fails, a file the parent
/// lacks, another template's file), compile (its default config), proposal (its space or its ABI). On the GPU: the
/// FailureKind of its configs or of its held-out run, under the same name (idea_broken_kind), or crash (a run that
/// failed without a kind: a re-timing, held-out cases the worker could not build). The DB stores the names: append,
/// never rename.
enum class IdeaBrokenKind {
  none,
  bad_input,
  does_not_apply,
  crash,
  compile,
  device_limit,
  fault,
  hang,
  wrong_result,
  worker_died,
  interrupted,
  proposal,
  inconsistent,
  below_floor
};
/// What a champion is best at: the suite's overall geomean, or one family's median.
enum class ChampionScope { overall, sliding_window, sliding_window_global, sliding_window_retrieval };

/// Spelling in the DB, JSON and CLI ("keep", "device_limit", "sliding_window_global", ...).
const char* to_string(RunStatus s);
const char* to_string(IterationStatus s);
const char* to_string(ChampionScope s);
const char* to_string(Fidelity f);
const char* to_string(HoldoutRole r);
const char* to_string(ProposalStatus s);
/// "checking", "tuning", "judging", "done", "interrupted".
const char* to_string(IdeaStatus s);
/// "" (none), "win", "no_gain", "slower", "broken".
const char* to_string(IdeaVerdict v);
/// "" (none), "bad_input", "does_not_apply", "crash", then the FailureKind names but "none".
const char* to_string(IdeaBrokenKind k);
/// Inverses of to_string; throw std::invalid_argument naming the bad value and listing the valid ones.
RunStatus parse_run_status(std::string_view s);
IterationStatus parse_iteration_status(std::string_view s);
ChampionScope parse_champion_scope(std::string_view s);
Fidelity parse_fidelity(std::string_view s);
HoldoutRole parse_holdout_role(std::string_view s);
ProposalStatus parse_proposal_status(std::string_view s);
IdeaStatus parse_idea_status(std::string_view s);
IdeaVerdict parse_idea_verdict(std::string_view s);
IdeaBrokenKind parse_idea_broken_kind(std::string_view s);
/// The broken kind of an idea whose run failed with `k`: the kind of the same name; none for FailureKind::none.
IdeaBrokenKind idea_broken_kind(FailureKind k);
/// The per-family champion scope of a family.
ChampionScope champion_scope_of(Family f);
/// keep, discard, crash, interrupted: the statuses that get an iters.tsv line.
bool is_finished(IterationStatus s);

/// One row of `runs`.
struct RunRecord {
  std::int64_t id = 0;
  std::string started_at, ended_at;  ///< ended_at "" while running
  std::string suite;                 ///< suite name ("quick", or a manifest's file name)
  std::string suite_json;            ///< the CaseSpec list as manifest JSON (suite_to_manifest_json)
  std::string strategy;
  std::vector<std::string> templates;
  std::string gpu_name, driver;
  std::optional<std::int64_t> sm_clock_mhz;
  std::string git_commit, host;
  RunStatus status = RunStatus::running;
  std::string stop_reason;
  bool operator==(const RunRecord&) const = default;
};

/// One row of `variants`: a compiled config, keyed by content_hash (template source, config, NVRTC
/// flags and version). compile_ok false keeps the failed compile's log.
struct VariantRecord {
  std::int64_t id = 0;
  std::string template_name;
  std::string params_json;  ///< canonical JSON object, sorted keys ({"BLOCK_M":128,...})
  std::string params;       ///< compact "BLOCK_M=128,BLOCK_N=64" (derived from params_json)
  std::string content_hash;
  bool compile_ok = false;
  std::optional<double> compile_ms;
  std::string compile_log;
  std::optional<std::int64_t> registers, smem_bytes, spill_bytes;
  std::string cubin_path;  ///< "" when none
  std::string created_at;
  /// gpu/compiler.hpp cubin_hash of the compiled cubin (schema version 6); "" when unknown: a row of an
  /// older DB not back-filled (`attn-tuner db cubin-hashes`), or a variant that did not compile.
  std::string cubin_hash;
  bool operator==(const VariantRecord&) const = default;
};

/// One row of `case_results`: the timing and validation of one case in one iteration.
struct CaseResultRecord {
  std::string case_id;
  Family family = Family::sliding_window;
  std::optional<double> median_ms;
  std::optional<double> spread;  ///< relative spread of the samples, e.g. 0.004 = 0.4 %
  std::int64_t samples = 0;
  std::optional<std::int64_t> sm_clock_mhz;
  std::optional<double> o_max_abs_diff, lse_max_abs_diff;
  bool passed = false;
  bool operator==(const CaseResultRecord&) const = default;
};

/// One row of `iterations`; `iter` is the global, increasing iteration number (the row id).
struct IterationRecord {
  std::int64_t iter = 0;
  std::int64_t run_id = 0;
  std::optional<std::int64_t> variant_id;  ///< none for a crash before the compile finished
  std::string suite;
  std::string template_name;
  std::string params_json;  ///< canonical, as in VariantRecord
  std::string params;       ///< compact, derived from params_json
  IterationStatus status = IterationStatus::running;
  FailureKind failure_kind = FailureKind::none;
  /// Score (geomean over families of the per-family median), its change against the champion at the
  /// time (negative = faster), and the per-family medians.
  std::optional<double> geomean_ms, delta_ms, window_ms, global_ms, retrieval_ms;
  std::string description;
  std::string started_at, finished_at;     ///< finished_at "" while running
  std::optional<double> gpu_ms, compile_ms;  ///< time spent on the GPU / in NVRTC
  /// The highest fidelity reached: `screen` rows have no geomean_ms (their cases are the screened
  /// ones), `full` rows were evaluated on the whole suite. Rows from before schema 2 are `full`.
  Fidelity fidelity = Fidelity::full;
  std::optional<double> screen_ms;         ///< score on the screen cases (geomean of their latencies)
  /// Root seed of the case seeds the scores came from (built-in quick/full/broad suites); none for a
  /// suite with fixed seeds, and for rows from before schema 2.
  std::optional<std::int64_t> root_seed;
  std::vector<CaseResultRecord> cases;     ///< filled by ExperimentDb::iteration(), empty in lists
  std::optional<std::int64_t> proposal_id;  ///< the proposal whose template this is (none: a repo template)
  /// The GPU it was timed on (schema 4, docs/scale-out.md): the daemon's GPU index (nvidia-smi / NVML
  /// order), the GPU's UUID ("GPU-...", "" when unknown) and its SM clock in MHz while timing. None for
  /// rows from before schema 4 and for iterations that never reached a GPU (compile errors).
  std::optional<std::int64_t> gpu_index;
  std::string gpu_uuid;
  std::optional<std::int64_t> sm_clock_mhz;
  bool operator==(const IterationRecord&) const = default;
};

/// One row of `holdout_checks`: a config (its tuning iteration) timed and validated on the cases of a
/// held-out root seed that tuning never uses.
struct HoldoutCheckRecord {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::int64_t iteration_id = 0;  ///< the iteration that evaluated the config on the tuning seeds
  std::string suite;
  std::int64_t root_seed = 0;     ///< the held-out root seed
  HoldoutRole role = HoldoutRole::champion;
  bool ok = false;                ///< every case passed validation and was timed
  std::optional<double> score_ms, window_ms, global_ms, retrieval_ms;  ///< on the held-out cases
  std::optional<double> tuned_ms;  ///< its score on the tuning seeds at the time (A/B/A when re-timed)
  std::string verdict;             ///< one line: what the check decided
  std::string cases_json = "[]";   ///< the held-out case results (CaseResultRecord JSON list)
  std::string checked_at;
  bool operator==(const HoldoutCheckRecord&) const = default;
};

/// One row of `proposals`: one call of the proposer hook, what it wrote and what became of it.
struct ProposalRecord {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::string command;                              ///< the proposer command line (sh -c)
  std::string started_at, finished_at;              ///< finished_at "" while running
  std::string parent_template;                      ///< the champion template handed to the proposer
  std::optional<std::int64_t> parent_iteration_id;  ///< the champion iteration handed to it
  std::string template_name;                        ///< the proposed template's name ("" until named)
  ProposalStatus status = ProposalStatus::running;
  std::string reason;                               ///< why rejected / empty / interrupted
  std::string description;                          ///< the proposer's one line
  std::optional<std::string> source;                ///< the proposed .cu as written (none: no source)
  std::optional<std::string> space_json;            ///< the space JSON as installed (name, source set)
  std::string headers_json = "{}";                  ///< {"name.cuh": text}: local includes as installed
  std::string diff;                                 ///< unified diff against the parent template's files
  std::string exit_status;                          ///< how the proposer ended ("exited with code 0", ...)
  std::optional<double> proposer_ms;                ///< proposer wall time
  std::string output;                               ///< proposer stdout + stderr (the last 64 KiB)
  bool operator==(const ProposalRecord&) const = default;
};

/// One row of `champions`: the best iteration of a suite for one scope.
struct ChampionRecord {
  std::string suite;
  ChampionScope scope = ChampionScope::overall;
  std::int64_t iteration_id = 0;
  double score_ms = 0;
  std::string promoted_at;
  bool operator==(const ChampionRecord&) const = default;
};

/// One row of `champion_history`: a promotion, the incumbent it replaced (none for the first) and the
/// A/B/A re-timing that justified it (JSON as the daemon wrote it, "{}" when none).
struct ChampionPromotion {
  std::int64_t id = 0;
  ChampionRecord champion;
  std::optional<std::int64_t> previous_iteration_id;
  std::optional<double> previous_score_ms;
  std::string aba_json;
  bool operator==(const ChampionPromotion&) const = default;
};

/// Counts of a run's iterations by status, and the time spent.
struct RunProgress {
  std::int64_t iterations = 0, running = 0, keep = 0, discard = 0, crash = 0, interrupted = 0;
  double gpu_ms = 0, compile_ms = 0;
  std::optional<double> best_geomean_ms;  ///< lowest geomean among the run's keep iterations
  /// Configs stopped by the screen (fidelity screen, status discard) and configs evaluated on the whole
  /// suite (fidelity full, status keep or discard): the two rates of the fidelity ladder.
  std::int64_t screened_out = 0, full_evaluations = 0;
  bool operator==(const RunProgress&) const = default;
};

/// The config JSON object in canonical form: keys sorted, compact, numbers as JSON writes them.
/// Throws std::invalid_argument when `json` is not a JSON object of scalars.
std::string canonical_params_json(const std::string& json);
/// "K=V,K=V" in key order from a config JSON object (strings unquoted, true/false as 1/0).
std::string compact_params(const std::string& json);

// JSON (nlohmann ADL): the column names of docs/db-schema.md, optional values as null.
void to_json(nlohmann::json& j, const RunRecord& r);
void to_json(nlohmann::json& j, const VariantRecord& v);
void to_json(nlohmann::json& j, const CaseResultRecord& c);
void to_json(nlohmann::json& j, const IterationRecord& it);
void to_json(nlohmann::json& j, const ChampionRecord& c);
void to_json(nlohmann::json& j, const ChampionPromotion& p);
void to_json(nlohmann::json& j, const RunProgress& p);
void to_json(nlohmann::json& j, const HoldoutCheckRecord& h);
void to_json(nlohmann::json& j, const ProposalRecord& p);

}  // namespace attn
