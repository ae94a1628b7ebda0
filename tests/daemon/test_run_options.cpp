// validate_run_options (daemon/tuning_loop.hpp): the one check of `run`'s options, shared by the command (exit 2)
// and run_tuning_loop.
#include <gtest/gtest.h>

#include <functional>

#include "daemon/tuning_loop.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

/// The message validate_run_options throws for the default options changed by `change` ("" when none).
std::string problem(const std::function<void(RunOptions&)>& change) {
  RunOptions o;
  change(o);
  try {
    validate_run_options(o);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(RunOptions, TheDefaultsAndAGoodRunPass) {
  EXPECT_EQ(problem([](RunOptions&) {}), "");
  EXPECT_EQ(problem([](RunOptions& o) {
              o.budget_s = 60;
              o.max_iterations = 5;
              o.rotate_seeds = true;
              o.suite = "full";
              o.ideas.dir = "/tmp/ideas";
              o.strategy = "local";
            }),
            "");
  EXPECT_EQ(problem([](RunOptions& o) {  // the held-out seed as root seed is fine without the held-out check
              o.root_seed = o.holdout_seed;
              o.holdout = false;
            }),
            "");
}

TEST(RunOptions, EachBadOptionIsNamed) {
  EXPECT_EQ(problem([](RunOptions& o) { o.budget_s = 0; }), "--budget must be positive");
  EXPECT_EQ(problem([](RunOptions& o) { o.max_iterations = -3; }), "--iterations must be positive");
  EXPECT_EQ(problem([](RunOptions& o) { o.ladder.cutoff = -0.1; }), "--screen-cutoff must be >= 0");
  EXPECT_EQ(problem([](RunOptions& o) { o.ladder.screen_max_samples = 0; }), "--screen-samples must be >= 1");
  EXPECT_EQ(problem([](RunOptions& o) { o.round_configs = 0; }), "--round must be a positive number of configs");
  EXPECT_EQ(problem([](RunOptions& o) {
              o.rotate_seeds = true;
              o.suite = "smoke";
            }),
            "--rotate-seeds needs a suite whose case seeds come from a root seed (quick, full, broad), not smoke");
  EXPECT_EQ(problem([](RunOptions& o) { o.root_seed = o.holdout_seed; }),
            "--root-seed 1000003 is the held-out seed: tuning never uses it (pick another, or --holdout-seed)");
  EXPECT_EQ(problem([](RunOptions& o) {
              o.ideas.dir = "/tmp/ideas";
              o.ideas.budget = 0;
            }),
            "--idea-budget must be at least 1 config");
  EXPECT_EQ(problem([](RunOptions& o) {
              o.ideas.dir = "/tmp/ideas";
              o.ideas.poll_s = 0;
            }),
            "--idea-poll must be positive");
  EXPECT_EQ(problem([](RunOptions& o) { o.manifest = "/nonexistent/m.json"; }),
            "--manifest: no such file /nonexistent/m.json");
  EXPECT_NE(problem([](RunOptions& o) { o.strategy = "annealing"; }).find("--strategy: unknown 'annealing' ("),
            std::string::npos);
}

// The command reports the same check with exit 2, before it touches the DB.
TEST(RunOptions, TheRunCommandGivesTheSameMessage) {
  const std::string dir = test::temp_dir("run_options");
  const auto out = test::run_binary("run --db '" + dir + "/t.db' --suite smoke --rotate-seeds --iterations 1");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("--rotate-seeds needs a suite whose case seeds come from a root seed (quick, full, broad), "
                          "not smoke"),
            std::string::npos)
      << out.text;
}

}  // namespace
}  // namespace attn
