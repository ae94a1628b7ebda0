// `attn-tuner query ideas [--id N]`: the idea queue's verdicts (docs/ideas.md).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "db/store.hpp"

namespace attn {

/// The ideas of `db`, ranked by measured effect (wins first, then by Δ vs parent), as a table / TSV / JSON
/// (`format`); with `id`, that idea in full (its verdict, its numbers, the diff as queued). A win says whether it
/// is landed in a repository template (`landed`: idea hash -> template, landed_in_templates) or not yet.
/// Throws CliError for an unknown id.
std::string render_ideas(ExperimentDb& db, const std::string& format, const std::optional<std::int64_t>& id,
                         const std::map<std::string, std::string>& landed = {});

}  // namespace attn
