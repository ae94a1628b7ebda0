#include "tuner/template_defaults.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "gpu/compiler.hpp"

namespace attn {
namespace {

std::string_view trimmed(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

/// "NAME" of a line "#<directive> NAME[ rest]" (spaces allowed after '#'), "" when the line is another one; the
/// rest after the name goes to `rest`.
std::string_view directive_name(std::string_view line, std::string_view directive, std::string_view* rest = nullptr) {
  line = trimmed(line);
  if (line.empty() || line[0] != '#') return {};
  line = trimmed(line.substr(1));
  if (line.substr(0, directive.size()) != directive || line.size() == directive.size() ||
      (line[directive.size()] != ' ' && line[directive.size()] != '\t'))
    return {};
  line = trimmed(line.substr(directive.size()));
  const auto end = line.find_first_of(" \t");
  if (rest) *rest = end == std::string_view::npos ? std::string_view() : trimmed(line.substr(end));
  return line.substr(0, end);
}

}  // namespace

Config source_fallbacks(std::string_view text) {
  Config out;
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start <= text.size();) {
    const auto nl = text.find('\n', start);
    const auto end = nl == std::string_view::npos ? text.size() : nl;
    lines.push_back(text.substr(start, end - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    const std::string_view name = directive_name(lines[i], "ifndef");
    if (name.empty()) continue;
    std::string_view rest;
    if (directive_name(lines[i + 1], "define", &rest) != name) continue;
    const auto token = rest.substr(0, rest.find_first_of(" \t/"));
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    if (token.empty() || ec != std::errc() || ptr != token.data() + token.size()) continue;
    out.emplace(std::string(name), v);
  }
  return out;
}

std::vector<std::string> default_disagreements(const TemplateSpace& space) {
  std::ifstream in(space.source_path(), std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read template source '" + space.source_path() + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  std::vector<std::pair<std::string, std::string>> files{
      {std::filesystem::path(space.source_path()).filename().string(), ss.str()}};
  for (auto& inc : local_includes(space.source_path())) files.push_back(std::move(inc));
  std::vector<std::string> out;
  const Config& defaults = space.default_config();
  for (const auto& [file, text] : files)
    for (const auto& [name, value] : source_fallbacks(text))
      if (const auto d = defaults.find(name); d != defaults.end() && d->second != value)
        out.push_back(fmt::format("{}: {} falls back to {}, the default is {}", name, file, value, d->second));
  return out;
}

}  // namespace attn
