// Ideas judged again on the same parent (table idea_repeats, schema version 12, docs/db-schema.md): an idea file's
// Verdicts: N has it judged again where it has fewer than N verdicts; both verdicts stay in `ideas`, and this table
// links the new one to the one it repeats. Free functions on an ExperimentDb's connection.
#pragma once
#include <cstdint>
#include <map>

#include "db/store.hpp"

namespace attn {

/// Idea `idea_id` judges again the idea of row `repeat_of` on the same parent and suite. Throws std::invalid_argument
/// for an unknown row or a repeat of itself.
void add_idea_repeat(ExperimentDb& db, std::int64_t idea_id, std::int64_t repeat_of);
/// Every repeated judgment: idea id -> the row it repeats (none in a file older than version 12 opened read-only).
std::map<std::int64_t, std::int64_t> idea_repeats(ExperimentDb& db);

}  // namespace attn
