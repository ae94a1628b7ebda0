// Strategy factory and helpers shared by the strategies.
#include "tuner/strategy.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attn {

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names{"exhaustive", "random", "local", "evolutionary", "model"};
  return names;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, std::uint64_t seed) {
  if (name == "exhaustive") return make_exhaustive_strategy();
  if (name == "random") return make_random_strategy(seed);
  if (name == "local") return make_local_strategy(seed);
  if (name == "evolutionary") return make_evolutionary_strategy(seed);
  if (name == "model") return make_model_strategy(seed);
  throw std::invalid_argument(
      fmt::format("unknown strategy \"{}\" (known: {})", name, fmt::join(strategy_names(), ", ")));
}

namespace detail {

std::optional<Config> random_unseen(const SearchState& state, std::mt19937_64& rng) {
  const auto& valid = state.valid_configs();
  if (state.unseen_count() == 0) return std::nullopt;
  // Rejection sampling is uniform over the unseen configs and cheap while most are unseen; the exact
  // scan below (also uniform) takes over when the draws keep hitting seen ones.
  std::uniform_int_distribution<std::size_t> any(0, valid.size() - 1);
  for (int attempt = 0; attempt < 32; ++attempt) {
    const auto& c = valid[any(rng)];
    if (!state.seen(c)) return c;
  }
  std::vector<std::size_t> left;
  for (std::size_t i = 0; i < valid.size(); ++i)
    if (!state.seen(valid[i])) left.push_back(i);
  if (left.empty()) return std::nullopt;
  std::uniform_int_distribution<std::size_t> pick(0, left.size() - 1);
  return valid[left[pick(rng)]];
}

std::string describe_change(const Config& from, const Config& to) {
  std::string out;
  for (const auto& [k, v] : to) {
    auto it = from.find(k);
    if (it != from.end() && it->second == v) continue;
    if (!out.empty()) out += ", ";
    if (it == from.end())
      out += fmt::format("{} ->{}", k, v);
    else
      out += fmt::format("{} {}->{}", k, it->second, v);
  }
  return out.empty() ? "no change" : out;
}

}  // namespace detail
}  // namespace attn
