// The idea agent's calls beside the tuning (daemon/idea_agents.hpp).
#include "daemon/idea_agents.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace attn::tuning {

IdeaAgents::IdeaAgents(const RunOptions& o, std::string suite, std::string templates_dir, Env env)
    : o_(o), suite_(std::move(suite)), templates_dir_(std::move(templates_dir)), env_(std::move(env)),
      calls_(o.idea_agent.parallel) {}

void IdeaAgents::poll() {
  if (!enabled()) return;
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock) return;  // another GPU's thread is at it
  collect(false);
  while (calls_.room() && !env_.scheduler.stop_reason()) {
    std::string problem;
    const std::size_t waiting = env_.bench.waiting(scan_idea_queue(o_.ideas.dir, problem));
    const double since = ended_ ? seconds_since(*ended_) : -1;
    if (!o_.idea_agent.due(waiting, env_.champions.overall().has_value(), since, queued_none_)) return;
    const IdeaAgentRequest req{run_id_, suite_, o_.db_path, templates_dir_, o_.ideas.dir, call_template_dirs(templates_dir_),
                               daemon_files(o_, env_.compiler.cache_dir()), env_.compiler.cache_dir()};
    const RunOptions& o = o_;
    const StopRequest& stop = env_.stop;
    calls_.start([&o, &stop, req](const std::atomic<bool>& cancel) {
      auto db = ExperimentDb::open(o.db_path);  // a connection of its own: SQLite serialises the writers
      return run_idea_agent_call(o.idea_agent, req, db, [&] { return stop.stopping() || cancel.load(); });
    });
    env_.say(fmt::format("idea agent: `{}` runs beside the tuning ({} idea(s) waiting, fewer than {}{})",
                         o_.idea_agent.command, waiting, o_.idea_agent.min_queued,
                         o_.idea_agent.parallel > 1 ? fmt::format("; {} of {} calls at once", calls_.running(),
                                                                  o_.idea_agent.parallel)
                                                    : std::string()));
  }
}

void IdeaAgents::finish() {
  std::lock_guard lock(mu_);
  if (!calls_.running()) return;
  calls_.cancel();  // calls still running: stopped, recorded interrupted
  try {
    collect(true);
  } catch (const std::exception& e) {
    spdlog::warn("the last idea agent call: {}", e.what());
  }
}

void IdeaAgents::collect(bool wait) {
  for (auto& ended : calls_.collect(wait)) {
    ended_ = Clock::now();
    if (!ended.result) {
      spdlog::error("idea agent call failed: {}", ended.error);
      env_.say("idea agent: the call failed: " + ended.error);
      queued_none_ = true;
      continue;
    }
    queued_none_ = ended.result->queued.empty();
    env_.say(ended.result->summary);
    if (!ended.result->queued.empty()) env_.bench.look_now();  // the queue now
  }
}

}  // namespace attn::tuning
