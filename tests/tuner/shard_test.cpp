// --shard i/N (tuner/shard.hpp): shards are disjoint, their union is the space, and the partition depends
// only on the template name and the config (the same across loads, strategies and builds).
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tuner/search_state.hpp"
#include "tuner/shard.hpp"
#include "tuner/space.hpp"
#include "tuner/strategy.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

TemplateSpace load(const std::string& dir, const std::string& name) { return TemplateSpace::load_named(dir, name); }

void expect_partition(const std::string& dir, const std::string& name, unsigned n) {
  const auto whole = load(dir, name).enumerate();
  std::set<Config> seen;
  std::size_t total = 0;
  for (unsigned i = 0; i < n; ++i) {
    TemplateSpace s = load(dir, name);
    s.restrict_to_shard(i, n);
    const auto part = s.enumerate();
    EXPECT_EQ(s.count_valid(), part.size()) << name << " shard " << i;
    total += part.size();
    for (const auto& c : part) {
      EXPECT_TRUE(seen.insert(c).second) << name << ": " << config_to_compact(c) << " is in two shards";
      EXPECT_EQ(shard_of(name, c, n), i);
      EXPECT_FALSE(s.check(c)) << *s.check(c);
    }
    // A config of another shard is invalid here, and says why.
    for (const auto& c : whole)
      if (shard_of(name, c, n) != i) {
        ASSERT_TRUE(s.check(c));
        EXPECT_EQ(*s.check(c), "outside shard " + std::to_string(i) + "/" + std::to_string(n));
        break;
      }
  }
  EXPECT_EQ(total, whole.size()) << name;
  EXPECT_EQ(seen, std::set<Config>(whole.begin(), whole.end())) << name << ": the union is not the space";
}

TEST(Shard, ShardsAreDisjointAndTheirUnionIsTheSpace) {
  expect_partition(test::data_dir() + "/fake_templates", "fake", 2);
  expect_partition(test::data_dir() + "/fake_templates", "fake", 5);
  expect_partition(ATTN_TEMPLATES_DIR, "fa2_mma", 3);
  expect_partition(ATTN_TEMPLATES_DIR, "wgmma_fa", 4);
}

TEST(Shard, ThePartitionIsAStableHashOfTheCanonicalConfig) {
  // XXH64 of "fake {"A":4,"B":2,"F":0}": the same value on every host and build (a changed hash would mix
  // the shards of a job array that straddles two builds).
  const Config c{{"A", 4}, {"B", 2}, {"F", 0}};
  EXPECT_EQ(config_hash("fake", c), config_hash("fake", Config{{"F", 0}, {"B", 2}, {"A", 4}}));
  EXPECT_NE(config_hash("fake", c), config_hash("fake2", c));
  EXPECT_EQ(config_hash("fake", c), 11032537737784081440ull);
  EXPECT_EQ(shard_of("fake", c, 4), unsigned(11032537737784081440ull % 4));
  // Every strategy proposes only configs of its shard, the template default included when it lies outside.
  for (const std::string strategy : {"local", "random", "evolutionary", "exhaustive", "model"}) {
    TemplateSpace s = load(test::data_dir() + "/fake_templates", "fake_healthy");
    const unsigned def_shard = shard_of("fake_healthy", s.default_config(), 3);
    s.restrict_to_shard((def_shard + 1) % 3, 3);
    SearchState st(s);
    auto strat = make_strategy(strategy, 7);
    std::size_t proposed = 0;
    while (auto p = strat->next(st)) {
      EXPECT_EQ(shard_of("fake_healthy", p->config, 3), (def_shard + 1) % 3) << strategy << " " << p->move;
      st.record(p->config, Outcome::success(std::int64_t(proposed), 1.0 + double(proposed)));
      ASSERT_LT(++proposed, 100u) << strategy;
    }
    EXPECT_EQ(proposed, st.valid_configs().size()) << strategy << " did not cover its shard";
  }
}

TEST(Shard, ParseShardNamesTheProblem) {
  EXPECT_EQ(parse_shard("0/4"), (Shard{0, 4}));
  EXPECT_EQ(parse_shard("3/4").text(), "3/4");
  for (const char* bad : {"4/4", "1", "a/2", "1/0", "-1/2", "1/2/3", "/2", "1/"}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace attn
