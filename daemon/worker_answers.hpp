// What the tuning loop makes of a GPU worker's answer, as pure functions: the one rule for restarting the worker, the
// failure kind an answer is recorded with, the measurement the champion rule reads, a case's DB row, what the search
// learns from an iteration, and the watchdog's deadline.
#pragma once
#include <chrono>
#include <string>

#include "daemon/champion_book.hpp"
#include "db/store.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_protocol.hpp"
#include "tuner/search_state.hpp"

namespace attn::tuning {

/// The one rule for restarting a GPU's worker after an answer, for every request (screens, whole-suite evaluations,
/// A/B/A re-timings, held-out checks): it faulted (a sticky CUDA error: its context is gone), hung (the watchdog
/// killed it), died, or rejected the request (it and the daemon disagree about what it holds). A result check
/// (wrong_result, inconsistent, below_floor), a device limit or a cubin that does not load (compile) leave a
/// healthy worker (docs/verification.md), which takes the next request.
bool ends_worker(const ReplyStatus& s);
/// The kind an answer's failure is recorded with: worker_died for a request the worker rejected, else the status's
/// own kind (none when it is ok).
FailureKind failure_kind(const ReplyStatus& s);
/// The worker's answer as the champion rule measures it: score, family medians, wall time, worst spread.
Measured to_measured(const EvalResponse& r);
/// One case's result as the DB stores it (timing fields only when timed, diffs only when validated).
CaseResultRecord to_record(const CaseResult& c);
/// "N regs[, spills S+L B][, wgmma serialized]": a variant's resources for the iteration's description.
std::string resources_text(const CompiledVariant& cv);
/// What the search learns from a finished iteration: the whole-suite score, else the screen score (an estimate of
/// it, for the strategies' ranking; never a champion), else a failure.
Outcome outcome_of(const IterationRecord& it);
/// The same, of a row of ExperimentDb::search_history (a resume).
Outcome outcome_of(const HistoryRow& r);
/// The SM clock an evaluation ran at: the median of its timed cases' clocks; 0 when none said.
unsigned sm_clock_of(const EvalResponse& r);
/// The watchdog's deadline for one evaluation (s): `factor` x the champion's last evaluation wall time
/// (`champion_eval_ms`, 0 when unknown: then `cap_s`), at least `min_s`, at most `cap_s` (RunOptions::watchdog_*).
std::chrono::milliseconds watchdog_deadline(double factor, double min_s, double cap_s, double champion_eval_ms);

}  // namespace attn::tuning
