// One config of a template as `bench` and `trace` take it from the command line: the template loaded by
// name, the config (--config JSON over the template's default: parameters it does not name keep their
// default values) checked against the space, and the measurement-only --define NAME=VALUE macros turned
// into NVRTC options.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tuner/space.hpp"

namespace attn {

struct VariantRequest {
  TemplateSpace space;
  /// The temporary folder of a template read from the DB (its source and headers; removed with the last copy), null
  /// for a template of the templates folder: keep the request while its source is compiled.
  std::shared_ptr<const std::string> folder;
  Config config;
  std::vector<std::string> extra_options;  ///< "-DNAME=VALUE" for each define
};

/// The help of --db on `compile`, `bench` and `trace`.
inline constexpr const char* kTemplateDbHelp =
    "experiment DB (read-only) whose proposer hook's and idea queue's templates (<root>_p<id>, e.g. the champion's "
    "of `query best`) --template may name";

/// The template: with `db_path`, a template of the proposer hook or the idea queue from its row in that DB (as
/// `export` and `replay` take it: load_template), any other from the templates folder; without, the folder's.
/// Throws CliError, prefixed with `command`, for an unknown template (one the folder lacks that looks like a DB's,
/// "<root>_p<id>", names --db), a DB that cannot be read, a config that does not parse or is not valid in the space,
/// and a define that is not NAME=VALUE or names a parameter of the space.
VariantRequest resolve_variant(const std::string& command, const std::string& templates_dir,
                               const std::string& template_name, const std::string& config_json,
                               const std::vector<std::string>& defines, const std::string& db_path = "");

}  // namespace attn
