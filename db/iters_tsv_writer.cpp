#include "db/iters_tsv_writer.hpp"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "db/iters_tsv.hpp"
#include "db/iters_tsv_owner.hpp"

namespace attn {

ItersTsvWriter::ItersTsvWriter(std::string path, RowsAfter rows_after, TailOf tail)
    : path_(std::move(path)), rows_after_(std::move(rows_after)), tail_(std::move(tail)) {}

void ItersTsvWriter::remember_size() {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path_, ec);
  expected_size_ = ec ? std::nullopt : std::optional<std::uintmax_t>(size);
}

void ItersTsvWriter::rebuild() {
  expected_size_.reset();
  const std::vector<IterationRecord> rows = rows_after_(std::nullopt);  // the rows after a running one wait for it
  if (!written_) {  // not written by this writer yet: whose log is it (db/iters_tsv_owner.hpp)?
    const std::string first = rows.empty() ? std::string() : render_row(rows.front());  // the DB's first finished
    if (const auto why = iters_tsv_not_owned(path_, first)) throw std::runtime_error(*why);
  }
  write_all(path_, rows);
  written_ = true;
  last_written_ = rows.empty() ? std::nullopt : std::optional(rows.back().iter);
  remember_size();
}

bool ItersTsvWriter::rebuild_unless_current() {
  if (tail_) {
    const Tail t = tail_();
    if (tsv_matches(path_, t.finished, t.last ? render_row(*t.last) : std::string())) {
      written_ = true;  // the DB's rendering as it is: this DB's log
      last_written_ = t.last ? std::optional(t.last->iter) : std::nullopt;
      remember_size();
      return false;
    }
  }
  rebuild();
  return true;
}

ItersTsvWriter::Outcome ItersTsvWriter::write_ready(std::string& message) {
  message.clear();
  try {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path_, ec);
    std::string why;
    if (!expected_size_) why = last_failed_ ? "the last write to it had failed" : "not written by this run yet";
    else if (ec) why = "it was missing";
    else if (size != *expected_size_)
      why = fmt::format("it had changed ({} bytes, {} expected)", size, *expected_size_);
    if (why.empty()) {
      const std::vector<IterationRecord> rows = rows_after_(last_written_);
      if (rows.empty()) return Outcome::appended;  // an earlier iteration still runs
      expected_size_.reset();  // until the append is known to be complete
      append_rows(path_, rows);
      last_written_ = rows.back().iter;
      remember_size();
      last_failed_ = false;
      return Outcome::appended;
    }
    rebuild();
    last_failed_ = false;
    message = fmt::format("{} rebuilt from the DB: {}", path_, why);
    return Outcome::rebuilt;
  } catch (const std::exception& e) {
    expected_size_.reset();
    last_failed_ = true;
    message = fmt::format("cannot write {} ({}); the DB has every iteration, and the file is rebuilt from it "
                          "at the next write or start",
                          path_, e.what());
    return Outcome::failed;
  }
}

}  // namespace attn
