// The idea rule (see tuner/idea_rule.hpp and docs/ideas.md).
#include "tuner/idea_rule.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {
namespace {

const char* what(const IdeaContender& c) { return c.paired ? "paired" : "fastest"; }

void require_timing(const SuiteTiming& t, const std::string& what) {
  if (!std::isfinite(t.ms) || t.ms <= 0)
    throw std::invalid_argument(fmt::format("idea rule: {} must be a positive finite score, got {} ms", what, t.ms));
  if (!std::isfinite(t.rel_spread) || t.rel_spread < 0)
    throw std::invalid_argument(fmt::format("idea rule: {} must have a finite spread >= 0, got {}", what, t.rel_spread));
}

void require_held_out(const HeldOutRun& r, const char* who) {
  if (r.ms && (!std::isfinite(*r.ms) || *r.ms <= 0))
    throw std::invalid_argument(fmt::format("idea rule: the {}'s held-out score must be a positive finite number, got {}",
                                            who, *r.ms));
}

/// One contender against the parent's two looks.
IdeaLook look_at(const IdeaAba& aba, const IdeaContender& c, const ChampionRule& rule) {
  const FirstLook first{aba.parent_tuned.ms, c.tuned.ms,
                        std::max({aba.parent_tuned.rel_spread, aba.a1.rel_spread, aba.a2.rel_spread}),
                        std::max(c.tuned.rel_spread, c.b.rel_spread)};
  IdeaLook l;
  l.d = decide_aba(first, {aba.a1.ms, c.b.ms, aba.a2.ms}, rule);
  l.win = l.d.promote();
  l.slower = c.b.ms > aba.a1.ms && c.b.ms > aba.a2.ms && -l.d.lead_ms > l.d.noise_ms;
  l.delta_pct = (c.b.ms / l.d.incumbent_ms - 1) * 100;
  return l;
}

void apply_holdout(IdeaDecision& out, const std::optional<IdeaHoldout>& holdout);

}  // namespace

IdeaDecision decide_idea(const IdeaAba& aba, const std::optional<IdeaHoldout>& holdout, const ChampionRule& rule) {
  if (aba.contenders.empty()) throw std::invalid_argument("idea rule: no contender to judge");
  require_timing(aba.parent_tuned, "the parent's tuned look");
  require_timing(aba.a1, "A1");
  require_timing(aba.a2, "A2");
  for (const auto& c : aba.contenders) {
    require_timing(c.tuned, fmt::format("the tuned look of iter {}", c.iter));
    require_timing(c.b, fmt::format("the re-timing B of iter {}", c.iter));
  }
  if (holdout) {
    require_held_out(holdout->parent, "parent");
    require_held_out(holdout->idea, "idea");
  }
  IdeaDecision out;
  for (const auto& c : aba.contenders) out.looks.push_back(look_at(aba, c, rule));

  // The judged look: the faster winner; else the paired one; else the first.
  std::optional<std::size_t> j;
  for (std::size_t i = 0; i < out.looks.size(); ++i)
    if (out.looks[i].win && (!j || aba.contenders[i].b.ms < aba.contenders[*j].b.ms)) j = i;
  if (!j) {
    const auto p = std::find_if(aba.contenders.begin(), aba.contenders.end(), [](const auto& c) { return c.paired; });
    j = p == aba.contenders.end() ? 0 : std::size_t(p - aba.contenders.begin());
  }
  out.judged = *j;
  const IdeaLook& l = out.looks[out.judged];
  const IdeaContender& c = aba.contenders[out.judged];
  out.parent_ms = l.d.incumbent_ms;
  out.idea_ms = l.d.challenger_ms;
  out.delta_pct = l.delta_pct;
  out.noise_pct = l.d.noise_ms / l.d.incumbent_ms * 100;

  const bool all_slower = std::all_of(out.looks.begin(), out.looks.end(), [](const IdeaLook& x) { return x.slower; });
  if (l.win) {
    out.verdict = IdeaVerdict::win;
    out.reason = fmt::format("{:.4f} ms vs the parent's {:.4f} (A/B/A {:.4f}/{:.4f}/{:.4f}): {:+.2f} %, noise {:.2f} %",
                             out.idea_ms, out.parent_ms, aba.a1.ms, out.idea_ms, aba.a2.ms, out.delta_pct, out.noise_pct);
  } else {
    out.verdict = all_slower ? IdeaVerdict::slower : IdeaVerdict::no_gain;
    out.reason = fmt::format("{:.4f} ms vs the parent's {:.4f}: {:+.2f} %, {} the noise {:.2f} %", out.idea_ms,
                             out.parent_ms, out.delta_pct, all_slower ? "beyond" : "within", out.noise_pct);
  }
  const bool has_paired = std::any_of(aba.contenders.begin(), aba.contenders.end(), [](const auto& x) { return x.paired; });
  out.reason += c.paired ? fmt::format(" (paired: the parent's config with the idea on, iter {})", c.iter)
                         : fmt::format(" (its fastest config with the idea on, iter {}{})", c.iter,
                                       has_paired ? "" : "; no paired config: the parent's best with the idea on "
                                                         "has no valid result");
  for (std::size_t i = 0; i < out.looks.size(); ++i)
    if (i != out.judged)
      out.reason += fmt::format("; {} config (iter {}) {:.4f} ms ({:+.2f} %)", what(aba.contenders[i]),
                                aba.contenders[i].iter, aba.contenders[i].b.ms, out.looks[i].delta_pct);

  apply_holdout(out, holdout);
  return out;
}

bool needs_second_look(const IdeaDecision& first) {
  return first.verdict == IdeaVerdict::win || first.verdict == IdeaVerdict::slower;
}

IdeaDecision decide_idea(const std::vector<IdeaAba>& rounds, const std::optional<IdeaHoldout>& holdout,
                         const ChampionRule& rule) {
  if (rounds.empty()) throw std::invalid_argument("idea rule: no A/B/A round to judge");
  IdeaDecision out = decide_idea(rounds[0], std::nullopt, rule);
  for (std::size_t r = 1; r < rounds.size(); ++r) {
    const IdeaDecision again = decide_idea(rounds[r], std::nullopt, rule);
    out.reason += fmt::format("; A/B/A {}: {} {:+.2f} %, noise {:.2f} %", r + 1, to_string(again.verdict),
                              again.delta_pct, again.noise_pct);
    if (again.verdict != out.verdict && out.verdict != IdeaVerdict::no_gain) {
      out.reason = fmt::format("not confirmed: {} ({})", to_string(out.verdict), out.reason);
      out.verdict = IdeaVerdict::no_gain;
    }
  }
  apply_holdout(out, holdout);
  return out;
}

namespace {

/// The held-out seed's look applied to a verdict (decide_idea's rule, tuner/idea_rule.hpp).
void apply_holdout(IdeaDecision& out, const std::optional<IdeaHoldout>& holdout) {
  if (!holdout) return;
  require_held_out(holdout->parent, "parent");
  require_held_out(holdout->idea, "idea");
  const HeldOutRun &hp = holdout->parent, &hi = holdout->idea;
  if (!hi.ms) {
    out.verdict = IdeaVerdict::broken;
    out.broken_kind = hi.failure == FailureKind::none ? IdeaBrokenKind::crash : idea_broken_kind(hi.failure);
    out.reason = "on the held-out seed: " + hi.why;
  } else if (hp.ms) {
    out.holdout_delta_pct = (*hi.ms / *hp.ms - 1) * 100;
    out.reason += fmt::format("; held-out {:.4f} vs {:.4f} ms ({:+.2f} %)", *hi.ms, *hp.ms, *out.holdout_delta_pct);
    if (out.verdict == IdeaVerdict::win && *out.holdout_delta_pct > out.noise_pct) {
      out.verdict = IdeaVerdict::no_gain;
      out.reason += ": faster on the tuning seed only";
    }
  }
}

}  // namespace

}  // namespace attn
