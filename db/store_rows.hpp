// Internal to db/: the column lists and row readers shared by the ExperimentDb source files.
#pragma once
#include "db/records.hpp"
#include "db/sqlite.hpp"

#include <string>
#include <utility>

namespace attn::db::rows {

inline constexpr const char* kRunColumns =
    "id, started_at, ended_at, suite, suite_json, strategy, templates, gpu_name, driver, sm_clock_mhz, "
    "git_commit, host, status, stop_reason";
// Variants and iterations are read from their rows with the config's names and values (C++ renders params_json
// and params from them: the views `variants` / `iterations` render them in SQL, ten times slower on a million rows).
// Select kVariantColumns FROM kVariantFrom, kIterationColumns FROM kIterationFrom (aliases v / i, c, n, g).
inline constexpr const char* kVariantColumns =
    "v.id, c.template, n.names, c.param_values, v.content_hash, v.compile_ok, v.compile_ms, v.compile_log, "
    "v.registers, v.smem_bytes, v.spill_bytes, v.cubin_path, v.created_at, v.cubin_hash";
inline constexpr const char* kVariantFrom =
    "variant_rows v JOIN configs c ON c.id = v.config_id JOIN param_names n ON n.id = c.names_id";
inline constexpr const char* kIterationColumns =
    "i.id, i.run_id, i.variant_id, i.suite, c.template, n.names, c.param_values, i.status, i.failure_kind, "
    "i.geomean_ms, i.delta_ms, i.window_ms, i.global_ms, i.retrieval_ms, i.description, i.started_at, i.finished_at, "
    "i.gpu_ms, i.compile_ms, i.fidelity, i.screen_ms, i.root_seed, i.proposal_id, i.gpu_index, g.uuid, "
    "i.sm_clock_mhz";
inline constexpr const char* kIterationFrom =
    "iteration_rows i JOIN configs c ON c.id = i.config_id JOIN param_names n ON n.id = c.names_id "
    "LEFT JOIN gpus g ON g.id = i.gpu_key";
inline constexpr const char* kCaseColumns =
    "case_id, family, median_ms, spread, samples, sm_clock_mhz, o_max_abs_diff, lse_max_abs_diff, passed";
/// kCaseColumns of `case_results` aliased r.
inline constexpr const char* kCaseColumnsOf =
    "r.case_id, r.family, r.median_ms, r.spread, r.samples, r.sm_clock_mhz, r.o_max_abs_diff, r.lse_max_abs_diff, "
    "r.passed";
inline constexpr const char* kChampionColumns = "suite, scope, iteration_id, score_ms, promoted_at";
inline constexpr const char* kHoldoutColumns =
    "id, run_id, iteration_id, suite, root_seed, role, ok, score_ms, window_ms, global_ms, retrieval_ms, "
    "tuned_ms, verdict, cases_json, checked_at";
inline constexpr const char* kProposalColumns =
    "id, run_id, command, started_at, finished_at, parent_template, parent_iteration_id, template, status, reason, "
    "description, source, space_json, headers_json, diff, exit_status, proposer_ms, output";

/// params_json (canonical: canonical_params_json) and params (compact_params) of a config stored as its sorted
/// names and its values, both JSON lists (db/configs.hpp). Throws std::runtime_error when they do not pair up.
std::pair<std::string, std::string> render_params(const std::string& names_json, const std::string& values_json);

/// Each reads the current row of a statement that selected the matching column list first.
RunRecord read_run(const sqlite::Statement& st);
VariantRecord read_variant(const sqlite::Statement& st);
IterationRecord read_iteration(const sqlite::Statement& st);
/// Reads kCaseColumns starting at column `first`.
CaseResultRecord read_case(const sqlite::Statement& st, int first = 0);
ProposalRecord read_proposal(const sqlite::Statement& st);
/// Reads kChampionColumns starting at column `first`.
ChampionRecord read_champion(const sqlite::Statement& st, int first = 0);
HoldoutCheckRecord read_holdout(const sqlite::Statement& st);

}  // namespace attn::db::rows
