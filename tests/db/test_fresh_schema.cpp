// The schema in one place (issue 47): a fresh file is built by the migration chain from version 1, so it has the schema
// of a file migrated from any older version: the same tables, indexes and views, with the same DDL (whitespace aside).
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>

#include "db/schema.hpp"
#include "db/store.hpp"
#include "tests/db/db_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

/// Every entry of sqlite_master but SQLite's own (type, name, table, DDL), sorted, with the DDL's whitespace
/// collapsed and dropped around ( ) and , (SQLite keeps a CREATE's text as written, and ALTER TABLE splices into it).
std::string normalised_schema(const std::string& path) {
  auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
  auto st = conn.prepare("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE "
                         "'sqlite_%' ORDER BY type, name");
  std::string out;
  while (st.step()) {
    std::string sql = std::regex_replace(st.column_text(3), std::regex(R"(\s+)"), " ");
    sql = std::regex_replace(sql, std::regex(R"(\s*([(),])\s*)"), "$1");
    out += st.column_text(0) + " " + st.column_text(1) + " on " + st.column_text(2) + ": " + sql + "\n";
  }
  return out;
}

TEST(FreshSchema, AFreshFileHasTheSchemaOfEveryMigratedOne) {
  const std::string dir = test::temp_dir("db-fresh");
  const std::string fresh = dir + "/fresh.db", from_v1 = dir + "/v1.db", from_v4 = dir + "/v4.db";
  ExperimentDb::open(fresh);
  {
    auto conn = test::create_v1_db(from_v1);  // the frozen version 1 (tests/data/db/schema_v1.sql)
    conn.exec("INSERT INTO schema_version (version) VALUES (1)");
  }
  ExperimentDb::open(from_v1);  // migrates through every step
  // A real file: created by attn-tuner at version 4 (its fresh DDL of that day), migrated to 10 by later builds.
  ASSERT_EQ(std::system(("xz -dc '" + test::data_dir() + "/replay/fa3_tma_full_random.db.xz' > '" + from_v4 + "'").c_str()), 0);
  ExperimentDb::open(from_v4);

  const std::string schema = normalised_schema(fresh);
  EXPECT_NE(schema.find("view iterations on iterations: CREATE VIEW iterations AS SELECT"), std::string::npos) << schema;
  EXPECT_NE(schema.find("table spare_evaluations"), std::string::npos) << schema;
  EXPECT_EQ(normalised_schema(from_v1), schema);
  EXPECT_EQ(normalised_schema(from_v4), schema);
  auto conn = sqlite::Connection::open(fresh, sqlite::OpenMode::read_only);
  std::string versions;
  for (int v = 1; v <= db::kSchemaVersion; ++v) versions += std::to_string(v) + "|\n";
  EXPECT_EQ(test::dump_rows(conn, "version", "schema_version", "version"), versions) << "a row per step of the chain";
}

}  // namespace
}  // namespace attn
