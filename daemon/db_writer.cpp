// The run's DB and iters.tsv (daemon/db_writer.hpp).
#include "daemon/db_writer.hpp"

#include <spdlog/spdlog.h>

namespace attn::tuning {

DbWriter::DbWriter(const std::string& db_path, const std::string& tsv_path, bool sync_full)
    : db_(ExperimentDb::open(db_path)),
      tsv_(tsv_path,  // appended and rebuilt from the DB (called with mu_ held)
           [this](std::optional<std::int64_t> after) { return db_.finished_after(after); },
           [this] {
             const auto [finished, last] = db_.finished_tail();
             return ItersTsvWriter::Tail{finished, last ? db_.iteration(*last) : std::nullopt};
           }) {
  db_.set_sync_full(sync_full);
}

void DbWriter::finish_iteration(IterationRecord& it) {
  std::lock_guard lock(mu_);
  db_.finish_iteration(it);
  write_ready_locked();
}

void DbWriter::log_ready() {
  std::lock_guard lock(mu_);
  write_ready_locked();
}

void DbWriter::write_ready_locked() {
  std::string note;
  if (tsv_.write_ready(note) != ItersTsvWriter::Outcome::appended) spdlog::warn("{}", note);
}

void DbWriter::rebuild_tsv_unless_current() {
  std::lock_guard lock(mu_);
  tsv_.rebuild_unless_current();
}

}  // namespace attn::tuning
