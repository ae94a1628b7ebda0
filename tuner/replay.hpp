// Replay: measure a search strategy without a GPU, like Kernel Tuner's simulation mode. A finished DB that
// evaluated a space (exhaustively or nearly) answers every proposal; the curve says how many evaluations
// the strategy needs to get within 1%, 2%, 5% of the DB's best, over many seeds, at full fidelity or
// through the fidelity ladder (tuner/fidelity.hpp).
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/fidelity.hpp"
#include "tuner/strategy.hpp"

namespace attn {

class ExperimentDb;

/// What the DB knows about one config of one suite.
struct ReplayEntry {
  std::optional<double> full_ms;    ///< whole-suite score (geomean of family medians)
  std::optional<double> screen_ms;  ///< measured screen score (rows of the ladder), if any
  /// Per-case medians of the row (the screened cases only, for a screen row), for a simulated screen.
  std::map<std::string, double> case_ms;
  std::map<std::string, Family> case_family;
  bool failed = false;              ///< a crash (compile, wrong result, fault, ...)
  std::optional<ConfigResources> resources;
  std::optional<double> gpu_ms;     ///< GPU time the row took
};

/// A finished DB's answers, per template.
struct ReplayTable {
  std::string source;  ///< the DB or CSV path
  std::string suite;
  std::map<std::string, std::map<Config, ReplayEntry>> templates;
  /// Per family, the case the screen uses (plan_screen of the suite); empty when unknown.
  std::vector<std::string> screen_case_ids;
  /// Mean timing samples per case of the whole-suite rows (for the screen's cost estimate).
  double full_samples = 0;

  /// The best whole-suite score over the templates named in `only` (every template when empty), or nullopt
  /// when none: a replay's target is the best of the templates it replays.
  std::optional<double> best_ms(const std::vector<std::string>& only = {}) const;
  /// Screen score of an entry: measured when present, else simulated from its per-case medians of the
  /// screen cases (geomean over families, the harness rule on one case each), else nullopt.
  std::optional<double> screen_of(const ReplayEntry& e) const;
  /// Cost of a screen in whole-suite evaluations: the screen cases' share of the summed case medians
  /// times screen_samples / full_samples, averaged over the configs that have case results. 1 when
  /// unknown.
  double estimated_screen_cost(int screen_samples) const;
};

/// Loads every finished iteration of `suite` (empty: the read commands' rule, db/suite_choice.hpp) from the DB: keep and
/// discard rows with their scores, crash rows as failed, the variants' resources, the screen cases from
/// the latest run's suite_json. Throws std::invalid_argument when the suite has no iterations.
ReplayTable load_replay_table(ExperimentDb& db, const std::string& suite = "");
/// The same from a CSV written by write_replay_csv (`attn-tuner query csv`). Throws std::invalid_argument
/// naming the file and line on a malformed file.
ReplayTable load_replay_csv(const std::string& path);
/// One row per case result of every finished iteration of `suite` (and one per iteration without case
/// results). Columns: template, params, status, fidelity, geomean_ms, screen_ms, gpu_ms, registers,
/// smem_bytes, spill_bytes, root_seed, case_id, family, median_ms, samples, screen_case (1 for the
/// screen's case of its family). RFC 4180 quoting. Returns the number of iterations written.
std::size_t write_replay_csv(ExperimentDb& db, const std::string& suite, std::ostream& out);

/// One replay setting.
struct ReplayOptions {
  std::string strategy = "random";
  FidelityMode fidelity = FidelityMode::full;
  double cutoff = 0.10;                      ///< ladder cut-off (LadderOptions::cutoff)
  int screen_samples = 5;                    ///< for the screen cost estimate
  std::optional<double> screen_cost;         ///< cost of a screen in whole-suite evaluations; none: estimated
  std::vector<double> thresholds = {0.01, 0.02, 0.05};
  std::size_t seeds = 20;                    ///< seeds 1..seeds
  std::optional<std::size_t> max_evaluations;  ///< none: until the strategy stops (the space is exhausted)
  /// Compile reports of every DB config known from the start (a space compiled ahead); otherwise a
  /// config's resources are revealed when it is proposed (compiled).
  bool resources_ahead = false;
  /// For a DB that sampled the space rather than covering it: a proposal the DB cannot answer is skipped
  /// (recorded as failed for the strategy, but neither an evaluation nor a cost), so the replay measures
  /// the strategy on the sampled subspace. Otherwise it counts as a failed evaluation.
  bool skip_unknown = false;
  /// The memory bound (issue 48 item 3: a random replay of the research DB reached 14.4 GB): a seed stops when the
  /// heap in use (memory_in_use) exceeds this many bytes, checked every `check_every` proposals; its curve ends
  /// there and the summary says so (ReplayRun::memory_bound). None: no bound.
  std::optional<std::size_t> max_memory_bytes;
  /// Bytes of heap in use now; empty: heap_in_use(). Tests give their own.
  std::function<std::size_t()> memory_in_use;
  /// Called every `check_every` proposals and at each seed's end, with the seed's state (the CLI prints a
  /// progress line from it); empty: nothing.
  std::function<void(const struct ReplayProgress&)> progress;
  /// Proposals between two looks at the memory bound and two progress calls.
  std::size_t check_every = 4096;
};

/// Where a seed of a replay is, for a progress line.
struct ReplayProgress {
  std::size_t seed = 0, seeds = 0;  ///< 1-based
  std::size_t proposals = 0;        ///< evaluations plus skipped unknown proposals of this seed so far
  double best_ms = 0;               ///< best whole-suite score found so far (0: none)
  double target_ms = 0;             ///< the DB's best (ReplaySummary::best_ms)
  std::size_t memory_bytes = 0;     ///< heap in use
  bool done = false;                ///< the seed's last call
};

/// Bytes of the process's heap in use (glibc's mallinfo2: in-use arena and mmap'ed blocks), which falls again when
/// a seed's search state is freed, where the resident size would not.
std::size_t heap_in_use();

/// One seed's replay.
struct ReplayRun {
  std::uint64_t seed = 0;
  std::size_t evaluations = 0;  ///< configs proposed (screened or fully evaluated)
  std::size_t full_evaluations = 0;
  std::size_t unknown = 0;      ///< proposals the DB could not answer (counted as failed evaluations)
  double cost = 0;              ///< in whole-suite evaluations
  double best_ms = 0;           ///< best whole-suite score found (0: none)
  /// Per threshold (ReplayOptions order): evaluations and cost when the best first got within it.
  std::vector<std::optional<std::size_t>> evals_to;
  std::vector<std::optional<double>> cost_to;
  bool memory_bound = false;    ///< stopped at ReplayOptions::max_memory_bytes
};

/// Quartiles of a sample (linear interpolation, as gpu/timing's summarize).
struct Quartiles {
  double p25 = 0, median = 0, p75 = 0;
};

/// The curve of one setting over its seeds.
struct ReplaySummary {
  ReplayOptions options;
  double best_ms = 0;        ///< the DB's best among the replayed templates (the target)
  std::size_t space = 0;     ///< valid configs of the replayed templates (as the DB was recorded: see replay())
  std::size_t answered = 0;  ///< of them, configs the DB has an answer for
  /// "template PARAM" of each parameter pinned to its default because no DB config names it (replay()).
  std::vector<std::string> pinned;
  double screen_cost = 1;    ///< as used
  std::vector<ReplayRun> runs;
  /// Per threshold: seeds that got within it, and quartiles of evaluations / cost over those seeds.
  std::vector<std::size_t> reached;
  std::vector<std::optional<Quartiles>> evals, cost;
  double mean_unknown = 0;   ///< proposals the DB could not answer, per seed
  std::size_t memory_bound = 0;  ///< seeds stopped at the memory bound
  double mean_evaluations = 0, mean_full = 0;
};

/// Replays `options.strategy` on the templates of `spaces` (their current JSON spaces; round-robin over
/// templates as the daemon's MultiSearch) against `table`, once per seed. At full fidelity every proposal
/// costs 1; on the ladder a screen costs screen_cost and a config whose screen is within the cut-off of
/// the best screen so far costs 1 more. The target (ReplaySummary::best_ms) is the best whole-suite score of
/// the replayed templates. A parameter added to a template after the DB was recorded (one that
/// no DB config of the template names) is pinned to its default (TemplateSpace::pin_to_default, on a copy),
/// and DB configs are looked up completed with the space's defaults (TemplateSpace::complete): an older DB
/// replays the space it was recorded in, and `space` counts that space. Throws std::invalid_argument when
/// the replayed templates have no whole-suite score or a space's template is not in the table.
ReplaySummary replay(const ReplayTable& table, const std::vector<TemplateSpace>& spaces, const ReplayOptions& options);

/// The summary as text (one block per setting) and as JSON (for docs and scripts).
std::string format_replay(const ReplaySummary& s);
std::string replay_json(const std::vector<ReplaySummary>& summaries);

}  // namespace attn
