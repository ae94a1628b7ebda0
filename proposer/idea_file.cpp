// parse_idea / split_unified_diff: the idea file format (proposer/idea_file.hpp, docs/ideas.md).
#include "proposer/idea_file.hpp"

#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "gpu/compiler.hpp"

namespace attn {
namespace {

/// "" when `s` is valid UTF-8 without NUL bytes, else what is wrong and where.
std::string utf8_problem(const std::string& s) {
  std::size_t i = 0, line = 1;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return fmt::format("a NUL byte on line {} (a binary file?)", line);
    if (c == '\n') ++line;
    int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (extra < 0 || i + std::size_t(extra) >= s.size() + (extra == 0 ? 1 : 0))
      return fmt::format("bytes that are not UTF-8 on line {}", line);
    for (int k = 1; k <= extra; ++k)
      if ((static_cast<unsigned char>(s[i + std::size_t(k)]) >> 6) != 0x2)
        return fmt::format("bytes that are not UTF-8 on line {}", line);
    i += std::size_t(extra) + 1;
  }
  return "";
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    std::string l = s.substr(start, end - start);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    out.push_back(std::move(l));
    start = end + 1;
  }
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

/// The path of a ---/+++ line up to a tab, trimmed.
std::string raw_diff_path(const std::string& rest) { return trim(rest.substr(0, rest.find('\t'))); }

/// The first folders of a file header's two paths, when `diff -ru OLD NEW` wrote them: two different first folders
/// and the same rest ("a/x.cu" and "g/x.cu": "a/", "g/"); none otherwise ("blocks/x.cuh" on both lines is a path
/// written from kernels_templates/, kept whole).
std::optional<std::pair<std::size_t, std::size_t>> shared_rest(const std::string& old_raw, const std::string& new_raw) {
  const auto o = old_raw.find('/'), n = new_raw.find('/');
  if (o == std::string::npos || n == std::string::npos || o == 0 || n == 0) return std::nullopt;
  if (old_raw.substr(0, o) == new_raw.substr(0, n) || old_raw.substr(o + 1) != new_raw.substr(n + 1)) return std::nullopt;
  return std::make_pair(o + 1, n + 1);
}

/// The path of a ---/+++ line (raw_diff_path): `prefix` characters dropped (a first folder both header lines have:
/// shared_rest; else a leading a/ or b/), then kernels_templates/ dropped; "" for /dev/null.
std::string diff_path(const std::string& raw, std::size_t prefix, std::size_t line) {
  std::string p = raw;
  if (p == "/dev/null") return "";
  if (prefix) p = p.substr(prefix);
  else if (p.rfind("a/", 0) == 0 || p.rfind("b/", 0) == 0) p = p.substr(2);
  if (p.rfind("kernels_templates/", 0) == 0) p = p.substr(18);
  if (p.empty()) throw IdeaInputError(fmt::format("line {}: a file header without a path", line));
  if (p[0] == '/') throw IdeaInputError(fmt::format("line {}: absolute path {} (write it relative to kernels_templates/)", line, p));
  for (std::size_t s = 0; s <= p.size();) {
    const std::size_t e = std::min(p.find('/', s), p.size());
    if (p.substr(s, e - s) == "..") throw IdeaInputError(fmt::format("line {}: path {} leaves kernels_templates/", line, p));
    s = e + 1;
  }
  return p;
}

void check_space(const IdeaFile& idea) {
  static const std::regex axis("[A-Z][A-Z0-9_]*");
  for (const auto& [name, values] : idea.space.items()) {
    if (!std::regex_match(name, axis))
      throw IdeaInputError(fmt::format("Space: axis name '{}' is not an identifier in capitals ([A-Z][A-Z0-9_]*)", name));
    if (!values.is_array() || values.empty())
      throw IdeaInputError(fmt::format("Space: {} needs a non-empty list of values, got {}", name, values.dump()));
    std::set<std::int64_t> seen;
    for (const auto& v : values) {
      if (!v.is_number_integer()) throw IdeaInputError(fmt::format("Space: {}: value {} is not an integer", name, v.dump()));
      if (!seen.insert(v.get<std::int64_t>()).second)
        throw IdeaInputError(fmt::format("Space: {}: value {} is listed twice", name, v.dump()));
    }
    if (!idea.defaults.contains(name))
      throw IdeaInputError(fmt::format("Default: no value for {} (the value that keeps the parent's behaviour)", name));
    const auto& d = idea.defaults[name];
    if (!d.is_number_integer() || !seen.count(d.get<std::int64_t>()))
      throw IdeaInputError(fmt::format("Default: {} = {} is not one of its Space values {}", name, d.dump(), values.dump()));
  }
  for (const auto& [name, v] : idea.defaults.items())
    if (!idea.space.contains(name)) throw IdeaInputError(fmt::format("Default: {} is not an axis of Space", name));
}

}  // namespace

std::size_t idea_header_max_bytes(const std::string& key) {
  return key == "Space" || key == "Default" ? kIdeaJsonHeaderMaxBytes : kIdeaHeaderMaxBytes;
}

std::vector<DiffFile> split_unified_diff(const std::string& diff) {
  const auto lines = split_lines(diff);
  std::vector<DiffFile> files;
  static const std::regex hunk(R"(^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@.*$)");
  std::size_t i = 0;
  while (i < lines.size()) {
    const std::string& l = lines[i];
    if (l.rfind("GIT binary patch", 0) == 0 || (l.rfind("Binary files ", 0) == 0))
      throw IdeaInputError(fmt::format("line {}: a binary patch (ideas change text files only)", i + 1));
    if (l.rfind("--- ", 0) != 0) {
      ++i;  // git's diff/index/mode lines and any text between files, as patch(1) skips them
      continue;
    }
    if (i + 1 >= lines.size() || lines[i + 1].rfind("+++ ", 0) != 0)
      throw IdeaInputError(fmt::format("line {}: '--- ' not followed by a '+++ ' line", i + 1));
    DiffFile f;
    const std::string old_raw = raw_diff_path(l.substr(4)), new_raw = raw_diff_path(lines[i + 1].substr(4));
    const auto folders = shared_rest(old_raw, new_raw);
    f.old_path = diff_path(old_raw, folders ? folders->first : 0, i + 1);
    f.new_path = diff_path(new_raw, folders ? folders->second : 0, i + 2);
    if (f.old_path.empty() && f.new_path.empty())
      throw IdeaInputError(fmt::format("line {}: both sides are /dev/null", i + 1));
    const std::size_t first = i;
    i += 2;
    std::size_t hunks = 0;
    while (i < lines.size() && lines[i].rfind("@@ ", 0) == 0) {
      std::smatch m;
      if (!std::regex_match(lines[i], m, hunk))
        throw IdeaInputError(fmt::format("line {}: malformed hunk header '{}'", i + 1, lines[i]));
      const long want_old = m[2].matched ? std::stol(m[2]) : 1, want_new = m[4].matched ? std::stol(m[4]) : 1;
      const std::size_t at = i + 1;
      long got_old = 0, got_new = 0;
      ++i;
      while (got_old < want_old || got_new < want_new) {
        if (i >= lines.size())
          throw IdeaInputError(fmt::format("line {}: the hunk ends early ({} of {} old and {} of {} new lines; "
                                           "a truncated diff?)", at - 1, got_old, want_old, got_new, want_new));
        const std::string& h = lines[i];
        if (h.empty() || h[0] == ' ') ++got_old, ++got_new;
        else if (h[0] == '-') ++got_old;
        else if (h[0] == '+') ++got_new;
        else if (h[0] != '\\')
          throw IdeaInputError(fmt::format("line {}: '{}' inside a hunk (its @@ line counts {} old and {} new lines)",
                                           i + 1, h.substr(0, 60), want_old, want_new));
        ++i;
      }
      while (i < lines.size() && !lines[i].empty() && lines[i][0] == '\\') ++i;
      ++hunks;
    }
    if (!hunks) throw IdeaInputError(fmt::format("line {}: no hunk (@@) after the header of {}", first + 1,
                                                 f.new_path.empty() ? f.old_path : f.new_path));
    for (std::size_t k = first; k < i; ++k) f.text += lines[k] + "\n";
    files.push_back(std::move(f));
  }
  return files;
}

std::string non_idea_hash(const std::string& bytes) { return "file:" + xxh128_hex(bytes); }

IdeaFile parse_idea(const std::string& name, const std::string& bytes) {
  if (const auto why = utf8_problem(bytes); !why.empty()) throw IdeaInputError("the file has " + why);
  IdeaFile idea;
  idea.name = name;
  idea.text = bytes;
  const auto lines = split_lines(bytes);
  std::set<std::string> seen;
  std::size_t i = 0;
  for (; i < lines.size(); ++i) {
    const std::string l = lines[i];
    if (trim(l).empty()) {
      ++i;
      break;
    }
    if (l[0] == '#') continue;
    if (l.rfind("--- ", 0) == 0 || l.rfind("diff ", 0) == 0) break;  // no blank line before the diff
    const std::size_t colon = l.find(':');
    if (colon == std::string::npos)
      throw IdeaInputError(fmt::format("line {}: '{}' is not a 'Key: value' header line (Description, Hypothesis, "
                                       "Template, Space, Default, Retry, Verdicts; a blank line before the diff)",
                                       i + 1, l.substr(0, 60)));
    const std::string key = trim(l.substr(0, colon)), value = trim(l.substr(colon + 1));
    if (!seen.insert(key).second) throw IdeaInputError(fmt::format("line {}: header {} given twice", i + 1, key));
    const auto json_object = [&](const std::string& what) {
      try {
        auto j = nlohmann::ordered_json::parse(value);
        if (!j.is_object()) throw IdeaInputError(fmt::format("line {}: {} must be a JSON object", i + 1, what));
        return j;
      } catch (const nlohmann::json::parse_error& e) {
        throw IdeaInputError(fmt::format("line {}: {} is not JSON: {}", i + 1, what, e.what()));
      }
    };
    if (key == "Description") idea.description = value;
    else if (key == "Hypothesis") idea.hypothesis = value;
    else if (key == "Template") idea.template_root = value;
    else if (key == "Space") idea.space = json_object("Space");
    else if (key == "Default") idea.defaults = json_object("Default");
    else if (key == "Retry") {
      if (value != "yes" && value != "no") throw IdeaInputError(fmt::format("line {}: Retry is yes or no, not '{}'", i + 1, value));
      idea.retry = value == "yes";
    } else if (key == "Verdicts") {
      static const std::regex count("[1-9]");
      if (!std::regex_match(value, count) || std::stoi(value) > kIdeaMaxVerdicts)
        throw IdeaInputError(fmt::format("line {}: Verdicts is a number from 1 to {}, not '{}'", i + 1, kIdeaMaxVerdicts,
                                         value));
      idea.verdicts = std::stoi(value);
    } else {
      throw IdeaInputError(fmt::format("line {}: unknown header '{}' (Description, Hypothesis, Template, Space, "
                                       "Default, Retry, Verdicts)", i + 1, key));
    }
    if (value.size() > idea_header_max_bytes(key))
      throw IdeaInputError(fmt::format("line {}: {} is over {} bytes ({} given; docs/ideas.md)", i + 1, key,
                                       idea_header_max_bytes(key), value.size()));
  }
  if (idea.description.empty()) throw IdeaInputError("no 'Description: ...' line (one line saying what the idea does)");
  static const std::regex template_name("[A-Za-z_][A-Za-z0-9_]*");
  if (!idea.template_root.empty() && !std::regex_match(idea.template_root, template_name))
    throw IdeaInputError(fmt::format("Template: '{}' is not a template name", idea.template_root));
  check_space(idea);
  for (std::size_t k = i; k < lines.size(); ++k) idea.diff += lines[k] + "\n";
  idea.files = split_unified_diff(idea.diff);
  if (idea.files.empty() && idea.space.empty())
    throw IdeaInputError("no diff (--- / +++ / @@ ...) and no Space: the idea changes nothing");
  std::string canonical = "attn-tuner idea v1\n" + idea.template_root + "\n" + idea.space.dump() + "\n" +
                          idea.defaults.dump() + "\n";
  for (const auto& f : idea.files) canonical += f.text;
  idea.hash = xxh128_hex(canonical);
  return idea;
}

}  // namespace attn
