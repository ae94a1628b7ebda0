// The tuning loop of one `attn-tuner run` (docs/daemon.md, ARCHITECTURE.md "The daemon's core"): the parts, each the
// owner of its state, and the threads that drive them, one per GPU. Private to daemon/.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "daemon/case_rounds.hpp"
#include "daemon/challenge.hpp"
#include "daemon/champions.hpp"
#include "daemon/db_writer.hpp"
#include "daemon/gpu_slot.hpp"
#include "daemon/holdout.hpp"
#include "daemon/idea_agents.hpp"
#include "daemon/idea_bench.hpp"
#include "daemon/iteration.hpp"
#include "daemon/proposer_calls.hpp"
#include "daemon/run_stats.hpp"
#include "daemon/scheduler.hpp"
#include "daemon/screen_book.hpp"
#include "daemon/search_book.hpp"
#include "daemon/status_file.hpp"
#include "daemon/tuning_loop.hpp"

namespace attn::tuning {

/// One object per run; run() returns when the run ends. Owns the parts; its own state is the run's id and summary.
class Loop {
 public:
  /// Opens the DB, loads the templates (and the proposals and ideas of earlier runs) and the suite's cases; throws
  /// std::invalid_argument for options that cannot make a run, std::runtime_error for an unusable DB.
  Loop(const RunOptions& o, StopRequest& stop);
  /// Resumes the DB, starts the first worker (throws when none starts), logs the run and tunes until a stop condition;
  /// the run's summary.
  RunSummary run();

 private:
  const RunOptions& o_;
  StopRequest& stop_;
  const std::string suite_, templates_dir_;
  const Clock::time_point started_ = Clock::now();
  DbWriter db_;
  Compiler compiler_;
  CompilePool pool_;
  CaseRounds rounds_;
  RunStats stats_;
  SearchBook search_;
  Scheduler scheduler_;
  ScreenBook screens_;
  Champions champions_;
  ChallengeSeat seat_;
  std::unique_ptr<HoldoutChecker> holdout_;  // none: no held-out check
  WorkerRecords records_;
  std::vector<std::unique_ptr<GpuSlot>> slots_;  // one per GPU; slot 0 runs on the main thread
  StatusFile status_;
  IdeaBench bench_;
  IdeaAgents agents_;
  ProposerCalls proposer_;
  IterationRunner iterations_;
  std::int64_t run_id_ = 0;

  /// One slot per GPU of --gpus (each worker sees only its GPU: CUDA_VISIBLE_DEVICES), or the single worker of a
  /// default run (GPU 0, the environment untouched).
  void make_slots();
  /// The run's templates, then the accepted proposals of earlier runs whose root template it tunes (an idea's
  /// template out of the search unless its idea won).
  void load_templates();
  /// Restart after a crash or kill: runs, iterations, proposals, ideas and agent calls left running become
  /// interrupted, iters.tsv is brought in step, and every config already evaluated on this suite is known to the
  /// search, with each template's champion and the run's champions.
  void resume();
  /// The run's first lines: the GPU, the suite, the templates, the fidelity, the seeds.
  void introduce(const HelloResponse& hello, const std::vector<std::string>& templates);
  /// Runs slot 0's loop on this thread and every other slot's on a thread of its own (which starts, and so owns, that
  /// slot's worker); returns when all have ended, rethrowing the first failure.
  void loop();
  /// One GPU's share of the loop: take the next job, evaluate it on this GPU, repeat, until the run ends.
  void gpu_loop(GpuSlot& slot);
  /// Nothing queued and nothing on a GPU: whether the run waits (a proposer call, the idea agents, an idea's check may
  /// bring work), else it ends (the search space is exhausted).
  bool wait_when_idle(GpuSlot& slot);
  /// <db>.status.json with `current`, what is in flight now.
  void write_status(const std::string& current);
  void say(const std::string& line) const;
};

}  // namespace attn::tuning
