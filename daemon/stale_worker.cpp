#include "daemon/stale_worker.hpp"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace attn {
namespace {

unsigned long long start_ticks_of(pid_t pid) {
  const auto p = process_info(pid);
  return p ? p->start_ticks : 0;
}

}  // namespace

std::string worker_record_file_for(const std::string& db_path) { return db_path + ".worker"; }

WorkerRecord make_worker_record(pid_t worker_pid, const std::string& exe) {
  WorkerRecord r;
  r.daemon_pid = ::getpid();
  r.daemon_start_ticks = start_ticks_of(r.daemon_pid);
  r.pgid = worker_pid;
  r.worker_start_ticks = start_ticks_of(worker_pid);
  r.exe = exe;
  return r;
}

namespace {

nlohmann::json record_json(const WorkerRecord& r) {
  return {{"daemon_pid", r.daemon_pid}, {"daemon_start_ticks", r.daemon_start_ticks}, {"pgid", r.pgid},
          {"worker_start_ticks", r.worker_start_ticks}, {"exe", r.exe}};
}

std::optional<WorkerRecord> record_from(const nlohmann::json& j) {
  try {
    WorkerRecord r;
    r.daemon_pid = j.at("daemon_pid").get<pid_t>();
    r.daemon_start_ticks = j.at("daemon_start_ticks").get<unsigned long long>();
    r.pgid = j.at("pgid").get<pid_t>();
    r.worker_start_ticks = j.at("worker_start_ticks").get<unsigned long long>();
    r.exe = j.at("exe").get<std::string>();
    if (r.pgid <= 1) return std::nullopt;  // never a group we could mean
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool write_json(const std::string& db_path, const nlohmann::json& j) {
  const std::string path = worker_record_file_for(db_path), tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump() << "\n";
    if (!out.flush()) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

/// The recorded group `rec`, when it is alive, its daemon is not, and it really is that worker.
std::optional<StaleWorker> stale_of(const WorkerRecord& rec) {
  if (rec.daemon_pid == ::getpid()) return std::nullopt;  // our own worker
  if (const auto d = process_info(rec.daemon_pid); d && d->start_ticks == rec.daemon_start_ticks)
    return std::nullopt;  // its daemon still runs
  StaleWorker s;
  s.record = rec;
  s.members = process_group_members(rec.pgid);
  if (s.members.empty()) return std::nullopt;
  for (const auto& m : s.members) {
    if (m.pid != rec.pgid) continue;  // the leader, when it still runs, must be the recorded worker
    if (m.start_ticks != rec.worker_start_ticks || m.cmdline.find(rec.exe) == std::string::npos)
      return std::nullopt;  // a recycled pid leads this group: not ours
  }
  return s;
}

}  // namespace

bool save_worker_record(const std::string& db_path, const WorkerRecord& r) { return write_json(db_path, record_json(r)); }

bool save_worker_records(const std::string& db_path, const std::vector<WorkerRecord>& records) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : records) list.push_back(record_json(r));
  return write_json(db_path, {{"workers", list}});
}

std::vector<WorkerRecord> load_worker_records(const std::string& db_path) {
  std::vector<WorkerRecord> out;
  std::ifstream in(worker_record_file_for(db_path));
  if (!in) return out;
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception&) {
    return out;
  }
  if (j.is_object() && j.contains("workers") && j["workers"].is_array()) {
    for (const auto& w : j["workers"])
      if (auto r = record_from(w)) out.push_back(*r);
  } else if (auto r = record_from(j)) {
    out.push_back(*r);
  }
  return out;
}

std::optional<WorkerRecord> load_worker_record(const std::string& db_path) {
  auto all = load_worker_records(db_path);
  if (all.empty()) return std::nullopt;
  return all.front();
}

std::string StaleWorker::describe() const {
  std::string procs;
  for (const auto& m : members) {
    if (!procs.empty()) procs += ", ";
    procs += fmt::format("{} {}", m.pid, m.cmdline.substr(0, 120));
  }
  return fmt::format("worker group {} ({} process{}: {}) left by daemon {}", record.pgid, members.size(),
                     members.size() == 1 ? "" : "es", procs, record.daemon_pid);
}

std::vector<StaleWorker> find_stale_workers(const std::string& db_path) {
  std::vector<StaleWorker> out;
  for (const auto& rec : load_worker_records(db_path))
    if (auto s = stale_of(rec)) out.push_back(std::move(*s));
  return out;
}

std::optional<StaleWorker> find_stale_worker(const std::string& db_path) {
  auto all = find_stale_workers(db_path);
  if (all.empty()) return std::nullopt;
  return all.front();
}

bool kill_stale_worker(const StaleWorker& stale, std::chrono::milliseconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    ::kill(-stale.record.pgid, SIGKILL);
    if (process_group_members(stale.record.pgid).empty()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::optional<std::string> reap_stale_worker(const std::string& db_path) {
  const auto stale = find_stale_workers(db_path);
  if (stale.empty()) return std::nullopt;
  std::string note;
  bool all_gone = true;
  for (const auto& s : stale) {
    const std::string what = s.describe();
    const bool gone = kill_stale_worker(s);
    all_gone = all_gone && gone;
    note += (note.empty() ? "" : "; ") +
            (gone ? fmt::format("stale {} was found alive at start and killed", what)
                  : fmt::format("stale {} was found alive at start and could not be killed (kill -KILL -{})", what,
                                s.record.pgid));
  }
  std::error_code ec;
  if (all_gone) std::filesystem::remove(worker_record_file_for(db_path), ec);
  return note;
}

}  // namespace attn
