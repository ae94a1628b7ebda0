// The one number of a champion (issue 48 item 7: `status` said 0.1854 ms and `query best` 0.1830 ms for one
// champion). The rule: a champion's score is the whole-suite score of its iteration as the search measured it,
// geomean_ms for the overall scope and the family's median (window_ms, global_ms, retrieval_ms) for a family
// scope. It is the number every listing shows for that iteration (`query top`, `query show`, iters.tsv), the one
// the daemon resumes its champions with (daemon/champion_book.cpp) and the held-out check compares with
// (holdout_checks.tuned_ms). champions.score_ms holds something else: the challenger's time (B) in the A/B/A
// re-timing that promoted it, a back-to-back comparison with the incumbent, shown as that promotion's evidence
// (`query best` column aba_b_ms, the report's promotions) and never as the champion's score.
#pragma once
#include <optional>

#include "db/records.hpp"

namespace attn {

/// The score of a champion of `scope` held by iteration `it` (the rule above); nullopt when the iteration has no
/// score for that scope.
std::optional<double> champion_score_ms(ChampionScope scope, const IterationRecord& it);

}  // namespace attn
