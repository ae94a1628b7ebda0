// `attn-tuner idea import` (proposer/idea_import.hpp): ideas an agent wrote from a kit outside the daemon are
// recorded as the daemon records an idea agent's call (the kit's files, each idea with its queue name), and
// queued; bad input names the problem and records nothing.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "db/store_idea_agents.hpp"
#include "proposer/idea_import.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/test_support.hpp"
#include "core/text_file.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

struct ImportFixture : ::testing::Test {
  std::string dir = test::temp_dir("attn-idea-import");
  std::string db_path = dir + "/t.db";
  std::string kit = dir + "/kit", queue = dir + "/queue";
  std::int64_t champion_iter = 0;

  void SetUp() override {
    auto db = ExperimentDb::open(db_path);
    const auto run = test::begin_test_run(db, "smoke", "fake");
    IterationRecord it;
    it.run_id = run;
    it.suite = "smoke";
    it.template_name = "fake";
    it.params_json = R"({"A":1})";
    champion_iter = db.begin_iteration(it);
    fs::create_directories(kit + "/template");
    write_text_file(kit + "/IDEA.md", "# Writing a kernel idea\n");
    write_text_file(kit + "/champion.json", nlohmann::json{{"iteration", champion_iter}, {"template", "fake_p3"}}.dump());
    write_text_file(kit + "/template/fake.cu", "// the parent\n");
  }
  std::string idea(const std::string& name, const std::string& text) {
    write_text_file(dir + "/" + name, text);
    return dir + "/" + name;
  }
};

TEST_F(ImportFixture, RecordsTheCallWithItsKitAndQueuesEachIdeaUnderItsName) {
  const auto a = idea("agent_d_one.idea", test::fake_axis_idea("one", "why", "ONE", "ONE", "int one = 1;"));
  const auto b = idea("agent_d_bad.idea", "Description: x\nColour: red\n\n");  // not an idea: the daemon judges it
  auto db = ExperimentDb::open(db_path);
  const auto r = import_agent_ideas(db, {kit, "helper agent d, softmax focus", {a, b}, queue});
  EXPECT_EQ(r.queued_as, (std::vector<std::string>{"agent_d_one.idea", "agent_d_bad.idea"}));
  const auto calls = idea_agent_calls(db);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].id, r.call_id);
  EXPECT_EQ(calls[0].command, "outside the daemon: helper agent d, softmax focus");
  EXPECT_EQ(calls[0].status, "done");
  EXPECT_EQ(calls[0].parent_template, "fake_p3");
  EXPECT_EQ(calls[0].champion_iteration_id, std::optional<std::int64_t>(champion_iter));
  const auto seen = nlohmann::json::parse(calls[0].context_json);
  EXPECT_EQ(seen.at("template/fake.cu"), "// the parent\n");
  EXPECT_EQ(seen.at("IDEA.md"), "# Writing a kernel idea\n");
  const auto ideas = idea_agent_ideas(db, r.call_id);
  ASSERT_EQ(ideas.size(), 2u);
  EXPECT_EQ(ideas[0].text, read_text_file(a));
  EXPECT_EQ(ideas[0].idea_hash.rfind("file:", 0), std::string::npos);  // parsed: the idea's own hash
  EXPECT_EQ(ideas[1].idea_hash.rfind("file:", 0), 0u);
  EXPECT_EQ(read_text_file(queue + "/agent_d_one.idea"), read_text_file(a));
  EXPECT_TRUE(fs::exists(queue + "/agent_d_bad.idea"));
  // The same name again, from another call: refused, nothing more recorded.
  EXPECT_THROW(import_agent_ideas(db, {kit, "again", {a}, ""}), std::invalid_argument);
  EXPECT_EQ(idea_agent_calls(db).size(), 1u);
}

TEST_F(ImportFixture, BadInputNamesTheProblemAndRecordsNothing) {
  const auto a = idea("a.idea", test::fake_axis_idea("one", "why", "ONE", "ONE", "int one = 1;"));
  auto db = ExperimentDb::open(db_path);
  const auto message = [&](IdeaImportRequest r) {
    try {
      import_agent_ideas(db, r);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({dir + "/template", "x", {a}, queue}).find("is not a kit"), std::string::npos);
  EXPECT_NE(message({kit, "x", {dir + "/missing.idea"}, queue}).find("no such file"), std::string::npos);
  EXPECT_NE(message({kit, "x", {idea("a.txt", "Description: x\n")}, queue}).find("*.idea"), std::string::npos);
  EXPECT_NE(message({kit, "", {a}, queue}).find("--agent"), std::string::npos);
  fs::create_directories(queue);
  write_text_file(queue + "/a.idea", "other bytes");
  EXPECT_NE(message({kit, "x", {a}, queue}).find("exists with other bytes"), std::string::npos);
  write_text_file(kit + "/champion.json", R"({"iteration": 999, "template": "fake"})");
  EXPECT_NE(message({kit, "x", {a}, ""}).find("iteration 999, is not in"), std::string::npos);
  EXPECT_TRUE(idea_agent_calls(db).empty());
  EXPECT_EQ(read_text_file(queue + "/a.idea"), "other bytes");
}

}  // namespace
}  // namespace attn
