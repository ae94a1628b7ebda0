// iters.tsv: exact line format, append vs rebuild, atomic rewrite; ItersTsvWriter follows the DB through
// deletion, truncation, edits and failed writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "db/iters_tsv.hpp"
#include "db/iters_tsv_writer.hpp"
#include "db/iters_tsv_owner.hpp"
#include "db/store.hpp"
#include "tests/db/db_fixtures.hpp"
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

IterationRecord row(std::int64_t iter, IterationStatus status) {
  IterationRecord it;
  it.iter = iter;
  it.status = status;
  it.params = "BLOCK_N=64,num_warps=8,stages=2";
  return it;
}

TEST(ItersTsv, HeaderIsExactlyTheSeedFormat) {
  EXPECT_EQ(kItersTsvHeader,
            "iter\tgeomean_ms\tdelta_ms\twindow_ms\tglobal_ms\tretrieval_ms\tstatus\tparams\tdescription");
}

TEST(ItersTsv, NumbersHaveFourDecimalsAndSignedDeltas) {
  EXPECT_EQ(format_ms(0.07912), "0.0791");
  EXPECT_EQ(format_ms(0.07916), "0.0792");
  EXPECT_EQ(format_ms(1.5), "1.5000");
  EXPECT_EQ(format_ms(12.34567), "12.3457");
  EXPECT_EQ(format_ms(std::nullopt), "-");
  EXPECT_EQ(format_delta_ms(-0.00213), "-0.0021");
  EXPECT_EQ(format_delta_ms(0.0008), "+0.0008");
  EXPECT_EQ(format_delta_ms(0.0), "+0.0000");
  EXPECT_EQ(format_delta_ms(-0.00001), "+0.0000");  // no "-0.0000"
  EXPECT_EQ(format_delta_ms(std::nullopt), "-");
  EXPECT_EQ(tsv_text("a\tb\nc\r\nd"), "a b c  d");
  EXPECT_EQ(tsv_text(""), "-");
}

TEST(ItersTsv, RenderRowKeepAndCrash) {
  IterationRecord keep = row(12, IterationStatus::keep);
  keep.geomean_ms = 0.07912;
  keep.delta_ms = -0.00213;
  keep.window_ms = 0.0702;
  keep.global_ms = 0.08;
  keep.retrieval_ms = 0.0901;
  keep.description = "fp16 P.V\twith V\nconverted";
  EXPECT_EQ(render_row(keep),
            "12\t0.0791\t-0.0021\t0.0702\t0.0800\t0.0901\tkeep\tBLOCK_N=64,num_warps=8,stages=2\t"
            "fp16 P.V with V converted");

  IterationRecord crash = row(13, IterationStatus::crash);
  crash.failure_kind = FailureKind::hang;
  EXPECT_EQ(render_row(crash), "13\t-\t-\t-\t-\t-\tcrash\tBLOCK_N=64,num_warps=8,stages=2\t-");

  IterationRecord slower = row(14, IterationStatus::discard);
  slower.geomean_ms = 0.08;
  slower.delta_ms = 0.0008;
  EXPECT_EQ(render_row(slower), "14\t0.0800\t+0.0008\t-\t-\t-\tdiscard\tBLOCK_N=64,num_warps=8,stages=2\t-");

  // Every line has exactly nine fields whatever the text holds.
  for (const auto& r : {keep, crash, slower}) {
    auto line = render_row(r);
    EXPECT_EQ(std::count(line.begin(), line.end(), '\t'), 8) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos);
  }
  EXPECT_THROW(render_row(row(15, IterationStatus::running)), std::invalid_argument);
}

TEST(ItersTsv, AppendAndWriteAllGiveTheSameFileFromTheDb) {
  auto dir = test::temp_dir("db-tsv");
  auto db = ExperimentDb::open(dir + "/attn-tuner.db");
  auto run = db.begin_run(test::sample_run("quick"));
  const std::string appended = dir + "/appended.tsv", rebuilt = dir + "/iters.tsv";

  // The daemon's way: append each iteration as it finishes.
  double scale = 1.3;
  for (int i = 0; i < 6; ++i) {
    auto v = test::sample_variant(64 * (i + 1), i % 2 ? 4 : 8, 2);
    auto vid = db.upsert_variant(v);
    std::int64_t iter;
    if (i == 3) {  // a crash with a multi-line reason
      IterationRecord it;
      it.run_id = run;
      it.suite = "quick";
      it.template_name = v.template_name;
      it.params_json = v.params_json;
      iter = db.begin_iteration(it);
      it.iter = iter;
      it.status = IterationStatus::crash;
      it.failure_kind = FailureKind::fault;
      it.description = "illegal address\tat\nline 2";
      db.finish_iteration(it);
    } else {
      scale *= (i % 2 ? 1.05 : 0.93);
      iter = test::add_scored_iteration(db, run, v, vid, scale, i % 2 ? IterationStatus::discard : IterationStatus::keep,
                                        "step " + std::to_string(i));
    }
    append_rows(appended, {*db.iteration(iter)});
  }
  // A running iteration is in the DB but not in the file.
  IterationRecord open_it;
  open_it.run_id = run;
  open_it.suite = "quick";
  open_it.template_name = "fa2_mma";
  open_it.params_json = R"({"BLOCK_N":64})";
  db.begin_iteration(open_it);

  write_all(rebuilt, db.iterations());
  const auto text = slurp(rebuilt);
  EXPECT_EQ(text, slurp(appended));
  EXPECT_EQ(text, render_all(db.iterations()));

  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 7u);  // header + 6 finished
  EXPECT_EQ(lines[0], kItersTsvHeader);
  EXPECT_NE(lines[4].find("\tcrash\t"), std::string::npos);
  EXPECT_NE(lines[4].find("illegal address at line 2"), std::string::npos);
  for (const auto& l : lines) EXPECT_EQ(std::count(l.begin(), l.end(), '\t'), 8) << l;
  // iter numbers increase down the file.
  for (std::size_t i = 2; i < lines.size(); ++i) EXPECT_LT(std::stoll(lines[i - 1]), std::stoll(lines[i]));
}

TEST(ItersTsv, WriteAllReplacesAtomicallyAndAppendChecksTheHeader) {
  auto dir = test::temp_dir("db-tsv");
  const std::string path = dir + "/iters.tsv";
  std::ofstream(path) << "stale content\n";
  IterationRecord k = row(1, IterationStatus::keep);
  k.geomean_ms = 0.5;
  EXPECT_THROW(append_rows(path, {k}), std::runtime_error);  // not an iters.tsv: untouched
  EXPECT_EQ(slurp(path), "stale content\n");

  write_all(path, {k});
  EXPECT_EQ(slurp(path), std::string(kItersTsvHeader) + "\n1\t0.5000\t-\t-\t-\t-\tkeep\t" + k.params + "\t-\n");
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename(), "iters.tsv") << "left behind: " << entry.path();
  }
  write_all(path, {});
  EXPECT_EQ(slurp(path), std::string(kItersTsvHeader) + "\n");
  EXPECT_THROW(write_all(dir + "/no/such/dir/iters.tsv", {k}), std::runtime_error);
}

// ---- ItersTsvWriter ----

/// A stand-in for the DB: the rows "committed" so far.
struct Rows {
  std::vector<IterationRecord> rows;
  IterationRecord& add(IterationStatus status = IterationStatus::discard) {
    return rows.emplace_back(row(std::int64_t(rows.size()) + 1, status));
  }
  /// As ExperimentDb::finished_after: the finished rows after `after`, up to the first running one.
  ItersTsvWriter::RowsAfter after() {
    return [this](std::optional<std::int64_t> after) {
      std::vector<IterationRecord> out;
      for (const auto& it : rows) {
        if (after && it.iter <= *after) continue;
        if (it.status == IterationStatus::running) break;
        out.push_back(it);
      }
      return out;
    };
  }
};

/// A new finished row committed to `db`, then `w`'s write.
ItersTsvWriter::Outcome write_new(ItersTsvWriter& w, Rows& db, std::string& note) {
  db.add();
  return w.write_ready(note);
}

TEST(ItersTsvWriter, AppendsWhileTheFileIsItsOwnAndRebuildsWhenItIsNot) {
  const std::string dir = test::temp_dir("tsvw"), path = dir + "/iters.tsv";
  Rows db;
  ItersTsvWriter w(path, db.after());
  w.rebuild();
  EXPECT_EQ(slurp(path), render_all(db.rows));
  std::string note;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(write_new(w, db, note), ItersTsvWriter::Outcome::appended) << note;
  EXPECT_EQ(slurp(path), render_all(db.rows));

  fs::remove(path);  // deleted while the daemon runs
  EXPECT_EQ(write_new(w, db, note), ItersTsvWriter::Outcome::rebuilt);
  EXPECT_NE(note.find("it was missing"), std::string::npos) << note;
  EXPECT_EQ(slurp(path), render_all(db.rows));  // every earlier row is back, not only the new one

  fs::resize_file(path, 40);  // truncated in the middle of a line
  EXPECT_EQ(write_new(w, db, note), ItersTsvWriter::Outcome::rebuilt);
  EXPECT_NE(note.find("had changed"), std::string::npos) << note;
  EXPECT_EQ(slurp(path), render_all(db.rows));

  { std::ofstream(path, std::ios::app) << "a note someone typed\n"; }  // edited
  EXPECT_EQ(write_new(w, db, note), ItersTsvWriter::Outcome::rebuilt);
  EXPECT_EQ(slurp(path), render_all(db.rows));
  EXPECT_EQ(write_new(w, db, note), ItersTsvWriter::Outcome::appended);
  EXPECT_EQ(slurp(path), render_all(db.rows));
}

// iters.tsv is in iter order (docs/db-schema.md): a row that finished before an earlier iteration (another GPU's, a
// screen sent ahead, a proposer's crash row) waits for it, and comes right after it, once.
TEST(ItersTsvWriter, ARowThatFinishedBeforeAnEarlierOneWaitsForIt) {
  const std::string dir = test::temp_dir("tsvw-order"), path = dir + "/iters.tsv";
  Rows db;
  ItersTsvWriter w(path, db.after());
  w.rebuild();
  std::string note;
  db.add();                          // 1 finished
  db.add(IterationStatus::running);  // 2 still running
  db.add();                          // 3 finished before 2
  EXPECT_EQ(w.write_ready(note), ItersTsvWriter::Outcome::appended) << note;
  EXPECT_EQ(slurp(path), render_all({db.rows[0]}));
  {  // a rebuild while 2 runs (the file deleted) writes the same: the rows before the running one
    ItersTsvWriter other(path, db.after());
    other.rebuild();
    EXPECT_EQ(slurp(path), render_all({db.rows[0]}));
  }
  db.add();  // 4 finished before 2
  EXPECT_EQ(w.write_ready(note), ItersTsvWriter::Outcome::appended) << note;
  EXPECT_EQ(slurp(path), render_all({db.rows[0]}));
  db.rows[1].status = IterationStatus::crash;  // 2 ends: 2, 3 and 4 follow in order
  EXPECT_EQ(w.write_ready(note), ItersTsvWriter::Outcome::appended) << note;
  EXPECT_EQ(slurp(path), render_all(db.rows));
  EXPECT_EQ(w.write_ready(note), ItersTsvWriter::Outcome::appended) << note;  // nothing new: nothing written twice
  EXPECT_EQ(slurp(path), render_all(db.rows));
  EXPECT_EQ(write_new(w, db, note), ItersTsvWriter::Outcome::appended) << note;
  EXPECT_EQ(slurp(path), render_all(db.rows));
}

// The DB's side of it: ExperimentDb::finished_after stops at the first running iteration.
TEST(ItersTsvWriter, TheDbGivesTheFinishedRowsUpToTheFirstRunningOne) {
  auto dir = test::temp_dir("db-finished-after");
  auto db = ExperimentDb::open(dir + "/attn-tuner.db");
  const auto run = db.begin_run(test::sample_run("quick"));
  std::vector<IterationRecord> its(4);
  for (auto& it : its) {
    it.run_id = run;
    it.suite = "quick";
    it.template_name = "fa2_mma";
    it.params_json = R"({"BLOCK_N":64})";
    it.iter = db.begin_iteration(it);
    it.status = IterationStatus::crash;
    it.failure_kind = FailureKind::fault;
  }
  auto iters = [](const std::vector<IterationRecord>& rows) {
    std::vector<std::int64_t> out;
    for (const auto& r : rows) out.push_back(r.iter);
    return out;
  };
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(iters(db.finished_after(std::nullopt)), V{});
  db.finish_iteration(its[1]);
  db.finish_iteration(its[3]);
  EXPECT_EQ(iters(db.finished_after(std::nullopt)), V{});  // the first one still runs
  db.finish_iteration(its[0]);
  EXPECT_EQ(iters(db.finished_after(std::nullopt)), (V{its[0].iter, its[1].iter}));  // the third one still runs
  EXPECT_EQ(iters(db.finished_after(its[0].iter)), V{its[1].iter});
  db.finish_iteration(its[2]);
  EXPECT_EQ(iters(db.finished_after(its[1].iter)), (V{its[2].iter, its[3].iter}));
  EXPECT_EQ(iters(db.finished_after(its[3].iter)), V{});
  EXPECT_EQ(render_all(db.finished_after(std::nullopt)), render_all(db.iterations()));
}

// The start of a run: a file in step with the DB (header, one line per finished iteration, the last one's line)
// is kept as it is; a missing, shorter, longer or differently ending one is rebuilt, and appends follow.
TEST(ItersTsvWriter, AStartKeepsAFileInStepWithTheDbAndRebuildsAnyOther) {
  const std::string dir = test::temp_dir("tsvw-start"), path = dir + "/iters.tsv";
  Rows db;
  for (int i = 0; i < 5; ++i) db.add();
  auto tail = [&] {
    return ItersTsvWriter::Tail{db.rows.size(), db.rows.empty() ? std::nullopt : std::optional(db.rows.back())};
  };
  ItersTsvWriter w(path, db.after(), tail);
  EXPECT_TRUE(w.rebuild_unless_current()) << "missing";
  EXPECT_EQ(slurp(path), render_all(db.rows));
  EXPECT_TRUE(tsv_matches(path, 5, render_row(db.rows.back())));
  EXPECT_FALSE(tsv_matches(path, 4, render_row(db.rows.back())));
  EXPECT_FALSE(tsv_matches(path, 5, render_row(db.rows[3])));
  EXPECT_FALSE(tsv_matches(dir + "/none.tsv", 0, ""));
  const auto written = fs::last_write_time(path);
  {
    ItersTsvWriter again(path, db.after(), tail);
    EXPECT_FALSE(again.rebuild_unless_current()) << "in step";
    EXPECT_EQ(fs::last_write_time(path), written);
    std::string note;
    EXPECT_EQ(write_new(again, db, note), ItersTsvWriter::Outcome::appended) << note;  // its size is known
    EXPECT_EQ(slurp(path), render_all(db.rows));
  }
  db.add();  // a row the file lacks (the daemon was killed between the commit and the append)
  EXPECT_TRUE(ItersTsvWriter(path, db.after(), tail).rebuild_unless_current());
  EXPECT_EQ(slurp(path), render_all(db.rows));
  db.rows.back().description = "changed";  // the last line differs
  EXPECT_TRUE(ItersTsvWriter(path, db.after(), tail).rebuild_unless_current());
  EXPECT_EQ(slurp(path), render_all(db.rows));
  { std::ofstream(path, std::ios::app) << "a note someone typed\n"; }  // a line too many
  EXPECT_TRUE(ItersTsvWriter(path, db.after(), tail).rebuild_unless_current());
  EXPECT_EQ(slurp(path), render_all(db.rows));
  // No tail to compare with: always rebuilt.
  EXPECT_TRUE(ItersTsvWriter(path, db.after()).rebuild_unless_current());
  {  // a header cut short (only the header's start left): nothing logged, rebuilt
    std::ofstream(path, std::ios::trunc) << "iter\tgeomean";
  }
  EXPECT_TRUE(ItersTsvWriter(path, db.after(), tail).rebuild_unless_current());
  EXPECT_EQ(slurp(path), render_all(db.rows));
  {  // no header: not a log, never overwritten
    const std::string text = slurp(path);
    std::ofstream(path, std::ios::trunc) << "x" << text.substr(1);
  }
  const std::string not_a_log = slurp(path);
  try {
    ItersTsvWriter(path, db.after(), tail).rebuild_unless_current();
    ADD_FAILURE() << "a file without the header was overwritten";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path + " is not an iters.tsv"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(path), not_a_log);
  fs::remove(path);
  EXPECT_TRUE(ItersTsvWriter(path, db.after(), tail).rebuild_unless_current());
  const std::string five = slurp(path);
  db.rows.clear();  // a new, empty DB given this log: it is another DB's, kept as it is
  try {
    ItersTsvWriter(path, db.after(), tail).rebuild_unless_current();
    ADD_FAILURE() << "another DB's log was overwritten";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path + " is the log of another DB (it starts at iteration 1, and this DB has "
                                                "none)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(slurp(path), five);
  fs::remove(path);  // the empty DB's own log: the header alone
  EXPECT_TRUE(ItersTsvWriter(path, db.after(), tail).rebuild_unless_current());
  EXPECT_FALSE(ItersTsvWriter(path, db.after(), tail).rebuild_unless_current());
  EXPECT_EQ(slurp(path), render_all(db.rows));
}

// A log belongs to one DB (db/iters_tsv_owner.hpp): another DB's log, whose first iteration differs, is never
// rewritten at a start; this DB's log, truncated or with lines appended, is.
TEST(ItersTsvOwner, ALogIsItsFirstIterationsDbs) {
  const std::string dir = test::temp_dir("tsv-owner"), path = dir + "/iters.tsv";
  Rows mine, other;
  for (int i = 0; i < 4; ++i) mine.add(), other.add();
  other.rows[0].description = "another night";
  write_all(path, other.rows);
  const std::string others = slurp(path);
  EXPECT_EQ(iters_tsv_not_owned(path, render_row(other.rows[0])), std::nullopt);
  const auto why = iters_tsv_not_owned(path, render_row(mine.rows[0]));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("is the log of another DB (its first iteration, 1, is not this DB's first)"), std::string::npos)
      << *why;
  EXPECT_NE(why->find("--tsv FILE"), std::string::npos) << *why;
  EXPECT_THROW(ItersTsvWriter(path, mine.after()).rebuild(), std::runtime_error);
  EXPECT_EQ(slurp(path), others);
  // Its own DB: truncated to its first lines, it is rebuilt whole.
  fs::resize_file(path, render_all({other.rows[0]}).size());
  EXPECT_NO_THROW(ItersTsvWriter(path, other.after()).rebuild());
  EXPECT_EQ(slurp(path), others);
  EXPECT_EQ(iters_tsv_not_owned(dir + "/none.tsv", ""), std::nullopt);
  EXPECT_EQ(default_iters_tsv_path("runs/attn-tuner.db"), "runs/attn-tuner.iters.tsv");
  EXPECT_EQ(default_iters_tsv_path("/tmp/x/research"), "/tmp/x/research.iters.tsv");
  EXPECT_NE(default_iters_tsv_path("a/one.db"), default_iters_tsv_path("a/two.db"));
}

TEST(ItersTsvWriter, AFailedWriteNeverThrowsAndTheNextWriteRebuilds) {
  const std::string dir = test::temp_dir("tsvw"), folder = dir + "/out", path = folder + "/iters.tsv";
  Rows db;
  ItersTsvWriter w(path, db.after());
  EXPECT_THROW(w.rebuild(), std::runtime_error);  // no folder: the start of a run fails clearly
  { std::ofstream(folder) << "a file where the folder should be\n"; }
  std::string note;
  EXPECT_EQ(write_new(w, db, note), ItersTsvWriter::Outcome::failed);
  EXPECT_NE(note.find(path), std::string::npos) << note;
  EXPECT_NE(note.find("rebuilt from it"), std::string::npos) << note;
  EXPECT_EQ(write_new(w, db, note), ItersTsvWriter::Outcome::failed);
  fs::remove(folder);
  fs::create_directories(folder);  // the problem goes away: the next write brings every row back
  EXPECT_EQ(write_new(w, db, note), ItersTsvWriter::Outcome::rebuilt);
  EXPECT_NE(note.find("the last write to it had failed"), std::string::npos) << note;
  EXPECT_EQ(slurp(path), render_all(db.rows));
  EXPECT_EQ(db.rows.size(), 3u);
}

}  // namespace
}  // namespace attn
