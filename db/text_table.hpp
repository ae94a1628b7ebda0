// A table of text cells for the `query` command: aligned with plain spaces for people, or TSV.
#pragma once
#include <string>
#include <vector>

namespace attn {

struct TextTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  ///< each as long as `columns`
};

/// Header and rows, columns separated by two spaces, padded with spaces to the widest cell (by UTF-8
/// code points); columns whose cells are all numbers (or "-", "NULL", "") are right-aligned. No
/// trailing spaces; every line ends in '\n'. Throws std::invalid_argument for a row of the wrong length.
std::string render_aligned(const TextTable& table);
/// Header and rows joined by tabs, tabs/line breaks inside cells replaced by spaces.
std::string render_tsv(const TextTable& table);

}  // namespace attn
