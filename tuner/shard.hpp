// Sharding the search space for Slurm job arrays (docs/scale-out.md): shard i of N takes the configs whose
// stable hash, mod N, is i. The hash depends only on the template name and the canonical config, never on
// the strategy, the run or the machine, so the N shards are disjoint and their union is the whole space.
#pragma once
#include <cstdint>
#include <string>

#include "tuner/space.hpp"

namespace attn {

/// Shard `index` of `count` (0 <= index < count; count 1 = the whole space).
struct Shard {
  unsigned index = 0;
  unsigned count = 1;
  /// "i/N".
  std::string text() const;
  bool operator==(const Shard&) const = default;
};

/// Parses "i/N" (e.g. "0/4"). Throws std::invalid_argument naming the text when it is not two decimal
/// integers separated by '/', N is 0 or above 65536, or i >= N.
Shard parse_shard(const std::string& text);

/// XXH64 (seed 0) of "<template> <canonical config JSON>" (config_to_json: sorted keys, no spaces): the
/// stable key of a config across hosts, builds and strategies.
std::uint64_t config_hash(const std::string& template_name, const Config& c);

/// The shard (0 .. count-1) that config `c` of `template_name` belongs to: config_hash mod count.
/// Throws std::invalid_argument when count is 0.
unsigned shard_of(const std::string& template_name, const Config& c, unsigned count);

}  // namespace attn
