// DbWriter: the run's DB and its iters.tsv, kept in iter order while iterations finish out of order, by this
// connection and by another one (a proposer's crash iteration).
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "daemon/db_writer.hpp"
#include "db/iters_tsv.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunRecord a_run() {
  RunRecord r;
  r.suite = "quick";
  r.suite_json = R"([{"case_id":"q0","family":"sliding_window","batch_size":1,"num_heads":8,"t_max":4096}])";
  r.strategy = "random";
  r.templates = {"fa2_mma"};
  return r;
}

IterationRecord begun(ExperimentDb& db, std::int64_t run) {
  IterationRecord it;
  it.run_id = run;
  it.suite = "quick";
  it.template_name = "fa2_mma";
  it.params_json = R"({"BLOCK_N":64})";
  it.iter = db.begin_iteration(it);
  it.status = IterationStatus::crash;
  it.failure_kind = FailureKind::compile;
  return it;
}

// What Proposer.EveryOutcomeIsRecordedAndTheRunGoesOn met under ThreadSanitizer: the proposer's crash iteration took
// its id before the loop's next one but finished after it, and iters.tsv had the later iteration first.
TEST(DbWriter, ItersTsvStaysInIterOrderWhenIterationsFinishOutOfOrder) {
  const std::string dir = test::temp_dir("db-writer"), db_path = dir + "/attn-tuner.db", tsv = dir + "/iters.tsv";
  tuning::DbWriter writer(db_path, tsv, false);
  writer.rebuild_tsv_unless_current();
  const auto run = writer.with([](ExperimentDb& db) { return db.begin_run(a_run()); });
  auto proposer = ExperimentDb::open(db_path);  // the proposer's own connection
  IterationRecord a = writer.with([&](ExperimentDb& db) { return begun(db, run); });
  IterationRecord crash = begun(proposer, run);  // taken before b, finished after it
  IterationRecord b = writer.with([&](ExperimentDb& db) { return begun(db, run); });
  writer.finish_iteration(a);
  writer.finish_iteration(b);
  const auto all = [&] { return writer.with([](ExperimentDb& db) { return render_all(db.iterations()); }); };
  EXPECT_EQ(slurp(tsv), render_all({*writer.with([&](ExperimentDb& db) { return db.iteration(a.iter); })}));
  proposer.finish_iteration(crash);
  writer.log_ready();
  EXPECT_EQ(slurp(tsv), all());
  IterationRecord c = writer.with([&](ExperimentDb& db) { return begun(db, run); });
  writer.finish_iteration(c);
  EXPECT_EQ(slurp(tsv), all());
  std::istringstream lines(slurp(tsv));
  std::vector<std::int64_t> iters;
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) iters.push_back(std::stoll(line));
  EXPECT_EQ(iters, (std::vector<std::int64_t>{a.iter, crash.iter, b.iter, c.iter}));
}

}  // namespace
}  // namespace attn
