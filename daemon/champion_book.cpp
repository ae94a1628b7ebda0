#include "daemon/champion_book.hpp"

#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/champion.hpp"

namespace attn {

ChampionScope ChampionBook::scope_at(int i) {
  return i == 0 ? ChampionScope::overall : champion_scope_of(kAllFamilies[i - 1]);
}

double scope_score(const Measured& m, int scope) {
  if (scope == 0) return m.score_ms;
  const auto it = m.family_ms.find(kAllFamilies[scope - 1]);
  return it == m.family_ms.end() ? 0.0 : it->second;
}

void ChampionBook::load(ExperimentDb& db, const std::string& suite,
                        const std::function<std::optional<std::string>(const std::string&)>& kernel_of,
                        const std::function<std::string(const Contender&)>& rebuild) {
  std::map<std::int64_t, std::string> rebuilt;  // champion iter -> cubin compiled again (one compile per iter)
  for (int s = 0; s < kScopes; ++s) {
    holders_[s].reset();
    const auto champ = db.champion(suite, scope_at(s));
    if (!champ) continue;
    const auto it = db.iteration(champ->iteration_id);
    if (!it) continue;
    Contender c;
    c.iter = it->iter;
    c.template_name = it->template_name;
    c.config = config_from_json(it->params_json);
    c.kernel = kernel_of(it->template_name).value_or("");
    if (it->variant_id) {
      if (const auto v = db.variant(*it->variant_id); v && std::filesystem::exists(v->cubin_path))
        c.cubin_path = v->cubin_path;
    }
    if (c.cubin_path.empty() && !c.kernel.empty() && rebuild) {
      const auto done = rebuilt.find(c.iter);
      c.cubin_path = done != rebuilt.end() ? done->second : (rebuilt[c.iter] = rebuild(c));
    }
    c.measured.score_ms = it->geomean_ms.value_or(0);
    const std::optional<double> fam[] = {it->window_ms, it->global_ms, it->retrieval_ms};
    for (int f = 0; f < 3; ++f)
      if (fam[f]) c.measured.family_ms[kAllFamilies[f]] = *fam[f];
    for (const auto& cr : it->cases) c.measured.rel_spread = std::max(c.measured.rel_spread, cr.spread.value_or(0));
    holders_[s] = std::move(c);
  }
}

std::optional<ChallengeResult> ChampionBook::plain_discard(const Contender& challenger) const {
  std::vector<std::string> notes;
  for (int s = 0; s < kScopes; ++s) {
    const double first_b = scope_score(challenger.measured, s);
    if (first_b <= 0) continue;
    if (!holders_[s]) return std::nullopt;  // a first holder
    const Contender& inc = *holders_[s];
    const double first_a = scope_score(inc.measured, s);
    const bool retimable = !inc.cubin_path.empty() && !inc.kernel.empty();
    if (first_a <= 0 || !retimable) {
      if (first_a > 0 && first_b >= first_a) continue;
      return std::nullopt;
    }
    const ChampionDecision pre =
        prefilter_challenger({first_a, first_b, inc.measured.rel_spread, challenger.measured.rel_spread});
    if (pre.verdict == ChampionVerdict::retime) return std::nullopt;
    if (s == 0) notes.push_back(fmt::format("overall: {}", pre.reason));
  }
  ChallengeResult result;
  for (std::size_t i = 0; i < notes.size(); ++i) result.summary += (i ? "; " : "") + notes[i];
  return result;
}

ChallengeResult ChampionBook::challenge(const Contender& challenger, const RetimeFn& retime,
                                        const PromotionGate& gate) {
  ChallengeResult result;
  // Asks the gate; a refusal leaves a note and no promotion.
  auto gated = [&](int s, const Contender* incumbent, std::vector<std::string>& notes) {
    if (!gate) return true;
    const GateVerdict v = gate(s, challenger, incumbent);
    if (!v.note.empty()) notes.push_back(fmt::format("{}: {}", to_string(scope_at(s)), v.note));
    return v.allow;
  };
  // Re-timings of this challenge, by incumbent iteration (A1, A2) and of the challenger (B).
  std::map<std::int64_t, std::pair<std::optional<Measured>, std::optional<Measured>>> incumbent_runs;
  std::optional<std::optional<Measured>> challenger_run;
  std::vector<std::string> notes;

  for (int s = 0; s < kScopes; ++s) {
    const char* scope_name = to_string(scope_at(s));
    const double first_b = scope_score(challenger.measured, s);
    if (first_b <= 0) continue;
    if (!holders_[s]) {
      if (!gated(s, nullptr, notes)) continue;
      result.promotions.push_back({scope_at(s), first_b, R"({"reason":"first valid variant"})"});
      notes.push_back(fmt::format("{}: first holder", scope_name));
      holders_[s] = challenger;
      continue;
    }
    const Contender inc = *holders_[s];  // a copy: a promotion below replaces the holder
    const double first_a = scope_score(inc.measured, s);
    const bool retimable = !inc.cubin_path.empty() && !inc.kernel.empty();
    if (first_a <= 0 || !retimable) {  // an incumbent we cannot re-time loses to any valid challenger
      if (first_a > 0 && first_b >= first_a) continue;
      if (!gated(s, nullptr, notes)) continue;
      result.promotions.push_back({scope_at(s), first_b, R"({"reason":"incumbent cannot be re-timed"})"});
      notes.push_back(fmt::format("{}: incumbent iter {} not re-timable", scope_name, inc.iter));
      holders_[s] = challenger;
      continue;
    }
    const FirstLook first{first_a, first_b, inc.measured.rel_spread, challenger.measured.rel_spread};
    const ChampionDecision pre = prefilter_challenger(first);
    if (pre.verdict != ChampionVerdict::retime) {
      if (s == 0) notes.push_back(fmt::format("overall: {}", pre.reason));
      continue;
    }
    auto& runs = incumbent_runs[inc.iter];
    if (!runs.first) {  // A/B/A: incumbent, challenger, incumbent
      runs.first = retime(inc);
      if (!challenger_run) challenger_run = retime(challenger);
      runs.second = retime(inc);
      for (const auto* m : {&runs.first, &runs.second})
        if (*m) result.retime_ms += (*m)->wall_ms;
    } else if (!challenger_run) {
      challenger_run = retime(challenger);
    }
    if (!runs.first || !runs.second || !*challenger_run) {
      notes.push_back(fmt::format("{}: A/B/A re-timing failed, not promoted", scope_name));
      continue;
    }
    const AbaTiming aba{scope_score(*runs.first, s), scope_score(**challenger_run, s), scope_score(*runs.second, s)};
    const ChampionDecision d = decide_champion(first, aba);
    std::vector<std::string> gate_notes;
    const bool allowed = d.promote() && gated(s, &inc, gate_notes);
    if (allowed) {
      nlohmann::json j = {{"incumbent_iter", inc.iter}, {"a1_ms", aba.a1_ms}, {"b_ms", aba.b_ms},
                          {"a2_ms", aba.a2_ms}, {"lead_ms", d.lead_ms}, {"noise_ms", d.noise_ms}};
      result.promotions.push_back({scope_at(s), aba.b_ms, j.dump()});
      Contender promoted = challenger;
      promoted.measured = **challenger_run;  // judged on the A/B/A timing from now on
      promoted.measured.rel_spread = std::max(promoted.measured.rel_spread, challenger.measured.rel_spread);
      holders_[s] = std::move(promoted);
    }
    // The overall verdict in full; per family only the outcome (the numbers are in the DB's history).
    const std::string refused = d.promote() && !allowed ? " (not made: held-out check)" : "";
    if (s == 0)
      notes.push_back(fmt::format("overall vs iter {}: {}{}", inc.iter, d.reason, refused));
    else
      notes.push_back(fmt::format("{} vs iter {}: {}{}", scope_name, inc.iter, verdict_name(d.verdict), refused));
    notes.insert(notes.end(), gate_notes.begin(), gate_notes.end());
  }
  if (challenger_run && *challenger_run) result.retime_ms += (*challenger_run)->wall_ms;
  for (std::size_t i = 0; i < notes.size(); ++i) result.summary += (i ? "; " : "") + notes[i];
  return result;
}

}  // namespace attn
