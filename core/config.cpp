// Config <-> compact "k=v,k=v" text (iters.tsv params column) and <-> JSON object.
#include <charconv>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config.hpp"

namespace attn {

namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::string config_to_compact(const Config& c) {
  std::string out;
  for (const auto& [k, v] : c) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", k, v);
  }
  return out;
}

Config config_from_compact(const std::string& s) {
  Config c;
  if (trim(s).empty()) return c;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = trim(s.substr(start, comma - start));
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument(fmt::format("config '{}': item '{}' is not key=value", s, item));
    const std::string key = trim(item.substr(0, eq));
    const std::string val = trim(item.substr(eq + 1));
    if (!is_identifier(key))
      throw std::invalid_argument(fmt::format("config '{}': '{}' is not a parameter name", s, key));
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), v);
    if (val.empty() || ec != std::errc() || ptr != val.data() + val.size())
      throw std::invalid_argument(
          fmt::format("config '{}': value '{}' of {} is not a 64-bit integer", s, val, key));
    if (!c.emplace(key, v).second)
      throw std::invalid_argument(fmt::format("config '{}': {} is given twice", s, key));
    start = comma + 1;
  }
  return c;
}

std::string config_to_json(const Config& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : c) j[k] = v;
  return j.dump();
}

Config config_from_json(const std::string& json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("config JSON is not valid JSON: {}", e.what()));
  }
  if (!j.is_object())
    throw std::invalid_argument(fmt::format("config JSON must be an object, got {}", j.type_name()));
  Config c;
  for (const auto& [k, v] : j.items()) {
    if (!is_identifier(k))
      throw std::invalid_argument(fmt::format("config JSON: '{}' is not a parameter name", k));
    if (!v.is_number_integer())
      throw std::invalid_argument(
          fmt::format("config JSON: value of {} is not an integer: {}", k, v.dump()));
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      throw std::invalid_argument(fmt::format("config JSON: value of {} overflows int64", k));
    c[k] = v.get<std::int64_t>();
  }
  return c;
}

Config config_from_lists(const std::vector<std::string>& names, std::string_view values_json) {
  // The lists the DB writes are plain integers: read them without a JSON document; anything else goes through
  // config_from_json, for its checks and messages.
  Config c;
  std::size_t i = 0, k = 0;
  const std::size_t n = values_json.size();
  bool plain = n >= 2 && values_json.front() == '[' && values_json.back() == ']';
  for (i = 1; plain && i + 1 < n; ++k) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(values_json.data() + i, values_json.data() + n - 1, v);
    plain = ec == std::errc() && k < names.size();
    if (!plain) break;
    c.emplace_hint(c.end(), names[k], v);
    i = static_cast<std::size_t>(end - values_json.data());
    if (i + 1 < n) plain = values_json[i++] == ',';
  }
  if (plain && k == names.size() && c.size() == names.size()) return c;
  nlohmann::json values;
  try {
    values = nlohmann::json::parse(values_json);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("config values are not valid JSON: {}", e.what()));
  }
  if (!values.is_array() || values.size() != names.size())
    throw std::invalid_argument(fmt::format("config values {} do not pair up with the {} names", values.dump(),
                                            names.size()));
  nlohmann::json object = nlohmann::json::object();
  for (std::size_t j = 0; j < names.size(); ++j) object[names[j]] = values[j];
  return config_from_json(object.dump());
}

}  // namespace attn
