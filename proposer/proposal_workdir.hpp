// The working directory a proposer is called in (docs/proposer.md): the champion's template and headers,
// what the daemon knows about it (per-case results, compile log, top configs, recent iterations, the ideas
// already tried with their verdicts), the
// contract PROPOSE.md and context.json. The proposer writes proposal.cu, proposal.json and description.txt
// beside them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/records.hpp"
#include "db/store.hpp"
#include "tuner/space.hpp"

namespace attn {

/// The names of the proposer's output files in its working directory.
inline constexpr const char* kProposalSource = "proposal.cu";
inline constexpr const char* kProposalSpace = "proposal.json";
inline constexpr const char* kProposalDescription = "description.txt";

/// What the daemon hands to the proposer.
struct ProposalContext {
  std::int64_t proposal_id = 0;
  std::string suite;
  std::string command;
  double timeout_s = 0;
  const TemplateSpace* parent = nullptr;       ///< the champion's template (required)
  IterationRecord champion;                    ///< the overall champion, with its case results
  std::optional<VariantRecord> champion_variant;
  std::vector<IterationRecord> top;            ///< fastest configs of the suite, best first
  std::vector<IterationRecord> recent;         ///< the last iterations, oldest first
  std::vector<IdeaRecord> ideas;               ///< the idea queue's rows, oldest first (those judged are listed)
};

/// A champion's per-case results as TSV (case_id, family, median_ms, spread, samples, max abs diffs, passed).
std::string champion_cases_tsv(const IterationRecord& it);

/// Creates `dir` (it must not exist yet) and writes into it:
///   PROPOSE.md, context.json, <parent>.cu, <parent>.json and every local include of <parent>.cu at its
///   include path, results/champion.txt, results/champion_cases.tsv, results/champion_compile.log,
///   results/top_configs.tsv, results/recent_iters.tsv, results/ideas_tried.tsv (every idea of `ideas` with a
///   verdict: what not to propose again), IDEA.md and profile/ (the idea author's rules and the champion's
///   profile, proposer/idea_context.hpp).
/// Throws std::invalid_argument without a parent template; std::runtime_error naming the path on I/O errors.
void write_proposal_workdir(const std::string& dir, const ProposalContext& context);

}  // namespace attn
