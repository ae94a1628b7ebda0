// WatchedSet: what counts as a write (content, a restored mtime, new and deleted paths, symlinks), what does
// not (excluded paths, a by-content file whose ctime alone moved), and putting kept contents back.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "proposer/watched_files.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

void write_file(const std::string& path, const std::string& text) { test::write_text(path, text); }
std::string read_file(const std::string& path) { return test::read_text(path); }

struct Tree {
  std::string root = test::temp_dir("watched");
  std::string tpl = root + "/templates", runs = root + "/runs";
  Tree() {
    write_file(tpl + "/a.cu", "kernel a\n");
    write_file(tpl + "/blocks/b.cuh", "header b\n");
    write_file(runs + "/t.db", "database bytes");
    write_file(runs + "/proposals/1/work/x", "mine");
  }
  WatchedSet set() const {
    WatchedSet w;
    w.add(tpl, true);
    w.add(runs, false);
    w.exclude(runs + "/proposals/1/work");
    w.by_content(runs + "/t.db");
    return w;
  }
};

TEST(WatchedFiles, SeesEveryKindOfWriteOutsideTheExcludedFolder) {
  Tree t;
  const WatchedSet w = t.set();
  const Snapshot before = w.snapshot();
  EXPECT_TRUE(snapshot_changes(before, w.snapshot()).empty());

  write_file(t.runs + "/proposals/1/work/y", "also mine");  // excluded
  EXPECT_TRUE(snapshot_changes(before, w.snapshot()).empty());

  // Same size, mtime put back: the ctime still moves.
  struct stat st {};
  ASSERT_EQ(::stat((t.tpl + "/a.cu").c_str(), &st), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(t.tpl + "/a.cu", "kernel A\n");
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (t.tpl + "/a.cu").c_str(), times, 0), 0);
  fs::remove(t.tpl + "/blocks/b.cuh");
  write_file(t.runs + "/evil.txt", "x");
  fs::create_symlink(t.runs + "/t.db", t.tpl + "/link.cuh");
  EXPECT_EQ(snapshot_changes(before, w.snapshot()),
            (std::vector<std::string>{"created " + t.runs + "/evil.txt", "modified " + t.tpl + "/a.cu",
                                      "deleted " + t.tpl + "/blocks/b.cuh", "created " + t.tpl + "/link.cuh"}));
}

TEST(WatchedFiles, ByContentFilesIgnoreACtimeOnlyChangeButNotAWrite) {
  Tree t;
  const WatchedSet w = t.set();
  const Snapshot before = w.snapshot();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(::chmod((t.runs + "/t.db").c_str(), 0644), 0);  // what SQLite's re-owning does: ctime moves
  ASSERT_EQ(::chown((t.runs + "/t.db").c_str(), ::getuid(), ::getgid()), 0);
  EXPECT_TRUE(snapshot_changes(before, w.snapshot()).empty());
  // A write that keeps size and mtime is still seen by the hash.
  struct stat st {};
  ASSERT_EQ(::stat((t.runs + "/t.db").c_str(), &st), 0);
  write_file(t.runs + "/t.db", "DATABASE BYTES");
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (t.runs + "/t.db").c_str(), times, 0), 0);
  EXPECT_EQ(snapshot_changes(before, w.snapshot()), (std::vector<std::string>{"modified " + t.runs + "/t.db"}));
}

TEST(WatchedFiles, RestorePutsTheKeptFolderBackAndLeavesTheRest) {
  Tree t;
  const WatchedSet w = t.set();
  const Snapshot before = w.snapshot();
  ::chmod((t.tpl + "/a.cu").c_str(), 0755);
  write_file(t.tpl + "/a.cu", "tampered\n");
  fs::remove_all(t.tpl + "/blocks");
  write_file(t.tpl + "/new/deep/c.cuh", "new");
  write_file(t.runs + "/evil.txt", "x");
  const auto done = restore_snapshot(before, w.snapshot());
  EXPECT_EQ(read_file(t.tpl + "/a.cu"), "kernel a\n");
  EXPECT_EQ(fs::status(t.tpl + "/a.cu").permissions() & fs::perms::owner_exec, fs::perms::none);
  EXPECT_EQ(read_file(t.tpl + "/blocks/b.cuh"), "header b\n");
  EXPECT_FALSE(fs::exists(t.tpl + "/new"));
  EXPECT_TRUE(fs::exists(t.runs + "/evil.txt"));  // not a kept folder: reported, not undone
  EXPECT_NE(std::find(done.begin(), done.end(), "restored " + t.tpl + "/a.cu"), done.end());
  EXPECT_NE(std::find(done.begin(), done.end(), "removed " + t.tpl + "/new"), done.end());
}

}  // namespace
}  // namespace attn
