// Held-out checks of challengers, incumbents and champions.
#include "daemon/holdout.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace attn {

HoldoutChecker::HoldoutChecker(tuning::DbWriter& db, std::string suite, std::int64_t root_seed)
    : db_(db), suite_(std::move(suite)), root_seed_(root_seed) {}

void HoldoutChecker::begin_challenge(HoldoutEvalFn eval) {
  eval_ = std::move(eval);
  measured_.clear();
  recorded_.clear();
}

const HoldoutResult& HoldoutChecker::measure(const Contender& c) {
  auto it = measured_.find(c.iter);
  if (it == measured_.end()) it = measured_.emplace(c.iter, eval_(c)).first;
  return it->second;
}

void HoldoutChecker::record(const Contender& c, HoldoutRole role, const HoldoutResult& r, const std::string& verdict) {
  if (!recorded_.insert(c.iter).second || run_id_ == 0) return;
  HoldoutCheckRecord h;
  h.run_id = run_id_;
  h.iteration_id = c.iter;
  h.suite = suite_;
  h.root_seed = root_seed_;
  h.role = role;
  h.ok = r.ok;
  if (r.ok) {
    h.score_ms = r.measured.score_ms;
    std::optional<double>* fam[] = {&h.window_ms, &h.global_ms, &h.retrieval_ms};
    for (int f = 0; f < 3; ++f)
      if (const auto x = r.measured.family_ms.find(kAllFamilies[f]); x != r.measured.family_ms.end()) *fam[f] = x->second;
  }
  if (c.measured.score_ms > 0) h.tuned_ms = c.measured.score_ms;
  h.verdict = verdict;
  h.cases_json = nlohmann::json(r.cases).dump();
  db_.with([&](ExperimentDb& db) { db.add_holdout_check(h); });
}

GateVerdict HoldoutChecker::gate(int scope, const Contender& challenger, const Contender* incumbent) {
  const bool can_time_incumbent = incumbent && !incumbent->cubin_path.empty() && !incumbent->kernel.empty();
  // The incumbent first, then the challenger: back to back on the held-out cases.
  const HoldoutResult* inc = can_time_incumbent ? &measure(*incumbent) : nullptr;
  const HoldoutResult& ch = measure(challenger);
  const std::string seed = fmt::format("held-out root seed {}", root_seed_);
  GateVerdict v;
  if (!ch.ok) {
    v = {false, fmt::format("fails on {}: {}", seed, ch.failure)};
  } else if (!inc || !inc->ok) {
    v = {true, fmt::format("{:.4f} ms on {}{}", scope_score(ch.measured, scope), seed,
                           inc ? fmt::format(" (incumbent iter {} fails there: {})", incumbent->iter, inc->failure) : "")};
  } else {
    const double b = scope_score(ch.measured, scope), a = scope_score(inc->measured, scope);
    if (b < a)
      v = {true, fmt::format("holds on {}: {:.4f} ms vs incumbent iter {} {:.4f} ms", seed, b, incumbent->iter, a)};
    else
      v = {false, fmt::format("does not hold on {}: {:.4f} ms vs incumbent iter {} {:.4f} ms", seed, b, incumbent->iter, a)};
  }
  if (inc) record(*incumbent, HoldoutRole::incumbent, *inc, fmt::format("incumbent of iter {}'s challenge", challenger.iter));
  record(challenger, HoldoutRole::challenger, ch, fmt::format("{}: {}", v.allow ? "allowed" : "refused", v.note));
  return v;
}

std::vector<std::string> HoldoutChecker::confirm_champions(const ChampionBook& book, HoldoutEvalFn eval) {
  std::vector<std::string> notes;
  begin_challenge(std::move(eval));
  for (int s = 0; s < ChampionBook::kScopes; ++s) {
    const auto& holder = book.at(s);
    if (!holder || recorded_.count(holder->iter)) continue;
    bool done = false;
    for (const auto& h : db_.with([&](ExperimentDb& db) { return db.holdout_checks(holder->iter); }))
      done = done || h.root_seed == root_seed_;
    if (done) continue;
    if (holder->cubin_path.empty() || holder->kernel.empty()) {
      notes.push_back(fmt::format("champion iter {}: no cubin to time on the held-out seed", holder->iter));
      recorded_.insert(holder->iter);
      continue;
    }
    const HoldoutResult& r = measure(*holder);
    std::string verdict;
    if (!r.ok)
      verdict = fmt::format("FAILS on held-out root seed {}: {}", root_seed_, r.failure);
    else if (holder->measured.score_ms > 0)
      verdict = fmt::format("held-out {:.4f} ms vs tuned {:.4f} ms ({:+.1f}%)", r.measured.score_ms,
                            holder->measured.score_ms, (r.measured.score_ms / holder->measured.score_ms - 1) * 100);
    else
      verdict = fmt::format("held-out {:.4f} ms", r.measured.score_ms);
    record(*holder, HoldoutRole::champion, r, verdict);
    notes.push_back(fmt::format("champion iter {} ({}): {}", holder->iter, to_string(ChampionBook::scope_at(s)), verdict));
  }
  return notes;
}

}  // namespace attn
