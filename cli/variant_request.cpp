#include "cli/variant_request.hpp"

#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/templates_dir.hpp"
#include "db/store.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {

VariantRequest resolve_variant(const std::string& command, const std::string& templates_dir,
                               const std::string& template_name, const std::string& config_json,
                               const std::vector<std::string>& defines, const std::string& db_path) {
  const std::string dir = templates_dir.empty() ? default_templates_dir() : templates_dir;
  std::optional<ProposalRecord> proposal;
  if (!db_path.empty()) {
    if (!std::filesystem::is_regular_file(db_path)) throw CliError(fmt::format("{}: no experiment DB at {}", command, db_path));
    try {
      auto db = ExperimentDb::open(db_path, ExperimentDb::Mode::read_only);
      proposal = db.proposal_by_template(template_name);
    } catch (const std::exception& e) {
      throw CliError(fmt::format("{}: cannot read the experiment DB {}: {}", command, db_path, e.what()));
    }
  }
  LoadedTemplate loaded = [&] {
    try {
      return load_template(template_name, proposal, dir);
    } catch (const std::invalid_argument& e) {
      const bool from_db = proposal_root_template(template_name) != template_name;  // "<root>_p<id>"
      if (from_db && db_path.empty())
        throw CliError(fmt::format("{}: {}; {} is a template of the proposer hook or the idea queue, which lives in "
                                   "its DB: pass --db DB",
                                   command, e.what(), template_name));
      throw CliError(fmt::format("{}: {}", command, e.what()));
    }
  }();
  TemplateSpace space = std::move(loaded.space);
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
  return {std::move(space), std::move(loaded.folder), std::move(config), std::move(extra_options)};
}

}  // namespace attn
