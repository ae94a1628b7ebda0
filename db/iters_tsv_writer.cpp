#include "db/iters_tsv_writer.hpp"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "db/iters_tsv.hpp"
#include "db/iters_tsv_owner.hpp"

namespace attn {

ItersTsvWriter::ItersTsvWriter(std::string path, AllRows all_rows, TailOf tail)
    : path_(std::move(path)), all_rows_(std::move(all_rows)), tail_(std::move(tail)) {}

void ItersTsvWriter::remember_size() {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path_, ec);
  expected_size_ = ec ? std::nullopt : std::optional<std::uintmax_t>(size);
}

void ItersTsvWriter::rebuild() {
  expected_size_.reset();
  const std::vector<IterationRecord> rows = all_rows_();
  if (!written_) {  // not written by this writer yet: whose log is it (db/iters_tsv_owner.hpp)?
    std::string first;  // the DB's first finished iteration's line
    for (const auto& it : rows)
      if (it.status != IterationStatus::running) {
        first = render_row(it);
        break;
      }
    if (const auto why = iters_tsv_not_owned(path_, first)) throw std::runtime_error(*why);
  }
  write_all(path_, rows);
  written_ = true;
  remember_size();
}

bool ItersTsvWriter::rebuild_unless_current() {
  if (tail_) {
    const Tail t = tail_();
    if (tsv_matches(path_, t.finished, t.last ? render_row(*t.last) : std::string())) {
      written_ = true;  // the DB's rendering as it is: this DB's log
      remember_size();
      return false;
    }
  }
  rebuild();
  return true;
}

ItersTsvWriter::Outcome ItersTsvWriter::write(const IterationRecord& it, std::string& message) {
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
      expected_size_.reset();  // until the append is known to be complete
      append_row(path_, it);
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
