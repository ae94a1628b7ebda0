// The proposer hook beside the tuning (docs/proposer.md): a call from the overall champion's template when due (every
// N iterations, or after M without a new champion), or once when nothing else is left to tune; its template joins the
// search, its rejected proposal is a crash iteration of the run.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "daemon/background_calls.hpp"
#include "daemon/champions.hpp"
#include "daemon/db_writer.hpp"
#include "daemon/run_stats.hpp"
#include "daemon/scheduler.hpp"
#include "daemon/search_book.hpp"
#include "proposer/proposal_round.hpp"

namespace attn::tuning {

/// Thread-safe: one lock, held while a call is started or collected (never while one runs).
class ProposerCalls {
 public:
  /// The parts of the run the calls work with (all outlive them).
  struct Env {
    DbWriter& db;
    SearchBook& search;
    Scheduler& scheduler;
    Champions& champions;
    RunStats& stats;
    Compiler& compiler;
    const StopRequest& stop;
    std::function<void(const std::string&)> say;
  };
  /// The hook of `o.proposer` (off without a command) for suite `suite`, templates from `templates_dir`.
  ProposerCalls(const RunOptions& o, std::string suite, std::string templates_dir, Env env);
  bool enabled() const { return o_.proposer.enabled(); }
  void set_run(std::int64_t run_id) { run_id_ = run_id; }
  /// Called by every GPU's loop: a finished call collected; a new one started when due (ProposerOptions::due).
  void poll();
  /// Nothing else is left to tune: a call is started once (again after each template that joined); whether one runs
  /// (the run waits for it rather than end).
  bool when_idle();
  /// The run's end: a call still running is stopped (recorded interrupted) and collected.
  void finish();
  bool running() const;

 private:
  const RunOptions& o_;
  const std::string suite_, templates_dir_;
  Env env_;
  std::int64_t run_id_ = 0;
  mutable std::mutex mu_;
  BackgroundCalls<ProposalRoundResult> calls_{1};
  std::int64_t proposed_at_ = 0;  // the run's iterations at the last call
  bool idle_tried_ = false;       // with nothing else to tune, a call was made

  void start();
  void collect(bool wait);
};

}  // namespace attn::tuning
