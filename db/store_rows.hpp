// Internal to db/: the column lists and row readers shared by the ExperimentDb source files.
#pragma once
#include "db/records.hpp"
#include "db/sqlite.hpp"

namespace attn::db::rows {

inline constexpr const char* kRunColumns =
    "id, started_at, ended_at, suite, suite_json, strategy, templates, gpu_name, driver, sm_clock_mhz, "
    "git_commit, host, status, stop_reason";
inline constexpr const char* kVariantColumns =
    "id, template, params_json, params, content_hash, compile_ok, compile_ms, compile_log, registers, "
    "smem_bytes, spill_bytes, cubin_path, created_at, cubin_hash";
inline constexpr const char* kIterationColumns =
    "id, run_id, variant_id, suite, template, params_json, params, status, failure_kind, geomean_ms, "
    "delta_ms, window_ms, global_ms, retrieval_ms, description, started_at, finished_at, gpu_ms, compile_ms, "
    "fidelity, screen_ms, root_seed, proposal_id, gpu_index, gpu_uuid, sm_clock_mhz";
inline constexpr const char* kCaseColumns =
    "case_id, family, median_ms, spread, samples, sm_clock_mhz, o_max_abs_diff, lse_max_abs_diff, passed";
inline constexpr const char* kChampionColumns = "suite, scope, iteration_id, score_ms, promoted_at";
inline constexpr const char* kHoldoutColumns =
    "id, run_id, iteration_id, suite, root_seed, role, ok, score_ms, window_ms, global_ms, retrieval_ms, "
    "tuned_ms, verdict, cases_json, checked_at";
inline constexpr const char* kProposalColumns =
    "id, run_id, command, started_at, finished_at, parent_template, parent_iteration_id, template, status, reason, "
    "description, source, space_json, headers_json, diff, exit_status, proposer_ms, output";

/// Each reads the current row of a statement that selected the matching column list first.
RunRecord read_run(const sqlite::Statement& st);
VariantRecord read_variant(const sqlite::Statement& st);
IterationRecord read_iteration(const sqlite::Statement& st);
CaseResultRecord read_case(const sqlite::Statement& st);
ProposalRecord read_proposal(const sqlite::Statement& st);
/// Reads kChampionColumns starting at column `first`.
ChampionRecord read_champion(const sqlite::Statement& st, int first = 0);
HoldoutCheckRecord read_holdout(const sqlite::Statement& st);

}  // namespace attn::db::rows
