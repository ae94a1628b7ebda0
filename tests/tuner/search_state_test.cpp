// SearchState's valid configs (ValidConfigs): the same configs in the same order as TemplateSpace::enumerate(),
// held compactly. A daemon resumed on a research DB holds one SearchState per template, idea templates of
// earlier runs included: as std::map configs they took ~1.3 KB a config (10 GB for 27 fa3_tma variants).
#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "tests/test_support.hpp"
#include "tests/tuner/tuner_fixtures.hpp"
#include "tuner/search_state.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

std::vector<Config> materialised(const ValidConfigs& v) {
  std::vector<Config> out;
  for (const auto& c : v) out.push_back(c);
  return out;
}

void expect_same_as_enumerate(const TemplateSpace& space) {
  SCOPED_TRACE(space.name());
  const auto expected = space.enumerate();
  const SearchState st(space);
  const auto& v = st.valid_configs();
  ASSERT_EQ(v.size(), expected.size());
  EXPECT_EQ(v.empty(), expected.empty());
  for (std::size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(v[i], expected[i]) << "index " << i;
  EXPECT_EQ(materialised(v), expected);
  EXPECT_EQ(v.end() - v.begin(), static_cast<std::ptrdiff_t>(expected.size()));
  EXPECT_EQ(st.unseen_count(), expected.size());
}

TEST(ValidConfigs, SameConfigsInTheSameOrderAsEnumerate) {
  const auto dir = test::temp_dir("tuner-valid");
  expect_same_as_enumerate(test::tile_space(dir));
  expect_same_as_enumerate(test::grown_tile_space(test::temp_dir("tuner-valid-grown")));
  for (unsigned i = 0; i < 3; ++i) {  // a shard: for_each_valid filters like enumerate()
    TemplateSpace s = test::tile_space(dir);
    s.restrict_to_shard(i, 3);
    expect_same_as_enumerate(s);
  }
  TemplateSpace pinned = test::grown_tile_space(test::temp_dir("tuner-valid-pinned"));
  pinned.pin_to_default("SOFTMAX");  // one value: no bits in the packed word
  expect_same_as_enumerate(pinned);
  // Wide value lists (several bits a field) and more fields than fit one 64-bit word: 9 parameters of 200
  // values (8 bits each) need two words a config.
  std::string params, deflt, constraints;
  for (int p = 0; p < 9; ++p) {
    const std::string name = "P" + std::to_string(p), sep = p ? ", " : "";
    std::string values;
    for (int v = 0; v < 200; ++v) values += (v ? "," : "") + std::to_string(1000 - 3 * v);
    params += sep + "\"" + name + "\": {\"values\": [" + values + "]}";
    // Two values of each valid (2^9 configs): the first two (indices 0, 1) or the last two (198, 199).
    deflt += sep + "\"" + name + "\": " + (p % 2 ? "403" : "1000");
    constraints += sep + "{\"expr\": \"" + name + (p % 2 ? " <= 406" : " >= 997") + "\"}";
  }
  expect_same_as_enumerate(TemplateSpace::load(
      test::write_space(test::temp_dir("tuner-valid-wide"), "wide", test::space_json("wide", params, constraints, "{" + deflt + "}"))));
}

TEST(ValidConfigs, EveryProjectTemplateMatchesEnumerate) {
  for (const auto& e : std::filesystem::directory_iterator(ATTN_TEMPLATES_DIR))
    if (e.is_regular_file() && e.path().extension() == ".json") expect_same_as_enumerate(TemplateSpace::load(e.path().string()));
}

// The memory of a template's search state: fa3_tma (94,464 valid configs) took ~125 MB as a vector of
// std::map configs; packed, 8 bytes a config.
TEST(ValidConfigs, Fa3TmaHeldCompactly) {
  const auto space = TemplateSpace::load_named(ATTN_TEMPLATES_DIR, "fa3_tma");
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  const auto heap = [] {  // bytes in use: small chunks plus mmapped ones (the large vectors)
    const auto m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  const auto before = heap();
#endif
  const SearchState st(space);
  ASSERT_GT(st.valid_configs().size(), 50000u);
  EXPECT_LE(st.valid_configs().packed_bytes(), 8 * st.valid_configs().size());
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  const auto grown = heap() - before;  // whatever holds it
  EXPECT_LT(grown, std::size_t{8} << 20) << "SearchState(fa3_tma) holds " << (grown >> 20) << " MiB of heap";
#endif
}

// ranked() is kept in order by record() (pointers into results(), no copies): through a random sequence of
// successes, failures and re-timings of the same configs (a success replaced by a failure and the other way
// round), it always equals a stable sort of results()'s successes by score, then iter.
TEST(SearchStateRanked, StaysTheSortOfTheSuccessesThroughRecordsAndRetimings) {
  SearchState state(TemplateSpace::load_named(ATTN_TEMPLATES_DIR, "fa3_tma"));
  const auto& valid = state.valid_configs();
  std::mt19937_64 rng(7);
  std::int64_t iter = 0;
  for (int step = 0; step < 3000; ++step) {
    const Config c = valid[rng() % 200];  // 200 configs, so that most steps re-record one
    const double score = 0.1 + double(rng() % 50) / 1000;  // ties on score happen
    state.record(c, rng() % 5 == 0 ? Outcome::failed(++iter, "fault") : Outcome::success(++iter, score));
    if (step % 100 != 99) continue;
    std::vector<std::pair<Config, Outcome>> want;
    for (const auto& [k, o] : state.results())
      if (o.ok()) want.emplace_back(k, o);
    std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
      if (*a.second.score_ms != *b.second.score_ms) return *a.second.score_ms < *b.second.score_ms;
      return a.second.iter < b.second.iter;
    });
    const auto& got = state.ranked();
    ASSERT_EQ(got.size(), want.size()) << "step " << step;
    std::size_t i = 0;
    for (const auto& [k, o] : got) {
      EXPECT_EQ(k, want[i].first) << "step " << step << ", rank " << i;
      EXPECT_EQ(o.iter, want[i].second.iter) << "step " << step << ", rank " << i;
      ++i;
    }
  }
  // Moving the state keeps the view valid (the map's nodes move with it).
  SearchState moved = std::move(state);
  ASSERT_FALSE(moved.ranked().empty());
  EXPECT_EQ(&moved.ranked().front(), &*moved.results().find(moved.ranked().front().first));
}

// record_all (a resume's history at once) leaves the state record() of each in order leaves: the same results,
// ranked() order, unseen count and pending marks, through repeated configs (the last outcome wins, a success
// replaced by a failure and the other way round), configs outside the space, configs with another list of names
// (a parameter the space lacks) and a pending config; recorded on top of earlier records it also agrees.
TEST(SearchStateRecordAll, LeavesTheStateRecordOfEachInOrderLeaves) {
  const auto space = TemplateSpace::load_named(ATTN_TEMPLATES_DIR, "fa3_tma");
  SearchState one(space), all(space);
  std::mt19937_64 rng(11);
  std::vector<std::pair<Config, Outcome>> history;
  std::int64_t iter = 0;
  for (int step = 0; step < 4000; ++step) {
    Config c = one.valid_configs()[rng() % 500];
    if (step % 97 == 0) c["STAGES"] = 7;                  // outside the space
    if (step % 89 == 0) c["OLD_AXIS"] = step % 3;         // another list of names
    if (step % 83 == 0) c.erase("SOFTMAX");               // a shorter one
    const double score = 0.1 + double(rng() % 40) / 1000;  // ties on score
    history.emplace_back(c, rng() % 5 == 0 ? Outcome::failed(++iter, "fault") : Outcome::success(++iter, score));
  }
  const Config pending = history[5].first;
  one.mark_pending(pending);
  all.mark_pending(pending);
  for (const auto& [c, o] : history) one.record(c, o);
  all.record_all(history);
  auto same = [](const SearchState& a, const SearchState& b) {
    ASSERT_EQ(a.results().size(), b.results().size());
    auto ib = b.results().begin();
    for (const auto& [c, o] : a.results()) {
      ASSERT_EQ(c, ib->first);
      EXPECT_EQ(o.iter, ib->second.iter);
      EXPECT_EQ(o.score_ms, ib->second.score_ms);
      EXPECT_EQ(o.failure, ib->second.failure);
      ++ib;
    }
    ASSERT_EQ(a.ranked().size(), b.ranked().size());
    for (std::size_t i = 0; i < a.ranked().size(); ++i) {
      EXPECT_EQ(a.ranked()[i].first, b.ranked()[i].first) << "rank " << i;
      EXPECT_EQ(a.ranked()[i].second.iter, b.ranked()[i].second.iter) << "rank " << i;
    }
    EXPECT_EQ(a.unseen_count(), b.unseen_count());
  };
  same(one, all);
  EXPECT_FALSE(all.pending(pending));
  EXPECT_LT(all.unseen_count(), all.valid_configs().size());
  // On top of earlier records (record() a config at a time underneath).
  std::vector<std::pair<Config, Outcome>> more(history.begin(), history.begin() + 300);
  for (auto& [c, o] : more) o = Outcome::success(++iter, 0.05);
  for (const auto& [c, o] : more) one.record(c, o);
  all.record_all(more);
  same(one, all);
}

}  // namespace
}  // namespace attn
