// Disk and file faults (issue 13), with the real daemon and the fake worker: a read-only DB, a disk that
// fills up during a run (a small tmpfs: root only, skipped elsewhere; and the same logic through an
// injected write limit, RLIMIT_FSIZE, which needs no privilege), a full cubin cache, iters.tsv deleted or
// truncated while the daemon runs, and paths that cannot be written. Each is a clear error or a rebuild,
// and nothing committed to the DB is lost.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "db/iters_tsv.hpp"
#include "db/store.hpp"
#include "tests/daemon/daemon_harness.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// A tmpfs of `bytes` mounted on `dir` for the test's lifetime (needs root; ok() says whether it worked).
class TmpfsMount {
 public:
  TmpfsMount(std::string dir, std::size_t bytes) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    const std::string opts = "size=" + std::to_string(bytes) + ",mode=0777";
    mounted_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, opts.c_str()) == 0;
    if (!mounted_) error_ = std::strerror(errno);
  }
  ~TmpfsMount() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool ok() const { return mounted_; }
  const std::string& error() const { return error_; }
  bool remount(bool read_only) {
    return ::mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT | (read_only ? MS_RDONLY : 0), nullptr) == 0;
  }

 private:
  std::string dir_, error_;
  bool mounted_ = false;
};

/// Writes `dir`/filler until the file system is full; returns the bytes written.
std::size_t fill_disk(const std::string& dir) {
  const int fd = ::open((dir + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 0;
  const std::string block(4096, 'x');
  std::size_t total = 0;
  for (ssize_t n; (n = ::write(fd, block.data(), block.size())) > 0;) total += std::size_t(n);
  ::close(fd);
  return total;
}

/// "iter N <status>" progress lines of a daemon's output: iter -> status.
std::map<std::int64_t, std::string> printed_iterations(const std::string& log) {
  std::map<std::int64_t, std::string> out;
  static const std::regex line(R"(^iter +(\d+) (\w+) )");
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) out[std::stoll(m[1])] = m[2];
  }
  return out;
}

std::string integrity(const std::string& db_path) {
  auto db = ExperimentDb::open(db_path, ExperimentDb::Mode::read_only);
  const auto r = db.sql_readonly("PRAGMA integrity_check");
  return r.rows.empty() || !r.rows[0][0] ? "" : *r.rows[0][0];
}

/// Everything a write failure must not lose: the finished iterations, and every line the daemon printed
/// (it prints an iteration after committing it). Then a resume on the same DB with room again, after which
/// every one of them is unchanged, the DB is sound and iters.tsv equals `query tsv`.
void expect_nothing_lost_and_resume(const test::DaemonFixture& f, const std::string& daemon_log) {
  std::map<std::int64_t, IterationRecord> committed;
  for (const auto& it : f.iterations())
    if (is_finished(it.status)) committed[it.iter] = it;
  const auto printed = printed_iterations(daemon_log);
  ASSERT_FALSE(printed.empty()) << daemon_log;
  for (const auto& [iter, status] : printed) {
    ASSERT_TRUE(committed.count(iter)) << "iteration " << iter << " was printed but is not in the DB";
    EXPECT_EQ(to_string(committed[iter].status), status) << "iteration " << iter;
  }
  const test::Output again = test::run_tuner(f.args("--iterations 2"));
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_EQ(integrity(f.db), "ok");
  std::map<std::int64_t, IterationRecord> after;
  for (const auto& it : f.iterations()) after[it.iter] = it;
  for (const auto& [iter, before] : committed) {
    ASSERT_TRUE(after.count(iter)) << "iteration " << iter << " lost";
    EXPECT_EQ(after[iter], before) << "iteration " << iter << " changed";
  }
  for (const auto& [iter, it] : after) EXPECT_TRUE(is_finished(it.status)) << "iteration " << iter;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  const auto runs = db.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0].status == RunStatus::failed || runs[0].status == RunStatus::interrupted)
      << to_string(runs[0].status);
  const test::Output tsv = test::run_tuner("query tsv --db '" + f.db + "'");
  EXPECT_EQ(tsv.text, test::read_text(f.tsv));
}

TEST(DiskFaults, ReadOnlyDbIsRefusedBeforeAnythingIsLoggedAndReadingStillWorks) {
  test::DaemonFixture f;
  const std::string disk = f.dir + "/disk";
  TmpfsMount mount(disk, 4 << 20);
  if (!mount.ok() && ::geteuid() == 0)
    GTEST_SKIP() << "root, but cannot mount a tmpfs (" << mount.error() << "): no way to make a file read-only";
  fs::create_directories(disk);
  f.db = disk + "/t.db";
  f.tsv = disk + "/iters.tsv";
  auto set_read_only = [&](bool ro) {
    if (mount.ok()) return mount.remount(ro);
    fs::permissions(disk, ro ? fs::perms(0555) : fs::perms(0755));  // not root: permissions are enough
    return true;
  };
  ASSERT_EQ(test::run_tuner(f.args("--iterations 3")).code, 0);
  const std::string db_bytes = test::read_text(f.db), tsv_text = test::read_text(f.tsv);
  ASSERT_TRUE(set_read_only(true));

  const test::Output run = test::run_tuner(f.args("--iterations 3"));
  EXPECT_EQ(run.code, 1) << run.text;
  EXPECT_NE(run.text.find("the experiment DB " + f.db + " is not writable ("), std::string::npos) << run.text;
  EXPECT_NE(run.text.find("status, query and export work"), std::string::npos) << run.text;
  EXPECT_EQ(test::read_text(f.db), db_bytes);
  EXPECT_FALSE(fs::exists(f.db + ".pid"));

  // The DB is in WAL mode: SQLite cannot create its -shm here, yet the read-only commands work.
  const test::Output st = test::run_tuner("status --db '" + f.db + "'");
  EXPECT_EQ(st.code, 0) << st.text;
  EXPECT_NE(st.text.find("run 1 (finished)"), std::string::npos) << st.text;
  const test::Output best = test::run_tuner("query best --db '" + f.db + "'");
  EXPECT_EQ(best.code, 0) << best.text;
  EXPECT_NE(best.text.find("A=1,B=1,F=0"), std::string::npos) << best.text;
  const test::Output tsv = test::run_tuner("query tsv --db '" + f.db + "'");
  EXPECT_EQ(tsv.code, 0) << tsv.text;
  EXPECT_EQ(tsv.text, tsv_text);

  // A daemon killed before the storage became read-only leaves its commits in <db>-wal, with <db>-shm:
  // SQLite reads both, so the killed run's iterations are there.
  ASSERT_TRUE(set_read_only(false));
  const pid_t daemon = test::spawn_tuner(f.args(), "FAKE_WORKER_DELAY=0.2", f.dir + "/daemon.log");
  ASSERT_GE(f.wait_finished(6, 60), 6u);
  ::kill(daemon, SIGKILL);
  test::wait_exit(daemon);
  ASSERT_GT(fs::file_size(f.db + "-wal"), 0u);
  const std::size_t finished = f.wait_finished(0, 0);
  ASSERT_TRUE(set_read_only(true));
  test::Output killed = test::run_tuner("status --db '" + f.db + "'");
  EXPECT_EQ(killed.code, 0) << killed.text;
  EXPECT_NE(killed.text.find("run 2 (running): no daemon running"), std::string::npos) << killed.text;
  EXPECT_EQ(f.wait_finished(0, 0), finished);
  // Without its -shm (copied without it), the main file alone would miss those commits: an error naming
  // the -wal file, not a silently older view.
  ASSERT_TRUE(set_read_only(false));
  fs::remove(f.db + "-shm");
  ASSERT_TRUE(set_read_only(true));
  killed = test::run_tuner("status --db '" + f.db + "'");
  EXPECT_NE(killed.code, 0) << killed.text;
  EXPECT_NE(killed.text.find(f.db + "-wal"), std::string::npos) << killed.text;
  ASSERT_TRUE(set_read_only(false));
  EXPECT_EQ(test::run_tuner("status --db '" + f.db + "'").code, 0);
}

TEST(DiskFaults, FullDiskDuringARunEndsItClearlyAndLosesNothing) {
  test::DaemonFixture f;
  const std::string disk = f.dir + "/disk";
  TmpfsMount mount(disk, 1 << 20);
  if (!mount.ok()) GTEST_SKIP() << "cannot mount a tmpfs (" << mount.error() << "); InjectedWriteLimit covers the logic";
  f.db = disk + "/t.db";
  f.tsv = disk + "/iters.tsv";
  const std::string log = f.dir + "/daemon.log";
  const pid_t daemon = test::spawn_tuner(f.args(), "FAKE_WORKER_DELAY=0.1", log);
  ASSERT_GE(f.wait_finished(3, 60), 3u);
  ASSERT_GT(fill_disk(disk), 0u);
  const int st = test::wait_exit(daemon);
  const std::string text = test::read_text(log);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << text;
  EXPECT_NE(text.find("database or disk is full"), std::string::npos) << text;
  EXPECT_NE(text.find("every iteration finished so far is in " + f.db), std::string::npos) << text;
  EXPECT_NE(text.find("free space, then `run` again"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(f.db + ".pid"));
  fs::remove(disk + "/filler");
  expect_nothing_lost_and_resume(f, text);
}

TEST(DiskFaults, InjectedWriteLimitEndsTheRunClearlyAndLosesNothing) {
  // RLIMIT_FSIZE (ulimit -f, 512-byte blocks in dash) stands in for a full disk without privileges: the
  // daemon's writes past ~1 MB fail (EFBIG; SIGXFSZ ignored), first in the DB's write-ahead log.
  test::DaemonFixture f;
  const std::string log = f.dir + "/daemon.log";
  const pid_t daemon = test::spawn_tuner(f.args(), "FAKE_WORKER_DELAY=0.05", log, "trap '' XFSZ; ulimit -f 2048;");
  const int st = test::wait_exit(daemon);
  const std::string text = test::read_text(log);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << text;
  EXPECT_NE(text.find(f.db), std::string::npos) << text;
  EXPECT_NE(text.find("a disk is full or a write failed: every iteration finished so far is in " + f.db),
            std::string::npos)
      << text;
  EXPECT_LT(printed_iterations(text).size(), 33u) << "the limit was never reached";
  expect_nothing_lost_and_resume(f, text);
}

TEST(DiskFaults, FullCubinCacheInterruptsTheIterationInsteadOfBlamingTheConfig) {
  test::DaemonFixture f;
  const std::string cache = f.dir + "/cachedisk";
  TmpfsMount mount(cache, 1 << 20);
  if (!mount.ok()) GTEST_SKIP() << "cannot mount a tmpfs (" << mount.error() << ")";
  const std::string log = f.dir + "/daemon.log";
  f.cache = cache;
  const pid_t daemon = test::spawn_tuner(f.args(), "FAKE_WORKER_DELAY=0.2", log);
  ASSERT_GE(f.wait_finished(3, 60), 3u);
  fill_disk(cache);
  const int st = test::wait_exit(daemon);
  const std::string text = test::read_text(log);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << text;
  EXPECT_NE(text.find("cannot store compiled cubins in the cubin cache (cache write failed:"), std::string::npos) << text;
  auto its = f.iterations();
  ASSERT_FALSE(its.empty());
  const IterationRecord last = its.back();
  EXPECT_EQ(last.status, IterationStatus::interrupted);  // not a crash charged to the config
  EXPECT_NE(last.description.find("could not be written to the cache"), std::string::npos) << last.description;
  auto db = ExperimentDb::open(f.db, ExperimentDb::Mode::read_only);
  EXPECT_EQ(db.runs().back().status, RunStatus::failed);

  fs::remove(cache + "/filler");
  const test::Output again = test::run_tuner(f.args("--iterations 3"));
  ASSERT_EQ(again.code, 0) << again.text;
  its = f.iterations();
  EXPECT_TRUE(std::any_of(its.begin(), its.end(), [&](const IterationRecord& it) {
    return it.params == last.params && it.status != IterationStatus::interrupted;
  })) << "the interrupted config was not tried again: " << last.params;
}

TEST(DiskFaults, ItersTsvDeletedOrTruncatedMidRunIsRebuiltFromTheDb) {
  test::DaemonFixture f;
  const std::string log = f.dir + "/daemon.log";
  const pid_t daemon = test::spawn_tuner(f.args("--iterations 14"), "FAKE_WORKER_DELAY=0.15", log);
  ASSERT_GE(f.wait_finished(4, 60), 4u);
  fs::remove(f.tsv);
  ASSERT_GE(f.wait_finished(8, 60), 8u);
  fs::resize_file(f.tsv, 30);  // cut in the middle of the header's successor
  const int st = test::wait_exit(daemon);
  const std::string text = test::read_text(log);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << text;
  EXPECT_NE(text.find(f.tsv + " rebuilt from the DB: it was missing"), std::string::npos) << text;
  EXPECT_NE(text.find(f.tsv + " rebuilt from the DB: it had changed"), std::string::npos) << text;
  const auto its = f.iterations();
  EXPECT_EQ(its.size(), 14u);
  EXPECT_EQ(test::read_text(f.tsv), render_all(its));  // every row, not only those after the deletion
  EXPECT_EQ(test::run_tuner("query tsv --db '" + f.db + "'").text, test::read_text(f.tsv));
}

TEST(DiskFaults, UnwritablePathsAreAClearErrorBeforeAnythingIsLogged) {
  test::DaemonFixture f;
  test::DaemonFixture g = f;
  g.cache = "/dev/null/cache";
  test::Output o = test::run_tuner(g.args());
  EXPECT_EQ(o.code, 1) << o.text;
  EXPECT_NE(o.text.find("cannot create the cubin cache folder /dev/null/cache"), std::string::npos) << o.text;
  EXPECT_FALSE(fs::exists(f.db));

  { std::ofstream(f.dir + "/afile") << "x\n"; }
  g.cache = f.cache;
  g.tsv = f.dir + "/afile/iters.tsv";
  o = test::run_tuner(g.args());
  EXPECT_EQ(o.code, 1) << o.text;
  EXPECT_NE(o.text.find("cannot write iters.tsv " + g.tsv + " (" + f.dir + "/afile is not a folder)"),
            std::string::npos)
      << o.text;
  g.tsv = "/dev/null";  // every rebuild replaces iters.tsv by rename: never a device
  o = test::run_tuner(g.args());
  EXPECT_EQ(o.code, 1) << o.text;
  EXPECT_NE(o.text.find("iters.tsv /dev/null is not a regular file"), std::string::npos) << o.text;
  EXPECT_FALSE(fs::exists(f.db));
  EXPECT_TRUE(fs::exists("/dev/null") && !fs::is_regular_file("/dev/null"));
}

TEST(DiskFaults, AMissingTemplateHeaderStopsTheRunWithoutBlamingTheConfig) {
  // A header of the template disappears (a sync or an editor rewriting the folder, as the GPU machine's
  // copy did on 2026-11-23): the config must not be logged as a compile crash, and a resumed run takes it up.
  test::DaemonFixture f;
  const fs::path tpl = fs::path(f.dir) / "templates";
  fs::copy(fs::path(test::data_dir()) / "fake_templates", tpl, fs::copy_options::recursive);
  const std::string source = test::read_text((tpl / "fake.cu").string());
  std::ofstream(tpl / "fake.cu") << "#include \"fake_extra.cuh\"\n" << source;  // the header is absent
  std::string args = f.args();
  const std::string builtin = test::data_dir() + "/fake_templates";
  args.replace(args.find(builtin), builtin.size(), tpl.string());

  const test::Output broken = test::run(args);
  EXPECT_NE(broken.code, 0) << broken.text;
  EXPECT_NE(broken.text.find("fake_extra.cuh"), std::string::npos) << broken.text;
  EXPECT_NE(broken.text.find("after 3 retries"), std::string::npos) << broken.text;
  EXPECT_TRUE(test::census(f.iterations()).evaluated.empty()) << "a config was blamed for a missing header";

  std::ofstream(tpl / "fake_extra.cuh") << "// back\n";
  const test::Output resumed = test::run(args);
  ASSERT_EQ(resumed.code, 0) << resumed.text;
  const auto its = f.iterations();
  const auto c = test::census(its);
  EXPECT_EQ(c.evaluated.size(), test::kFakeSpace);
  EXPECT_TRUE(c.duplicated.empty());
  int compile_crashes = 0;
  for (const auto& it : its) compile_crashes += it.status == IterationStatus::crash && it.failure_kind == FailureKind::compile;
  EXPECT_EQ(compile_crashes, 3);  // only F == 5, the deliberate #error
}

}  // namespace
}  // namespace attn
