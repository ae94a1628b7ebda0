// Neighbourhoods in a template's index space, shared by the local and evolutionary strategies.
#pragma once
#include <cstddef>
#include <random>
#include <vector>

#include "tuner/space.hpp"

namespace attn::detail {

/// Index vectors (see TemplateSpace::indices_of) that differ from `idx` in exactly `k` parameters
/// (k = 1 or 2), each moved by one position in its value list. Order: parameter order, then -1
/// before +1. Constraints are not checked.
std::vector<std::vector<std::size_t>> neighbours(const TemplateSpace& space, const std::vector<std::size_t>& idx,
                                                 int k);

/// Moves one random parameter of `idx` (one that has more than one value) to an adjacent value;
/// returns false (leaving idx alone) when every parameter has a single value.
bool mutate_adjacent(const TemplateSpace& space, std::vector<std::size_t>& idx, std::mt19937_64& rng);

}  // namespace attn::detail
