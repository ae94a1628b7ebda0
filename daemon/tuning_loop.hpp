// The overnight loop: propose a config (tuner/), compile it ahead on a thread pool (gpu/compiler), evaluate
// it in the isolated worker (gpu/worker_client), keep or discard it by the noise-aware champion rule
// (tuner/champion), and log every iteration to the DB (db/) and iters.tsv. Resumes from the DB.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/gpu_set.hpp"
#include "daemon/idea_queue.hpp"
#include "daemon/seed_rounds.hpp"
#include "proposer/idea_agent_call.hpp"
#include "proposer/proposal_round.hpp"
#include "daemon/supervise.hpp"
#include "gpu/timing.hpp"
#include "gpu/worker_client.hpp"
#include "tuner/fidelity.hpp"
#include "tuner/shard.hpp"

namespace attn {

/// Everything `attn-tuner run` takes.
struct RunOptions {
  std::string db_path = "runs/attn-tuner.db";
  std::string tsv_path;                 ///< "" = default_iters_tsv_path(db_path) (db/iters_tsv_owner.hpp)
  std::string suite = "quick";          ///< built-in suite name (ignored when manifest is set)
  std::string manifest;                 ///< suite manifest JSON file (harness format)
  std::int64_t root_seed = 0;           ///< seeds of quick/full/broad cases
  std::vector<std::string> templates;   ///< template names; empty = every kernels_templates/*.json
  std::string templates_dir;            ///< "" = default_templates_dir()
  std::string strategy = "evolutionary";  /// default chosen by replay (docs/results.md, 2026-11-23)
  std::uint64_t seed = 1;
  std::optional<double> budget_s;       ///< wall-clock budget of this run
  std::optional<std::int64_t> max_iterations;
  unsigned compile_jobs = 0;            ///< 0 = hardware threads
  /// NVRTC runs in this many compile worker processes (gpu/compile_procs.hpp); none = hardware threads,
  /// 0 = in the daemon's process (NVRTC serialises inside one process: docs/results.md).
  std::optional<unsigned> compile_procs;
  std::string cache_dir;                ///< "" = default_cache_dir()
  TimingParams timing;
  /// Watchdog: an evaluation may take watchdog_factor x the champion's last evaluation wall time, at
  /// least watchdog_min_s and at most watchdog_cap_s, before the worker is killed (hang).
  double watchdog_factor = 10, watchdog_min_s = 20, watchdog_cap_s = 180;
  double prepare_timeout_s = 900;       ///< building the suite's cases in a fresh worker
  std::optional<WorkerCommand> worker;  ///< default: this binary's `worker`
  bool progress = true;                 ///< one line per iteration on stdout
  std::string stale_worker_note;        ///< set by `run` when it killed a previous daemon's worker (status)
  /// The fidelity ladder (tuner/fidelity.hpp): screen each proposal on one case per family, evaluate
  /// the whole suite only for configs within ladder.cutoff of the best screen.
  FidelityMode fidelity = FidelityMode::ladder;
  LadderOptions ladder;
  /// Seeds (daemon/seed_rounds.hpp; quick/full/broad only): with rotate_seeds every `round_configs`
  /// iterations the suite's case seeds are drawn from a new root seed; a champion is promoted only if it
  /// holds on the held-out root seed (when holdout is on), which tuning never uses.
  bool rotate_seeds = false;
  std::int64_t round_configs = 100;
  bool holdout = true;
  std::int64_t holdout_seed = kDefaultHoldoutSeed;
  ProposerOptions proposer;             ///< the proposer hook (docs/proposer.md); off when no command
  IdeaOptions ideas;                    ///< the idea queue (docs/ideas.md); off when no folder
  IdeaAgentOptions idea_agent;          ///< the idea agent (docs/ideas.md, needs the queue); off when no command
  /// One worker per GPU (docs/scale-out.md): each sees only its GPU (CUDA_VISIBLE_DEVICES), takes the next
  /// compiled proposal whenever it is idle, and runs the A/B/A re-timings and held-out checks of its own
  /// challengers. Empty = one worker on GPU 0 with the daemon's environment (the default).
  std::vector<GpuSpec> gpus;
  /// Only this shard of every template's valid configs (tuner/shard.hpp; Slurm job arrays). None = all.
  std::optional<Shard> shard;
  /// How the DB's commits reach the disk (ExperimentDb::set_sync_full, `--db-sync`): false (normal, the default)
  /// syncs the write-ahead log at checkpoints only: a killed daemon loses no finished iteration, an OS crash or a
  /// power loss may lose the last ones. true (full): a sync at every commit (two an iteration).
  bool db_sync_full = false;
  /// Spare GPU time (docs/daemon.md): when a GPU is free and no queued config has compiled, it evaluates on the
  /// whole suite the best screened-out config of this run whose screen is within spare_cutoff of the best screen
  /// (tuner/fidelity.hpp spare_candidate), and that result challenges the champion as any whole-suite result does.
  /// Off with --no-spare-evals; only with the ladder's screen.
  bool spare_evals = true;
  double spare_cutoff = 0.30;
  /// Screens sent ahead (docs/daemon.md "Screens sent ahead"): while a GPU times one config's screen, the next
  /// compiled config's screen is written to its worker, which starts it the moment it answers; the loop records
  /// the first meanwhile, so the GPU does not wait on the loop's DB writes. Off with --no-eval-ahead.
  bool eval_ahead = true;
};

/// How a run ended.
struct RunSummary {
  std::int64_t run_id = 0;
  std::int64_t iterations = 0;
  std::string stop_reason;
  std::optional<double> best_ms;
  bool failed = false;  ///< the run ended with status failed (stop_reason says why; `run` exits 1)
};

/// Throws std::invalid_argument naming the option (as `run` spells it) when `options` cannot make a run: a
/// budget or iteration limit that is not positive, a negative screen cut-off, fewer than 1 screen sample, a
/// round of no configs, --rotate-seeds on a suite without a root seed, a root seed equal to the held-out seed
/// (with the held-out check on), an idea budget below 1 or an idea poll that is not positive, a manifest file
/// that does not exist, an unknown strategy. The one check of the options: `run` (exit 2) and
/// run_tuning_loop call it.
void validate_run_options(const RunOptions& options);

/// Runs the loop until the budget, the iteration limit, the search space or a stop request ends it.
/// Throws std::runtime_error / std::invalid_argument (naming the problem) for bad options
/// (validate_run_options) or an unusable DB before anything is logged; once the run is logged, problems end
/// it with status failed.
RunSummary run_tuning_loop(const RunOptions& options, StopRequest& stop);

/// The suite label stored in the DB for these options: the built-in name, or the manifest file's stem.
std::string suite_label(const RunOptions& options);

/// The iters.tsv of these options: tsv_path, or the DB's default (default_iters_tsv_path: beside it, named after it).
std::string tsv_path_of(const RunOptions& options);

}  // namespace attn
