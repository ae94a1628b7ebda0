// The run's champions (daemon/champions.hpp).
#include "daemon/champions.hpp"

#include "daemon/worker_answers.hpp"

namespace attn::tuning {

Champions::Champions(WatchdogOptions watchdog) : watchdog_(watchdog) {}

void Champions::load(DbWriter& db, const std::string& suite,
                     const std::function<std::optional<std::string>(const std::string&)>& kernel_of,
                     const std::function<std::string(const Contender&)>& rebuild) {
  ChampionBook book;
  db.with([&](ExperimentDb& d) { book.load(d, suite, kernel_of, rebuild); });
  std::lock_guard lock(mu_);
  book_ = std::move(book);
}

std::optional<Contender> Champions::overall() const {
  std::lock_guard lock(mu_);
  return book_.overall();
}

std::optional<ChallengeResult> Champions::plain_discard(const Contender& challenger) const {
  std::lock_guard lock(mu_);
  return book_.plain_discard(challenger);
}

ChallengeResult Champions::challenge(Challenge& seat, const Contender& challenger, HoldoutChecker* holdout) {
  ChampionBook book;  // only the seat's holder changes the book: its copy goes back when the challenge is decided
  {
    std::lock_guard lock(mu_);
    book = book_;
  }
  PromotionGate gate;
  if (holdout) {
    holdout->begin_challenge([&seat](const Contender& c) { return seat.holdout(c); });
    gate = [holdout](int scope, const Contender& ch, const Contender* inc) { return holdout->gate(scope, ch, inc); };
  }
  ChallengeResult r = book.challenge(challenger, [&seat](const Contender& c) { return seat.retime(c); }, gate);
  std::lock_guard lock(mu_);
  book_ = std::move(book);
  return r;
}

std::vector<std::string> Champions::confirm(Challenge& seat, HoldoutChecker& holdout) {
  ChampionBook book;
  {
    std::lock_guard lock(mu_);
    book = book_;
  }
  return holdout.confirm_champions(book, [&seat](const Contender& c) { return seat.holdout(c); });
}

void Champions::evaluated(const Contender& c, double wall_ms) {
  std::lock_guard lock(mu_);
  if (const auto& inc = book_.overall(); inc && inc->iter == c.iter) champion_eval_ms_ = wall_ms;
}

void Champions::promoted(double wall_ms) {
  std::lock_guard lock(mu_);
  champion_eval_ms_ = wall_ms;
}

milliseconds Champions::deadline() const {
  std::lock_guard lock(mu_);
  return watchdog_deadline(watchdog_.factor, watchdog_.min_s, watchdog_.cap_s, champion_eval_ms_);
}

}  // namespace attn::tuning
