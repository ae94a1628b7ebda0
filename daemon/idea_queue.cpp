// scan_idea_queue: the queue folder's *.idea files, read whole.
#include "daemon/idea_queue.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "proposer/idea_file.hpp"

namespace attn {
namespace fs = std::filesystem;

namespace {
}

std::vector<QueuedIdea> scan_idea_queue(const std::string& dir, std::string& problem) {
  problem.clear();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    problem = fs::exists(dir, ec) ? fmt::format("the idea queue {} is not a folder", dir)
                                  : fmt::format("the idea queue folder {} is missing (removed or not made yet)", dir);
    return {};
  }
  std::vector<std::tuple<fs::file_time_type, std::string, fs::path>> files;
  fs::directory_iterator it(dir, ec), end;
  if (ec) {
    problem = fmt::format("the idea queue folder {} cannot be read: {}", dir, ec.message());
    return {};
  }
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    const fs::path p = it->path();
    if (p.extension() != ".idea") continue;
    std::error_code e2;
    if (!fs::is_regular_file(fs::symlink_status(p, e2))) continue;  // no symlinks, folders or devices
    const auto t = fs::last_write_time(p, e2);
    if (e2) continue;  // removed meanwhile
    files.emplace_back(t, p.filename().string(), p);
  }
  std::sort(files.begin(), files.end());
  std::vector<QueuedIdea> out;
  for (const auto& [t, name, path] : files) {
    QueuedIdea q;
    q.name = name;
    std::error_code e2;
    const auto size = fs::file_size(path, e2);
    if (e2) continue;  // removed since the listing: no longer queued
    if (size > kIdeaFileMaxBytes) {
      q.error = fmt::format("{} is {} bytes, over the {} an idea file may have", name, size, kIdeaFileMaxBytes);
    } else {
      std::ifstream f(path, std::ios::binary);
      std::ostringstream ss;
      if (!f || !(ss << f.rdbuf()) || !f.good()) {
        if (!fs::exists(path, e2)) continue;
        q.error = fmt::format("{} cannot be read", name);
      } else {
        q.bytes = ss.str();
      }
    }
    out.push_back(std::move(q));
  }
  return out;
}

std::string idea_queue_key(const QueuedIdea& q) {
  return q.name + "\n" + (q.bytes ? non_idea_hash(*q.bytes) : q.error);
}

std::size_t untaken_ideas(const std::vector<QueuedIdea>& queued, const std::set<std::string>& taken) {
  return std::size_t(std::count_if(queued.begin(), queued.end(),
                                   [&](const QueuedIdea& q) { return !taken.count(idea_queue_key(q)); }));
}

}  // namespace attn
