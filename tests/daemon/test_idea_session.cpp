// IdeaSession (daemon/idea_session.hpp): the idea queue's state and the hooks that decide when an idea is judged.
#include <gtest/gtest.h>

#include <stdexcept>

#include "daemon/idea_session.hpp"
#include "tests/tuner/tuner_fixtures.hpp"

namespace attn::tuning {
namespace {

ActiveIdea idea_of(const std::string& tname, IdeaStatus status) {
  ActiveIdea a;
  a.rec.id = 7;
  a.rec.template_name = tname;
  a.rec.status = status;
  return a;
}

TEST(IdeaSession, OnlyTheIdeasTemplateCountsAndItIsTunedWhenEverythingIssuedFinishedAndTheSearchIsDone) {
  MultiSearch search;
  search.add(test::tile_space(test::temp_dir("idea-session")), make_strategy("random", 1));
  IdeaSession s;
  EXPECT_FALSE(s.tuned(search));  // no idea
  s.on_issued("tile");            // no idea: nothing counted
  ActiveIdea& a = s.begin(idea_of("tile", IdeaStatus::checking));
  EXPECT_EQ(s.current(), &a);
  EXPECT_THROW(s.begin(idea_of("other", IdeaStatus::checking)), std::logic_error);  // one at a time
  s.on_issued("other");
  s.on_finished("other", 5.0);
  EXPECT_EQ(s.issued(), 0u);
  EXPECT_EQ(s.finished(), 0u);
  s.on_issued("tile");
  s.on_issued("tile");
  s.on_finished("tile", 2.5);
  EXPECT_EQ(s.issued(), 2u);
  EXPECT_EQ(s.finished(), 1u);
  EXPECT_DOUBLE_EQ(s.gpu_ms(), 2.5);
  search.retire("tile");
  EXPECT_FALSE(s.tuned(search));  // still checking
  a.rec.status = IdeaStatus::tuning;
  EXPECT_FALSE(s.tuned(search));  // one config still in flight
  s.on_finished("tile", 0.0);     // evaluated before: no GPU time
  EXPECT_DOUBLE_EQ(s.gpu_ms(), 2.5);
  EXPECT_TRUE(s.tuned(search));
  a.rec.status = IdeaStatus::judging;
  EXPECT_FALSE(s.tuned(search));  // judged once
  s.end();
  EXPECT_EQ(s.current(), nullptr);
  // The next idea starts from zero.
  s.begin(idea_of("tile", IdeaStatus::tuning));
  EXPECT_EQ(s.issued(), 0u);
  EXPECT_DOUBLE_EQ(s.gpu_ms(), 0.0);
}

TEST(IdeaSession, TheFolderIsLookedAtEveryPollWithoutAnIdeaAndEachProblemOnce) {
  IdeaSession s;
  EXPECT_TRUE(s.look_due(3600));   // never looked at
  EXPECT_FALSE(s.look_due(3600));  // just looked at
  s.look_now();
  EXPECT_TRUE(s.look_due(3600));
  s.look_now();
  s.begin(idea_of("tile", IdeaStatus::checking));
  EXPECT_FALSE(s.look_due(0));  // an idea in progress: the folder waits
  s.end();                      // and is looked at right after its verdict
  EXPECT_TRUE(s.look_due(3600));
  EXPECT_EQ(s.set_problem("queue folder is missing"), "");
  EXPECT_EQ(s.set_problem("queue folder is missing"), "queue folder is missing");
  EXPECT_EQ(s.set_problem(""), "queue folder is missing");
  EXPECT_FALSE(s.taken("a.idea\nfile:1"));
  s.take("a.idea\nfile:1");
  EXPECT_TRUE(s.taken("a.idea\nfile:1"));
  s.add_template("tile_p3");
  EXPECT_TRUE(s.is_idea_template("tile_p3"));
  EXPECT_FALSE(s.is_idea_template("tile"));
}

TEST(IdeaSession, AConfigRunsTheIdeaWhenItUsesAValueTheIdeaAdds) {
  ActiveIdea a;
  EXPECT_TRUE(a.active({{"BLOCK_M", 64}}));  // a plain code change: every config
  a.new_values["FAST"] = {1};
  a.new_values["BLOCK_M"] = {256};
  EXPECT_TRUE(a.active({{"BLOCK_M", 64}, {"FAST", 1}}));
  EXPECT_TRUE(a.active({{"BLOCK_M", 256}, {"FAST", 0}}));
  EXPECT_FALSE(a.active({{"BLOCK_M", 64}, {"FAST", 0}}));
}

}  // namespace
}  // namespace attn::tuning
