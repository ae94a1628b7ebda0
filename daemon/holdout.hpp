// Held-out confirmation: before a champion is promoted (and before export) it is validated and timed on the
// suite's cases drawn from a root seed that tuning never uses, back to back with the incumbent. A
// challenger that is wrong there, or not faster there than the incumbent, is not promoted. Every
// measurement is a row of holdout_checks (docs/db-schema.md), which `export` reports.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/champion_book.hpp"
#include "daemon/db_writer.hpp"
#include "db/store.hpp"

namespace attn {

/// A contender on the held-out cases.
struct HoldoutResult {
  bool ok = false;        ///< every held-out case passed validation and was timed
  std::string failure;    ///< why not ("wrong result on full-window-2: ...", "worker_died: ...")
  /// The failure's kind; none when ok, or when it failed without one (no score, the cases could not be built).
  FailureKind kind = FailureKind::none;
  Measured measured;      ///< scores on the held-out cases (when ok)
  std::vector<CaseResultRecord> cases;
};

/// Evaluates a contender on the held-out cases (validation and timing) on the GPU of the challenge in progress
/// (daemon/challenge.hpp); the worker's prepared suite is switched around the call.
using HoldoutEvalFn = std::function<HoldoutResult(const Contender&)>;

/// Not thread-safe: used by the holder of the challenge seat (daemon/challenge.hpp) alone.
class HoldoutChecker {
 public:
  /// `root_seed`: the held-out root seed of `suite`'s cases; the checks are recorded through `db`.
  HoldoutChecker(tuning::DbWriter& db, std::string suite, std::int64_t root_seed);

  std::int64_t root_seed() const { return root_seed_; }
  /// The run that the checks are recorded under (set once the run is logged).
  void set_run(std::int64_t run_id) { run_id_ = run_id; }
  /// Starts a challenge whose contenders `eval` times on the held-out cases: measurements are shared between the
  /// scopes of one challenge only, so the challenger and its incumbent are always timed back to back on the same GPU
  /// state.
  void begin_challenge(HoldoutEvalFn eval);

  /// The PromotionGate (daemon/champion_book.hpp). Allows iff the challenger is valid on every held-out
  /// case and, when there is an incumbent that is valid there, its held-out score for `scope` is below
  /// the incumbent's (strictly: a tie keeps the incumbent). Records each contender's held-out measurement once
  /// per challenge. Stricter on purpose than an idea's held-out check (tuner/idea_rule.hpp decide_idea, which
  /// demotes a win only when it is slower there by more than the noise): a challenger is the fastest of many
  /// configs timed on the tuning seed, so its lead leans on that seed's inputs, and refusing a tie costs
  /// nothing (the incumbent stays, the search goes on).
  GateVerdict gate(int scope, const Contender& challenger, const Contender* incumbent);

  /// Confirms every current champion of `book` that has no held-out check at this root seed yet (role
  /// champion), timed by `eval`, so that export can report a held-out score; returns one note per champion checked.
  std::vector<std::string> confirm_champions(const ChampionBook& book, HoldoutEvalFn eval);

 private:
  tuning::DbWriter& db_;
  std::string suite_;
  std::int64_t root_seed_;
  HoldoutEvalFn eval_;
  std::int64_t run_id_ = 0;
  std::map<std::int64_t, HoldoutResult> measured_;  // by iteration, this challenge
  std::set<std::int64_t> recorded_;                 // iterations recorded in this challenge

  const HoldoutResult& measure(const Contender& c);
  void record(const Contender& c, HoldoutRole role, const HoldoutResult& r, const std::string& verdict);
};

}  // namespace attn
