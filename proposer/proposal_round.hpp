// One call of the proposer hook (docs/proposer.md): record it, prepare its working directory, run the
// untrusted command under a limit while watching for writes outside that directory, check what it wrote,
// and log the outcome: an accepted template for the search, or a crash iteration with the reason.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "db/store.hpp"
#include "gpu/compiler.hpp"
#include "tuner/space.hpp"

namespace attn {

/// The proposer options of `attn-tuner run`.
struct ProposerOptions {
  std::string command;           ///< run with /bin/sh -c; "" = no proposer
  std::int64_t every = 0;        ///< call it after every N iterations of the run (0: off)
  std::int64_t when_stalled = 0; ///< call it after M iterations without a new overall champion (0: off)
  double timeout_s = 600;        ///< wall-clock limit of one call
  std::size_t top_k = 10;        ///< configs in results/top_configs.tsv
  std::size_t recent = 50;       ///< rows in results/recent_iters.tsv
  /// A proposed template whose first this-many configs all crash (a broken kernel: wrong result, fault)
  /// is retired from the search; repository templates never are.
  std::size_t retire_after_crashes = 3;
  bool enabled() const { return !command.empty(); }
  /// Whether a call is due: `done` iterations in this run, `since_champion` of them since the last new
  /// overall champion (or the start), `done_at_last_call` at the previous call (0 before the first).
  bool due(std::int64_t done, std::int64_t since_champion, std::int64_t done_at_last_call) const;
};

/// Where and for whom a round runs.
struct ProposalRequest {
  std::int64_t run_id = 0;
  std::string suite;
  const TemplateSpace* parent = nullptr;  ///< the overall champion's template
  std::int64_t champion_iter = 0;         ///< the overall champion's iteration
  std::string db_path;                    ///< its folder is watched; never shown to the proposer
  std::vector<std::string> template_dirs; ///< watched with contents and restored after a write
  /// Files and folders the daemon itself writes while the proposer runs beside the tuning (the DB and its WAL,
  /// iters.tsv, the status file, the cubin cache, the idea queue, ...): not watched, so that the daemon's own
  /// writes are not taken for the proposer's. The idea queue's proposal folders (proposals/<N> of an idea)
  /// are left out as well.
  std::vector<std::string> daemon_files;
};

/// What a round did.
struct ProposalRoundResult {
  std::int64_t proposal_id = 0;
  ProposalStatus status = ProposalStatus::running;
  std::string template_name;
  std::optional<TemplateSpace> accepted;   ///< the new template (status accepted)
  std::optional<std::int64_t> crash_iter;  ///< the crash iteration logged for a rejected proposal
  std::string summary;                     ///< one line for the progress output
};

/// The folder of a DB's proposals: "<db dir>/proposals"; proposal N works in <that>/N/work, its template
/// is installed in <that>/N/template, its output is <that>/N/proposer.log.
std::string proposals_dir_for(const std::string& db_path);

/// Runs one round (see the file comment). It may run on a thread of its own beside the tuning: `db` is then
/// a connection of its own (SQLite serialises the writers) and `request.daemon_files` names what the daemon
/// writes meanwhile. A bad proposal, a proposer that hangs, crashes or writes outside
/// its directory are outcomes, not errors: they are recorded (proposal rejected + crash iteration with
/// failure kind proposal or compile) and returned. `should_stop` is polled while the proposer runs; when it
/// turns true the proposer is killed and the proposal recorded as interrupted. Throws only on DB or I/O
/// errors of the daemon's own files.
ProposalRoundResult run_proposal_round(const ProposerOptions& options, const ProposalRequest& request,
                                       ExperimentDb& db, const Compiler& compiler,
                                       const std::function<bool()>& should_stop);

}  // namespace attn
