// Replay of a strategy against a finished DB's answers: the engine, its summary, text and JSON.
#include "tuner/replay.hpp"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tuner/multi_search.hpp"

namespace attn {
namespace {

std::optional<Quartiles> quartiles(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    const double pos = q * double(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
  };
  return Quartiles{at(0.25), at(0.5), at(0.75)};
}

/// The DB's answers of each replayed template by completed config (TemplateSpace::complete: a config
/// recorded before a parameter was added gets its default). A config recorded with the default spelled
/// out wins over one that lacked the key.
using Lookup = std::map<std::string, std::map<Config, const ReplayEntry*>>;

Lookup completed_lookup(const ReplayTable& t, const std::vector<TemplateSpace>& spaces) {
  Lookup out;
  for (const auto& s : spaces) {
    auto& m = out[s.name()];
    const auto& configs = t.templates.at(s.name());
    for (const bool complete_first : {true, false})
      for (const auto& [c, e] : configs) {
        Config full = s.complete(c);
        if ((full == c) == complete_first) m.emplace(std::move(full), &e);
      }
  }
  return out;
}

const ReplayEntry* find_entry(const Lookup& l, const std::string& tmpl, const Config& c) {
  const auto ti = l.find(tmpl);
  if (ti == l.end()) return nullptr;
  const auto ci = ti->second.find(c);
  return ci == ti->second.end() ? nullptr : ci->second;
}

/// `s` with every parameter that no config of its template in `t` names pinned to its default; their
/// "template PARAM" appended to `pinned`.
TemplateSpace as_recorded(TemplateSpace s, const ReplayTable& t, std::vector<std::string>& pinned) {
  const auto& configs = t.templates.at(s.name());
  std::vector<std::string> names;
  for (const auto& p : s.parameters())
    if (std::none_of(configs.begin(), configs.end(), [&](const auto& ce) { return ce.first.count(p.name) != 0; }))
      names.push_back(p.name);
  for (const auto& n : names) {
    s.pin_to_default(n);
    pinned.push_back(s.name() + " " + n);
  }
  return s;
}

}  // namespace

std::size_t heap_in_use() {
  const struct mallinfo2 m = ::mallinfo2();
  return m.uordblks + m.hblkhd;
}

std::optional<double> ReplayTable::best_ms(const std::vector<std::string>& only) const {
  std::optional<double> best;
  for (const auto& [name, configs] : templates)
    if (only.empty() || std::find(only.begin(), only.end(), name) != only.end())
      for (const auto& [c, e] : configs)
        if (e.full_ms && !e.failed && (!best || *e.full_ms < *best)) best = e.full_ms;
  return best;
}

std::optional<double> ReplayTable::screen_of(const ReplayEntry& e) const {
  if (e.screen_ms) return e.screen_ms;
  if (screen_case_ids.empty()) return std::nullopt;
  double log_sum = 0;
  for (const auto& id : screen_case_ids) {
    const auto it = e.case_ms.find(id);
    if (it == e.case_ms.end() || !(it->second > 0)) return std::nullopt;
    log_sum += std::log(it->second);
  }
  return std::exp(log_sum / double(screen_case_ids.size()));
}

double ReplayTable::estimated_screen_cost(int screen_samples) const {
  double share_sum = 0;
  std::size_t n = 0;
  for (const auto& [name, configs] : templates)
    for (const auto& [c, e] : configs) {
      if (!e.full_ms || e.case_ms.empty()) continue;
      double all = 0, screen = 0;
      for (const auto& [id, ms] : e.case_ms) {
        all += ms;
        if (std::find(screen_case_ids.begin(), screen_case_ids.end(), id) != screen_case_ids.end()) screen += ms;
      }
      if (all <= 0 || screen <= 0) continue;
      share_sum += screen / all;
      ++n;
    }
  if (n == 0) return 1.0;
  const double samples = full_samples > 0 ? std::min(1.0, screen_samples / full_samples) : 1.0;
  return share_sum / double(n) * samples;
}

ReplaySummary replay(const ReplayTable& table, const std::vector<TemplateSpace>& current, const ReplayOptions& o) {
  std::vector<std::string> names;
  for (const auto& s : current) names.push_back(s.name());
  const auto best = table.best_ms(names);
  if (!best)
    throw std::invalid_argument(fmt::format("replay: {} has no whole-suite score for suite {} in the replayed templates",
                                            table.source, table.suite));
  for (const auto& s : current)
    if (!table.templates.count(s.name()))
      throw std::invalid_argument(fmt::format("replay: template {} has no iterations in {} (suite {})", s.name(),
                                              table.source, table.suite));
  const bool ladder = o.fidelity == FidelityMode::ladder;
  ReplaySummary sum;
  // The spaces as the DB was recorded in them, and its answers by completed config.
  std::vector<TemplateSpace> spaces;
  for (const auto& s : current) spaces.push_back(as_recorded(s, table, sum.pinned));
  const Lookup lookup = completed_lookup(table, spaces);
  sum.options = o;
  sum.best_ms = *best;
  sum.screen_cost = ladder ? o.screen_cost.value_or(table.estimated_screen_cost(o.screen_samples)) : 1.0;
  // Counted, not enumerated: the research DB's 70 templates hold 45 million valid configs, whose enumeration as
  // Config maps took 5 GB and most of a replay's time (issue 48 item 3).
  for (const auto& s : spaces) {
    sum.space += s.count_valid();
    for (const auto& [c, e] : lookup.at(s.name()))
      if (!s.check(c)) ++sum.answered;  // a DB config that is a valid config of the space (as recorded)
  }
  const std::size_t k = o.thresholds.size();
  for (std::size_t seed = 1; seed <= o.seeds; ++seed) {
    MultiSearch search;
    for (const auto& s : spaces) search.add(s, make_strategy(o.strategy, seed));
    if (o.resources_ahead)
      for (const auto& s : spaces)
        for (const auto& [c, e] : lookup.at(s.name()))
          if (e->resources) search.state(s.name()).set_resources(c, *e->resources);
    ReplayRun run;
    run.seed = seed;
    run.evals_to.assign(k, std::nullopt);
    run.cost_to.assign(k, std::nullopt);
    double found = std::numeric_limits<double>::infinity();
    std::optional<double> best_screen;
    std::size_t reached = 0;
    std::size_t proposals = 0;
    const auto memory = [&] { return o.memory_in_use ? o.memory_in_use() : heap_in_use(); };
    const auto report = [&](bool done) {
      if (o.progress) o.progress({seed, o.seeds, proposals, std::isfinite(found) ? found : 0.0, *best, memory(), done});
    };
    while (!o.max_evaluations || run.evaluations < *o.max_evaluations) {
      if (!o.max_evaluations && reached == k) break;  // the curve is complete
      if (++proposals % std::max<std::size_t>(1, o.check_every) == 0) {
        if (o.max_memory_bytes && memory() > *o.max_memory_bytes) {
          run.memory_bound = true;
          break;
        }
        report(false);
      }
      const auto tp = search.next();
      if (!tp) break;
      SearchState& st = search.state(tp->template_name);
      const Config& c = tp->proposal.config;
      const ReplayEntry* e = find_entry(lookup, tp->template_name, c);
      if (!e && o.skip_unknown) {
        ++run.unknown;
        st.record(c, Outcome::failed(-1, "not in the DB (skipped)"));
        continue;
      }
      ++run.evaluations;
      const auto iter = static_cast<std::int64_t>(run.evaluations);
      if (e && e->resources && !o.resources_ahead) st.set_resources(c, *e->resources);
      if (!e || e->failed) {
        run.unknown += e ? 0 : 1;
        run.cost += ladder ? sum.screen_cost : 1.0;
        st.record(c, Outcome::failed(iter, e ? "failed in the DB" : "not in the DB"));
        continue;
      }
      if (ladder) {
        run.cost += sum.screen_cost;
        if (const auto s = table.screen_of(*e)) {
          const ScreenVerdict v = judge_screen(*s, best_screen, o.cutoff);
          if (!best_screen || *s < *best_screen) best_screen = s;
          if (!v.promote) {
            st.record(c, Outcome::success(iter, *s));  // as the daemon: the screen estimate, never a champion
            continue;
          }
        }
      }
      run.cost += 1.0;
      if (!e->full_ms) {  // screened only in the DB: its whole-suite score is unknown
        ++run.unknown;
        st.record(c, Outcome::failed(iter, "no whole-suite score in the DB"));
        continue;
      }
      ++run.full_evaluations;
      st.record(c, Outcome::success(iter, *e->full_ms));
      if (const auto champ = st.champion(); !champ || *e->full_ms < champ->score_ms) st.set_champion(c);
      found = std::min(found, *e->full_ms);
      for (std::size_t t = 0; t < k; ++t)
        if (!run.evals_to[t] && found <= *best * (1 + o.thresholds[t])) {
          run.evals_to[t] = run.evaluations;
          run.cost_to[t] = run.cost;
          ++reached;
        }
    }
    run.best_ms = std::isfinite(found) ? found : 0;
    report(true);
    sum.memory_bound += run.memory_bound ? 1 : 0;
    sum.runs.push_back(run);
  }
  sum.reached.assign(k, 0);
  for (std::size_t t = 0; t < k; ++t) {
    std::vector<double> ev, co;
    for (const auto& r : sum.runs)
      if (r.evals_to[t]) {
        ++sum.reached[t];
        ev.push_back(double(*r.evals_to[t]));
        co.push_back(*r.cost_to[t]);
      }
    sum.evals.push_back(quartiles(ev));
    sum.cost.push_back(quartiles(co));
  }
  for (const auto& r : sum.runs) {
    sum.mean_unknown += double(r.unknown) / double(sum.runs.size());
    sum.mean_evaluations += double(r.evaluations) / double(sum.runs.size());
    sum.mean_full += double(r.full_evaluations) / double(sum.runs.size());
  }
  return sum;
}

std::string format_replay(const ReplaySummary& s) {
  const auto& o = s.options;
  std::string out = fmt::format("strategy {}, fidelity {}", o.strategy, to_string(o.fidelity));
  if (o.fidelity == FidelityMode::ladder)
    out += fmt::format(" (cut-off {:g}%, screen cost {:.3f} of a whole-suite evaluation{})", o.cutoff * 100,
                       s.screen_cost, o.screen_cost ? "" : ", estimated");
  out += fmt::format(", {} seeds; target {:.4f} ms; space {} valid configs, {} answered by the DB\n", s.runs.size(),
                     s.best_ms, s.space, s.answered);
  if (!s.pinned.empty())
    out += fmt::format("  not in the DB, pinned to the default (added to the template since): {}\n", fmt::join(s.pinned, ", "));
  for (std::size_t t = 0; t < o.thresholds.size(); ++t) {
    out += fmt::format("  within {:g}%: ", o.thresholds[t] * 100);
    if (!s.evals[t]) {
      out += fmt::format("never reached (0 of {} seeds)\n", s.runs.size());
      continue;
    }
    const auto& e = *s.evals[t];
    const auto& c = *s.cost[t];
    // Share of the space searched: of the answered subspace when unknown configs are skipped.
    const std::size_t space = o.skip_unknown ? s.answered : s.space;
    out += fmt::format("median {:.0f} evaluations ({:.1f}% of the {}space), p25 {:.0f}, p75 {:.0f}; cost median {:.1f} "
                       "whole-suite evaluations (p25 {:.1f}, p75 {:.1f}); reached by {} of {} seeds\n",
                       e.median, 100.0 * e.median / double(std::max<std::size_t>(1, space)),
                       o.skip_unknown ? "answered " : "", e.p25, e.p75, c.median, c.p25, c.p75, s.reached[t],
                       s.runs.size());
  }
  out += fmt::format("  per seed: {:.1f} configs proposed, {:.1f} evaluated on the whole suite, {:.1f} the DB could "
                     "not answer ({})\n",
                     s.mean_evaluations, s.mean_full, s.mean_unknown,
                     o.skip_unknown ? "skipped, not counted" : "counted as failed");
  if (s.memory_bound)
    out += fmt::format("  {} of {} seeds stopped at the memory bound ({:.1f} GB of heap) before every target was "
                       "reached: their curves end there (--max-memory, --max-evaluations)\n",
                       s.memory_bound, s.runs.size(), double(o.max_memory_bytes.value_or(0)) / 1e9);
  return out;
}

std::string replay_json(const std::vector<ReplaySummary>& summaries) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& s : summaries) {
    nlohmann::json th = nlohmann::json::array();
    for (std::size_t t = 0; t < s.options.thresholds.size(); ++t) {
      auto q = [](const std::optional<Quartiles>& x) {
        return x ? nlohmann::json{{"p25", x->p25}, {"median", x->median}, {"p75", x->p75}} : nlohmann::json(nullptr);
      };
      th.push_back({{"within", s.options.thresholds[t]}, {"reached", s.reached[t]}, {"evaluations", q(s.evals[t])},
                    {"cost", q(s.cost[t])}});
    }
    all.push_back({{"strategy", s.options.strategy},
                   {"fidelity", to_string(s.options.fidelity)},
                   {"cutoff", s.options.cutoff},
                   {"screen_cost", s.screen_cost},
                   {"seeds", s.runs.size()},
                   {"best_ms", s.best_ms},
                   {"space", s.space},
                   {"answered", s.answered},
                   {"pinned", s.pinned},
                   {"thresholds", th},
                   {"mean_evaluations", s.mean_evaluations},
                   {"mean_full_evaluations", s.mean_full},
                   {"mean_unknown", s.mean_unknown},
                   {"memory_bound_seeds", s.memory_bound},
                   {"skip_unknown", s.options.skip_unknown}});
  }
  return all.dump(2);
}

}  // namespace attn
