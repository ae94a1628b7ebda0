// `attn-tuner query ideas [--id N]`: the idea queue's verdicts (docs/ideas.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "db/store.hpp"

namespace attn {

/// The ideas of `db`, ranked by measured effect (wins first, then by Δ vs parent), as a table / TSV / JSON
/// (`format`); with `id`, that idea in full (its verdict, its numbers, the diff as queued).
/// Throws CliError for an unknown id.
std::string render_ideas(ExperimentDb& db, const std::string& format, const std::optional<std::int64_t>& id);

}  // namespace attn
