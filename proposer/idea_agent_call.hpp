// One call of the idea agent (`run --idea-agent CMD`, docs/ideas.md, "Agents that write ideas"): a fresh kit
// (`idea context`: the parent template, the champion, IDEA.md, the ideas tried, the profile) in a folder of its
// own, the untrusted command run there under the proposer's limits (a wall-clock limit, its process group
// killed, writes outside its folder detected and undone: proposer/proposer_process.hpp, watched_files.hpp),
// then each *.idea file it wrote copied into the idea queue. The call, the kit as the agent saw it, its output
// and its ideas (with the queue name each went in as) are recorded (db/store_idea_agents.hpp).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "db/store.hpp"

namespace attn {

/// The idea agent options of `attn-tuner run`.
struct IdeaAgentOptions {
  std::string command;       ///< run with /bin/sh -c in the kit's folder; "" = no agent
  std::size_t min_queued = 1;///< a call is due while the queue holds fewer ideas than this
  double timeout_s = 1800;   ///< wall-clock limit of one call
  double retry_s = 300;      ///< after a call that queued no idea, the wait before the next
  std::size_t parallel = 1;  ///< calls at once, each in a kit of its own (--idea-agent-parallel)
  bool enabled() const { return !command.empty(); }
  /// Whether a call is due now: `pending` ideas in the queue not yet judged (the one in progress counted),
  /// a champion to start from, and, when the last call queued nothing (`last_queued_none`), at least
  /// retry_s since it ended (`since_last_s`; negative: no call yet).
  bool due(std::size_t pending, bool has_champion, double since_last_s, bool last_queued_none) const;
};

/// Where a call runs.
struct IdeaAgentRequest {
  std::int64_t run_id = 0;
  std::string suite;
  std::string db_path;                    ///< its folder is watched; the agent gets no path to it
  std::string templates_dir;              ///< the repository templates (the kit's parent when not a proposal)
  std::string queue_dir;                  ///< where its ideas go (`run --ideas DIR`)
  std::vector<std::string> template_dirs; ///< watched with contents and restored after a write
  std::vector<std::string> daemon_files;  ///< what the daemon writes meanwhile: not watched
  std::string cache_dir;                  ///< the compile cache (the champion's cubin for the profile)
};

/// What a call did.
struct IdeaAgentResult {
  std::int64_t call_id = 0;
  std::string status;               ///< done, failed, interrupted
  std::vector<std::string> queued;  ///< the queue file names of its ideas
  std::string summary;              ///< one line for the progress output
};

/// The folder of a DB's idea agent calls: "<db dir>/idea_agent"; call N works in <that>/N/kit, its output is
/// <that>/N/agent.log.
std::string idea_agent_dir_for(const std::string& db_path);

/// The files under `kit` (recursively) as {"path relative to kit": text}, dumped as JSON (invalid UTF-8
/// replaced): the record of the kit an agent saw (idea_agent_calls.context_json). Throws on an unreadable file.
std::string kit_files_json(const std::string& kit);

/// The identity recorded for an agent's idea file: parse_idea's hash, or "file:<XXH3-128 of the bytes>" for bytes
/// that are not an idea (queued all the same: the daemon judges them broken, bad_input).
std::string agent_idea_hash(const std::string& name, const std::string& text);

/// Writes `text` into the idea queue `queue_dir` as `name`, under a hidden name first and then renamed, so that
/// the queue never reads half a file. Creates the folder. Throws on an I/O error.
void write_queue_file(const std::string& queue_dir, const std::string& name, const std::string& text);

/// The queue file name of idea file `file` of call `call_id`: "agent<call_id>_<file>" (".idea" appended when
/// missing).
std::string agent_queue_name(std::int64_t call_id, const std::string& file);

/// Runs one call (see the file comment) with `db` (a connection of its own when it runs beside the tuning).
/// Ideas are queued only when the agent exited with code 0 and wrote nothing outside its folder; a timeout,
/// a crash or a write outside are recorded as failed, a stop (`should_stop`) as interrupted. Each *.idea
/// regular file at the top of the kit folder (at most kIdeaFileMaxBytes) is an idea. Throws only on DB or
/// I/O errors of the daemon's own files, or std::invalid_argument when the DB has no champion.
IdeaAgentResult run_idea_agent_call(const IdeaAgentOptions& options, const IdeaAgentRequest& request,
                                    ExperimentDb& db, const std::function<bool()>& should_stop);

}  // namespace attn
