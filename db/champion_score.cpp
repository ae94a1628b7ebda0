#include "db/champion_score.hpp"

namespace attn {

std::optional<double> champion_score_ms(ChampionScope scope, const IterationRecord& it) {
  switch (scope) {
    case ChampionScope::overall: return it.geomean_ms;
    case ChampionScope::sliding_window: return it.window_ms;
    case ChampionScope::sliding_window_global: return it.global_ms;
    case ChampionScope::sliding_window_retrieval: return it.retrieval_ms;
  }
  return std::nullopt;
}

}  // namespace attn
