// One iteration of the tuning loop (docs/daemon.md): a config's compile result, the ladder's screen (the next config's
// screen sent ahead meanwhile), the whole suite, the champion challenge (A/B/A re-timing, held-out check) and its
// promotions, logged to the DB and iters.tsv in one step.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "daemon/case_rounds.hpp"
#include "daemon/challenge.hpp"
#include "daemon/champions.hpp"
#include "daemon/db_writer.hpp"
#include "daemon/gpu_slot.hpp"
#include "daemon/run_stats.hpp"
#include "daemon/scheduler.hpp"
#include "daemon/screen_book.hpp"
#include "daemon/search_book.hpp"

namespace attn::tuning {

/// Stateless but for the run's id: any GPU's thread runs its own iterations through it.
class IterationRunner {
 public:
  /// The parts of the run an iteration works with (all outlive the runner).
  struct Env {
    const RunOptions& o;
    std::string suite;
    DbWriter& db;
    SearchBook& search;
    Scheduler& scheduler;
    ScreenBook& screens;
    CaseRounds& rounds;
    Champions& champions;
    ChallengeSeat& seat;
    HoldoutChecker* holdout;  ///< none: no held-out check
    RunStats& stats;
    Compiler& compiler;
    const StopRequest& stop;
    Clock::time_point started;                       ///< the run's start (rates)
    std::function<void(const std::string&)> say;     ///< a progress line
    std::function<void(const std::string&)> status;  ///< the status file, with what is in flight now
  };
  explicit IterationRunner(Env env) : env_(std::move(env)) {}
  /// The run is logged: its iterations are recorded under `run_id`.
  void set_run(std::int64_t run_id) { run_id_ = run_id; }
  /// One iteration of `job` on `slot`'s GPU, on that slot's thread; `ticket` ends when it is recorded. Throws (the
  /// run fails) when a template's files cannot be read or the cubin cache cannot store a cubin.
  void run(InFlight& job, GpuSlot& slot, Scheduler::Ticket& ticket);

 private:
  Env env_;
  std::int64_t run_id_ = 0;

  /// The job's compile, once done (a header the file system could not read is compiled again a few times).
  CompiledVariant compiled(InFlight& job);
  /// The ladder's screen request of compiled variant `cv` of template `t` on the screen `plan`.
  EvalRequest screen_request(const std::string& t, const CompiledVariant& cv, const ScreenPlan& plan) const;
  /// RunOptions::eval_ahead: the first compiled config of the queue that the ladder screens has its screen written to
  /// `slot`'s worker now, while the current one is timed, and becomes the slot's next job.
  void send_ahead(GpuSlot& slot);
  /// The challenge of a valid whole-suite result `challenger` (iteration `it` of `cfg`, evaluated as `r` on `slot`): the
  /// iteration is recorded with its outcome, then its promotions are written, the seat held until then.
  void challenge(IterationRecord& it, const Config& cfg, const Contender& challenger, const EvalResponse& r,
                 const std::string& head, const std::string& screen_note, const CompiledVariant& cv, GpuSlot& slot,
                 bool spare, Scheduler::Ticket& ticket);
  /// Records a finished iteration of `cfg`: the DB (one transaction), iters.tsv, the search, the counts, a progress
  /// line; `ticket` ends. A spare evaluation counts apart from the run's configs. The run's iterations now.
  std::int64_t finish(IterationRecord& it, const Config& cfg, GpuSlot& slot, bool spare, Scheduler::Ticket& ticket);
};

}  // namespace attn::tuning
