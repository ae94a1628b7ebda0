// Text tables of the query command: alignment and TSV.
#include <gtest/gtest.h>

#include "db/text_table.hpp"

namespace attn {
namespace {

TEST(TextTable, AlignsTextLeftAndNumbersRight) {
  TextTable t{{"iter", "params", "geomean_ms"},
              {{"9", "BLOCK_N=64", "0.0791"}, {"10", "BLOCK_N=128,num_warps=8", "-"}, {"11", "x", "12.5000"}}};
  EXPECT_EQ(render_aligned(t),
            "iter  params                   geomean_ms\n"
            "   9  BLOCK_N=64                   0.0791\n"
            "  10  BLOCK_N=128,num_warps=8           -\n"
            "  11  x                           12.5000\n");
}

TEST(TextTable, CountsUtf8CodePointsAndFlattensLineBreaks) {
  TextTable t{{"name", "note"}, {{"µs", "a\tb"}, {"ms", "line1\nline2"}}};
  EXPECT_EQ(render_aligned(t),
            "name  note\n"
            "µs    a b\n"
            "ms    line1 line2\n");
  EXPECT_EQ(render_tsv(t), "name\tnote\nµs\ta b\nms\tline1 line2\n");
}

TEST(TextTable, RefusesRaggedRows) {
  TextTable t{{"a", "b"}, {{"1"}}};
  EXPECT_THROW(render_aligned(t), std::invalid_argument);
  EXPECT_THROW(render_tsv(t), std::invalid_argument);
}

}  // namespace
}  // namespace attn
