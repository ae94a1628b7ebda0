// `attn-tuner db merge OUT IN...`: one experiment DB from the DBs of several daemons (the shards of a Slurm
// job array, docs/scale-out.md). Rows are copied with new ids; variants are deduplicated by content hash;
// every iteration keeps its provenance (iteration_sources); champions are recomputed on the merged data.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attn {

/// What merge_experiment_dbs did.
struct MergeSummary {
  std::int64_t inputs = 0;
  std::int64_t runs = 0, iterations = 0, case_results = 0, holdout_checks = 0, proposals = 0;
  std::int64_t ideas = 0, harness_checks = 0;
  std::int64_t variants = 0;          ///< distinct content hashes in OUT
  std::int64_t variants_shared = 0;   ///< input variants whose content hash another input had already
  std::int64_t proposals_renamed = 0; ///< proposal templates renamed because another input had the name
  std::vector<std::string> champions;  ///< one line per recomputed champion ("quick overall: iter 12 ...")
  std::vector<std::string> warnings;   ///< e.g. inputs timed on different GPU models
};

/// Merges `inputs` into a new DB at `out` (schema kSchemaVersion):
/// - runs, iterations, case_results, holdout_checks, proposals, champion_history, ideas, idea_agent_calls,
///   idea_agent_ideas and harness_checks
///   rows are copied with new ids (each input's rows after the previous input's, in id order) and their
///   references remapped (also the iteration ids in ideas.aba_json and harness_checks.iterations_json);
/// - variants are deduplicated by content_hash (the first input's row is kept);
/// - a proposal template whose name another input already used is renamed "<root>_p<new id>" (its
///   iterations, space JSON, ideas and harness checks and export follow);
/// - every copied iteration gets an iteration_sources row: source DB path, source run id, source iteration
///   id, the run's host;
/// - champions are recomputed per suite and scope from the inputs' champions (merged_champion_rule below).
/// Throws std::invalid_argument (nothing written; `attn-tuner db merge` exits 2) when there is no input, an
/// input is missing or given twice, `out` exists and `force` is false, `out` is an input, an input has another
/// schema version (both versions named), or two inputs hold the same run (same started_at, host, suite, ended_at
/// and first config: copies of one DB, or a merged DB and one of its parts; merging both would double it), all
/// checked before `out` is touched; std::runtime_error naming the file when an input is not an attn-tuner DB.
/// On any error after `out` was created, `out` is removed again.
MergeSummary merge_experiment_dbs(const std::string& out, const std::vector<std::string>& inputs, bool force);

}  // namespace attn
