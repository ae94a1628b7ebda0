// run_idea_agent_call: the kit, the watched run of the agent, its ideas into the queue (proposer/idea_agent_call.hpp).
#include "proposer/idea_agent_call.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "db/store_idea_agents.hpp"
#include "gpu/compiler.hpp"
#include "proposer/idea_context.hpp"
#include "proposer/idea_file.hpp"
#include "proposer/proposer_process.hpp"
#include "proposer/watched_files.hpp"
#include "core/text_file.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kOutputBytes = 64 * 1024;

std::string self_binary() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("attn-tuner") : p.string();
}

/// AGENT.md: what this call asks of the agent.
std::string agent_md(std::int64_t id, const IdeaAgentOptions& o, const std::string& root, const std::string& check) {
  return fmt::format(R"md(# Idea agent call {id}

Write one or more kernel ideas for the template in `template/`, as `*.idea` files at the top of this folder
(`my_idea.idea`). `IDEA.md` gives the format, every limit and what makes an idea pass; `profile/PROFILE.md`
where the champion's time goes; `ideas_tried.tsv` what was tried already (do not send one again unchanged).
Each idea is queued when you exit with code 0, then applied, checked, tuned and judged on the GPU against
its parent; a win becomes the parent of the next ones.

- You have {timeout:g} s; then you and every process you started are killed, and nothing is queued.
- Write only in this folder. Writes elsewhere are detected and undone, and nothing is queued.
- Check an idea before you finish: `{check} my_idea.idea` (no GPU; about 15 s a build; exit code 0 passes,
  IDEA.md lists the others). `$ATTN_IDEA_CHECK` holds that command.
- Template name for the `Template:` header: `{root}`.
)md",
                     fmt::arg("id", id), fmt::arg("timeout", o.timeout_s), fmt::arg("check", check), fmt::arg("root", root));
}

}  // namespace

std::string kit_files_json(const std::string& kit) {
  nlohmann::json j = nlohmann::json::object();
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(kit))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) j[fs::relative(f, kit).string()] = read_text_file(f.string());
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string agent_idea_hash(const std::string& name, const std::string& text) {
  try {
    return parse_idea(name, text).hash;
  } catch (const IdeaInputError&) {
    return non_idea_hash(text);
  }
}

void write_queue_file(const std::string& queue_dir, const std::string& name, const std::string& text) {
  fs::create_directories(queue_dir);
  const fs::path tmp = fs::path(queue_dir) / ("." + name + ".tmp"), dest = fs::path(queue_dir) / name;
  write_text_file(tmp.string(), text);
  fs::rename(tmp, dest);
}

bool IdeaAgentOptions::due(std::size_t pending, bool has_champion, double since_last_s, bool last_queued_none) const {
  if (!enabled() || !has_champion || pending >= min_queued) return false;
  if (since_last_s >= 0 && last_queued_none && since_last_s < retry_s) return false;
  return true;
}

std::string idea_agent_dir_for(const std::string& db_path) {
  return (fs::absolute(db_path).parent_path() / "idea_agent").lexically_normal().string();
}

std::string agent_queue_name(std::int64_t call_id, const std::string& file) {
  std::string name = fmt::format("agent{}_{}", call_id, fs::path(file).filename().string());
  if (fs::path(name).extension() != ".idea") name += ".idea";
  return name;
}

IdeaAgentResult run_idea_agent_call(const IdeaAgentOptions& o, const IdeaAgentRequest& r, ExperimentDb& db,
                                    const std::function<bool()>& should_stop) {
  IdeaAgentCallRecord rec;
  rec.run_id = r.run_id;
  rec.command = o.command;
  rec.id = begin_idea_agent_call(db, rec);
  IdeaAgentResult out;
  out.call_id = rec.id;
  const fs::path dir = fs::path(idea_agent_dir_for(r.db_path)) / std::to_string(rec.id), kit = dir / "kit";
  const std::string log = (dir / "agent.log").string();
  std::error_code ec;
  fs::remove_all(dir, ec);  // left over from a DB that was replaced
  fs::create_directories(dir);

  const auto finish = [&](std::string status, std::string reason) {
    rec.status = std::move(status);
    rec.reason = std::move(reason);
    finish_idea_agent_call(db, rec);
    out.status = rec.status;
    out.summary = fmt::format("idea agent call {} {}: {}", rec.id, rec.status, rec.reason);
    return out;
  };
  IdeaContextRequest creq;
  creq.suite = r.suite;
  creq.templates_dir = r.templates_dir;
  creq.cache_dir = r.cache_dir;
  IdeaContextSummary ctx;
  try {
    ctx = write_idea_context(kit.string(), db, creq);
  } catch (const std::invalid_argument& e) {
    return finish("failed", std::string("no kit: ") + e.what());
  }
  rec.parent_template = ctx.parent_template;
  rec.champion_iteration_id = ctx.champion_iter;
  const std::string root = proposal_root_template(ctx.parent_template);
  const std::string check = fmt::format("{} idea check --templates {} --template {}", self_binary(),
                                        (kit / "template").string(), root);
  write_text_file((kit / "AGENT.md").string(), agent_md(rec.id, o, root, check));
  rec.context_json = kit_files_json(kit.string());
  finish_idea_agent_call(db, rec);  // the kit as the agent sees it, recorded before it runs

  // The watched set, as for the proposer (proposer/proposal_round.cpp).
  WatchedSet watched;
  for (const auto& t : r.template_dirs) watched.add(t, true);
  watched.add(fs::absolute(r.db_path).parent_path().string(), false);
  watched.exclude(dir.string());
  const std::string db_file = fs::absolute(r.db_path).lexically_normal().string();
  watched.exclude(db_file + "-shm");
  watched.exclude(db_file + ".log");
  watched.by_content(db_file);
  watched.by_content(db_file + "-wal");
  for (const auto& f : r.daemon_files) watched.exclude(fs::absolute(f).lexically_normal().string());
  spdlog::info("idea agent call {}: running `{}` in {} (limit {:g} s)", rec.id, o.command, kit.string(), o.timeout_s);
  const Snapshot before = watched.snapshot();
  const ProposerExit ex = run_proposer_command(
      o.command, kit.string(), log,
      proposer_environment({fmt::format("ATTN_IDEA_AGENT_CALL={}", rec.id), "ATTN_IDEA_CHECK=" + check}), o.timeout_s,
      should_stop);
  const Snapshot after = watched.snapshot();
  rec.exit_status = ex.status;
  rec.agent_ms = ex.wall_ms;
  rec.output = file_tail(log, kOutputBytes);

  const std::vector<std::string> changes = snapshot_changes(before, after);
  std::string outside;
  if (!changes.empty()) {
    std::vector<std::string> head(changes.begin(), changes.begin() + std::ptrdiff_t(std::min<std::size_t>(5, changes.size())));
    outside = fmt::format("it wrote outside its folder: {}", fmt::join(head, "; "));
    try {
      const auto done = restore_snapshot(before, after);
      if (!done.empty()) outside += fmt::format(" (put back: {} path(s))", done.size());
    } catch (const std::exception& e) {
      outside += std::string(" (putting back failed: ") + e.what() + ")";
    }
    spdlog::warn("idea agent call {}: {}", rec.id, outside);
  }
  if (ex.stopped) return finish("interrupted", "the daemon was asked to stop while the agent ran; " + ex.status +
                                                   (outside.empty() ? "" : "; " + outside));
  if (!outside.empty()) return finish("failed", outside + "; nothing queued");
  if (!ex.ok()) return finish("failed", "the agent failed: " + ex.status + "; nothing queued");

  // Its ideas, into the queue: written under a name the queue does not read, then renamed.
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kit))
    if (e.path().extension() == ".idea" && fs::is_regular_file(fs::symlink_status(e.path()))) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> skipped;
  fs::create_directories(r.queue_dir);
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    if (fs::file_size(f, ec) > kIdeaFileMaxBytes) {
      skipped.push_back(fmt::format("{} (over {} bytes)", name, kIdeaFileMaxBytes));
      continue;
    }
    const std::string text = read_text_file(f.string());
    const IdeaAgentIdeaRecord i{rec.id, name, agent_queue_name(rec.id, name), agent_idea_hash(name, text), text};
    write_queue_file(r.queue_dir, i.queued_as, text);
    add_idea_agent_idea(db, i);
    out.queued.push_back(i.queued_as);
  }
  std::string reason = out.queued.empty() ? "it wrote no idea" : fmt::format("queued {}", fmt::join(out.queued, ", "));
  if (!skipped.empty()) reason += fmt::format("; left out: {}", fmt::join(skipped, ", "));
  return finish("done", reason + fmt::format(" ({:.0f} s)", ex.wall_ms / 1000));
}

}  // namespace attn
