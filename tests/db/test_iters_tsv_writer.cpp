// ItersTsvWriter: iters.tsv follows the DB through deletion, truncation, edits and failed writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "db/iters_tsv.hpp"
#include "db/iters_tsv_writer.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

IterationRecord row(std::int64_t iter) {
  IterationRecord it;
  it.iter = iter;
  it.status = IterationStatus::discard;
  it.geomean_ms = 0.1 + 0.01 * double(iter);
  it.params = "A=" + std::to_string(iter);
  it.description = "row " + std::to_string(iter);
  return it;
}

/// A stand-in for the DB: the rows "committed" so far.
struct Rows {
  std::vector<IterationRecord> rows;
  IterationRecord& add() { return rows.emplace_back(row(std::int64_t(rows.size()) + 1)); }
};

TEST(ItersTsvWriter, AppendsWhileTheFileIsItsOwnAndRebuildsWhenItIsNot) {
  const std::string dir = test::temp_dir("tsvw"), path = dir + "/iters.tsv";
  Rows db;
  ItersTsvWriter w(path, [&] { return db.rows; });
  w.rebuild();
  EXPECT_EQ(slurp(path), render_all(db.rows));
  std::string note;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(w.write(db.add(), note), ItersTsvWriter::Outcome::appended) << note;
  EXPECT_EQ(slurp(path), render_all(db.rows));

  fs::remove(path);  // deleted while the daemon runs
  EXPECT_EQ(w.write(db.add(), note), ItersTsvWriter::Outcome::rebuilt);
  EXPECT_NE(note.find("it was missing"), std::string::npos) << note;
  EXPECT_EQ(slurp(path), render_all(db.rows));  // every earlier row is back, not only the new one

  fs::resize_file(path, 40);  // truncated in the middle of a line
  EXPECT_EQ(w.write(db.add(), note), ItersTsvWriter::Outcome::rebuilt);
  EXPECT_NE(note.find("had changed"), std::string::npos) << note;
  EXPECT_EQ(slurp(path), render_all(db.rows));

  { std::ofstream(path, std::ios::app) << "a note someone typed\n"; }  // edited
  EXPECT_EQ(w.write(db.add(), note), ItersTsvWriter::Outcome::rebuilt);
  EXPECT_EQ(slurp(path), render_all(db.rows));
  EXPECT_EQ(w.write(db.add(), note), ItersTsvWriter::Outcome::appended);
  EXPECT_EQ(slurp(path), render_all(db.rows));
}

TEST(ItersTsvWriter, AFailedWriteNeverThrowsAndTheNextWriteRebuilds) {
  const std::string dir = test::temp_dir("tsvw"), folder = dir + "/out", path = folder + "/iters.tsv";
  Rows db;
  ItersTsvWriter w(path, [&] { return db.rows; });
  EXPECT_THROW(w.rebuild(), std::runtime_error);  // no folder: the start of a run fails clearly
  { std::ofstream(folder) << "a file where the folder should be\n"; }
  std::string note;
  EXPECT_EQ(w.write(db.add(), note), ItersTsvWriter::Outcome::failed);
  EXPECT_NE(note.find(path), std::string::npos) << note;
  EXPECT_NE(note.find("rebuilt from it"), std::string::npos) << note;
  EXPECT_EQ(w.write(db.add(), note), ItersTsvWriter::Outcome::failed);
  fs::remove(folder);
  fs::create_directories(folder);  // the problem goes away: the next write brings every row back
  EXPECT_EQ(w.write(db.add(), note), ItersTsvWriter::Outcome::rebuilt);
  EXPECT_NE(note.find("the last write to it had failed"), std::string::npos) << note;
  EXPECT_EQ(slurp(path), render_all(db.rows));
  EXPECT_EQ(db.rows.size(), 3u);
}

}  // namespace
}  // namespace attn
