// The run's champions (daemon/champion_book.hpp: overall and per family, challenged by the champion rule), shared by
// every GPU: read by any thread, changed by the holder of the challenge seat alone; and the watchdog's deadline, which
// follows the overall champion's evaluation time.
#pragma once
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/challenge.hpp"
#include "daemon/champion_book.hpp"
#include "daemon/db_writer.hpp"
#include "daemon/holdout.hpp"

namespace attn::tuning {

/// The watchdog's options (RunOptions::watchdog_factor, watchdog_min_s, watchdog_cap_s).
struct WatchdogOptions {
  double factor = 10, min_s = 20, cap_s = 180;
};

/// Thread-safe: one lock, held for no I/O (a challenge works on a copy of the book and puts it back).
class Champions {
 public:
  explicit Champions(WatchdogOptions watchdog);
  /// The champions of `suite` from the DB (ChampionBook::load: `kernel_of`, `rebuild`).
  void load(DbWriter& db, const std::string& suite,
            const std::function<std::optional<std::string>(const std::string&)>& kernel_of,
            const std::function<std::string(const Contender&)>& rebuild);
  std::optional<Contender> overall() const;
  /// ChampionBook::plain_discard: the challenge's outcome when it needs no GPU and no seat.
  std::optional<ChallengeResult> plain_discard(const Contender& challenger) const;
  /// `challenger` challenges every scope (ChampionBook::challenge) with its A/B/A re-timings and, with `holdout`, its
  /// held-out checks on the seat's GPU; the promotions are made in the book (the DB rows are the caller's).
  ChallengeResult challenge(Challenge& seat, const Contender& challenger, HoldoutChecker* holdout);
  /// Every champion without a held-out check at this seed is checked on the seat's GPU (the run's end: export reports
  /// a held-out score); a note each.
  std::vector<std::string> confirm(Challenge& seat, HoldoutChecker& holdout);
  /// An evaluation of `c` took `wall_ms`: when `c` is the overall champion, the watchdog's measure.
  void evaluated(const Contender& c, double wall_ms);
  /// A new overall champion whose evaluation took `wall_ms`.
  void promoted(double wall_ms);
  /// The watchdog's deadline for one evaluation now (watchdog_deadline).
  milliseconds deadline() const;

 private:
  const WatchdogOptions watchdog_;
  mutable std::mutex mu_;
  ChampionBook book_;
  double champion_eval_ms_ = 0;  // the overall champion's last evaluation wall time
};

}  // namespace attn::tuning
