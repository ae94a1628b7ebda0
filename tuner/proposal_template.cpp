// Proposed templates from their DB rows back to files.
#include "tuner/proposal_template.hpp"

#include <unistd.h>

#include <filesystem>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text_file.hpp"

namespace attn {
namespace fs = std::filesystem;

std::string proposal_root_template(const std::string& name) {
  static const std::regex suffix(R"(^(.+?)(_p[0-9]+)+$)");
  std::smatch m;
  return std::regex_match(name, m, suffix) ? m[1].str() : name;
}

std::string proposal_template_name(const std::string& parent, std::int64_t id) {
  return fmt::format("{}_p{}", proposal_root_template(parent), id);
}

std::string write_proposal_template(const ProposalRecord& p, const std::string& dir) {
  if (p.template_name.empty() || !p.source || !p.space_json)
    throw std::invalid_argument(fmt::format("proposal {} has no stored template (status {})", p.id, to_string(p.status)));
  const fs::path root(dir);
  nlohmann::json headers;
  try {
    headers = nlohmann::json::parse(p.headers_json);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("proposal {}: headers_json does not parse: {}", p.id, e.what()));
  }
  for (const auto& [name, text] : headers.items()) {
    const fs::path rel = fs::path(name).lexically_normal();
    if (rel.is_absolute() || rel.empty() || *rel.begin() == ".." || !text.is_string())
      throw std::invalid_argument(fmt::format("proposal {}: stored header \"{}\" is not a relative path with text", p.id, name));
    write_text_file((root / rel).string(), text.get<std::string>());
  }
  write_text_file((root / (p.template_name + ".cu")).string(), *p.source);
  write_text_file((root / (p.template_name + ".json")).string(), *p.space_json);
  return (root / (p.template_name + ".json")).string();
}

LoadedTemplate load_template(const std::string& name, const std::optional<ProposalRecord>& proposal,
                             const std::string& templates_dir) {
  LoadedTemplate t{TemplateSpace{}, std::nullopt, nullptr};
  try {
    if (!proposal) {
      t.space = TemplateSpace::load_named(templates_dir, name);
      return t;
    }
    t.proposal_id = proposal->id;
    std::string tmpl = (fs::temp_directory_path() / "attn-template-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot make a temporary folder for its files");
    t.folder = std::shared_ptr<const std::string>(new std::string(tmpl), [](const std::string* dir) {
      std::error_code ec;
      fs::remove_all(*dir, ec);
      delete dir;
    });
    t.space = TemplateSpace::load(write_proposal_template(*proposal, *t.folder));
    return t;
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format("template '{}' not usable from {}: {}", name,
                                            proposal ? fmt::format("proposal {} in the DB", proposal->id)
                                                     : "'" + templates_dir + "'",
                                            e.what()));
  }
}

}  // namespace attn
