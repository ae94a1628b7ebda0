// A config: one value per template parameter, by name. It reaches NVRTC as -D macros (gpu/compiler.hpp) and is
// stored as JSON and in iters.tsv's compact form; the parameter spaces that say which configs exist are in
// tuner/space.hpp.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

/// One assignment of every parameter of a template, by name (sorted, so equal configs compare equal).
using Config = std::map<std::string, std::int64_t>;

/// A C identifier ([A-Za-z_][A-Za-z0-9_]*): what a parameter name, and so a -D macro, may be.
inline bool is_identifier(const std::string& s) {
  auto alpha = [](char ch) { return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_'; };
  if (s.empty() || !alpha(s[0])) return false;
  for (char ch : s)
    if (!alpha(ch) && !(ch >= '0' && ch <= '9')) return false;
  return true;
}

/// "BLOCK_M=128,BLOCK_N=64,..." (the iters.tsv params format, keys in sorted order) and back.
/// The empty string is the empty config. parse throws std::invalid_argument naming the malformed item
/// (no '=', a name that is not a C identifier, a value that is not a 64-bit integer, a repeated name).
std::string config_to_compact(const Config& c);
Config config_from_compact(const std::string& s);
/// {"BLOCK_M":128,...}; from_json throws std::invalid_argument on invalid JSON, a non-object, or a
/// non-integer value (naming the key).
std::string config_to_json(const Config& c);
Config config_from_json(const std::string& json);
/// The config of a list of parameter names and a JSON list of their values in that order, as the DB stores
/// one (docs/db-schema.md `configs`: ["BLOCK_N","STAGES"] and [64,2]). Throws std::invalid_argument, as
/// config_from_json, for a value that is not an integer or lists that do not pair up.
Config config_from_lists(const std::vector<std::string>& names, std::string_view values_json);

}  // namespace attn
