// The idea agent's calls in the experiment DB (tables idea_agent_calls and idea_agent_ideas, schema version 9,
// docs/db-schema.md): which call of `run --idea-agent CMD` wrote which idea, with the kit it was given and its
// output. Free functions on an ExperimentDb's connection.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/store.hpp"

namespace attn {

/// One call of the idea agent.
struct IdeaAgentCallRecord {
  std::int64_t id = 0;  ///< set by the DB
  std::int64_t run_id = 0;
  std::string command;
  std::string status = "running";  ///< running, done (it exited 0: its ideas queued), failed, interrupted
  std::string reason;              ///< why failed / interrupted; what it queued when done
  std::string exit_status;         ///< "exited with code 0", "killed after the 600 s limit", ...
  std::optional<double> agent_ms;
  std::string output;              ///< the tail of its stdout + stderr
  std::string parent_template;     ///< the kit's parent (the champion's template)
  std::optional<std::int64_t> champion_iteration_id;
  std::string context_json = "{}"; ///< {"path in the kit": text}: the kit's files as the agent saw them
  std::string started_at, finished_at;  ///< set by the DB
};

/// One idea file an agent call wrote.
struct IdeaAgentIdeaRecord {
  std::int64_t call_id = 0;
  std::string file;       ///< as the agent named it
  std::string queued_as;  ///< the queue file it was copied to: `ideas.file` of its verdict row
  std::string idea_hash;  ///< parse_idea's hash, or "file:<XXH3-128>" for bytes that are not an idea
  std::string text;
};

/// Inserts `c` (status running) and returns its id. Throws std::invalid_argument for an unknown run or status.
std::int64_t begin_idea_agent_call(ExperimentDb& db, const IdeaAgentCallRecord& c);
/// Writes status, reason, exit_status, agent_ms, output, parent_template, champion_iteration_id,
/// context_json of call `c.id`, and finished_at unless running. Throws std::invalid_argument when there is
/// no such call.
void finish_idea_agent_call(ExperimentDb& db, const IdeaAgentCallRecord& c);
/// Records an idea file of a call. Throws on a duplicate (call, file).
void add_idea_agent_idea(ExperimentDb& db, const IdeaAgentIdeaRecord& i);
/// Every call, oldest first (none for a DB older than version 9, read as it is).
std::vector<IdeaAgentCallRecord> idea_agent_calls(ExperimentDb& db);
/// The idea files of call `call_id` (every call's when none), in the order they were added.
std::vector<IdeaAgentIdeaRecord> idea_agent_ideas(ExperimentDb& db, std::optional<std::int64_t> call_id = std::nullopt);
/// Calls left running by a killed daemon become interrupted; returns their ids.
std::vector<std::int64_t> mark_interrupted_idea_agent_calls(ExperimentDb& db);

}  // namespace attn
