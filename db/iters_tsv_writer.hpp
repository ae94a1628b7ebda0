// Keeps iters.tsv in step with the DB while the daemon runs. The DB is the source of truth; iters.tsv is its
// rendering, in iter order: a row that finished before an earlier iteration is held back until every earlier one has
// finished (two GPUs, a screen sent ahead, a proposer's crash iteration finish out of order). Whenever the file is not
// exactly what this writer left (deleted, truncated, edited, or a write failed half way, e.g. on a full disk) it is
// rebuilt from the DB instead of appended to, unless it has become another DB's log (db/iters_tsv_owner.hpp): that is
// never overwritten.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "db/records.hpp"

namespace attn {

class ItersTsvWriter {
 public:
  /// `rows_after(iter)` reads the DB's finished iterations after `iter` (all when none), in iter order, up to the
  /// first one still running (ExperimentDb::finished_after): what the file can append, keeping iter order (and,
  /// from the start, what a rebuild writes).
  using RowsAfter = std::function<std::vector<IterationRecord>(std::optional<std::int64_t>)>;
  /// What the file's end must be for a DB: its number of finished iterations and the last one.
  struct Tail {
    std::size_t finished = 0;
    std::optional<IterationRecord> last;
  };
  using TailOf = std::function<Tail()>;
  /// `tail` reads the DB's Tail, for rebuild_unless_current() (none: it always rebuilds).
  ItersTsvWriter(std::string path, RowsAfter rows_after, TailOf tail = {});

  /// Rewrites the file from the DB (atomically: write_all): rows_after(none), every finished iteration before the
  /// first one still running. Throws std::runtime_error naming the file when it cannot be written (the start of a run: nothing is logged yet), or, before this writer has written
  /// it, when it is not this DB's log (db/iters_tsv_owner.hpp: another DB's, or no log at all), which is never
  /// overwritten; once written, later rebuilds (the file deleted, truncated or edited mid-run) need no check.
  void rebuild();
  /// rebuild(), unless the file already matches the DB's tail (tsv_matches: the header, one line per finished
  /// iteration, the last one's line): the start of a run on a night's DB, whose file the last run left in step,
  /// reads the DB's tail instead of rendering a million rows. Returns whether it rebuilt. Throws as rebuild().
  bool rebuild_unless_current();

  enum class Outcome { appended, rebuilt, failed };
  /// Writes what the DB has ready after an iteration finished (committed, by this connection or another): the lines
  /// of rows_after(the last row written), when the file is as this writer left it (same size), else the whole file
  /// rebuilt from the DB. `appended` with nothing to append when an earlier iteration still runs. Never throws: a
  /// failed write is Outcome::failed with the reason in `message`, and the next call rebuilds. After `rebuilt`,
  /// `message` says why.
  Outcome write_ready(std::string& message);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  RowsAfter rows_after_;
  TailOf tail_;
  std::optional<std::int64_t> last_written_;  ///< the last iteration in the file (iter order); none: no row yet
  std::optional<std::uintmax_t> expected_size_;  ///< the file's size after our last write; none: rebuild next
  bool last_failed_ = false;
  bool written_ = false;  ///< this writer wrote the file, or found it in step with the DB: its DB's log
  void remember_size();
};

}  // namespace attn
