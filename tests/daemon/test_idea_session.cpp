// IdeaSession (daemon/idea_session.hpp): the idea queue's state (when an idea is tuned: SearchBook, test_scheduler.cpp).
#include <gtest/gtest.h>

#include <stdexcept>

#include "daemon/idea_session.hpp"

namespace attn::tuning {
namespace {

ActiveIdea idea_of(const std::string& tname, IdeaStatus status) {
  ActiveIdea a;
  a.rec.id = 7;
  a.rec.template_name = tname;
  a.rec.status = status;
  return a;
}

TEST(IdeaSession, OneIdeaAtATimeItsJudgingTimeFromZero) {
  IdeaSession s;
  EXPECT_EQ(s.current(), nullptr);
  ActiveIdea& a = s.begin(idea_of("tile", IdeaStatus::checking));
  EXPECT_EQ(s.current(), &a);
  EXPECT_THROW(s.begin(idea_of("other", IdeaStatus::checking)), std::logic_error);  // one at a time
  s.add_judging_ms(2.5);
  EXPECT_DOUBLE_EQ(s.judging_ms(), 2.5);
  s.end();
  EXPECT_EQ(s.current(), nullptr);
  s.begin(idea_of("tile", IdeaStatus::tuning));  // the next idea starts from zero
  EXPECT_DOUBLE_EQ(s.judging_ms(), 0.0);
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
