// The idea agent in the tuning loop (daemon/loop.hpp, docs/ideas.md, "Agents that write ideas"): while the idea
// queue holds fewer ideas than --idea-agent-min, one call of the agent runs on a thread beside the tuning
// (proposer/idea_agent_call.hpp: a fresh kit, the command under the proposer's limits, its *.idea files into
// the queue); the queue takes them as it takes a person's.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/templates_dir.hpp"
#include "daemon/loop.hpp"
#include "daemon/pid_lock.hpp"
#include "daemon/stale_worker.hpp"
#include "daemon/supervise.hpp"

namespace attn::tuning {

void Loop::poll_idea_agent() {
  if (!o_.idea_agent.enabled() || !o_.ideas.enabled()) return;
  collect_idea_agent();
  if (agent_call_.valid() || stop_reason()) return;
  std::string problem;
  const std::size_t pending = untaken_ideas(scan_idea_queue(o_.ideas.dir, problem), ideas_.taken_keys()) + (ideas_.current() ? 1 : 0);
  const double since = agent_ended_ ? seconds_since(*agent_ended_) : -1;
  if (!o_.idea_agent.due(pending, champions_.overall().has_value(), since, agent_queued_none_)) return;
  std::vector<std::string> template_dirs{templates_dir_};
  if (default_templates_dir() != templates_dir_) template_dirs.push_back(default_templates_dir());
  IdeaAgentRequest req{summary_.run_id, suite_label_, o_.db_path, templates_dir_, o_.ideas.dir, template_dirs,
                       {o_.db_path, o_.db_path + "-wal", o_.db_path + "-shm", o_.db_path + "-journal", tsv_path_,
                        status_file_for(o_.db_path), status_file_for(o_.db_path) + ".tmp",
                        worker_record_file_for(o_.db_path), pid_file_for(o_.db_path), log_file_for(o_.db_path),
                        compiler_.cache_dir(), o_.ideas.dir, proposals_dir_for(o_.db_path)},
                       compiler_.cache_dir()};
  agent_cancel_ = false;
  agent_call_ = std::async(std::launch::async, [this, req] {
    auto db = ExperimentDb::open(o_.db_path);  // a connection of its own: SQLite serialises the two writers
    return run_idea_agent_call(o_.idea_agent, req, db, [this] { return stop_.stopping() || agent_cancel_.load(); });
  });
  say(fmt::format("idea agent: `{}` runs beside the tuning ({} idea(s) waiting, fewer than {})", o_.idea_agent.command,
                  pending, o_.idea_agent.min_queued));
}

bool Loop::collect_idea_agent(bool wait) {
  if (!agent_call_.valid()) return false;
  if (!wait && agent_call_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
  agent_ended_ = Clock::now();
  IdeaAgentResult r;
  try {
    r = unlocked(mu_, [&] { return agent_call_.get(); });
  } catch (const std::exception& e) {
    spdlog::error("idea agent call failed: {}", e.what());
    say(std::string("idea agent: the call failed: ") + e.what());
    agent_queued_none_ = true;
    return false;
  }
  agent_queued_none_ = r.queued.empty();
  say(r.summary);
  if (!r.queued.empty()) ideas_.look_now();  // the queue now
  return true;
}

}  // namespace attn::tuning
