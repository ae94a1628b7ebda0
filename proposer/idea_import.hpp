// Ideas that an agent wrote outside the daemon (`attn-tuner idea import`, docs/ideas.md, "Agents that write
// ideas"): a person ran an agent on a kit of `idea context` by hand, not through `run --idea-agent`. The record
// is the one a daemon call leaves (db/store_idea_agents.hpp): one idea_agent_calls row with the kit's files as
// the agent saw them, and one idea_agent_ideas row per idea file; with a queue folder, the files go into it
// under their own names, so that their verdict rows (`ideas.file`) join the record.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "db/store.hpp"

namespace attn {

/// What `idea import` records.
struct IdeaImportRequest {
  std::string kit_dir;             ///< the kit as the agent saw it (IDEA.md and champion.json at its top)
  std::string agent;               ///< who wrote the ideas and how, e.g. "helper agent d, softmax focus"
  std::vector<std::string> files;  ///< the *.idea files it wrote
  std::string queue_dir;           ///< "" = record only (ideas already queued or judged under these names)
};

/// The call's id and the queue names of its ideas (each file's own name).
struct IdeaImportResult {
  std::int64_t call_id = 0;
  std::vector<std::string> queued_as;
};

/// Records the agent call on the DB's latest run (status done, command "outside the daemon: " + agent), the
/// parent and champion from the kit's champion.json, and the ideas; copies them into queue_dir when given
/// (written under a hidden name and renamed: the queue never reads half a file).
/// Throws std::invalid_argument naming the problem, with nothing recorded, for: a DB without runs, a folder
/// that is not a kit, an idea file that is missing, not named *.idea or over the queue's size limit, two
/// files of one name, a name another agent call already recorded, or a queue file of that name with other
/// bytes.
IdeaImportResult import_agent_ideas(ExperimentDb& db, const IdeaImportRequest& r);

}  // namespace attn
