// apply_idea: the parent's files, patch(1), the new axes, the proposal checks.
#include "proposer/idea_apply.hpp"
#include "gpu/process_group.hpp"

#include <filesystem>
#include <sstream>

#include <boost/process.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proposer/proposal_workdir.hpp"
#include "proposer/template_json.hpp"
#include "core/text_file.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace bp = boost::process;
namespace {

}  // namespace

std::string idea_parent_source(std::string s) {
  for (;;) {
    const std::size_t end = s.size() && s.back() == '\n' ? s.size() - 1 : s.size();
    const std::size_t start = s.rfind('\n', end ? end - 1 : 0);
    const std::size_t from = start == std::string::npos ? 0 : start + 1;
    if (s.compare(from, 24, "// attn-tuner: template ") != 0) return s;
    s.erase(from);
  }
}

std::vector<std::string> write_idea_parent_files(const TemplateSpace& parent, const std::string& dir) {
  const std::string root = proposal_root_template(parent.name());
  const fs::path d(dir);
  write_text_file((d / (root + ".cu")).string(), idea_parent_source(read_text_file(parent.source_path())));
  write_text_file((d / (root + ".json")).string(), renamed_space_json(read_text_file(parent.json_path()), root, root + ".cu"));
  std::vector<std::string> headers;
  for (const auto& [inc, text] : local_includes(parent.source_path())) {
    write_text_file((d / inc).string(), text);
    headers.push_back(inc);
  }
  return headers;
}

namespace {

struct PatchRun {
  int code = 0;
  std::string output;
};

PatchRun run_patch(const fs::path& workdir, const fs::path& diff, bool dry_run) {
  std::vector<std::string> args{"-p0", "--batch", "--forward", "--no-backup-if-mismatch", "--reject-file=-",
                                "-d", workdir.string(), "-i", diff.string()};
  if (dry_run) args.insert(args.begin(), "--dry-run");
  PatchRun r;
  try {
    bp::ipstream pipe;
    bp::child c(bp::search_path("patch"), bp::args(args), (bp::std_out & bp::std_err) > pipe, bp::std_in < bp::null,
                InheritOnlyStdio{});
    std::ostringstream ss;
    ss << pipe.rdbuf();
    c.wait();
    r.code = c.exit_code();
    r.output = ss.str();
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("apply_idea: cannot run patch (GNU patch): ") + e.what());
  }
  return r;
}

std::string first_lines(const std::string& s, std::size_t n) {
  std::string out;
  std::istringstream in(s);
  std::string line;
  for (std::size_t i = 0; i < n && std::getline(in, line); ++i) out += (i ? "; " : "") + line;
  return out;
}

}  // namespace

std::string renamed_space_json(const std::string& text, const std::string& name, const std::string& source) {
  auto j = nlohmann::ordered_json::parse(text);
  j["name"] = name;
  j["source"] = source;
  return format_template_json(j);
}

DiffApplied apply_idea_diff(const IdeaFile& idea, const std::string& root, const std::string& workdir,
                            const std::string& scratch, const std::string& source_name, const std::string& space_name) {
  DiffApplied out;
  const fs::path work(workdir);
  const auto refuse = [&](std::string why) {
    out.ok = false;
    out.reason = std::move(why);
    return out;
  };
  // The diff under the working folder's names.
  const auto mapped = [&](const std::string& p) -> std::string {
    if (p.empty()) return "/dev/null";
    if (p == root + ".cu") return source_name;
    if (p == root + ".json") return space_name;
    return p;
  };
  std::string patch_text;
  for (const auto& f : idea.files) {
    for (const auto& p : {f.old_path, f.new_path}) {
      if (p.empty() || p == root + ".cu" || p == root + ".json") continue;
      const std::string ext = fs::path(p).extension().string();
      if (ext == ".cu" || ext == ".json")
        return refuse(fmt::format("the diff changes {}, not a file of template {} ({}.cu, {}.json and the headers it "
                                  "includes)", p, root, root, root));
    }
    if (!f.old_path.empty() && !fs::exists(work / mapped(f.old_path)))
      return refuse(fmt::format("the diff patches {}, which template {} does not have (its headers: the local includes "
                                "of {}.cu)", f.old_path, root, root));
    const std::size_t second = f.text.find('\n') + 1, third = f.text.find('\n', second) + 1;
    patch_text += "--- " + mapped(f.old_path) + "\n+++ " + mapped(f.new_path) + "\n" + f.text.substr(third);
  }
  if (patch_text.empty()) return out;
  const fs::path diff = fs::path(scratch) / "idea.patch";
  write_text_file(diff.string(), patch_text);
  const PatchRun dry = run_patch(work, diff, true);
  if (dry.code != 0) return refuse(fmt::format("patch: {}", first_lines(dry.output, 4)));
  const PatchRun real = run_patch(work, diff, false);
  if (real.code != 0) return refuse(fmt::format("patch: {}", first_lines(real.output, 4)));
  for (std::string line : inexact_hunks(real.output)) {  // under the diff's names
    for (const auto& [name, as] : {std::pair{source_name, root + ".cu"}, std::pair{space_name, root + ".json"}})
      if (line.rfind(name + ": ", 0) == 0) line = as + line.substr(name.size());
    out.inexact.push_back(std::move(line));
  }
  return out;
}

std::vector<std::string> inexact_hunks(const std::string& patch_output) {
  std::vector<std::string> out;
  std::istringstream in(patch_output);
  std::string line, file;
  while (std::getline(in, line)) {
    if (line.rfind("patching file ", 0) == 0) file = line.substr(14);
    else if (line.find("Hunk #") != std::string::npos && (line.find("offset") != std::string::npos ||
                                                           line.find("fuzz") != std::string::npos))
      out.push_back(file.empty() ? line : file + ": " + line);
  }
  return out;
}

IdeaApplied apply_idea(const IdeaFile& idea, const TemplateSpace& parent, const std::string& dir,
                       const std::string& name, const Compiler& compiler) {
  IdeaApplied out;
  const auto broken = [&](IdeaBrokenKind kind, std::string why) {
    out.broken_kind = kind;
    out.reason = std::move(why);
    return out;
  };
  const std::string root = proposal_root_template(parent.name());
  if (!idea.template_root.empty() && idea.template_root != root)
    return broken(IdeaBrokenKind::does_not_apply, fmt::format("it is written against template {}, the parent is {} (from {})",
                                                idea.template_root, parent.name(), root));
  const fs::path base(dir), work = base / "work";
  std::error_code ec;
  fs::remove_all(base, ec);
  fs::create_directories(work);
  write_text_file((work / kProposalSource).string(), idea_parent_source(read_text_file(parent.source_path())));
  write_text_file((work / kProposalSpace).string(), renamed_space_json(read_text_file(parent.json_path()), root, root + ".cu"));
  write_text_file((work / kProposalDescription).string(), idea.description + "\n");
  for (const auto& [inc, text] : local_includes(parent.source_path())) write_text_file((work / inc).string(), text);
  const DiffApplied patched = apply_idea_diff(idea, root, work.string(), base.string(), kProposalSource, kProposalSpace);
  if (!patched.ok) return broken(IdeaBrokenKind::does_not_apply, patched.reason);
  out.inexact_hunks = patched.inexact;
  if (!idea.space.empty()) {
    nlohmann::ordered_json j;
    try {
      j = nlohmann::ordered_json::parse(read_text_file((work / kProposalSpace).string()));
    } catch (const nlohmann::json::exception& e) {
      return broken(IdeaBrokenKind::proposal, fmt::format("{} does not parse after the diff: {}", root + ".json", e.what()));
    }
    if (!j.contains("parameters") || !j["parameters"].is_object() || !j.contains("default") || !j["default"].is_object())
      return broken(IdeaBrokenKind::proposal, fmt::format("{} has no parameters/default objects after the diff", root + ".json"));
    for (const auto& [axis, values] : idea.space.items()) {
      if (j["parameters"].contains(axis))
        return broken(IdeaBrokenKind::bad_input, fmt::format("Space: {} is already a parameter of {} (change its values with a "
                                               "diff of {}.json instead)", axis, parent.name(), root));
      j["parameters"][axis] = {{"values", values}, {"doc", fmt::format("idea {}: {}", idea.name, idea.description)}};
      j["default"][axis] = idea.defaults[axis];
    }
    write_text_file((work / kProposalSpace).string(), format_template_json(j));
  }
  out.checked = true;
  out.check = check_proposal(work.string(), (base / "template").string(), name, parent, compiler);
  if (out.check.status != ProposalStatus::accepted) {
    out.broken_kind = out.check.failure == FailureKind::compile ? IdeaBrokenKind::compile : IdeaBrokenKind::proposal;
    out.reason = out.check.reason;
  }
  return out;
}

}  // namespace attn
