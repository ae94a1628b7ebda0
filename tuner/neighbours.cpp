// Adjacent-value neighbourhoods and mutation over a template's index space.
#include "tuner/neighbours.hpp"

#include <stdexcept>

namespace attn::detail {
namespace {

/// Indices reachable from i by one step in a list of n values.
std::vector<std::size_t> steps(std::size_t i, std::size_t n) {
  std::vector<std::size_t> out;
  if (i > 0) out.push_back(i - 1);
  if (i + 1 < n) out.push_back(i + 1);
  return out;
}

}  // namespace

std::vector<std::vector<std::size_t>> neighbours(const TemplateSpace& space, const std::vector<std::size_t>& idx,
                                                 int k) {
  const auto& params = space.parameters();
  if (idx.size() != params.size()) throw std::invalid_argument("neighbours: index vector does not fit the space");
  if (k != 1 && k != 2) throw std::invalid_argument("neighbours: k must be 1 or 2");
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t i = 0; i < params.size(); ++i) {
    for (std::size_t vi : steps(idx[i], params[i].values.size())) {
      if (k == 1) {
        auto n = idx;
        n[i] = vi;
        out.push_back(std::move(n));
        continue;
      }
      for (std::size_t j = i + 1; j < params.size(); ++j) {
        for (std::size_t vj : steps(idx[j], params[j].values.size())) {
          auto n = idx;
          n[i] = vi;
          n[j] = vj;
          out.push_back(std::move(n));
        }
      }
    }
  }
  return out;
}

bool mutate_adjacent(const TemplateSpace& space, std::vector<std::size_t>& idx, std::mt19937_64& rng) {
  const auto& params = space.parameters();
  std::vector<std::size_t> movable;
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i].values.size() > 1) movable.push_back(i);
  if (movable.empty()) return false;
  const std::size_t p = movable[std::uniform_int_distribution<std::size_t>(0, movable.size() - 1)(rng)];
  const auto options = steps(idx[p], params[p].values.size());
  idx[p] = options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng)];
  return true;
}

}  // namespace attn::detail
