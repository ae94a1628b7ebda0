// Every read command on a DB on read-only storage (issue 48 item 4: `query sql` failed there with "unable to open
// database file", and `report` with a Python traceback): the doc test's fixture DB (two suites, ideas, champions)
// on a tmpfs remounted read-only (root) or in a folder without write permission (any other user). The research-DB
// test does the same at the research DB's size (tests/docs/research_db_commands.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

/// A folder holding `db_name`, made read-only: a tmpfs remounted read-only when root, else mode 0555. Skips the
/// test when root cannot mount (where root can write any folder).
class ReadOnlyFolder {
 public:
  explicit ReadOnlyFolder(const std::string& dir) : dir_(dir) { fs::create_directories(dir_); }
  ~ReadOnlyFolder() {
    if (mounted_) std::system(("umount -l '" + dir_ + "' 2>/dev/null").c_str());
    else fs::permissions(dir_, fs::perms(0755));
  }
  /// Mounts (root), fills with `fill`, then makes it read-only. False: no way to make it read-only here.
  template <class Fill>
  bool make(Fill fill) {
    if (::geteuid() == 0) {
      mounted_ = std::system(("mount -t tmpfs -o size=64m tmpfs '" + dir_ + "' 2>/dev/null").c_str()) == 0;
      if (!mounted_) return false;
      fill();
      return std::system(("mount -o remount,ro '" + dir_ + "'").c_str()) == 0;
    }
    fill();
    fs::permissions(dir_, fs::perms(0555));
    return true;
  }

 private:
  std::string dir_;
  bool mounted_ = false;
};

TEST(ReadOnlyStorage, EveryReadCommandWorksOnADbThatCannotBeWritten) {
  const std::string dir = test::temp_dir("ro-storage"), ro = dir + "/ro", db = ro + "/fixture.db", out = dir + "/out";
  const std::string fixture = test::data_dir() + "/../docs/fixture.db.xz";
  ReadOnlyFolder folder(ro);
  const bool ok = folder.make([&] {
    ASSERT_EQ(std::system(("xz -dc '" + fixture + "' > '" + db + "'").c_str()), 0);
  });
  if (!ok) GTEST_SKIP() << "root, but cannot mount a tmpfs: no way to make the DB's folder read-only";
  const std::string bytes = test::read_text(db);
  const std::string q = "'" + db + "'";
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"status --db " + q, "run 2 (finished)"},
      {"query best --db " + q, "overall"},
      {"query sql \"SELECT suite, count(*) FROM iterations GROUP BY suite\" --db " + q, "quick"},
      {"query top 3 --suite full --db " + q, "rank"},
      {"query ideas --db " + q, "01_fast.idea"},
      {"query tsv --db " + q, "iter\tgeomean_ms"},
      {"report --db " + q + " --suite quick --out '" + out + "/report'", "wrote " + out + "/report/index.html"},
      {"export --db " + q + " --suite quick --out '" + out + "/sub' --templates '" + test::data_dir() +
           "/fake_templates'",
       "wrote " + out + "/sub"},
      {"replay --db " + q + " --suite full --strategy random --seeds 2 --templates '" + test::data_dir() +
           "/fake_templates'",
       "strategy random"},
      {"idea context --db " + q + " --suite quick --out '" + out + "/kit' --templates '" + test::data_dir() +
           "/fake_templates'",
       ""},
  };
  for (const auto& c : cases) {
    const test::CommandOutput r = test::run_binary(c.args, "ATTN_TUNER_CACHE='" + dir + "/cache'");
    EXPECT_EQ(r.code, 0) << c.args << "\n" << r.text;
    EXPECT_NE(r.text.find(c.expect), std::string::npos) << c.args << "\n" << r.text;
    EXPECT_EQ(r.text.find("unable to open"), std::string::npos) << c.args << "\n" << r.text;
    EXPECT_EQ(r.text.find("Traceback"), std::string::npos) << c.args << "\n" << r.text;
  }
  EXPECT_EQ(test::read_text(db), bytes);
  EXPECT_FALSE(fs::exists(db + "-shm"));
}

}  // namespace
}  // namespace attn
