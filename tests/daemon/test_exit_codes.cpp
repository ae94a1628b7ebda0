// One exit-code convention (cli/commands.hpp, docs/cli.md; issue 48 item 9): bad usage exits 2 in every command,
// the option parser's errors too (they ended with CLI11's own codes, 105 or 109), and `--help` exits 0. `db migrate`
// takes its DB with --db, as every other command (the argument, its older spelling, still works; both: bad usage).
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/daemon/daemon_harness.hpp"

namespace attn {
namespace {

TEST(ExitCodes, BadUsageExitsTwoInEveryCommand) {
  const std::string dir = test::temp_dir("exit-codes");
  const std::vector<std::string> bad = {
      "query best --no-such-option",              // an unknown option (CLI11: 109)
      "query top many",                           // a value that is not a number (CLI11: conversion)
      "export --db '" + dir + "/x.db'",           // a required option missing (--out)
      "idea context --db '" + dir + "/none.db' --out '" + dir + "/kit'",  // a file that does not exist (CLI11: 105)
      "no-such-command",                          // an unknown command
      "",                                         // no command at all
      "status --db '" + dir + "/none.db'",        // no DB (CliError)
      "replay --seeds 2",                         // neither --db nor --csv (CliError)
      "compile --template fa3_tma_p66",           // a DB's template without --db (CliError)
      "run --db '" + dir + "/r.db' --budget soon",  // a bad duration (CliError)
  };
  for (const auto& args : bad) {
    const test::Output r = test::run_tuner(args);
    EXPECT_EQ(r.code, 2) << "attn-tuner " << args << "\n" << r.text;
  }
  EXPECT_EQ(test::run_tuner("--help").code, 0);
  EXPECT_EQ(test::run_tuner("query --help").code, 0);
}

TEST(ExitCodes, DbMigrateTakesItsDbWithDb) {
  const std::string dir = test::temp_dir("migrate-db"), db = dir + "/f.db";
  ASSERT_EQ(std::system(("xz -dc '" + test::data_dir() + "/../docs/fixture.db.xz' > '" + db + "'").c_str()), 0);
  const test::Output named = test::run_tuner("db migrate --db '" + db + "'");
  EXPECT_EQ(named.code, 0) << named.text;
  EXPECT_NE(named.text.find(db + ": schema version"), std::string::npos) << named.text;
  EXPECT_EQ(test::run_tuner("db migrate '" + db + "'").code, 0);  // the older spelling
  EXPECT_EQ(test::run_tuner("db migrate --db '" + db + "' '" + db + "'").code, 2);  // both
  const test::Output missing = test::run_tuner("db migrate --db '" + dir + "/none.db'");
  EXPECT_EQ(missing.code, 2) << missing.text;
  EXPECT_NE(missing.text.find("no experiment DB at " + dir + "/none.db"), std::string::npos) << missing.text;
}

}  // namespace
}  // namespace attn
