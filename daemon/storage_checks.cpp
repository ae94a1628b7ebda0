#include "daemon/storage_checks.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "db/sqlite.hpp"
#include "gpu/compiler.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace {

/// "" when `path` can be written (access(2) W_OK), else why not.
std::string not_writable(const fs::path& path) {
  if (::access(path.c_str(), W_OK) == 0) return "";
  return std::strerror(errno);
}

/// "" when files can be created in folder `dir`, else why not.
std::string not_a_writable_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return fmt::format("{} is not a folder", dir.string());
  return not_writable(dir);
}

fs::path folder_of(const std::string& file) {
  const fs::path parent = fs::path(file).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

/// The nearest existing folder at or above `dir` (the one a create_directories would write into).
fs::path existing_ancestor(fs::path dir) {
  std::error_code ec;
  while (!dir.empty() && !fs::exists(dir, ec)) dir = dir.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

}  // namespace

void check_run_storage(const std::string& db_path, const std::string& tsv_path, const std::string& cache_dir) {
  const std::string read_only_hint = "`run` must write it; status, query and export work on a read-only DB";
  std::error_code ec;
  if (fs::exists(db_path, ec)) {
    if (auto why = not_writable(db_path); !why.empty())
      throw std::runtime_error(fmt::format("the experiment DB {} is not writable ({}): {}", db_path, why, read_only_hint));
    if (auto why = not_a_writable_folder(folder_of(db_path)); !why.empty())
      throw std::runtime_error(fmt::format("the folder of the experiment DB {} is not writable ({}): SQLite's "
                                           "journal and the pid file live there; {}",
                                           db_path, why, read_only_hint));
  } else if (auto why = not_a_writable_folder(existing_ancestor(folder_of(db_path))); !why.empty()) {
    throw std::runtime_error(fmt::format("cannot create the experiment DB {} ({})", db_path, why));
  }
  if (fs::exists(tsv_path, ec)) {
    if (!fs::is_regular_file(tsv_path, ec))  // it is replaced by rename on every rebuild: never a device
      throw std::runtime_error(fmt::format("iters.tsv {} is not a regular file", tsv_path));
    if (auto why = not_writable(tsv_path); !why.empty())
      throw std::runtime_error(fmt::format("iters.tsv {} is not writable ({})", tsv_path, why));
  }
  if (auto why = not_a_writable_folder(existing_ancestor(folder_of(tsv_path))); !why.empty())
    throw std::runtime_error(fmt::format("cannot write iters.tsv {} ({})", tsv_path, why));
  const std::string cache = cache_dir.empty() ? default_cache_dir() : cache_dir;
  fs::create_directories(cache, ec);
  if (ec || !fs::is_directory(cache, ec))
    throw std::runtime_error(fmt::format("cannot create the cubin cache folder {} ({})", cache,
                                         ec ? ec.message() : "not a folder"));
  if (auto why = not_writable(cache); !why.empty())
    throw std::runtime_error(fmt::format("the cubin cache folder {} is not writable ({})", cache, why));
}

std::string explain_run_failure(const std::exception& e, const std::string& db_path) {
  bool write_failure = false;
  if (const auto* s = dynamic_cast<const sqlite::Error*>(&e))
    write_failure = s->code() == SQLITE_FULL || s->code() == SQLITE_IOERR;
  const std::string what = e.what();
  for (const char* errno_text : {std::strerror(ENOSPC), std::strerror(EFBIG), std::strerror(EDQUOT)})
    write_failure = write_failure || what.find(errno_text) != std::string::npos;
  if (!write_failure) return what;
  return fmt::format("{} -- a disk is full or a write failed: every iteration finished so far is in {}; "
                     "free space, then `run` again on it to resume",
                     what, db_path);
}

}  // namespace attn
