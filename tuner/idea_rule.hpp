// The idea rule (docs/ideas.md, "Judge" and "Verdict"): an idea's verdict from the A/B/A re-timing of its
// contenders against its parent, then from the held-out seed. The noise and the win are the champion rule's
// (tuner/champion.hpp, decide_aba); `slower` is the win's mirror; the held-out demotion is the idea's own.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/records.hpp"  // IdeaVerdict, IdeaBrokenKind, FailureKind
#include "tuner/champion.hpp"

namespace attn {

/// One whole-suite timing: its score in ms and the worst relative spread of its cases (IQR / median).
struct SuiteTiming {
  double ms = 0;
  double rel_spread = 0;
};

/// One contender with the idea on, timed between the parent's two looks.
struct IdeaContender {
  /// The paired config (the parent's best config with the idea's values on, every old axis as it is: the
  /// idea's code alone); else the idea's fastest config with the idea on.
  bool paired = false;
  std::int64_t iter = -1;  ///< the iteration of its config
  SuiteTiming tuned;       ///< its look in the tuning
  SuiteTiming b;           ///< its re-timing between A1 and A2
};

/// The A/B/A of an idea on one GPU: the parent (A1), each contender in turn, the parent again (A2).
struct IdeaAba {
  SuiteTiming parent_tuned;  ///< the parent's best config's look in the tuning
  SuiteTiming a1, a2;
  std::vector<IdeaContender> contenders;  ///< in the order timed (paired, then fastest); at most one paired
};

/// One run on the held-out seed: its score, or why it failed (failure none: it failed without a kind, e.g. its
/// cases could not be built).
struct HeldOutRun {
  std::optional<double> ms;  ///< the suite score (none: it failed)
  FailureKind failure = FailureKind::none;
  std::string why;           ///< the failure in words
};

/// The parent's best config and the judged contender on the held-out seed, back to back on the A/B/A's GPU.
struct IdeaHoldout {
  HeldOutRun parent, idea;
};

/// One contender's look: the champion rule's numbers and verdict against mean(A1, A2), and what they mean here.
struct IdeaLook {
  ChampionDecision d;  ///< decide_aba(parent, contender): incumbent_ms = mean(A1, A2), challenger_ms = B, noise
  bool win = false;     ///< d.promote(): B below both A's by more than the noise
  bool slower = false;  ///< B above both A's by more than the noise
  double delta_pct = 0; ///< (B / mean(A1, A2) - 1) * 100
};

/// The verdict with its numbers (those of the judged look) and the reason in words.
struct IdeaDecision {
  IdeaVerdict verdict = IdeaVerdict::no_gain;
  IdeaBrokenKind broken_kind = IdeaBrokenKind::none;  ///< for broken: the held-out run's kind, else crash
  std::vector<IdeaLook> looks;  ///< one per contender, in IdeaAba's order
  std::size_t judged = 0;       ///< the judged contender's index
  double parent_ms = 0, idea_ms = 0;  ///< the judged look's mean(A1, A2) and B
  double delta_pct = 0, noise_pct = 0;  ///< (idea_ms / parent_ms - 1) * 100; its noise / parent_ms * 100
  std::optional<double> holdout_delta_pct;  ///< (idea / parent - 1) * 100 on the held-out seed, when both ran
  std::string reason;
};

/// The idea rule. Each contender's look is decide_aba(parent, contender) with the spreads of the parent's looks
/// (tuned, A1, A2) and of the contender's (tuned, B): a win is its promote, slower its mirror (B above both A's
/// and B - mean(A1, A2) above the noise). The judged look is the faster winner if one wins, else the paired one
/// (else the only one). Verdict: win when the judged look wins (a win on either contender is a faster
/// kernel), slower when every look is slower, else no_gain.
/// Then `holdout` (none: no held-out seed in this run): the idea failing there is broken with that run's kind
/// (crash when it failed without one), whatever the A/B/A said; a win that is slower there than the parent by more
/// than the judged look's relative noise is no_gain ("faster on the tuning seed only"); a parent that fails there
/// changes nothing. This held-out demotion differs on purpose from the champion's held-out gate
/// (daemon/holdout.hpp, HoldoutChecker::gate, strict: the challenger must be below the incumbent): a champion is
/// the fastest of many configs, so its lead leans on the tuning seed's inputs and a tie there keeps the incumbent
/// at no cost; an idea is one code change, already ahead of its parent by more than the A/B/A's noise, and its
/// held-out look is one timing each (no A/B/A), so a strict test would demote a true win that is as fast there
/// about as often as not. Only a loss beyond the noise demotes it.
/// Throws std::invalid_argument on no contenders, a score <= 0, a negative spread or a non-finite number (as
/// decide_aba).
IdeaDecision decide_idea(const IdeaAba& aba, const std::optional<IdeaHoldout>& holdout, const ChampionRule& rule = {});

/// Whether the verdict of a first A/B/A (decide_idea without the held-out seed) stands only once a second A/B/A of
/// the same contenders, back to back on the same GPU, says the same: a win or slower. A single A/B/A calls about one
/// no-op in 15 a win (2026-11-29, H200: 1 of 14 probes, -1.10 % against a noise of 0.96 %; docs/results.md), since the
/// noise is estimated from the spreads of single timings and the faster of two contenders is judged.
bool needs_second_look(const IdeaDecision& first);

/// The idea rule over the A/B/A rounds of one idea (`rounds`: the first, then the second when needs_second_look): each
/// round decided as decide_idea without the held-out seed; the verdict is win (or slower) only when every round says
/// so, else no_gain ("not confirmed"); the numbers are the first round's, each later round's in the reason. Then
/// `holdout` as in decide_idea, run on the first round's judged contender. Throws std::invalid_argument on no rounds,
/// else as decide_idea.
IdeaDecision decide_idea(const std::vector<IdeaAba>& rounds, const std::optional<IdeaHoldout>& holdout,
                         const ChampionRule& rule = {});

}  // namespace attn
