#include "db/text_table.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {
namespace {

std::size_t display_width(const std::string& s) {
  // Count UTF-8 code points (continuation bytes are 10xxxxxx).
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && s.find_first_of(" \t") == std::string::npos;
}

bool is_blank(const std::string& s) { return s.empty() || s == "-" || s == "NULL"; }

void check_shape(const TextTable& t) {
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.rows[r].size() != t.columns.size()) {
      throw std::invalid_argument(
          fmt::format("table row {} has {} cells for {} columns", r, t.rows[r].size(), t.columns.size()));
    }
  }
}

std::string one_line(std::string s) {
  for (char& ch : s) {
    if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
  }
  return s;
}

}  // namespace

std::string render_aligned(const TextTable& t) {
  check_shape(t);
  const std::size_t n = t.columns.size();
  std::vector<std::size_t> width(n);
  std::vector<bool> right(n);
  for (std::size_t c = 0; c < n; ++c) {
    width[c] = display_width(t.columns[c]);
    bool any_number = false, all_numeric = true;
    for (const auto& row : t.rows) {
      width[c] = std::max(width[c], display_width(one_line(row[c])));
      if (is_number(row[c])) any_number = true;
      else if (!is_blank(row[c])) all_numeric = false;
    }
    right[c] = any_number && all_numeric;
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t c = 0; c < n; ++c) {
      std::string cell = one_line(cells[c]);
      std::string pad(width[c] - display_width(cell), ' ');
      if (c) l += "  ";
      l += right[c] ? pad + cell : cell + pad;
    }
    l.erase(l.find_last_not_of(' ') + 1);
    out += l;
    out += '\n';
  };
  line(t.columns);
  for (const auto& row : t.rows) line(row);
  return out;
}

std::string render_tsv(const TextTable& t) {
  check_shape(t);
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c) out += '\t';
      out += one_line(cells[c]);
    }
    out += '\n';
  };
  line(t.columns);
  for (const auto& row : t.rows) line(row);
  return out;
}

}  // namespace attn
