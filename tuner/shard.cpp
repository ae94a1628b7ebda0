#include "tuner/shard.hpp"

#include <xxhash.h>

#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {

std::string Shard::text() const { return fmt::format("{}/{}", index, count); }

Shard parse_shard(const std::string& text) {
  const auto bad = [&](const char* why) {
    return std::invalid_argument(fmt::format("--shard '{}': {} (expected i/N with 0 <= i < N, e.g. 0/4)", text, why));
  };
  const auto slash = text.find('/');
  if (slash == std::string::npos) throw bad("no '/'");
  auto number = [&](std::string_view s, unsigned& out) {
    if (s.empty()) return false;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  Shard s;
  const std::string_view all(text);
  if (!number(all.substr(0, slash), s.index) || !number(all.substr(slash + 1), s.count))
    throw bad("i and N must be non-negative decimal integers");
  if (s.count == 0 || s.count > 65536) throw bad("N must be between 1 and 65536");
  if (s.index >= s.count) throw bad("i must be below N");
  return s;
}

std::uint64_t config_hash(const std::string& template_name, const Config& c) {
  const std::string key = template_name + " " + config_to_json(c);
  return XXH64(key.data(), key.size(), 0);
}

unsigned shard_of(const std::string& template_name, const Config& c, unsigned count) {
  if (count == 0) throw std::invalid_argument("shard_of: zero shards");
  return static_cast<unsigned>(config_hash(template_name, c) % count);
}

}  // namespace attn
