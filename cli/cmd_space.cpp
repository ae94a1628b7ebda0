// `attn-tuner space [--template T]... [--templates DIR]`: the size of each template's parameter space
// after its constraints, and its parameters with their values. Counts by walking the pruned odometer
// (TemplateSpace::count_valid), so a space of 10^6 raw configs is counted without materialising it.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "core/templates_dir.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

struct SpaceOptions {
  std::vector<std::string> templates;
  std::string templates_dir;
};

/// Template names of a folder: the stems of its *.json files, sorted.
std::vector<std::string> template_names_in(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw CliError("space: no templates folder " + dir);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) throw CliError("space: no templates (*.json) in " + dir);
  return names;
}

void run_space(const SpaceOptions& o) {
  const std::string dir = o.templates_dir.empty() ? default_templates_dir() : o.templates_dir;
  const auto names = o.templates.empty() ? template_names_in(dir) : o.templates;
  for (const auto& name : names) {
    TemplateSpace space;
    try {
      space = TemplateSpace::load_named(dir, name);
    } catch (const std::invalid_argument& e) {
      throw CliError(e.what());
    }
    const std::uint64_t raw = space.raw_size();
    fmt::print("{}: {} valid configs (raw product {}, {} constraint{})\n", name, space.count_valid(), raw,
               space.constraints().size(), space.constraints().size() == 1 ? "" : "s");
    std::size_t width = 0;
    for (const auto& p : space.parameters()) width = std::max(width, p.name.size());
    for (const auto& p : space.parameters()) {
      const auto def = space.default_config().at(p.name);
      fmt::print("  {:<{}}  {:<16}  default {}{}\n", p.name, width, fmt::format("{}", fmt::join(p.values, " ")), def,
                 p.doc.empty() ? "" : "  " + p.doc);
    }
  }
}

}  // namespace

void add_space_command(CLI::App& app) {
  auto o = std::make_shared<SpaceOptions>();
  auto* cmd = app.add_subcommand("space", "size of each template's parameter space (valid configs) and its parameters");
  cmd->add_option("--template", o->templates, "template name (repeatable); default: every *.json of the folder");
  cmd->add_option("--templates", o->templates_dir, "templates folder (default: $ATTN_TUNER_TEMPLATES or the source tree)");
  cmd->callback([o] { run_space(*o); });
}

}  // namespace attn
