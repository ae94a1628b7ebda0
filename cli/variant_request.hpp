// One config of a template as `bench` and `trace` take it from the command line: the template loaded by
// name, the config (--config JSON over the template's default: parameters it does not name keep their
// default values) checked against the space, and the measurement-only --define NAME=VALUE macros turned
// into NVRTC options.
#pragma once
#include <string>
#include <vector>

#include "tuner/space.hpp"

namespace attn {

struct VariantRequest {
  TemplateSpace space;
  Config config;
  std::vector<std::string> extra_options;  ///< "-DNAME=VALUE" for each define
};

/// Throws CliError, prefixed with `command`, for an unknown template, a config that does not parse or is
/// not valid in the space, and a define that is not NAME=VALUE or names a parameter of the space.
VariantRequest resolve_variant(const std::string& command, const std::string& templates_dir,
                               const std::string& template_name, const std::string& config_json,
                               const std::vector<std::string>& defines);

}  // namespace attn
