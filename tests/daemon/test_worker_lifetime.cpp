// No worker outlives its daemon (issue 13): the daemon SIGKILLed while its worker hangs takes the worker
// with it (PR_SET_PDEATHSIG); a worker group that survived anyway (fake_worker.py FAKE_WORKER_SURVIVE=1
// clears its death signal and starts a child) is killed by the next daemon on the DB, and `status` says
// so; a record that names an unrelated process (a recycled pid) never gets it killed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <sstream>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "daemon/processes.hpp"
#include "daemon/stale_worker.hpp"
#include "tests/daemon/daemon_harness.hpp"

namespace attn {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// Waits until the fake worker's eval log has a line of a hanging config ("A B 1"); false on timeout.
bool wait_for_hang(const std::string& eval_log, std::chrono::milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    std::ifstream in(eval_log);
    std::string a, b, f;
    while (in >> a >> b >> f)
      if (f == "1") return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

/// Waits until process group `pgid` has no live member; returns how many were left at the end.
std::size_t wait_group_gone(pid_t pgid, std::chrono::milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  std::size_t left = 0;
  while ((left = process_group_members(pgid).size()) > 0 && Clock::now() < end) std::this_thread::sleep_for(10ms);
  return left;
}

// The worker inherits its stdin, stdout and stderr and nothing else (gpu/process_group.hpp, InheritOnlyStdio):
// not a descriptor the daemon was started with, nor a file another thread of the daemon had open at the fork.
// Found as the DiskFaults flake of 2026-11-25: a worker holding a writable file on the DB's disk (the status
// file's temporary, opened without O_CLOEXEC) made a read-only remount fail until it exited.
TEST(WorkerLifetime, TheWorkerInheritsNoDescriptorButItsStdio) {
  test::DaemonFixture f;
  const std::string fds = f.dir + "/worker_fds.txt", held = f.dir + "/held_by_the_daemon.txt";
  const pid_t daemon = test::spawn_tuner(f.args("--iterations 3"), "FAKE_WORKER_FDS_LOG='" + fds + "'",
                                         f.dir + "/daemon.log", "exec 9>>'" + held + "';");
  ASSERT_EQ(test::wait_exit(daemon), 0) << test::read_text(f.dir + "/daemon.log");
  const std::string text = test::read_text(fds);
  // The daemon holds the file (without close-on-exec), so the worker would inherit it without the fix.
  EXPECT_NE(text.find("parent 9 " + held + "\n"), std::string::npos) << text;
  std::istringstream in(text);
  int own = 0;
  for (std::string who, fd, target; in >> who >> fd >> target;) {
    if (who != "self" || target == fds) continue;  // the log the worker writes this into
    ++own;
    EXPECT_TRUE(fd == "0" || fd == "1" || fd == "2") << "the worker inherited descriptor " << fd << " -> " << target;
  }
  EXPECT_GE(own, 3) << text;
}

TEST(WorkerLifetime, HangingWorkerDiesWithItsSigkilledDaemon) {
  test::DaemonFixture f;
  f.watchdog = "--watchdog-min 30 --watchdog-cap 30";  // the hang lasts until the kill
  const std::string evals = f.dir + "/evals.log";
  const pid_t daemon = test::spawn_tuner(f.args(), "FAKE_WORKER_LOG='" + evals + "'", f.dir + "/daemon.log");
  ASSERT_TRUE(wait_for_hang(evals, 60s)) << test::read_text(f.dir + "/daemon.log");
  const auto rec = load_worker_record(f.db);
  ASSERT_TRUE(rec);
  const auto worker = process_info(rec->pgid);
  ASSERT_TRUE(worker);  // the hanging worker is there, and it is the fake worker
  EXPECT_NE(worker->cmdline.find("fake_worker.py"), std::string::npos) << worker->cmdline;
  EXPECT_EQ(worker->pgid, rec->pgid);
  EXPECT_EQ(worker->ppid, daemon);

  ASSERT_EQ(::kill(daemon, SIGKILL), 0);
  test::wait_exit(daemon);
  EXPECT_EQ(wait_group_gone(rec->pgid, 3s), 0u) << "the hanging worker outlived its daemon";
  ::kill(-rec->pgid, SIGKILL);  // leave nothing behind, even when the check above failed
}

/// The daemon's compile workers (`attn-tuner compile-worker` children of `daemon`) alive now.
std::vector<pid_t> compile_workers_of(pid_t daemon) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto p = process_info(pid_t(std::stol(name)));
    if (p && p->ppid == daemon && p->cmdline.find("compile-worker") != std::string::npos) out.push_back(p->pid);
  }
  return out;
}

// The compile workers die with their daemon too (their death signal, gpu/compile_procs.hpp): SIGKILLed while every
// worker is in the middle of a compile (the test hook makes each sleep), it leaves no process behind.
TEST(WorkerLifetime, BusyCompileWorkersDieWithTheirSigkilledDaemon) {
  test::DaemonFixture f;
  const pid_t daemon = test::spawn_tuner(f.args("--compile-procs 2"),
                                         "ATTN_COMPILE_WORKER_SLEEP='block_sparse_attn_fwd:60'", f.dir + "/daemon.log");
  std::vector<pid_t> workers;
  for (int i = 0; i < 6000 && workers.size() < 2; ++i) {
    workers = compile_workers_of(daemon);
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(workers.size(), 2u) << test::read_text(f.dir + "/daemon.log");
  ASSERT_EQ(::kill(daemon, SIGKILL), 0);
  test::wait_exit(daemon);
  for (const pid_t w : workers) {
    for (int i = 0; i < 300 && process_info(w); ++i) std::this_thread::sleep_for(10ms);
    EXPECT_FALSE(process_info(w)) << "compile worker " << w << " outlived its daemon";
    ::kill(w, SIGKILL);  // leave nothing behind, even when the check above failed
  }
}

// `status` shows the compile pool: its processes, and the compiles they ran.
TEST(WorkerLifetime, StatusShowsTheCompilePool) {
  test::DaemonFixture f;
  const test::Output run = test::run_tuner(f.args("--iterations 3 --compile-procs 2"));
  ASSERT_EQ(run.code, 0) << run.text;
  const test::Output js = test::run_tuner("status --json --db '" + f.db + "'");
  ASSERT_EQ(js.code, 0) << js.text;
  const auto j = nlohmann::json::parse(js.text);
  EXPECT_EQ(j["compile_pool"]["procs"], 2) << js.text;
  EXPECT_GE(j["compile_pool"]["compiles"].get<int>(), 1) << js.text;
  EXPECT_EQ(j["compile_pool"]["restarts"], 0) << js.text;
  const test::Output text = test::run_tuner("status --db '" + f.db + "'");
  EXPECT_NE(text.text.find("compile pool: 2 worker processes"), std::string::npos) << text.text;
}

TEST(WorkerLifetime, SurvivingWorkerGroupIsKilledByTheNextDaemonAndStatusSaysSo) {
  test::DaemonFixture f;
  f.watchdog = "--watchdog-min 30 --watchdog-cap 30";
  const std::string evals = f.dir + "/evals.log";
  const pid_t daemon = test::spawn_tuner(f.args(), "FAKE_WORKER_SURVIVE=1 FAKE_WORKER_LOG='" + evals + "'",
                                         f.dir + "/daemon.log");
  ASSERT_TRUE(wait_for_hang(evals, 60s)) << test::read_text(f.dir + "/daemon.log");
  const auto rec = load_worker_record(f.db);
  ASSERT_TRUE(rec);
  for (int i = 0; i < 200 && process_group_members(rec->pgid).size() < 2; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(process_group_members(rec->pgid).size(), 2u);  // the worker and its sleeping child
  ASSERT_EQ(::kill(daemon, SIGKILL), 0);
  test::wait_exit(daemon);
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(process_group_members(rec->pgid).size(), 2u) << "the injected fault did not keep the group alive";

  const std::string group = "worker group " + std::to_string(rec->pgid);
  test::Output st = test::run_tuner("status --db '" + f.db + "'");
  EXPECT_EQ(st.code, 0) << st.text;
  EXPECT_NE(st.text.find("warning: stale " + group), std::string::npos) << st.text;
  EXPECT_NE(st.text.find("no daemon running"), std::string::npos) << st.text;

  f.watchdog = "--watchdog-min 0.5 --watchdog-cap 2";
  const test::Output again = test::run_tuner(f.args("--iterations 1"));
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_NE(again.text.find("stale " + group), std::string::npos) << again.text;
  EXPECT_NE(again.text.find("found alive at start and killed"), std::string::npos) << again.text;
  EXPECT_EQ(process_group_members(rec->pgid).size(), 0u);
  ::kill(-rec->pgid, SIGKILL);  // leave nothing behind, even when the check above failed

  st = test::run_tuner("status --db '" + f.db + "'");
  EXPECT_NE(st.text.find("stale " + group), std::string::npos) << st.text;
  EXPECT_NE(st.text.find("found alive at start and killed"), std::string::npos) << st.text;
  EXPECT_EQ(st.text.find("warning:"), std::string::npos) << st.text;
  const test::Output js = test::run_tuner("status --json --db '" + f.db + "'");
  EXPECT_NE(js.text.find("\"stale_worker_killed\": \"stale " + group), std::string::npos) << js.text;
}

/// A `sleep 60` in its own process group, standing in for an unrelated process with a recycled pid.
pid_t start_group_leader() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 200; ++i) {  // until it has exec'd and leads its group
    const auto p = process_info(pid);
    if (p && p->pgid == pid && p->cmdline.find("sleep") != std::string::npos) break;
    std::this_thread::sleep_for(5ms);
  }
  return pid;
}

/// A pid that no process has now (a child that already ended and was reaped).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  test::wait_exit(pid);
  return pid;
}

TEST(WorkerLifetime, RecordNamingAnUnrelatedProcessNeverGetsItKilled) {
  const std::string db = test::DaemonFixture().db;
  const pid_t other = start_group_leader();
  const auto info = process_info(other);
  ASSERT_TRUE(info);
  WorkerRecord rec;
  rec.daemon_pid = dead_pid();
  rec.pgid = other;
  rec.worker_start_ticks = info->start_ticks + 1;  // a recycled pid: started at another time
  rec.exe = "/bin/sleep";
  ASSERT_TRUE(save_worker_record(db, rec));
  EXPECT_FALSE(find_stale_worker(db));
  EXPECT_FALSE(reap_stale_worker(db));

  rec.worker_start_ticks = info->start_ticks;
  rec.exe = "/opt/other/attn-tuner";  // right start time, but not the recorded worker program
  ASSERT_TRUE(save_worker_record(db, rec));
  EXPECT_FALSE(find_stale_worker(db));

  rec.exe = "sleep";
  rec.daemon_pid = ::getppid();  // its daemon still runs (with the recorded start time): not stale
  rec.daemon_start_ticks = process_info(rec.daemon_pid)->start_ticks;
  ASSERT_TRUE(save_worker_record(db, rec));
  EXPECT_FALSE(find_stale_worker(db));
  EXPECT_TRUE(process_info(other)) << "an unrelated process was killed";

  rec.daemon_pid = dead_pid();  // control: the same record with a dead daemon is stale, and is killed
  ASSERT_TRUE(save_worker_record(db, rec));
  const auto stale = find_stale_worker(db);
  ASSERT_TRUE(stale);
  ASSERT_EQ(stale->members.size(), 1u);
  EXPECT_EQ(stale->members[0].pid, other);
  const auto note = reap_stale_worker(db);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("killed"), std::string::npos) << *note;
  int st = 0;
  ASSERT_EQ(::waitpid(other, &st, 0), other);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  EXPECT_FALSE(load_worker_record(db));  // forgotten once killed
}

TEST(WorkerLifetime, ProcessInfoReadsStatAndCmdline) {
  const auto self = process_info(::getpid());
  ASSERT_TRUE(self);
  EXPECT_EQ(self->pid, ::getpid());
  EXPECT_EQ(self->ppid, ::getppid());
  EXPECT_EQ(self->pgid, ::getpgrp());
  EXPECT_GT(self->start_ticks, 0u);
  EXPECT_NE(self->cmdline.find("test_daemon"), std::string::npos) << self->cmdline;
  EXPECT_FALSE(process_info(dead_pid()));
  EXPECT_FALSE(process_info(0));
}

}  // namespace
}  // namespace attn
