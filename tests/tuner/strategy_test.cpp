// Search strategies: the contract (never a seen or invalid config, exhaust exactly the valid set),
// determinism, pending proposals, and that the learning strategies learn on synthetic scores.
#include <gtest/gtest.h>

#include <cstdio>

#include <cmath>
#include <functional>
#include <numeric>
#include <set>

#include "tests/tuner/tuner_fixtures.hpp"
#include "tuner/multi_search.hpp"
#include "tuner/strategy.hpp"

namespace attn {
namespace {

using test::drive;
using test::space_json;
using test::write_space;

/// Synthetic tile score: smaller is better near BLOCK_M 128, BLOCK_N 64, WARPS 4, STAGES 3;
/// STAGES 4 with BLOCK_N 32 "fails to compile".
std::optional<double> tile_score(const Config& c) {
  if (c.at("STAGES") == 4 && c.at("BLOCK_N") == 32) return std::nullopt;
  auto sq = [](double x) { return x * x; };
  return 1.0 + sq(std::log2(c.at("BLOCK_M") / 128.0)) + sq(std::log2(c.at("BLOCK_N") / 64.0)) +
         0.5 * sq(std::log2(c.at("WARPS") / 4.0)) + 0.25 * sq(c.at("STAGES") - 3.0);
}

/// A grid space of `n` parameters P0..P{n-1}, each with values 1..k, one constraint, default all 1.
TemplateSpace grid_space(const std::string& name, int n, int k, const std::string& constraint) {
  std::string params, def = "{";
  for (int i = 0; i < n; ++i) {
    std::string values;
    for (int v = 1; v <= k; ++v) values += (v > 1 ? "," : "") + std::to_string(v);
    params += (i ? ", " : "") + ("\"P" + std::to_string(i) + "\": {\"values\": [" + values + "]}");
    def += (i ? ", " : "") + ("\"P" + std::to_string(i) + "\": 1");
  }
  def += "}";
  const auto dir = test::temp_dir("tuner-grid");
  return TemplateSpace::load(write_space(dir, name, space_json(name, params, "{\"expr\": \"" + constraint + "\"}", def)));
}

/// 1 + sum_i w_i (P_i - target_i)^2: a convex bowl on the grid with its optimum 1.0 at `target`.
test::ScoreFn bowl(std::vector<std::int64_t> target, std::vector<double> weight) {
  return [target, weight](const Config& c) -> std::optional<double> {
    double s = 1.0;
    for (std::size_t i = 0; i < target.size(); ++i) {
      const double d = static_cast<double>(c.at("P" + std::to_string(i)) - target[i]);
      s += weight[i] * d * d;
    }
    return s;
  };
}

class EveryStrategy : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryStrategy, NeverRepeatsNeverInvalidAndExhaustsExactlyTheValidSet) {
  SearchState state(test::tile_space(test::temp_dir("tuner-strat")));
  auto strategy = make_strategy(GetParam(), 42);
  EXPECT_EQ(strategy->name(), GetParam());
  const auto& valid = state.valid_configs();
  ASSERT_GT(valid.size(), 10u);
  std::set<Config> proposed;
  // Budget past the valid count: the strategy must stop by itself exactly when all are seen.
  const auto run = drive(*strategy, state, tile_score, valid.size() + 5);
  for (const auto& p : run.proposals) {
    EXPECT_EQ(state.space().check(p.config), std::nullopt) << config_to_compact(p.config);
    EXPECT_TRUE(proposed.insert(p.config).second) << "repeated " << config_to_compact(p.config);
    EXPECT_FALSE(p.move.empty());
  }
  EXPECT_EQ(proposed, std::set<Config>(valid.begin(), valid.end()));
  EXPECT_EQ(run.proposals.size(), valid.size());
  EXPECT_FALSE(strategy->next(state).has_value());
  // The champion is the best successful config.
  ASSERT_TRUE(state.champion().has_value());
  EXPECT_DOUBLE_EQ(state.champion()->score_ms, state.ranked().front().second.score_ms.value());
}

TEST_P(EveryStrategy, SameSeedSameSequence) {
  const auto space = test::tile_space(test::temp_dir("tuner-strat"));
  SearchState s1(space), s2(space);
  auto a = make_strategy(GetParam(), 7), b = make_strategy(GetParam(), 7);
  const auto r1 = drive(*a, s1, tile_score, 25), r2 = drive(*b, s2, tile_score, 25);
  ASSERT_EQ(r1.proposals.size(), r2.proposals.size());
  for (std::size_t i = 0; i < r1.proposals.size(); ++i) {
    EXPECT_EQ(r1.proposals[i].config, r2.proposals[i].config) << i;
    EXPECT_EQ(r1.proposals[i].move, r2.proposals[i].move) << i;
  }
}

TEST_P(EveryStrategy, NeverProposesPendingConfigs) {
  SearchState state(test::tile_space(test::temp_dir("tuner-strat")));
  auto strategy = make_strategy(GetParam(), 3);
  std::set<Config> proposed;
  std::int64_t iter = 0;
  // Pipelined like the daemon: three proposals in flight before any result comes back.
  while (true) {
    std::vector<Config> batch;
    for (int k = 0; k < 3; ++k) {
      auto p = strategy->next(state);
      if (!p) break;
      EXPECT_FALSE(state.seen(p->config));
      EXPECT_TRUE(proposed.insert(p->config).second) << "repeated " << config_to_compact(p->config);
      state.mark_pending(p->config);
      batch.push_back(p->config);
    }
    if (batch.empty()) break;
    for (const auto& c : batch) {
      const auto s = tile_score(c);
      state.record(c, s ? Outcome::success(++iter, *s) : Outcome::failed(++iter, "synthetic"));
      if (s && (!state.champion() || *s < state.champion()->score_ms)) state.set_champion(c);
    }
  }
  EXPECT_EQ(proposed.size(), state.valid_configs().size());
}

INSTANTIATE_TEST_SUITE_P(Strategies, EveryStrategy,
                         ::testing::Values("exhaustive", "random", "local", "evolutionary", "model"),
                         [](const auto& info) { return info.param; });

TEST(ExhaustiveStrategy, OdometerOrderWithPositions) {
  SearchState state(test::tile_space(test::temp_dir("tuner-strat")));
  const auto& valid = state.valid_configs();
  // Configs evaluated elsewhere (another strategy, an earlier run) are skipped.
  state.record(valid[0], Outcome::success(1, 2.0));
  state.record(valid[2], Outcome::failed(2, "crash"));
  state.mark_pending(valid[3]);
  auto s = make_exhaustive_strategy();
  std::vector<std::size_t> order;
  while (auto p = s->next(state)) {
    const auto pos = std::find(valid.begin(), valid.end(), p->config) - valid.begin();
    EXPECT_EQ(p->move, "exhaustive " + std::to_string(pos + 1) + "/" + std::to_string(valid.size()));
    order.push_back(static_cast<std::size_t>(pos));
    state.record(p->config, Outcome::success(100 + pos, 1.0));
  }
  std::vector<std::size_t> expected{1};
  for (std::size_t i = 4; i < valid.size(); ++i) expected.push_back(i);
  EXPECT_EQ(order, expected);
  // The pending one comes back once cancelled.
  state.cancel_pending(valid[3]);
  auto p = s->next(state);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->config, valid[3]);
}

TEST(RandomStrategy, DifferentSeedsGiveDifferentOrders) {
  const auto space = test::tile_space(test::temp_dir("tuner-strat"));
  SearchState s1(space), s2(space);
  auto a = make_random_strategy(1), b = make_random_strategy(2);
  const auto r1 = drive(*a, s1, tile_score, 1000), r2 = drive(*b, s2, tile_score, 1000);
  ASSERT_EQ(r1.proposals.size(), r2.proposals.size());
  std::size_t same = 0;
  for (std::size_t i = 0; i < r1.proposals.size(); ++i) same += r1.proposals[i].config == r2.proposals[i].config;
  EXPECT_LT(same, r1.proposals.size() / 2);
}

TEST(LocalStrategy, StartsAtDefaultThenMovesOneParameterOneStep) {
  SearchState state(test::tile_space(test::temp_dir("tuner-strat")));
  auto s = make_local_strategy(5);
  auto p = s->next(state);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->config, state.space().default_config());
  EXPECT_NE(p->move.find("template default"), std::string::npos);
  state.record(p->config, Outcome::success(12, 3.0));
  state.set_champion(p->config);
  const auto base = *state.space().indices_of(p->config);
  // All one-parameter neighbours come before any two-parameter move.
  std::size_t one_param = 0;
  const auto& params = state.space().parameters();
  for (std::size_t i = 0; i < params.size(); ++i)
    for (int d : {-1, 1}) {
      auto idx = base;
      const auto j = static_cast<long>(idx[i]) + d;
      if (j < 0 || j >= static_cast<long>(params[i].values.size())) continue;
      idx[i] = static_cast<std::size_t>(j);
      one_param += state.space().check(state.space().config_at(idx)) ? 0 : 1;
    }
  ASSERT_GT(one_param, 1u);
  for (std::size_t k = 0; k < one_param; ++k) {
    auto q = s->next(state);
    ASSERT_TRUE(q.has_value());
    const auto idx = *state.space().indices_of(q->config);
    std::size_t changed = 0, step = 0;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      changed += idx[i] != base[i];
      step = std::max<std::size_t>(step, idx[i] > base[i] ? idx[i] - base[i] : base[i] - idx[i]);
    }
    EXPECT_EQ(changed, 1u) << q->move;
    EXPECT_EQ(step, 1u) << q->move;
    EXPECT_NE(q->move.find("from champion iter 12"), std::string::npos) << q->move;
    state.record(q->config, Outcome::success(13 + static_cast<std::int64_t>(k), 4.0));  // all worse
  }
  // One-parameter moves exhausted: the next one moves two parameters.
  auto q = s->next(state);
  ASSERT_TRUE(q.has_value());
  const auto idx = *state.space().indices_of(q->config);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) changed += idx[i] != base[i];
  EXPECT_EQ(changed, 2u) << q->move;
}

TEST(LocalStrategy, ReachesTheOptimumFasterThanExhaustive) {
  // 4 parameters x 6 values, optimum at (4, 3, 5, 2), well inside the odometer order.
  const auto space = grid_space("bowl4", 4, 6, "P0 + P3 <= 10");
  const auto score = bowl({4, 3, 5, 2}, {1.0, 2.0, 0.5, 1.5});
  SearchState ex_state(space), local_state(space);
  auto ex = make_exhaustive_strategy();
  auto local = make_local_strategy(11);
  const auto n = ex_state.valid_configs().size();
  const auto ex_run = drive(*ex, ex_state, score, n, 1.0);
  const auto local_run = drive(*local, local_state, score, n, 1.0);
  ASSERT_TRUE(ex_run.evals_to.has_value());
  ASSERT_TRUE(local_run.evals_to.has_value()) << "local search never reached the optimum";
  EXPECT_LT(*local_run.evals_to, *ex_run.evals_to);
  EXPECT_LT(*local_run.evals_to, n / 4) << "local " << *local_run.evals_to << " of " << n;
  EXPECT_EQ(local_state.champion()->config, (Config{{"P0", 4}, {"P1", 3}, {"P2", 5}, {"P3", 2}}));
}

TEST(LocalStrategy, RestartsWhenTheChampionsNeighbourhoodIsExhausted) {
  // A 1-D space: from the default (1) the climb reaches the optimum 3, whose neighbours (2, 4) are
  // then seen; the next proposals restart from the best not-yet-expanded configs, then at random.
  const auto space = grid_space("line", 1, 6, "P0 >= 1");
  SearchState state(space);
  auto s = make_local_strategy(2);
  const auto run = drive(*s, state, bowl({3}, {1.0}), 100);
  ASSERT_EQ(run.proposals.size(), 6u);
  EXPECT_EQ(state.champion()->config, (Config{{"P0", 3}}));
  // 1 (default), 2, 3 (climb); then 4 from champion 3; then 5 from 4 (best not-yet-expanded); then 6.
  std::vector<std::int64_t> order;
  for (const auto& p : run.proposals) order.push_back(p.config.at("P0"));
  EXPECT_EQ(order, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_NE(run.proposals[4].move.find("restart from the best not-yet-expanded"), std::string::npos)
      << run.proposals[4].move;
}

/// Best scores of a strategy and of random sampling with the same budget, over seeds 1..6.
struct VersusRandom {
  double mean_best = 0, random_mean_best = 0;
  int wins = 0;  ///< seeds where the strategy's best beat random's
};
VersusRandom versus_random(const TemplateSpace& space, const test::ScoreFn& score,
                           const std::function<std::unique_ptr<Strategy>(std::uint64_t)>& make, std::size_t budget) {
  VersusRandom v;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    SearchState a(space), b(space);
    auto s = make(seed);
    auto rnd = make_random_strategy(seed);
    const double x = drive(*s, a, score, budget).best_ms, r = drive(*rnd, b, score, budget).best_ms;
    v.mean_best += x / 6;
    v.random_mean_best += r / 6;
    v.wins += x < r;
  }
  return v;
}

TEST(EvolutionaryStrategy, BeatsRandomOnABowlWithTheSameBudget) {
  // 5 parameters x 8 values (about 25k valid configs), 80 evaluations, 6 seeds each.
  const auto space = grid_space("bowl5", 5, 8, "P0 * P1 <= 40");
  const auto v = versus_random(space, bowl({5, 6, 3, 7, 4}, {1, 1, 1, 1, 1}),
                               [](std::uint64_t seed) { return make_evolutionary_strategy(seed); }, 80);
  EXPECT_LT(v.mean_best, 0.7 * v.random_mean_best) << "evolutionary mean best " << v.mean_best << ", random "
                                                  << v.random_mean_best;
  EXPECT_GE(v.wins, 5);
}

TEST(EvolutionaryStrategy, ALongRunWidensTheMutationNearThePoolBeforeSamplingAtRandom) {
  // 5 parameters x 8 values, 600 evaluations: the pool's children with one moved parameter run out (runs 3
  // and 4 of the H100 DB proposed random samples for most of their time, 2026-11-24/25). The strategy then
  // moves several parameters of a pool member, and each such child is that few steps from the parent it
  // names; a random sample (anywhere in the space) comes only after those tries.
  const auto space = grid_space("bowl5", 5, 8, "P0 * P1 <= 40");
  SearchState state(space);
  auto s = make_evolutionary_strategy(3);
  const auto run = drive(*s, state, bowl({5, 6, 3, 7, 4}, {1, 1, 1, 1, 1}), 600);
  ASSERT_EQ(run.proposals.size(), 600u);
  std::size_t widened = 0, random_after = 0, wide = 0;
  for (const auto& p : run.proposals) {
    std::size_t parent = 0, times = 0;
    if (std::sscanf(p.move.c_str(), "iter %zu mutated %zu times", &parent, &times) == 2) {
      ++widened;
      ASSERT_GE(parent, 1u);
      ASSERT_LE(parent, run.proposals.size());
      const Config& from = run.proposals[parent - 1].config;  // iteration ids are 1, 2, ... (drive)
      std::size_t moved = 0;
      for (const auto& [k, v] : from) moved += p.config.at(k) != v;
      EXPECT_GE(times, 2u) << p.move;
      EXPECT_LE(moved, times) << p.move;
      wide += moved >= 2;
    }
    if (widened > 0 && p.move.rfind("random sample", 0) == 0) ++random_after;
  }
  EXPECT_GT(widened, 20u);
  EXPECT_GT(wide, 10u);
  EXPECT_LT(random_after, widened) << "random samples should come only once the widened tries fail";
}

TEST(ModelStrategy, BeatsRandomOnABowlWithTheSameBudget) {
  // As the evolutionary test: 5 parameters x 8 values (about 25k valid configs), 80 evaluations.
  const auto space = grid_space("bowl5", 5, 8, "P0 * P1 <= 40");
  const auto v = versus_random(space, bowl({5, 6, 3, 7, 4}, {1, 1, 1, 1, 1}),
                               [](std::uint64_t seed) { return make_model_strategy(seed); }, 80);
  EXPECT_LT(v.mean_best, 0.7 * v.random_mean_best) << "model mean best " << v.mean_best << ", random "
                                                  << v.random_mean_best;
  EXPECT_GE(v.wins, 5);
  RecordProperty("model_mean_best", std::to_string(v.mean_best));
  RecordProperty("random_mean_best", std::to_string(v.random_mean_best));
}

TEST(ModelStrategy, UsesTheCompileReportWhenKnown) {
  // The score depends only on "registers", a hash-like function of the parameters (1% of the 1000 configs
  // have the lowest): with every config's compile report known the model homes in on it, from the
  // parameters alone it can only search about as random does (about 100 evaluations).
  const auto space = grid_space("regs", 3, 10, "P0 + P1 + P2 >= 3");
  auto regs = [](const Config& c) { return double((c.at("P0") * 37 + c.at("P1") * 11 + c.at("P2") * 5) % 101); };
  const test::ScoreFn score = [&](const Config& c) -> std::optional<double> { return 1.0 + regs(c); };
  std::size_t with = 0, without = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SearchState a(space), b(space);
    for (const auto& c : a.valid_configs()) a.set_resources(c, ConfigResources{regs(c), 0, 0});
    auto ma = make_model_strategy(seed), mb = make_model_strategy(seed);
    with += drive(*ma, a, score, 400, 1.0).evals_to.value_or(400);
    without += drive(*mb, b, score, 400, 1.0).evals_to.value_or(400);
  }
  EXPECT_LT(with, without) << "with the compile report " << with / 4 << " evaluations, without " << without / 4;
  RecordProperty("evaluations_with_report", std::to_string(with / 4));
  RecordProperty("evaluations_without_report", std::to_string(without / 4));
  EXPECT_LT(with / 4, 60u);
}

TEST(EvolutionaryStrategy, MovesNameTheParents) {
  SearchState state(test::tile_space(test::temp_dir("tuner-strat")));
  auto s = make_evolutionary_strategy(9);
  const auto run = drive(*s, state, tile_score, 12);
  std::size_t crossovers = 0;
  for (const auto& p : run.proposals) crossovers += p.move.rfind("crossover of iter ", 0) == 0;
  EXPECT_GT(crossovers, 3u);
  EXPECT_EQ(run.proposals.front().move, "template default (seeds the population)");
}

TEST(StrategyFactory, KnownNamesAndUnknownNameError) {
  EXPECT_EQ(strategy_names(), (std::vector<std::string>{"exhaustive", "random", "local", "evolutionary", "model"}));
  for (const auto& n : strategy_names()) EXPECT_EQ(make_strategy(n, 1)->name(), n);
  try {
    make_strategy("annealing", 1);
    FAIL() << "no error for an unknown strategy";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("annealing"), std::string::npos);
    for (const auto& n : strategy_names()) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
}

TEST(SearchState, ChampionRankingAndForeignConfigs) {
  SearchState state(test::tile_space(test::temp_dir("tuner-strat")));
  const auto& v = state.valid_configs();
  EXPECT_THROW(state.set_champion(v[0]), std::invalid_argument);  // never recorded
  state.record(v[0], Outcome::failed(1, "ptxas: too many resources"));
  EXPECT_THROW(state.set_champion(v[0]), std::invalid_argument);  // failed
  state.record(v[1], Outcome::success(2, 3.0));
  state.record(v[2], Outcome::success(3, 2.0));
  state.record(v[3], Outcome::success(4, 2.0));
  const auto ranked = state.ranked();
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].first, v[2]);  // tie on score: lower iter first
  EXPECT_EQ(ranked[1].first, v[3]);
  state.set_champion(v[1]);
  EXPECT_EQ(state.champion()->iter, 2);
  state.record(v[1], Outcome::success(5, 2.5));  // re-timed: the champion shows the new numbers
  EXPECT_EQ(state.champion()->iter, 5);
  EXPECT_DOUBLE_EQ(state.champion()->score_ms, 2.5);
  // A config from an older version of the space counts as evaluated and does not break strategies.
  const Config foreign{{"BLOCK_M", 96}, {"BLOCK_N", 64}, {"WARPS", 4}, {"STAGES", 2}};
  state.record(foreign, Outcome::success(6, 0.5));
  state.set_champion(foreign);
  EXPECT_TRUE(state.evaluated(foreign));
  for (const auto& name : strategy_names()) {
    auto p = make_strategy(name, 1)->next(state);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ(state.space().check(p->config), std::nullopt) << name;
    EXPECT_FALSE(state.seen(p->config)) << name;
  }
}

TEST(MultiSearch, RoundRobinsOverTemplatesUntilAllAreExhausted) {
  const auto dir = test::temp_dir("tuner-multi");
  MultiSearch multi;
  multi.add(test::tile_space(dir), make_strategy("random", 1));
  multi.add(grid_space("line", 1, 5, "P0 != 3"), make_strategy("exhaustive", 1));
  EXPECT_THROW(multi.add(grid_space("line", 1, 2, "P0 > 0"), make_strategy("random", 1)), std::invalid_argument);
  EXPECT_EQ(multi.template_names(), (std::vector<std::string>{"tile", "line"}));
  const auto tile_n = multi.state("tile").valid_configs().size();
  std::vector<std::string> order;
  std::int64_t iter = 0;
  while (auto tp = multi.next()) {
    auto& st = multi.state(tp->template_name);
    EXPECT_EQ(st.space().check(tp->proposal.config), std::nullopt);
    EXPECT_FALSE(st.seen(tp->proposal.config));
    st.record(tp->proposal.config, Outcome::success(++iter, 1.0));
    order.push_back(tp->template_name);
  }
  ASSERT_EQ(order.size(), tile_n + 4);
  EXPECT_EQ((std::vector<std::string>(order.begin(), order.begin() + 8)),
            (std::vector<std::string>{"tile", "line", "tile", "line", "tile", "line", "tile", "line"}));
  EXPECT_TRUE(std::all_of(order.begin() + 8, order.end(), [](const auto& n) { return n == "tile"; }));
  try {
    multi.state("fa3");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tile, line"), std::string::npos) << e.what();
  }
}

TEST(MultiSearch, ARetiredTemplateProposesNothingMore) {
  MultiSearch multi;
  multi.add(grid_space("line", 1, 5, "P0 > 0"), make_strategy("exhaustive", 1));
  multi.add(grid_space("dot", 1, 3, "P0 > 0"), make_strategy("exhaustive", 1));
  multi.retire("line");
  EXPECT_TRUE(multi.retired("line"));
  EXPECT_FALSE(multi.retired("dot"));
  EXPECT_THROW(multi.retire("fa3"), std::invalid_argument);
  std::int64_t iter = 0;
  while (auto tp = multi.next()) {
    EXPECT_EQ(tp->template_name, "dot");
    multi.state(tp->template_name).record(tp->proposal.config, Outcome::success(++iter, 1.0));
  }
  EXPECT_EQ(iter, std::int64_t(multi.state("dot").valid_configs().size()));
  EXPECT_EQ(multi.state("line").unseen_count(), multi.state("line").valid_configs().size());
}

// An idea being tuned: next_preferred proposes its configs only, until its strategy has none; then next() goes on
// in turn over every template.
TEST(MultiSearch, NextPreferredProposesOnlyThePreferredTemplate) {
  MultiSearch multi;
  multi.add(grid_space("line", 1, 5, "P0 > 0"), make_strategy("exhaustive", 1));
  multi.add(grid_space("dot", 1, 3, "P0 > 0"), make_strategy("exhaustive", 1));
  EXPECT_FALSE(multi.next_preferred());  // none preferred
  multi.prefer("dot");
  std::int64_t iter = 0;
  while (auto tp = multi.next_preferred()) {
    EXPECT_EQ(tp->template_name, "dot");
    multi.state(tp->template_name).mark_pending(tp->proposal.config);
    ++iter;
  }
  EXPECT_EQ(iter, std::int64_t(multi.state("dot").valid_configs().size()));
  EXPECT_TRUE(multi.exhausted("dot"));
  const auto tp = multi.next();
  ASSERT_TRUE(tp);
  EXPECT_EQ(tp->template_name, "line");
  multi.prefer("");
  EXPECT_FALSE(multi.next_preferred());
}

}  // namespace
}  // namespace attn
