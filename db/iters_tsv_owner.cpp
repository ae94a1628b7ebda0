#include "db/iters_tsv_owner.hpp"

#include <filesystem>
#include <fstream>
#include <string_view>

#include <fmt/format.h>

#include "db/iters_tsv.hpp"
#include "db/store.hpp"

namespace attn {

namespace fs = std::filesystem;

std::string default_iters_tsv_path(const std::string& db_path) {
  fs::path p(db_path);
  p.replace_extension(".iters.tsv");
  return p.string();
}

std::optional<std::string> iters_tsv_not_owned(const std::string& tsv_path, const std::string& first_line) {
  std::ifstream in(tsv_path);
  if (!in) return std::nullopt;  // missing (or unreadable: the writer says so)
  std::string header, first;
  if (!std::getline(in, header)) return std::nullopt;  // empty
  if (header != kItersTsvHeader && !std::string_view(kItersTsvHeader).starts_with(header))  // a cut header: empty
    return fmt::format("{} is not an iters.tsv (its first line is not the header \"iter\\tgeomean_ms\\t...\"): a run "
                       "does not overwrite it; name the DB's log with --tsv FILE",
                       tsv_path);
  if (header != kItersTsvHeader || !std::getline(in, first) || first.empty()) return std::nullopt;  // no iteration
  if (first == first_line) return std::nullopt;
  const std::string iter = first.substr(0, first.find('\t'));
  if (first_line.empty())
    return fmt::format("{} is the log of another DB (it starts at iteration {}, and this DB has none): a run does "
                       "not overwrite it; name this DB's log with --tsv FILE, or move that file away",
                       tsv_path, iter);
  return fmt::format("{} is the log of another DB (its first iteration, {}, is not this DB's first): a run does not "
                     "overwrite it; name this DB's log with --tsv FILE, or move that file away",
                     tsv_path, iter);
}

std::optional<std::string> iters_tsv_not_owned(const std::string& tsv_path, ExperimentDb& db) {
  std::string first;
  if (const auto id = db.first_finished())
    if (const auto it = db.iteration(*id)) first = render_row(*it);
  return iters_tsv_not_owned(tsv_path, first);
}

std::optional<std::string> iters_tsv_not_owned_by_file(const std::string& tsv_path, const std::string& db_path) {
  std::error_code ec;
  if (!fs::exists(db_path, ec)) return iters_tsv_not_owned(tsv_path, std::string());
  try {
    auto db = ExperimentDb::open(db_path, ExperimentDb::Mode::read_only);
    return iters_tsv_not_owned(tsv_path, db);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace attn
