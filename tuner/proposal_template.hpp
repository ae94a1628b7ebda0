// Templates written by the proposer hook (docs/proposer.md) live in the DB (`proposals`: source, space JSON,
// headers), not in kernels_templates/: this writes one back out as a template folder, for the daemon (resume)
// and the export.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "db/records.hpp"
#include "tuner/space.hpp"

namespace attn {

/// The repository template a proposed template descends from: "fa2_mma_p3" -> "fa2_mma" (the "_p<id>"
/// suffix the daemon gives proposals is dropped; other names are returned as they are).
std::string proposal_root_template(const std::string& name);

/// The template name of proposal `id` proposed from `parent`: "<root of parent>_p<id>".
std::string proposal_template_name(const std::string& parent, std::int64_t id);

/// Writes the template of accepted proposal `p` into `dir` (created when missing): <template>.cu,
/// <template>.json and every stored header at its include path; files already there are replaced.
/// Returns the path of the .json. Throws std::invalid_argument when `p` has no template name, source or
/// space JSON, or a header path that is absolute or leaves `dir`; std::runtime_error on I/O errors.
std::string write_proposal_template(const ProposalRecord& p, const std::string& dir);

/// A template loaded by name for a reader of the DB (export, replay).
struct LoadedTemplate {
  TemplateSpace space;
  std::optional<std::int64_t> proposal_id;  ///< set when its files came from the DB's proposal row
  /// The temporary folder holding a proposal's files (space.source_path() and its headers are in it), removed
  /// with the last copy of this pointer; null for a template of templates_dir.
  std::shared_ptr<const std::string> folder;
};

/// The template `name`: from `proposal` when given (the DB row of the proposer hook's or the idea queue's
/// template: such templates live only in the DB), written by write_proposal_template into a new temporary
/// folder; else <templates_dir>/<name>.json. Throws std::invalid_argument "template 'NAME' not usable from
/// proposal N in the DB|'DIR': why".
LoadedTemplate load_template(const std::string& name, const std::optional<ProposalRecord>& proposal,
                             const std::string& templates_dir);

}  // namespace attn
