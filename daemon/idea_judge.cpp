// An idea's judging (daemon/idea_bench.hpp, docs/ideas.md "Judge"): its contenders, A/B/A against the parent's best on
// one GPU, the held-out seed, the verdict (tuner/idea_rule.hpp decide_idea) and its numbers.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "daemon/idea_bench.hpp"
#include "tuner/strategy.hpp"

namespace attn::tuning {
namespace {

/// Each A/B/A round as timed: [{"a1_ms", "b_ms": [a contender's B each], "a2_ms"}].
nlohmann::json rounds_json(const std::vector<IdeaAba>& rounds) {
  auto out = nlohmann::json::array();
  for (const auto& r : rounds) {
    auto b = nlohmann::json::array();
    for (const auto& c : r.contenders) b.push_back(c.b.ms);
    out.push_back({{"a1_ms", r.a1.ms}, {"b_ms", b}, {"a2_ms", r.a2.ms}});
  }
  return out;
}

}  // namespace

Contender IdeaBench::contender(const std::string& tname, const Champion& c) {
  Contender k{c.iter, tname, c.config, "", env_.search.kernel(tname).value_or(""), {}};
  k.measured.score_ms = c.score_ms;
  if (const auto row = env_.db.with([&](ExperimentDb& db) { return db.iteration(c.iter); }))
    for (const auto& cr : row->cases) k.measured.rel_spread = std::max(k.measured.rel_spread, cr.spread.value_or(0.0));
  const CompiledVariant cv = env_.compiler.compile(env_.search.compile_request(tname, c.config));
  if (cv.ok) k.cubin_path = cv.cubin_path;
  return k;
}

void IdeaBench::judge(GpuSlot& slot, std::unique_lock<std::mutex>& lock, std::vector<std::string>& notes) {
  ActiveIdea& a = *session_.current();
  const std::string t = a.rec.template_name;
  env_.search.prefer("");
  a.rec.status = IdeaStatus::judging;
  env_.db.with([&](ExperimentDb& db) { db.update_idea(a.rec); });
  const IdeaPickOutcome picked = env_.search.read([&](const MultiSearch& s) {
    return pick_idea_contenders(s.state(t), s.state(a.rec.parent_template), a.new_values);
  });
  a.rec.configs = std::int64_t(picked.configs);
  if (!picked.pick) {
    env_.scheduler.retire(t);
    return end(picked.verdict, picked.kind, picked.reason, notes);
  }
  const IdeaPick& pick = *picked.pick;
  a.rec.best_iteration_id = pick.best.iter;
  a.rec.best_ms = pick.best.score_ms;
  const std::string parent_template = a.rec.parent_template, file = a.rec.file;
  const std::int64_t id = a.rec.id;

  // The GPU work, with the bench's lock released: the idea is judging, which no other thread's poll touches.
  lock.unlock();
  const Contender parent = contender(parent_template, pick.parent_best);
  // The contenders in the order timed: the paired config, then the fastest (one when they are the same).
  std::vector<Contender> contenders;
  std::vector<bool> paired;
  if (pick.paired && pick.paired->iter != pick.best.iter) {
    contenders.push_back(contender(t, *pick.paired));
    paired.push_back(true);
  }
  contenders.push_back(contender(t, pick.best));
  paired.push_back(pick.paired && pick.paired->iter == pick.best.iter);
  env_.status(fmt::format("idea {}: A/B/A against {}", file, parent_template));
  // The A/B/A, and a second one when the first says win or slower (needs_second_look); none when a re-timing failed.
  std::vector<IdeaAba> rounds;
  std::optional<IdeaHoldout> holdout;
  IdeaDecision d;
  const auto t0 = Clock::now();
  {
    Challenge seat = env_.seat.take(slot);  // one challenge at a time, on this GPU
    slot.set_state(fmt::format("judging idea {}", id));
    if (auto aba = retime_idea(seat, parent, contenders, paired)) {
      rounds.push_back(std::move(*aba));
      if (needs_second_look(decide_idea(rounds, std::nullopt))) {
        if (auto again = retime_idea(seat, parent, contenders, paired)) rounds.push_back(std::move(*again));
        else rounds.clear();
      }
    }
    if (!rounds.empty() && env_.holdout) {
      const auto [hp, hi] = seat.holdout_pair(parent, contenders[decide_idea(rounds, std::nullopt).judged]);
      const auto run = [](const HoldoutResult& h) {
        return HeldOutRun{h.ok ? std::optional<double>(h.measured.score_ms) : std::nullopt, h.kind, h.failure};
      };
      holdout = IdeaHoldout{run(hp), run(hi)};
    }
    if (!rounds.empty()) d = decide_idea(rounds, holdout);
  }
  const double ms = seconds_since(t0) * 1000;
  lock.lock();

  session_.add_judging_ms(ms);
  if (rounds.empty()) {
    env_.scheduler.retire(t);
    return end(IdeaVerdict::broken, IdeaBrokenKind::crash, "the A/B/A re-timing against the parent failed (see the log)",
               notes);
  }
  record_idea_numbers(a.rec, d, rounds, holdout, parent, contenders, slot.gpu());
  if (d.verdict != IdeaVerdict::win) env_.scheduler.retire(t);
  else env_.search.set_strategy(t, make_strategy(o_.strategy, o_.seed));  // a win is tuned on like any template
  end(d.verdict, d.broken_kind, d.reason + pick.inactive_note, notes);
}

std::optional<IdeaAba> retime_idea(Challenge& seat, const Contender& parent, const std::vector<Contender>& contenders,
                                   const std::vector<bool>& paired) {
  if (parent.cubin_path.empty()) return std::nullopt;
  for (const auto& c : contenders)
    if (c.cubin_path.empty()) return std::nullopt;
  const auto timing = [](const Measured& m) { return SuiteTiming{m.score_ms, m.rel_spread}; };
  IdeaAba aba;
  aba.parent_tuned = timing(parent.measured);
  const auto a1 = seat.retime(parent);
  if (!a1) return std::nullopt;
  aba.a1 = timing(*a1);
  for (std::size_t i = 0; i < contenders.size(); ++i) {
    const auto b = seat.retime(contenders[i]);
    if (!b) return std::nullopt;
    aba.contenders.push_back({paired[i], contenders[i].iter, timing(contenders[i].measured), timing(*b)});
  }
  const auto a2 = seat.retime(parent);
  if (!a2) return std::nullopt;
  aba.a2 = timing(*a2);
  return aba;
}

void record_idea_numbers(IdeaRecord& rec, const IdeaDecision& d, const std::vector<IdeaAba>& rounds,
                         const std::optional<IdeaHoldout>& holdout, const Contender& parent,
                         const std::vector<Contender>& contenders, const GpuSpec& gpu) {
  const IdeaAba& aba = rounds.front();  // the verdict's numbers are the first round's
  if (holdout) {
    rec.holdout_parent_ms = holdout->parent.ms;
    rec.holdout_idea_ms = holdout->idea.ms;
  }
  rec.parent_ms = d.parent_ms;
  rec.idea_ms = d.idea_ms;
  rec.delta_pct = d.delta_pct;
  rec.noise_pct = d.noise_pct;
  auto looks = nlohmann::json::array();
  for (std::size_t i = 0; i < d.looks.size(); ++i)
    looks.push_back({{"what", aba.contenders[i].paired ? "paired" : "fastest"}, {"iter", contenders[i].iter},
                     {"ms", aba.contenders[i].b.ms}, {"delta_pct", d.looks[i].delta_pct}});
  rec.aba_json = nlohmann::json{{"a1_ms", aba.a1.ms}, {"b_ms", d.idea_ms}, {"a2_ms", aba.a2.ms},
                                {"noise_ms", d.looks[d.judged].d.noise_ms}, {"parent_iter", parent.iter},
                                {"idea_iter", contenders[d.judged].iter}, {"judged", looks[d.judged]["what"]},
                                {"looks", looks}, {"gpu_index", gpu.index}, {"gpu_uuid", gpu.uuid},
                                {"rounds", rounds_json(rounds)}}
                     .dump();
}

}  // namespace attn::tuning
