// The RAII layer: statements, bindings, the transaction guard, read-only connections.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <cmath>
#include <limits>

#include "db/sqlite.hpp"
#include "tests/test_support.hpp"

namespace attn::sqlite {
namespace {

Connection scratch(const std::string& name) {
  auto conn = Connection::open(test::temp_dir("db-sqlite") + "/" + name, OpenMode::read_write_create);
  conn.exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT, x REAL)");
  return conn;
}

std::int64_t count_rows(Connection& c) {
  auto st = c.prepare("SELECT count(*) FROM t");
  st.step();
  return st.column_int64(0);
}

TEST(Sqlite, BindsAndReadsEveryType) {
  auto c = scratch("types.db");
  auto ins = c.prepare("INSERT INTO t (k, v, x) VALUES (?, ?, ?)");
  ins.bind(1, 7).bind(2, std::string("tab\there")).bind(3, 0.0791).run();
  ins.reset();
  ins.bind(1, std::int64_t{1} << 40).bind(2, std::nullopt).bind(3, std::optional<double>{}).run();
  auto st = c.prepare("SELECT k, v, x FROM t ORDER BY k");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.column_int64(0), 7);
  EXPECT_EQ(st.column_text(1), "tab\there");
  EXPECT_DOUBLE_EQ(st.column_double(2), 0.0791);
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.column_int64(0), std::int64_t{1} << 40);
  EXPECT_EQ(st.column_opt_text(1), std::nullopt);
  EXPECT_EQ(st.column_opt_double(2), std::nullopt);
  EXPECT_FALSE(st.step());
  EXPECT_EQ(st.column_name(2), "x");
}

TEST(Sqlite, RefusesNonFiniteNumbersInsteadOfStoringNull) {
  auto c = scratch("nan.db");
  auto ins = c.prepare("INSERT INTO t (k, x) VALUES (1, ?)");
  EXPECT_THROW(ins.bind(1, std::nan("")), std::invalid_argument);
  EXPECT_THROW(ins.bind(1, std::numeric_limits<double>::infinity()), std::invalid_argument);
}

TEST(Sqlite, PrepareRefusesASecondStatementAndReportsSqlErrors) {
  auto c = scratch("two.db");
  try {
    c.prepare("SELECT 1; DELETE FROM t");
    FAIL() << "two statements accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only one SQL statement"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(c.prepare("SELECT 1 ;  \n"));
  try {
    c.prepare("SELECT nope FROM t");
    FAIL() << "bad column accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SQLITE_ERROR);
    EXPECT_NE(std::string(e.what()).find("no such column: nope"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("two.db"), std::string::npos) << e.what();
  }
}

TEST(Sqlite, TransactionRollsBackUnlessCommitted) {
  auto c = scratch("tx.db");
  try {
    Transaction tx(c);
    c.exec("INSERT INTO t (k) VALUES (1)");
    c.exec("INSERT INTO t (k) VALUES (2)");
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(c.autocommit());
  EXPECT_EQ(count_rows(c), 0);
  {
    Transaction tx(c);
    c.exec("INSERT INTO t (k) VALUES (3)");
    EXPECT_THROW(Transaction nested(c), std::logic_error);
    tx.commit();
  }
  EXPECT_EQ(count_rows(c), 1);
  // A constraint failure inside the guard: the earlier insert of the same transaction is undone.
  EXPECT_THROW(
      {
        Transaction tx(c);
        c.exec("INSERT INTO t (k) VALUES (4)");
        c.exec("INSERT INTO t (k) VALUES (3)");  // duplicate primary key
        tx.commit();
      },
      Error);
  EXPECT_EQ(count_rows(c), 1);
}

TEST(Sqlite, ReadOnlyConnectionRefusesWritesAndMissingFiles) {
  auto dir = test::temp_dir("db-sqlite");
  { Connection::open(dir + "/ro.db", OpenMode::read_write_create).exec("CREATE TABLE t (k INTEGER)"); }
  auto ro = Connection::open(dir + "/ro.db", OpenMode::read_only);
  EXPECT_TRUE(ro.read_only());
  try {
    ro.exec("INSERT INTO t VALUES (1)");
    FAIL() << "write accepted on a read-only connection";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SQLITE_READONLY);
  }
  EXPECT_FALSE(ro.prepare("INSERT INTO t VALUES (1)").readonly());
  EXPECT_TRUE(ro.prepare("SELECT * FROM t").readonly());
  try {
    Connection::open(dir + "/absent.db", OpenMode::read_only);
    FAIL() << "missing file opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SQLITE_CANTOPEN);
    EXPECT_NE(std::string(e.what()).find("absent.db"), std::string::npos);
  }
}

}  // namespace
}  // namespace attn::sqlite
