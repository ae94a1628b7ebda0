// What `run` checks before any work (cli/run_preflight.hpp, issue 48 item 2): a GPU that answers, and a log that
// is this DB's (db/iters_tsv_owner.hpp). On the CPU with the fake worker as the GPU, and with the real worker on a
// machine without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "db/iters_tsv_owner.hpp"
#include "tests/daemon/daemon_harness.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

/// The names in `dir` (not recursive), sorted.
std::set<std::string> listing(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// A new DB in a folder that holds another DB's log, given with --tsv: refused before the DB exists, the log as it
// was; two DBs in one folder without --tsv: each its own log, named after it.
TEST(RunPreflight, ARunNeverRewritesAnotherDbsLog) {
  test::DaemonFixture f;
  ASSERT_EQ(test::run_tuner(f.args("--iterations 4")).code, 0);
  const std::string log = test::read_text(f.tsv);
  ASSERT_GT(log.size(), 100u);

  test::DaemonFixture g;  // another DB, given the first DB's log
  g.db = f.dir + "/new.db";
  g.tsv = f.tsv;
  const auto before = listing(f.dir);
  const test::Output refused = test::run_tuner(g.args("--iterations 4"));
  EXPECT_EQ(refused.code, 2) << refused.text;
  EXPECT_NE(refused.text.find("run: " + f.tsv + " is the log of another DB (it starts at iteration 1, and this DB "
                              "has none)"),
            std::string::npos)
      << refused.text;
  EXPECT_EQ(test::read_text(f.tsv), log);
  EXPECT_EQ(listing(f.dir), before);  // no new DB, no pid file, no proposals folder

  // Without --tsv: beside each DB, named after it.
  const std::string one = f.dir + "/one.db", two = f.dir + "/two.db";
  for (const std::string& db : {one, two}) {
    test::DaemonFixture h;
    h.db = db;
    std::string args = h.args("--iterations 3");
    const std::string tsv_option = "--tsv '" + h.tsv + "' ";
    args.erase(args.find(tsv_option), tsv_option.size());
    const test::Output r = test::run_tuner(args);
    ASSERT_EQ(r.code, 0) << r.text;
  }
  EXPECT_EQ(default_iters_tsv_path(one), f.dir + "/one.iters.tsv");
  const test::Output q1 = test::run_tuner("query tsv --db '" + one + "'");
  const test::Output q2 = test::run_tuner("query tsv --db '" + two + "'");
  EXPECT_EQ(test::read_text(f.dir + "/one.iters.tsv"), q1.text);
  EXPECT_EQ(test::read_text(f.dir + "/two.iters.tsv"), q2.text);
  EXPECT_EQ(test::read_text(f.tsv), log);  // the first DB's log untouched by both
}

// A worker that cannot start (here: a program that exits at once; on a machine without a GPU: the real worker)
// ends `run` within seconds with exit 2 and the reason, before anything: no DB, no pid file, no proposals folder,
// the log as it was.
TEST(RunPreflight, NoGpuIsRefusedBeforeAnyWork) {
  test::DaemonFixture f;
  ASSERT_EQ(test::run_tuner(f.args("--iterations 3")).code, 0);
  const std::string log = test::read_text(f.tsv);
  test::DaemonFixture g;
  g.db = f.dir + "/new.db";
  g.tsv = f.dir + "/new.iters.tsv";
  const auto before = listing(f.dir);
  std::string args = g.args("--iterations 3 --ideas '" + f.dir + "/queue'");
  const std::string fake = "--worker-exe '" + test::fake_worker_path() + "'";
  args.replace(args.find(fake), fake.size(), "--worker-exe /bin/false");
  const auto t0 = std::chrono::steady_clock::now();
  const test::Output r = test::run_tuner(args);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 2) << r.text;
  EXPECT_NE(r.text.find("run: no usable GPU: the GPU worker did not start"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("nothing was done to " + g.db), std::string::npos) << r.text;
  EXPECT_LT(s, 20.0);
  EXPECT_EQ(listing(f.dir), before);
  EXPECT_EQ(test::read_text(f.tsv), log);

  if (test::gpu_available()) GTEST_SKIP() << "a GPU is present: the real worker starts";
  args.replace(args.find("--worker-exe /bin/false"), 23, "");
  const test::Output real = test::run_tuner(args);
  EXPECT_EQ(real.code, 2) << real.text;
  EXPECT_NE(real.text.find("run: no usable GPU"), std::string::npos) << real.text;
  EXPECT_EQ(listing(f.dir), before);
}

}  // namespace
}  // namespace attn
