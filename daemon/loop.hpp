// The tuning loop's internals, private to daemon/: one class, Loop, whose member functions live in four
// files by job. tuning_loop.cpp: the run (start, status file, end). loop_slots.cpp: the GPU slots, their
// workers, and the scheduling of compiled configs onto them. loop_evaluate.cpp: one iteration (compile
// result, screen, whole suite, champion challenge, held-out check, promotion). loop_resume.cpp: resume from
// the DB, seeds and fidelity, templates that join the search (proposals).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <set>

#include "daemon/champion_book.hpp"
#include "daemon/idea_queue.hpp"
#include "daemon/idea_session.hpp"
#include "proposer/idea_apply.hpp"
#include "daemon/holdout.hpp"
#include "daemon/stale_worker.hpp"
#include "daemon/tuning_loop.hpp"
#include "db/iters_tsv_writer.hpp"
#include "db/store.hpp"
#include "gpu/compiler.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/idea_rule.hpp"
#include "tuner/multi_search.hpp"
#include "workload/case_spec.hpp"

namespace attn::tuning {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// The worker's answer as the champion rule measures it: score, family medians, wall time, worst spread.
Measured to_measured(const EvalResponse& r);
/// The kind an eval's failure is recorded with: worker_died for a request the worker rejected, else the
/// status's own kind (none when it is ok).
FailureKind failure_kind(const ReplyStatus& s);
/// A reply after which the worker is restarted: it faulted, hung, died, or rejected the request. Wrong results
/// and the other result checks, and device limits, leave a healthy worker (docs/verification.md).
bool ends_worker(const ReplyStatus& s);
/// One case's result as the DB stores it (timing fields only when timed, diffs only when validated).
CaseResultRecord to_record(const CaseResult& c);
/// "N regs[, spills S+L B][, wgmma serialized]": a variant's resources for the iteration's description.
std::string resources_text(const CompiledVariant& cv);
/// What the search learns from a finished iteration: the whole-suite score, else the screen score (an
/// estimate of it, for the strategies' ranking; never a champion), else a failure.
Outcome outcome_of(const IterationRecord& it);
/// The same, of a row of ExperimentDb::search_history (a resume).
Outcome outcome_of(const HistoryRow& r);

/// A screen request written to a GPU's worker before its turn (Loop::send_screen): the worker answers its
/// requests in order, so it starts this one the moment it has answered the one before.
struct SentScreen {
  std::int64_t cases_gen = 0;         // the generation of the cases its worker held when it was sent
  Clock::time_point sent;             // when it was written (its busy time starts then, or at the answer before it)
  std::optional<EvalResponse> reply;  // its answer, once read (Loop::receive_front)
};

/// One proposal compiling ahead, or a patched sibling (Loop::queue_siblings) whose cubin is ready.
struct InFlight {
  TemplateProposal proposal;
  std::shared_future<CompiledVariant> compiled;
  bool sibling = false;  // refill() counts the compile pool's work by the others
  /// A spare evaluation (Loop::take_spare): the whole suite for the config that this screen iteration screened out.
  std::optional<std::int64_t> spare_of{};
  /// Its screen request, once written to its GPU's worker (Loop::screen_on, Loop::send_ahead).
  std::shared_ptr<SentScreen> sent{};
};

/// A screened-out near miss that spare GPU time may evaluate on the whole suite (RunOptions::spare_evals).
struct ScreenedNearMiss {
  TemplateProposal proposal;
  std::int64_t iter = 0;  // its screen iteration
  CompiledVariant cv;     // its compile, without the cubin's bytes (the worker reads cv.cubin_path)
};

/// What an idea's judging starts from (Loop::pick_idea_contenders), copied out of the search state.
struct IdeaPick {
  Champion parent_best;            ///< the parent's best config now
  Champion best;                   ///< the idea's fastest config with the idea on
  std::optional<Champion> paired;  ///< the parent's best config with the idea's values on: its fastest valid look
  std::string inactive_note;       ///< "; its fastest config overall (...) has the idea off", or ""
};

/// One GPU and its isolated worker (docs/scale-out.md). Every field but `worker`'s I/O is guarded by the
/// loop's lock; only the thread that runs this slot talks to its worker, so no two configs are ever timed on
/// one GPU at once.
struct GpuSlot {
  int slot = 0;                  // position in Loop::slots_ (0 runs on the daemon's main thread)
  GpuSpec gpu;                   // index and UUID (the UUID from the worker's hello when NVML did not say)
  std::unique_ptr<WorkerClient> worker;
  HelloResponse hello;
  bool ready = false;            // started, hello answered, the tuning cases prepared
  std::int64_t cases_gen = -1;   // which generation of the tuning cases its worker holds (seed rotation)
  std::string state = "starting";
  std::int64_t iterations = 0, restarts = 0;
  double busy_ms = 0;            // wall time its worker spent on eval requests (Loop::eval_on)
  double spare_ms = 0;           // of which on spare evaluations
  /// The next config, its screen already written to the worker while this slot's current one is evaluated
  /// (Loop::send_ahead, RunOptions::eval_ahead); counted in Loop::busy_ from then. It is this slot's next job.
  std::optional<InFlight> ahead;
  std::deque<std::shared_ptr<SentScreen>> unanswered;  // screens written to the worker and not yet read, oldest first
  Clock::time_point answered_at;  // when its worker last answered (a request sent ahead is busy from then)
  WorkerRecord record;           // its current worker (the <db>.worker file lists every slot's)
};

/// Runs `f` with `mu` unlocked (the caller holds it) and locks it again, also when `f` throws.
template <class F>
auto unlocked(std::mutex& mu, F&& f) {
  mu.unlock();
  struct Relock {
    std::mutex& m;
    ~Relock() { m.lock(); }
  } relock{mu};
  return f();
}

/// The tuning loop of one `attn-tuner run` (docs/daemon.md): every GPU slot, the compile pool, the search,
/// the champions and the DB. One object per run; run() returns when the run ends.
class Loop {
 public:
  /// Opens the DB, loads the templates and the suite's cases, checks the options (std::invalid_argument).
  Loop(const RunOptions& o, StopRequest& stop);
  /// Resumes the DB, starts the first worker (throws when none starts), logs the run and tunes until a stop
  /// condition; the run's summary.
  RunSummary run();

 private:
  const RunOptions& o_;
  StopRequest& stop_;
  ExperimentDb db_;
  std::string suite_label_, templates_dir_, tsv_path_;
  ItersTsvWriter tsv_{tsv_path_, [this] { return db_.iterations(); },  // rebuilt from the DB when needed
                      [this] {
                        const auto [finished, last] = db_.finished_tail();
                        return ItersTsvWriter::Tail{finished, last ? db_.iteration(*last) : std::nullopt};
                      }};
  std::vector<CaseSpec> cases_;
  Compiler compiler_;
  CompilePool pool_;
  std::vector<std::unique_ptr<GpuSlot>> slots_;  // one per GPU; slot 0 runs on the main thread
  std::mutex mu_;  // the loop's lock (every member; the DB is written by whoever holds it)
  std::mutex challenge_mu_;  // one champion challenge at a time (A/B/A re-timings, held-out checks)
  std::mutex records_mu_;  // the worker records (<db>.worker), written when a worker starts
  std::condition_variable cv_;  // a slot finished an evaluation, or the loop ends
  int busy_ = 0;  // slots evaluating now
  std::exception_ptr failure_;  // what ended a slot's thread (rethrown by loop())
  std::int64_t cases_gen_ = 0;  // generation of cases_ (seed rotation); slots re-prepare lazily
  GpuSlot* challenge_slot_ = nullptr;  // the GPU of the challenge in progress (re-timing, held-out check)
  MultiSearch search_;
  std::map<std::string, std::string> kernels_;
  ChampionBook champions_;
  std::deque<InFlight> inflight_;
  RunSummary summary_;
  Clock::time_point started_ = Clock::now();
  std::map<std::string, std::int64_t> proposal_of_;  // proposed template -> its proposal id
  std::future<ProposalRoundResult> proposing_;  // the proposer call running beside the tuning (valid while it runs)
  std::atomic<bool> proposal_cancel_{false};    // asks it to stop (kills the proposer: recorded interrupted)
  bool idle_proposal_tried_ = false;             // with nothing else to tune, the proposer was asked once
  std::int64_t proposed_at_ = 0, champion_at_ = 0;  // iterations of this run at the last proposal / promotion
  double champion_eval_ms_ = 0;  // last evaluation wall time of the overall champion (watchdog)
  // Where the time goes (ms): NVRTC (sum over compile threads), case building, evaluations, re-timings.
  double compile_ms_ = 0, prepare_ms_ = 0, eval_ms_ = 0, retime_ms_ = 0, screen_ms_ = 0, holdout_ms_ = 0;
  // Seeds and fidelity (RunOptions): the root seed of the cases now prepared (none: fixed seeds), the
  // round of a --rotate-seeds run, the screen of the ladder and the best screen score of this suite.
  std::optional<std::int64_t> root_seed_;
  std::int64_t round_ = 0;
  std::optional<ScreenPlan> screen_;
  std::optional<double> best_screen_ms_;
  std::vector<CaseSpec> holdout_cases_;
  std::unique_ptr<HoldoutChecker> holdout_;
  std::int64_t screened_out_ = 0, full_evals_ = 0;  // this run
  // Spare GPU time (RunOptions::spare_evals): this run's screened-out near misses, best screen first; the spare
  // evaluations done, those kept (a new champion), and their GPU time (ms).
  std::multimap<double, ScreenedNearMiss> near_misses_;
  std::int64_t spare_evals_ = 0, spare_kept_ = 0;
  std::int64_t sent_ahead_ = 0;  // screens written to a worker before the answer to the one before was read
  double spare_ms_ = 0;
  IdeaSession ideas_;  // the idea queue's state (daemon/loop_ideas.cpp does its I/O, docs/ideas.md)

  // The idea agent (daemon/idea_agent.cpp): a call running beside the tuning while the queue runs low.
  std::future<IdeaAgentResult> agent_call_;
  std::atomic<bool> agent_cancel_{false};
  std::optional<Clock::time_point> agent_ended_;  // when the last call ended
  bool agent_queued_none_ = false;                 // the last call queued no idea
  /// The idea agent's step, called by every slot's loop: a finished call collected, a new one started when
  /// due (IdeaAgentOptions::due, with the queue's ideas not yet judged).
  void poll_idea_agent();
  /// Collects the call when it has ended (or waits for it with `wait`). True when one was collected.
  bool collect_idea_agent(bool wait = false);

  /// Templates of ideas of earlier runs: evaluated in full, and out of the search unless their idea won.
  void load_idea_templates();
  /// The idea queue's step, called by every slot's loop: a finished check, a tuned idea to judge (on
  /// `slot`'s GPU), else, every poll_s seconds, the next file of the folder.
  void poll_ideas(GpuSlot& slot);
  /// Takes one queued file: broken bad input recorded at once; a duplicate skipped; else the proposal and
  /// idea rows and its check started. False when it must wait (no parent result yet): looked at again.
  bool start_idea(const QueuedIdea& q);
  /// The check's result: the template joins the search (preferred, seeded, bounded), or broken.
  void finish_idea_check();
  /// The seeds of the idea's template `space` (checked, not yet in the search): the parent's champion and its
  /// --idea-top best configs, each first with every new value, then as it is. Sets `a.new_values`.
  std::vector<Proposal> idea_seeds(ActiveIdea& a, const TemplateSpace& space) const;
  /// Before the judging: the parent's champion now (it may have moved while the idea was tuned), with the
  /// idea's new axes, is evaluated in the idea's space too. True when it queued such configs.
  bool catch_up_idea();
  /// `base` completed in the idea's space, first with each of its new values, then as it is.
  std::vector<std::pair<Config, std::string>> idea_variants(const ActiveIdea& a, const TemplateSpace& space,
                                                            const Config& base) const;
  /// A template's best config as a contender for the A/B/A re-timing (its cubin from the cache; compiled with
  /// the loop's lock released).
  Contender idea_contender(const std::string& tname, const Champion& c);
  /// The tuned idea judged on `slot`'s GPU: its contenders picked, A/B/A against the parent's best, the held-out
  /// seed, the verdict (tuner/idea_rule.hpp decide_idea) recorded.
  void judge_idea(GpuSlot& slot);
  /// What the judging starts from, copied out of the search (no reference into it outlives the unlocks that
  /// follow); none when the idea was ended already (none of its configs with the idea on has a result).
  std::optional<IdeaPick> pick_idea_contenders(ActiveIdea& a);
  /// Parent, each contender, parent again, on the GPU of the challenge in progress; none when a re-timing failed.
  std::optional<IdeaAba> retime_idea(const Contender& parent, const std::vector<Contender>& contenders,
                                     const std::vector<bool>& paired);
  /// The parent and the judged contender validated and timed on the held-out seed, on the challenge's GPU.
  IdeaHoldout holdout_idea(const Contender& parent, const Contender& judged);
  /// The idea's row gets the decision's numbers, the held-out scores and the A/B/A's JSON (looks, GPU).
  void record_idea_numbers(ActiveIdea& a, const IdeaDecision& d, const IdeaAba& aba,
                           const std::optional<IdeaHoldout>& holdout, const Contender& parent,
                           const std::vector<Contender>& contenders, const GpuSlot& slot);
  /// The verdict: the idea's row done with it, logged; the idea ends and the queue is looked at again.
  void end_idea(IdeaVerdict verdict, IdeaBrokenKind kind, const std::string& reason);
  /// The run ends before the idea's verdict: its row says interrupted and why.
  void interrupt_idea(const std::string& why);

  /// One slot per GPU of --gpus (each worker sees only its GPU: CUDA_VISIBLE_DEVICES), or the single worker
  /// of a default run (GPU 0, the environment untouched). Each slot records its worker group in <db>.worker.
  void make_slots();
  /// Checks the seed and fidelity options against the suite; sets up the screen and the held-out check.
  void setup_seeds_and_fidelity();
  /// Prepares `cases` on the worker (started and ready), freeing the device memory of older seeds.
  /// False (and a fresh worker next time) when the worker could not.
  bool prepare_suite(GpuSlot& slot, const std::vector<CaseSpec>& cases);
  /// The slot's worker started and holding the current tuning cases (after a seed rotation or a held-out
  /// check it prepares them again).
  void ensure_cases(GpuSlot& slot);
  /// Kills the slot's worker (it died, hung or faulted); the next use starts a fresh one on the same GPU.
  /// Screens it had not answered are lost: the slot's `ahead` job without an answer goes back to the queue's front.
  void restart_worker(GpuSlot& slot);
  /// --rotate-seeds: at each round boundary draw the suite's seeds from the round's root seed.
  void maybe_rotate();
  /// A contender validated and timed on the held-out cases, on the GPU of the challenge in progress; the
  /// tuning cases are prepared again after.
  HoldoutResult eval_holdout(const Contender& c);
  /// Two contenders on the held-out cases, prepared once (an idea and its parent, daemon/loop_ideas.cpp).
  std::pair<HoldoutResult, HoldoutResult> eval_holdout_pair(const Contender& a, const Contender& b);
  /// The slot's worker given the held-out cases (the tuning cases come back with ensure_cases).
  bool prepare_holdout(GpuSlot& slot);
  /// One contender validated and timed on the held-out cases already prepared on `slot`.
  HoldoutResult eval_on_holdout(GpuSlot& slot, const Contender& c);
  /// Live progress for `attn-tuner status` (the DB holds the iterations; this holds what is in flight
  /// and the limits): <db>.status.json, replaced atomically.
  void write_status(const std::string& current);
  /// Each GPU's state for `status`: index, UUID, worker pid, what it does, iterations finished on it, its
  /// rate (configs/hour over the run's wall time), worker restarts, busy time.
  nlohmann::json gpus_status() const;
  /// The compile pool for `status`: threads, and with compile workers (RunOptions::compile_procs) their count
  /// (procs), those running (processes, pids), busy, restarts, compiles and failures.
  nlohmann::json compile_pool_status() const;
  void say(const std::string& line);
  /// Restart after a crash or kill: runs and iterations left `running` become interrupted, iters.tsv is
  /// rebuilt from the DB, and every config already evaluated on this suite is known to the search
  /// (completed with the space's defaults: TemplateSpace::complete).
  void resume();
  /// Starts (or restarts) the slot's worker on its GPU and prepares the tuning cases, unless it is ready.
  void start_worker(GpuSlot& slot);
  milliseconds eval_deadline() const;
  /// Why the run ends now, if it does. `own_ahead`: jobs in flight that belong to the caller's slot (its
  /// GpuSlot::ahead, which it takes next) and so do not count against the iteration limit.
  std::optional<std::string> stop_reason(int own_ahead = 0) const;
  /// Starts compiles of the search's proposals: as many as the pool has threads, with compiled configs waiting for a
  /// GPU up to a backlog (compiles_to_start, daemon/next_job.hpp).
  void refill();
  /// After `p` compiled to `cv` whose cubin takes the patch (CompiledVariant::patchable): the configs that differ
  /// from `p`'s only in patchable parameters (TemplateSpace::patchable_names), valid and not seen yet, go to the
  /// front of the queue with their cubins, `cv`'s with their values written in (Compiler::from_sibling,
  /// byte-identical to an NVRTC build): GPU time and no NVRTC. Not for an idea's template (its budget counts
  /// distinct compiles of the idea's code), nor for a sibling. Called with the loop's lock held.
  void queue_siblings(const TemplateProposal& p, const CompiledVariant& cv);
  /// Runs slot 0's loop on this thread and every other slot's on a thread of its own (which starts, and so
  /// owns, that slot's worker); returns when all have ended. `lock` holds mu_.
  void loop(std::unique_lock<std::mutex>& lock);
  /// One GPU's share of the loop: take the next compiled proposal, evaluate it on this GPU, repeat. With
  /// nothing to take while other GPUs still evaluate (their results may open new proposals), it waits.
  void gpu_loop(GpuSlot& slot, std::unique_lock<std::mutex>& lock);
  /// Logs one finished iteration: DB (one transaction), iters.tsv, search state, progress line. A spare evaluation
  /// (`spare`) counts apart from the run's configs.
  void finish(IterationRecord& it, const Config& cfg, GpuSlot& slot, bool spare = false);
  /// A spare evaluation is due: a near miss is left that is still within the spare cut-off of the best screen and
  /// whose cubin is still in the cache (the others are dropped).
  bool spare_due();
  /// The best near miss as a job for the whole suite (call when spare_due()).
  InFlight take_spare();
  /// The SM clock an iteration was timed at: the median of its cases' clocks (the hello's when none said).
  static void note_sm_clock(IterationRecord& it, const EvalResponse& r);
  /// A champion's cubin compiled again from its config (a DB resumed on a machine without the cubin: the
  /// cache is per machine), so that A/B/A can re-time it; "" when it does not compile. A champion that
  /// cannot be re-timed cannot defend itself: its first challenger would win on one look.
  std::string rebuild_champion(const Contender& c);
  /// The NVRTC request of `cfg` of template `tname`: compile_request (tuner/compile_request.hpp) on its space.
  /// Reads the search state: call it with mu_ held.
  CompileRequest compile_request(const std::string& tname, const Config& cfg) const;
  void evaluate(InFlight& job, GpuSlot& slot);
  /// Template `name` leaves the search (SearchState::retire), and its configs still in the queue leave with it.
  void retire(const std::string& name);
  /// A proposed template none of whose first configs worked is a broken kernel: no more GPU time for it.
  void retire_if_broken(const std::string& name, const SearchState& st);
  /// A template joins the search (a proposal's, accepted now or in an earlier run).
  void add_template(TemplateSpace space, std::int64_t proposal_id);
  /// Accepted proposals of earlier runs whose root template this run tunes rejoin the search, from the DB.
  void load_proposed_templates();
  /// Starts one call of the proposer hook (proposer/proposal_round.hpp) from the overall champion's template,
  /// on a thread of its own with its own DB connection: the GPU goes on tuning while the proposer thinks.
  /// Nothing when no champion exists yet.
  void start_proposal();
  /// A finished call: its crash iteration logged, its template joins the search. `wait`: wait for a running
  /// call (the run's end). True when a new template joined.
  bool collect_proposal(bool wait = false);
  /// `req` on `slot`'s worker with the loop's lock released; its wall time counts as the GPU's busy time.
  /// Screens sent ahead are read first (drain_ahead), and a worker they ended is started again with the cases.
  EvalResponse eval_on(GpuSlot& slot, const EvalRequest& req, milliseconds deadline);
  /// The ladder's screen request of compiled variant `cv` of template `tname`.
  EvalRequest screen_request(const std::string& tname, const CompiledVariant& cv) const;
  /// `job`'s screen on `slot`: the answer to its request sent ahead when that was made against the cases the
  /// worker holds now, else written now; with it on the way, the next compiled config is sent ahead
  /// (send_ahead). A reply that ended the worker has restarted it (receive_front).
  EvalResponse screen_on(GpuSlot& slot, InFlight& job, const EvalRequest& req);
  /// Writes `req` to `slot`'s worker without waiting; a write that fails is the reply (worker_died).
  std::shared_ptr<SentScreen> send_screen(GpuSlot& slot, const EvalRequest& req);
  /// RunOptions::eval_ahead: the first compiled config of the queue that the ladder screens has its screen
  /// written to `slot`'s worker now, while the current one is timed, and becomes the slot's next job.
  /// Nothing when the slot has one already, its worker is not ready, or the run is about to end.
  void send_ahead(GpuSlot& slot);
  /// Reads the answer to `slot`'s oldest unanswered screen; an answer that ended the worker (ends_worker)
  /// restarts it, and the screens behind it are lost (restart_worker puts their jobs back in the queue).
  void receive_front(GpuSlot& slot);
  /// Reads every unanswered screen of `slot` (before any other request, which would be answered after them).
  void drain_ahead(GpuSlot& slot);
  /// A/B/A re-timing of a validated variant: timing only.
  std::optional<Measured> retime(const Contender& c);
  void report_throughput();
};

}  // namespace attn::tuning
