// Detecting writes of an untrusted program (the proposer, docs/proposer.md) outside its own directory: a
// snapshot of a watched set of folders before it runs and after, compared file by file. Roots taken with
// their contents (the small kernels_templates/ folder) can also be put back as they were.
//
// A file counts as changed when its type, size, mode, inode, mtime or ctime differ. ctime cannot be set
// from user space (utimensat and touch -d update it), so a write that restores the mtime is still seen.
// Files whose ctime moves without a write (the DB and its -wal: SQLite re-owns them on every open) are
// compared by a hash of their bytes instead.
// Limits: detection, not prevention (a write to the DB is found and named, but it happened); only the
// watched roots are compared; reads are not seen; a process that outlives the proposer (it left the
// process group with setsid) can still write after the second snapshot.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attn {

/// What is known of one path (symlinks are not followed).
struct FileState {
  char type = 'f';  ///< 'f' regular file, 'd' directory, 'l' symlink, 'o' other
  std::uintmax_t size = 0;
  std::uint32_t mode = 0;
  std::uint64_t inode = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  std::optional<std::string> content;  ///< file text (roots watched with contents) or the symlink target
  std::optional<std::uint64_t> digest; ///< XXH3-64 of the bytes, for files compared by content (ctime 0)
  bool operator==(const FileState&) const = default;
};

/// path -> state, for every path under the watched roots (roots included), minus the excluded ones.
struct Snapshot {
  std::map<std::string, FileState> files;
  std::vector<std::string> content_roots;  ///< roots whose files carry their contents
};

/// The folders to watch and the paths to leave out.
class WatchedSet {
 public:
  /// Watches `root` recursively (a missing root is watched for being created). With `keep_content`,
  /// snapshots hold the bytes of its files so that restore() can put them back: meant for small folders.
  void add(const std::string& root, bool keep_content);
  /// Leaves `path` and everything below it out of every comparison.
  void exclude(const std::string& path);
  /// Compares the file `path` by a hash of its bytes instead of its ctime (with size, mtime and inode):
  /// for a SQLite database and its -wal, whose owner SQLite sets again (moving the ctime) whenever a
  /// reader such as `attn-tuner query` opens them.
  void by_content(const std::string& path);

  /// Throws std::runtime_error naming the path when a folder cannot be listed or a kept file read.
  Snapshot snapshot() const;

 private:
  struct Root {
    std::string path;
    bool keep_content;
  };
  std::vector<Root> roots_;
  std::vector<std::string> excluded_, by_content_;
  bool is_excluded(const std::string& path) const;
  std::optional<FileState> state(const std::string& path, bool keep_content) const;
};

/// The differences from `before` to `after`, one line per path, sorted: "created <path>",
/// "deleted <path>", "modified <path>".
std::vector<std::string> snapshot_changes(const Snapshot& before, const Snapshot& after);

/// Puts the content roots of `before` back: files changed or deleted since are rewritten (mode kept),
/// paths created since are removed. Paths outside the content roots are left alone. Returns what it did,
/// one line per path ("restored <path>", "removed <path>"); throws std::runtime_error when it cannot.
std::vector<std::string> restore_snapshot(const Snapshot& before, const Snapshot& after);

}  // namespace attn
