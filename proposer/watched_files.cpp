// WatchedSet: snapshots of folders, their differences, and putting kept contents back.
#include "proposer/watched_files.hpp"

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {
namespace fs = std::filesystem;
namespace {

std::string normal(const std::string& p) { return fs::absolute(p).lexically_normal().string(); }

bool under(const std::string& path, const std::string& root) {
  if (path == root) return true;
  const std::string prefix = root.back() == '/' ? root : root + "/";
  return path.rfind(prefix, 0) == 0;
}

std::optional<std::uint64_t> file_digest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    XXH3_64bits_update(st, buf.data(), std::size_t(in.gcount()));
  }
  const std::uint64_t d = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return d;
}

std::optional<FileState> state_of(const std::string& path, bool keep_content) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  FileState f;
  f.type = S_ISREG(st.st_mode) ? 'f' : S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 'o';
  f.size = f.type == 'd' ? 0 : std::uintmax_t(st.st_size);  // a folder's size changes with its entries
  f.mode = st.st_mode;
  f.inode = st.st_ino;
  f.mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  f.ctime_ns = std::int64_t(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
  if (f.type == 'd') f.mtime_ns = f.ctime_ns = 0;  // entries are compared one by one instead
  if (f.type == 'l') {
    std::error_code ec;
    f.content = fs::read_symlink(path, ec).string();
  } else if (f.type == 'f' && keep_content) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("watched files: cannot read " + path);
    std::ostringstream ss;
    ss << in.rdbuf();
    f.content = ss.str();
  }
  return f;
}

}  // namespace

void WatchedSet::add(const std::string& root, bool keep_content) { roots_.push_back({normal(root), keep_content}); }

void WatchedSet::exclude(const std::string& path) { excluded_.push_back(normal(path)); }

void WatchedSet::by_content(const std::string& path) { by_content_.push_back(normal(path)); }

std::optional<FileState> WatchedSet::state(const std::string& path, bool keep_content) const {
  auto f = state_of(path, keep_content);
  if (f && f->type == 'f' && std::find(by_content_.begin(), by_content_.end(), path) != by_content_.end()) {
    f->ctime_ns = 0;
    f->digest = file_digest(path);
  }
  return f;
}

bool WatchedSet::is_excluded(const std::string& path) const {
  return std::any_of(excluded_.begin(), excluded_.end(), [&](const std::string& e) { return under(path, e); });
}

Snapshot WatchedSet::snapshot() const {
  Snapshot s;
  for (const Root& r : roots_) {
    if (r.keep_content) s.content_roots.push_back(r.path);
    if (is_excluded(r.path)) continue;
    const auto top = state(r.path, r.keep_content);
    if (!top) continue;  // missing: its creation shows as new paths
    s.files[r.path] = *top;
    if (top->type != 'd') continue;
    std::error_code ec;
    fs::recursive_directory_iterator it(r.path, fs::directory_options::none, ec), end;
    if (ec) throw std::runtime_error(fmt::format("watched files: cannot list {}: {}", r.path, ec.message()));
    for (; it != end; it.increment(ec)) {
      if (ec) throw std::runtime_error(fmt::format("watched files: cannot list under {}: {}", r.path, ec.message()));
      const std::string p = it->path().lexically_normal().string();
      if (is_excluded(p)) {
        if (it->is_directory(ec) && !it->is_symlink(ec)) it.disable_recursion_pending();
        continue;
      }
      if (const auto f = state(p, r.keep_content)) s.files[p] = *f;
    }
  }
  return s;
}

std::vector<std::string> snapshot_changes(const Snapshot& before, const Snapshot& after) {
  std::vector<std::string> out;
  for (const auto& [path, st] : before.files) {
    const auto it = after.files.find(path);
    if (it == after.files.end()) out.push_back("deleted " + path);
    else if (!(it->second == st)) out.push_back("modified " + path);
  }
  for (const auto& [path, st] : after.files)
    if (!before.files.count(path)) out.push_back("created " + path);
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return a.substr(a.find(' ') + 1) < b.substr(b.find(' ') + 1);
  });
  return out;
}

std::vector<std::string> restore_snapshot(const Snapshot& before, const Snapshot& after) {
  const auto in_content_root = [&](const std::string& p) {
    return std::any_of(before.content_roots.begin(), before.content_roots.end(),
                       [&](const std::string& r) { return under(p, r); });
  };
  std::vector<std::string> done;
  // Created paths first, deepest first, so folders are empty when their turn comes.
  std::vector<std::string> created;
  for (const auto& [path, st] : after.files)
    if (!before.files.count(path) && in_content_root(path)) created.push_back(path);
  std::sort(created.rbegin(), created.rend());
  for (const auto& p : created) {
    std::error_code ec;
    fs::remove_all(p, ec);
    if (ec) throw std::runtime_error(fmt::format("restore: cannot remove {}: {}", p, ec.message()));
    done.push_back("removed " + p);
  }
  for (const auto& [path, st] : before.files) {
    if (!in_content_root(path)) continue;
    const auto now = after.files.find(path);
    if (now != after.files.end() && now->second == st) continue;
    std::error_code ec;
    if (st.type == 'd') {
      fs::create_directories(path, ec);
      if (ec) throw std::runtime_error(fmt::format("restore: cannot create {}: {}", path, ec.message()));
      continue;  // a folder's own state (inode, mode) is not put back; its files are
    }
    if (!st.content) continue;
    if (now != after.files.end() && now->second.type != 'f') fs::remove_all(path, ec);
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (st.type == 'l') {
      fs::remove(path, ec);
      fs::create_symlink(*st.content, path, ec);
    } else {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(st.content->data(), std::streamsize(st.content->size()));
      if (!out) throw std::runtime_error("restore: cannot write " + path);
      out.close();
      ::chmod(path.c_str(), st.mode & 07777);
    }
    if (ec) throw std::runtime_error(fmt::format("restore: cannot restore {}: {}", path, ec.message()));
    done.push_back("restored " + path);
  }
  return done;
}

}  // namespace attn
