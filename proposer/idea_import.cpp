// import_agent_ideas: an agent's ideas written outside the daemon, recorded as a call of the idea agent
// (proposer/idea_import.hpp).
#include "proposer/idea_import.hpp"

#include <filesystem>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "db/sqlite.hpp"
#include "db/store_idea_agents.hpp"
#include "proposer/idea_agent_call.hpp"
#include "proposer/idea_file.hpp"
#include "core/text_file.hpp"

namespace attn {
namespace fs = std::filesystem;

IdeaImportResult import_agent_ideas(ExperimentDb& db, const IdeaImportRequest& r) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("idea import: " + what); };
  if (r.agent.empty()) fail("--agent is empty: say who wrote the ideas");
  if (r.files.empty()) fail("no idea file given");
  const fs::path kit(r.kit_dir);
  if (!fs::is_regular_file(kit / "IDEA.md") || !fs::is_regular_file(kit / "champion.json"))
    fail(fmt::format("{} is not a kit of `idea context` (IDEA.md and champion.json at its top)", r.kit_dir));
  nlohmann::json champion;
  try {
    champion = nlohmann::json::parse(read_text_file((kit / "champion.json").string()));
  } catch (const std::exception& e) {
    fail(fmt::format("{}/champion.json: {}", r.kit_dir, e.what()));
  }
  if (!champion.is_object()) {
    fail(fmt::format("{}/champion.json is not a JSON object", r.kit_dir));
  }
  const auto runs = db.runs();
  if (runs.empty()) fail(fmt::format("{} has no run to attach the agent's call to", db.path()));
  const auto champion_iter = champion.value("iteration", std::int64_t(0));
  if (!db.iteration(champion_iter))
    fail(fmt::format("the kit's champion, iteration {}, is not in {}: a kit of another DB?", champion_iter, db.path()));

  // Every file is read and vetted before anything is written.
  std::vector<IdeaAgentIdeaRecord> ideas;
  std::set<std::string> names;
  std::set<std::string> recorded;
  for (const auto& i : idea_agent_ideas(db)) recorded.insert(i.queued_as);
  for (const auto& f : r.files) {
    const std::string name = fs::path(f).filename().string();
    std::error_code ec;
    if (!fs::is_regular_file(f)) fail(fmt::format("{}: no such file", f));
    if (fs::path(name).extension() != ".idea") fail(fmt::format("{}: an idea file is named *.idea", f));
    if (fs::file_size(f, ec) > kIdeaFileMaxBytes) fail(fmt::format("{}: over the queue's {} bytes", f, kIdeaFileMaxBytes));
    if (!names.insert(name).second) fail(fmt::format("two files named {}", name));
    if (recorded.count(name)) fail(fmt::format("{}: an agent call in {} already recorded an idea of that name", name, db.path()));
    const std::string text = read_text_file(f);
    IdeaAgentIdeaRecord i{0, name, name, agent_idea_hash(name, text), text};
    if (!r.queue_dir.empty()) {
      const fs::path dest = fs::path(r.queue_dir) / name;
      if (fs::exists(dest) && read_text_file(dest.string()) != i.text)
        fail(fmt::format("{} exists with other bytes", dest.string()));
    }
    ideas.push_back(std::move(i));
  }

  IdeaImportResult out;
  sqlite::Transaction tx(db.connection());
  IdeaAgentCallRecord rec;
  rec.run_id = runs.back().id;
  rec.command = "outside the daemon: " + r.agent;
  rec.id = begin_idea_agent_call(db, rec);
  rec.status = "done";
  rec.exit_status = "not run by the daemon";
  rec.parent_template = champion.value("template", std::string());
  rec.champion_iteration_id = champion_iter;
  rec.context_json = kit_files_json(r.kit_dir);
  for (auto& i : ideas) {
    i.call_id = rec.id;
    add_idea_agent_idea(db, i);
    out.queued_as.push_back(i.queued_as);
  }
  rec.reason = fmt::format("imported {}{}", fmt::join(out.queued_as, ", "),
                           r.queue_dir.empty() ? " (recorded only)" : " into " + r.queue_dir);
  finish_idea_agent_call(db, rec);
  if (!r.queue_dir.empty())
    for (const auto& i : ideas) write_queue_file(r.queue_dir, i.queued_as, i.text);
  tx.commit();
  out.call_id = rec.id;
  return out;
}

}  // namespace attn
