// The daemon's champions: the best variant overall and per family, loaded from the DB, challenged by each
// new valid variant with the noise-aware rule of tuner/champion.hpp (pre-filter, then an A/B/A re-timing).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "db/store.hpp"
#include "tuner/space.hpp"

namespace attn {

/// One evaluation of a variant on the whole suite (ms).
struct Measured {
  double score_ms = 0;                  ///< geomean over families of the per-family median
  std::map<Family, double> family_ms;   ///< per-family median of the case medians
  double rel_spread = 0;                ///< max relative spread (IQR / median) over the cases
  double wall_ms = 0;                   ///< wall time of the evaluation (for the watchdog)
};

/// A variant that holds, or challenges for, a champion scope.
struct Contender {
  std::int64_t iter = 0;
  std::string template_name;
  Config config;
  std::string cubin_path;
  std::string kernel;
  Measured measured;
};

/// Re-times a variant (no validation); nullopt when the evaluation failed.
using RetimeFn = std::function<std::optional<Measured>(const Contender&)>;

/// The last word before a promotion (the held-out check, daemon/holdout.hpp): whether `challenger` may
/// take scope `scope` (index as ChampionBook) from `incumbent` (null when there is none, or it cannot
/// be re-timed), and a note for the summary.
struct GateVerdict {
  bool allow = true;
  std::string note;
};
using PromotionGate =
    std::function<GateVerdict(int scope, const Contender& challenger, const Contender* incumbent)>;

/// A promotion the caller writes to the DB (ExperimentDb::set_champion) once the iteration is finished.
struct Promotion {
  ChampionScope scope;
  double score_ms;
  std::string aba_json;
};

/// The outcome of a challenge: promotions (empty: discard) and a plain-words summary for the log.
struct ChallengeResult {
  std::vector<Promotion> promotions;
  std::string summary;
  double retime_ms = 0;  ///< wall time of its A/B/A re-timings
  bool kept() const { return !promotions.empty(); }
};

class ChampionBook {
 public:
  /// Scope index: 0 overall, then the families in kAllFamilies order.
  static constexpr int kScopes = 4;
  static ChampionScope scope_at(int i);

  /// Loads the champions of `suite` from `db`; `kernel_of` gives a template's entry symbol (a champion
  /// of a template no longer loaded is kept but cannot be re-timed: a challenger then wins on its first
  /// look). A champion's cubin is the variant's `cubin_path` when that file exists; otherwise (a DB resumed
  /// on another machine, or a cleared cache) `rebuild` (optional) compiles the champion's config again and
  /// returns the new cubin path, or "" when it cannot (then the champion cannot be re-timed). Called once per
  /// champion iteration, also when it holds several scopes.
  void load(ExperimentDb& db, const std::string& suite,
            const std::function<std::optional<std::string>(const std::string&)>& kernel_of,
            const std::function<std::string(const Contender&)>& rebuild = {});

  const std::optional<Contender>& at(int scope) const { return holders_[scope]; }
  const std::optional<Contender>& overall() const { return holders_[0]; }

  /// Challenges every scope: a scope without a holder is won outright; otherwise the pre-filter on the
  /// first look, then A/B/A (incumbent, challenger, incumbent) through `retime`, decided by
  /// decide_champion. Re-timings are shared between scopes held by the same incumbent. Updates the
  /// holders in memory for the promotions it returns.
  /// `gate` (optional) is asked before each promotion; a refused one is not made (its note says why).
  ChallengeResult challenge(const Contender& challenger, const RetimeFn& retime, const PromotionGate& gate = {});

  /// The outcome of challenge() when it needs neither a re-timing nor the gate: every scope's holder is
  /// re-timable and the pre-filter says not_faster, or is not re-timable and scores at least as well. Then
  /// the result (no promotion, challenge()'s summary) without changing anything; nullopt otherwise. With one
  /// worker per GPU, such a plain discard does not wait for another GPU's challenge in progress.
  std::optional<ChallengeResult> plain_discard(const Contender& challenger) const;

 private:
  std::array<std::optional<Contender>, kScopes> holders_;
};

/// The value of `m` that scope `scope` (index as ChampionBook) is judged on.
double scope_score(const Measured& m, int scope);

}  // namespace attn
