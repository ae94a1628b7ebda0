// The run's connection to its experiment DB and its iters.tsv, with one owner: every thread of the tuning loop writes
// and reads the DB through it (SQLite's connection and its prepared statements are one thread's at a time). The
// proposer's and the idea agents' calls write through connections of their own (SQLite serialises the writers).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include "db/iters_tsv_writer.hpp"
#include "db/store.hpp"

namespace attn::tuning {

/// Thread-safe: one lock, held for each DB call (and an iteration's iters.tsv line).
class DbWriter {
 public:
  /// Opens the DB at `db_path` (creating or migrating it: ExperimentDb::open; throws as it does), its commits synced
  /// at every commit with `sync_full` (RunOptions::db_sync_full); iters.tsv at `tsv_path` is its rendering.
  DbWriter(const std::string& db_path, const std::string& tsv_path, bool sync_full);
  /// `f(ExperimentDb&)` with the DB to itself; its result.
  template <class F>
  decltype(auto) with(F&& f) {
    std::lock_guard lock(mu_);
    return std::forward<F>(f)(db_);
  }
  /// A finished iteration: its row (one transaction), then the lines of iters.tsv it makes ready, in iter order (its
  /// own once every earlier iteration has finished, and any later ones held back for it: ItersTsvWriter::write_ready;
  /// the file rebuilt from the DB when it is not as this writer left it; a failed write is a warning, the next one
  /// rebuilds).
  void finish_iteration(IterationRecord& it);
  /// The lines of iters.tsv made ready by an iteration another connection finished (a proposer's crash iteration).
  void log_ready();
  /// iters.tsv kept when it is in step with the DB, else rebuilt (the start of a run). Throws when it cannot be written.
  void rebuild_tsv_unless_current();
  const std::string& tsv_path() const { return tsv_.path(); }

 private:
  std::mutex mu_;
  ExperimentDb db_;
  ItersTsvWriter tsv_;
  void write_ready_locked();
};

}  // namespace attn::tuning
