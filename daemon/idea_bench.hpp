// The idea bench (docs/ideas.md, "What the daemon does with one"): one idea at a time is taken from the queue folder,
// applied to its parent (the latest winning idea of its template's lineage, else the template), checked on a thread of
// its own while the GPUs go on tuning, tuned within its budget (the parent's best configs first, evaluated in full),
// judged by A/B/A against the parent's best on one GPU and on the held-out seed, and given a verdict
// (tuner/idea_rule.hpp decide_idea): win (it stays in the search and the next idea stacks on it), no_gain, slower (it
// leaves the search), or broken with the kind.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/challenge.hpp"
#include "daemon/champions.hpp"
#include "daemon/db_writer.hpp"
#include "daemon/idea_queue.hpp"
#include "daemon/idea_session.hpp"
#include "daemon/scheduler.hpp"
#include "daemon/search_book.hpp"
#include "daemon/tuning_loop.hpp"
#include "tuner/idea_rule.hpp"

namespace attn::tuning {

/// Thread-safe: one lock, guarding the session; it is never held while the bench waits for the challenge seat or the
/// GPU (an idea's judging runs on the polling slot's thread with the lock released, its idea marked judging), nor
/// while the status file is written.
class IdeaBench {
 public:
  /// The parts of the run the bench works with (all outlive it).
  struct Env {
    DbWriter& db;
    SearchBook& search;
    Scheduler& scheduler;
    Champions& champions;
    ChallengeSeat& seat;
    HoldoutChecker* holdout;  ///< none: no held-out check
    Compiler& compiler;
    std::function<void(const std::string&)> say;     ///< a progress line
    std::function<void(const std::string&)> status;  ///< the status file, with what is in flight now
  };
  /// The queue of `o.ideas` (off without a folder, which is made when missing) on suite `suite`.
  IdeaBench(const RunOptions& o, std::string suite, Env env);
  bool enabled() const { return o_.ideas.enabled(); }
  /// The run is logged: its idea rows are recorded under `run_id`.
  void set_run(std::int64_t run_id) { run_id_ = run_id; }
  /// The bench's step, called by every GPU's loop: a finished check collected, a tuned idea judged on `slot`'s GPU,
  /// else, every RunOptions::ideas.poll_s seconds, the next file of the folder. Another GPU at the bench: nothing,
  /// unless `wait_turn`.
  void poll(GpuSlot& slot, bool wait_turn = false);
  /// An idea is in progress (checking, tuning or judging).
  bool in_progress() const { return in_progress_.load(); }
  /// The folder is looked at on the next poll (an agent queued ideas).
  void look_now();
  /// Ideas waiting: those of `queued` not taken yet, and the one in progress.
  std::size_t waiting(const std::vector<QueuedIdea>& queued) const;
  /// The idea in progress for the status file (null when none).
  nlohmann::json status() const;
  /// The run ends before the idea's verdict: its row says interrupted and why.
  void interrupt(const std::string& why);

 private:
  const RunOptions& o_;
  const std::string suite_;
  Env env_;
  std::int64_t run_id_ = 0;
  std::atomic<bool> in_progress_{false};
  mutable std::mutex mu_;
  IdeaSession session_;

  /// The folder looked at: its problem recorded once, else its next file taken.
  void look(std::vector<std::string>& notes);
  /// Takes one queued file: broken bad input recorded at once; a duplicate skipped; else the proposal and idea rows
  /// and its check started. False when it must wait (no parent result yet): looked at again.
  bool start(const QueuedIdea& q, std::vector<std::string>& notes);
  /// The check's result: the template joins the search (preferred, seeded, bounded), or broken.
  void finish_check(std::vector<std::string>& notes);
  /// Before the judging: the parent's champion now (it may have moved while the idea was tuned), with the idea's new
  /// values, is evaluated in the idea's space too. True when it queued such configs.
  bool catch_up();
  /// The tuned idea judged on `slot`'s GPU (`lock` held on entry and on return, released for the GPU work).
  void judge(GpuSlot& slot, std::unique_lock<std::mutex>& lock, std::vector<std::string>& notes);
  /// A template's best config as a contender for the A/B/A re-timing (its cubin from the cache or compiled again).
  Contender contender(const std::string& tname, const Champion& c);
  /// The verdict: the idea's row done with it, logged; the idea ends and the queue is looked at again.
  void end(IdeaVerdict verdict, IdeaBrokenKind kind, const std::string& reason, std::vector<std::string>& notes);
};

/// Parent, each contender, parent again, re-timed on `seat`'s GPU (`paired[i]`: contender i is the paired config);
/// none when a re-timing failed or a cubin is missing.
std::optional<IdeaAba> retime_idea(Challenge& seat, const Contender& parent, const std::vector<Contender>& contenders,
                                   const std::vector<bool>& paired);
/// The idea row's numbers: the decision's (the first A/B/A round's), the held-out scores, and the A/B/A's JSON (looks,
/// GPU `gpu`, and "rounds": each round's A1, contenders' B and A2 in ms).
void record_idea_numbers(IdeaRecord& rec, const IdeaDecision& d, const std::vector<IdeaAba>& rounds,
                         const std::optional<IdeaHoldout>& holdout, const Contender& parent,
                         const std::vector<Contender>& contenders, const GpuSpec& gpu);

}  // namespace attn::tuning
