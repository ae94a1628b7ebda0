// What runs on which GPU (docs/daemon.md): the queue of configs compiling ahead (the compile backlog rule,
// daemon/next_job.hpp), what a free GPU takes next (a compiled config first, else spare GPU time, else the oldest
// compile), the jobs on the GPUs, the run's iterations, and when the run ends (a stop, the budget, the iteration limit
// counting the jobs in flight, a failed GPU loop, or nothing left to tune).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/job.hpp"
#include "daemon/search_book.hpp"
#include "daemon/supervise.hpp"
#include "gpu/compiler.hpp"

namespace attn::tuning {

/// The run's limits that end it (RunOptions: --budget, --iterations).
struct RunLimits {
  std::optional<double> budget_s;
  std::optional<std::int64_t> max_iterations;
};

/// Thread-safe: one lock (and its condition variable), held for no I/O; under it only the search book (and the
/// compiler's queue) is called.
class Scheduler {
 public:
  /// `search`, `compiler`, `pool`, `stop` must outlive it. The run's clock starts now.
  Scheduler(SearchBook& search, Compiler& compiler, CompilePool& pool, const StopRequest& stop, RunLimits limits);

  /// A job on a GPU from the moment it was taken (or its screen sent ahead) until it finished: counted against the
  /// iteration limit. Ends when destroyed, unless finish() ended it first.
  class Ticket {
   public:
    explicit Ticket(Scheduler& s) : s_(&s) {}
    Ticket(Ticket&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket() {
      if (s_) s_->end_job(false);
    }
    /// The job's iteration is recorded: one more iteration of the run when `counted` (not a spare evaluation); the
    /// run's iterations now.
    std::int64_t finish(bool counted) {
      Scheduler* s = s_;
      s_ = nullptr;
      return s ? s->end_job(counted) : 0;
    }

   private:
    Scheduler* s_;
  };

  /// What a free GPU does next.
  struct Next {
    enum class Kind {
      job,    ///< evaluate `job`: the first compiled config of the queue, else its front (waiting for its compile)
      spare,  ///< no queued config has compiled: a spare evaluation (ScreenBook::take_spare)
      again,  ///< nothing queued while other GPUs evaluated; one of them finished: look again
      idle,   ///< nothing queued, nothing on any GPU
    };
    Kind kind = Kind::idle;
    InFlight job{};
  };
  /// Starts compiles (refill), then takes the next job; `spare_due`: a spare evaluation is available. With nothing
  /// queued while another GPU evaluates, waits for a job to end (Kind::again). For job and spare the caller holds a
  /// Ticket from now on (ticket()).
  Next next(bool spare_due);
  /// The ticket of a job taken by next() or sent ahead (take_screen_ahead).
  Ticket ticket() { return Ticket(*this); }
  /// Starts compiles of the search's proposals: the preferred template's (an idea being tuned) at the queue's front
  /// whatever the backlog, then as many as keep every compile thread busy under the backlog (compiles_to_start).
  void refill();
  /// The first queued config whose compile is done and succeeded, is screened (`screened(template)`: not an idea's)
  /// and not a spare evaluation, taken off the queue to have its screen sent ahead (counted on a GPU from now on);
  /// none when there is none or the run is ending.
  std::optional<InFlight> take_screen_ahead();
  /// A job back to the queue's front (its screen was sent ahead to a worker that ended before answering it).
  void put_back(InFlight job);
  /// `configs` of template `t` (those the search has not seen: SearchBook::claim) compile first: at the queue's front,
  /// described `move`. How many were queued.
  std::size_t issue_front(const std::string& t, const std::vector<Config>& configs, const std::string& move);
  /// After `p` compiled to `cv` whose cubin takes the patch (CompiledVariant::patchable): the configs that differ from
  /// `p`'s only in patchable parameters, valid and not seen yet, go to the queue's front with their cubins, `cv`'s with
  /// their values written in (Compiler::from_sibling: byte-identical to an NVRTC build). Not for an idea's template,
  /// nor for a sibling.
  void queue_siblings(const TemplateProposal& p, const CompiledVariant& cv);
  /// Template `t` leaves the search; its configs still queued leave with it (finished for its progress).
  void retire(const std::string& t);

  /// Why the run ends now, if it does: another GPU's loop ended it, a GPU's loop failed, a stop, the budget, the
  /// iteration limit (the run's iterations and the jobs on GPUs; `own_ahead` jobs sent ahead to the caller's GPU are
  /// its next job and fit under the limit already).
  std::optional<std::string> stop_reason(int own_ahead = 0) const;
  /// The run ends, for `why` (the first reason stays); every waiting GPU wakes.
  void end(const std::string& why);
  /// A GPU's loop failed with `e` (the first failure stays); the run ends.
  void fail(std::exception_ptr e);
  std::exception_ptr failure() const;
  /// The reason the run ended ("" while it runs).
  std::string reason() const;
  /// Ends the run for `why` when nothing is queued and no GPU evaluates and `busy_elsewhere` is false (an idea's check
  /// or a call that may bring work runs); whether it ended.
  bool end_if_idle(const std::string& why, bool busy_elsewhere);
  /// Waits up to `d` for a job to end or the run to end.
  void wait_for(milliseconds d);
  std::int64_t iterations() const;
  /// An iteration recorded outside the GPUs (a proposer's rejected proposal): one more iteration of the run.
  std::int64_t count_outside();
  /// The run's end: configs still queued are no longer pending in the search.
  void drop_queue();

 private:
  SearchBook& search_;
  Compiler& compiler_;
  CompilePool& pool_;
  const StopRequest& stop_;
  const RunLimits limits_;
  const Clock::time_point started_ = Clock::now();
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a job ended, or the run ends
  std::deque<InFlight> queue_;
  int busy_ = 0;               // jobs on GPUs (taken, or sent ahead)
  std::int64_t iterations_ = 0;
  std::string reason_;
  std::exception_ptr failure_;

  std::int64_t end_job(bool counted);
  /// A config of the search into the compile pool (the one place a config is issued).
  InFlight issue(TemplateProposal p);
  void refill_locked();
  std::optional<std::string> stop_reason_locked(int own_ahead) const;
};

}  // namespace attn::tuning
