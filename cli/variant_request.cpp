#include "cli/variant_request.hpp"

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/templates_dir.hpp"

namespace attn {

VariantRequest resolve_variant(const std::string& command, const std::string& templates_dir,
                               const std::string& template_name, const std::string& config_json,
                               const std::vector<std::string>& defines) {
  const std::string dir = templates_dir.empty() ? default_templates_dir() : templates_dir;
  TemplateSpace space = [&] {
    try {
      return TemplateSpace::load_named(dir, template_name);
    } catch (const std::invalid_argument& e) {
      throw CliError(fmt::format("{}: {}", command, e.what()));
    }
  }();
  Config config = space.default_config();
  if (!config_json.empty()) {
    try {
      for (const auto& [name, value] : config_from_json(config_json)) config[name] = value;  // over the default
    } catch (const std::invalid_argument& e) {
      throw CliError(fmt::format("{}: --config: {}", command, e.what()));
    }
  }
  if (auto why = space.check(config))
    throw CliError(fmt::format("{}: config not valid for {}: {}", command, space.name(), *why));
  std::vector<std::string> extra_options;
  for (const auto& d : defines) {
    const auto eq = d.find('=');
    const std::string name = d.substr(0, eq);
    if (eq == std::string::npos || !is_identifier(name) || eq + 1 == d.size())
      throw CliError(fmt::format("{}: --define '{}' is not NAME=VALUE with NAME a C identifier", command, d));
    if (config.count(name))
      throw CliError(fmt::format("{}: --define {}: {} is a parameter of {}; set it with --config", command, d, name,
                                 space.name()));
    extra_options.push_back("-D" + d);
  }
  return {std::move(space), std::move(config), std::move(extra_options)};
}

}  // namespace attn
