// The daemon's own files, as the calls beside the tuning see them (daemon/background_calls.hpp).
#include "daemon/background_calls.hpp"

#include "core/templates_dir.hpp"
#include "daemon/pid_lock.hpp"
#include "daemon/stale_worker.hpp"
#include "daemon/supervise.hpp"
#include "proposer/idea_agent_call.hpp"
#include "proposer/proposal_round.hpp"

namespace attn::tuning {

std::vector<std::string> daemon_files(const RunOptions& o, const std::string& cache_dir) {
  const std::string& db = o.db_path;
  std::vector<std::string> files{db, db + "-wal", db + "-shm", db + "-journal", tsv_path_of(o), status_file_for(db),
                                 status_file_for(db) + ".tmp", worker_record_file_for(db), pid_file_for(db),
                                 log_file_for(db), cache_dir, proposals_dir_for(db), idea_agent_dir_for(db)};
  if (!o.ideas.dir.empty()) files.push_back(o.ideas.dir);  // a person drops ideas in meanwhile
  return files;
}

std::vector<std::string> call_template_dirs(const std::string& templates_dir) {
  std::vector<std::string> dirs{templates_dir};
  if (default_templates_dir() != templates_dir) dirs.push_back(default_templates_dir());
  return dirs;
}

}  // namespace attn::tuning
