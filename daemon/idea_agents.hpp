// The idea agent beside the tuning (docs/ideas.md, "Agents that write ideas"): while the idea queue holds fewer ideas
// than --idea-agent-min, up to --idea-agent-parallel calls of the agent run at once, each on a thread of its own in a
// fresh kit (proposer/idea_agent_call.hpp: the command under the proposer's limits, its *.idea files into the queue),
// each recorded (idea_agent_calls); the queue takes their ideas as it takes a person's, and keeps the GPU fed while
// the agents think.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "daemon/background_calls.hpp"
#include "daemon/champions.hpp"
#include "daemon/idea_bench.hpp"
#include "daemon/scheduler.hpp"
#include "proposer/idea_agent_call.hpp"

namespace attn::tuning {

/// Thread-safe: one lock, held while calls are started or collected (never while one runs).
class IdeaAgents {
 public:
  /// The parts of the run the calls work with (all outlive them).
  struct Env {
    IdeaBench& bench;
    Champions& champions;
    Scheduler& scheduler;
    Compiler& compiler;
    const StopRequest& stop;
    std::function<void(const std::string&)> say;
  };
  /// The agent of `o.idea_agent` (off without a command or an idea queue) for suite `suite`.
  IdeaAgents(const RunOptions& o, std::string suite, std::string templates_dir, Env env);
  bool enabled() const { return o_.idea_agent.enabled() && o_.ideas.enabled(); }
  void set_run(std::int64_t run_id) { run_id_ = run_id; }
  /// Called by every GPU's loop: finished calls collected (their ideas looked at now); new ones started while fewer
  /// than RunOptions::idea_agent.parallel run and a call is due (IdeaAgentOptions::due).
  void poll();
  /// The run's end: calls still running are stopped (recorded interrupted) and collected.
  void finish();

 private:
  const RunOptions& o_;
  const std::string suite_, templates_dir_;
  Env env_;
  std::int64_t run_id_ = 0;
  std::mutex mu_;
  BackgroundCalls<IdeaAgentResult> calls_;
  std::optional<Clock::time_point> ended_;  // when the last call ended
  bool queued_none_ = false;                // the last call queued no idea

  void collect(bool wait);
};

}  // namespace attn::tuning
