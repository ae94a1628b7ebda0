// check_proposal: files, space JSON, NVRTC compile, ABI; install; diff against the parent template.
#include "proposer/proposal_check.hpp"
#include "gpu/process_group.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <boost/process.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proposer/proposal_workdir.hpp"
#include "proposer/template_json.hpp"
#include "gpu/abi_check.hpp"
#include "tuner/compile_request.hpp"
#include "core/text_file.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace bp = boost::process;
namespace {

constexpr std::uintmax_t kMaxSourceBytes = 1 << 20;
constexpr std::size_t kMaxDescription = 300;

std::string read_file(const fs::path& p) { return read_text_file(p.string()); }
void write_file(const fs::path& p, const std::string& text) { write_text_file(p.string(), text); }

/// "" when `p` is a regular file (not a symlink) inside `root`, else why not.
std::string plain_file_problem(const fs::path& root, const fs::path& p, const std::string& what) {
  std::error_code ec;
  const auto st = fs::symlink_status(p, ec);
  if (ec || !fs::exists(st)) return what + " is missing";
  if (fs::is_symlink(st)) return what + " is a symlink (write a plain file)";
  if (!fs::is_regular_file(st)) return what + " is not a regular file";
  const std::string canon = fs::weakly_canonical(p).string(), top = fs::weakly_canonical(root).string() + "/";
  if (canon.rfind(top, 0) != 0) return what + " resolves outside the working directory";
  return "";
}

/// The parent's files under the names a proposal uses: "template.cu", "space.json", headers by include name.
std::map<std::string, std::string> parent_files(const TemplateSpace& parent) {
  std::map<std::string, std::string> files{{"template.cu", read_file(parent.source_path())},
                                           {"space.json", read_file(parent.json_path())}};
  for (const auto& [name, text] : local_includes(parent.source_path())) files[name] = text;
  return files;
}

std::string diff_files(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b,
                       const std::string& parent, const std::string& name) {
  std::set<std::string> names;
  for (const auto& [n, t] : a) names.insert(n);
  for (const auto& [n, t] : b) names.insert(n);
  std::string out;
  const auto label = [](const std::string& who, const std::string& n) {
    if (n == "template.cu") return who + ".cu";
    if (n == "space.json") return who + ".json";
    return who + "/" + n;
  };
  for (const auto& n : names) {
    const auto ia = a.find(n), ib = b.find(n);
    out += unified_diff(ia == a.end() ? "/dev/null" : label(parent, n), ia == a.end() ? "" : ia->second,
                        ib == b.end() ? "/dev/null" : label(name, n), ib == b.end() ? "" : ib->second);
  }
  return out;
}

}  // namespace

std::string unified_diff(const std::string& label_a, const std::string& text_a, const std::string& label_b,
                         const std::string& text_b) {
  if (text_a == text_b) return "";
  char tmpl[] = "/tmp/attn-diff-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("unified_diff: cannot make a temporary folder");
  const fs::path dir(tmpl);
  write_file(dir / "a", text_a);
  write_file(dir / "b", text_b);
  std::string out;
  try {
    bp::ipstream pipe;
    bp::child c(bp::search_path("diff"), "-u", "--label", label_a, "--label", label_b, (dir / "a").string(),
                (dir / "b").string(), bp::std_out > pipe, bp::std_err > bp::null, bp::std_in < bp::null,
                InheritOnlyStdio{});
    std::ostringstream ss;
    ss << pipe.rdbuf();
    c.wait();
    out = ss.str();
    if (c.exit_code() > 1) throw std::runtime_error(fmt::format("diff exited with code {}", c.exit_code()));
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    throw std::runtime_error(std::string("unified_diff: cannot run diff (diffutils): ") + e.what());
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return out;
}

ProposalCheck check_proposal(const std::string& workdir, const std::string& install_dir, const std::string& name,
                             const TemplateSpace& parent, const Compiler& compiler) {
  ProposalCheck r;
  const fs::path root(workdir);
  const auto reject = [&](FailureKind kind, std::string why) {
    r.status = ProposalStatus::rejected;
    r.failure = kind;
    r.reason = std::move(why);
    r.space.reset();
    return r;
  };
  std::error_code ec;
  const fs::path src = root / kProposalSource, json = root / kProposalSpace, desc = root / kProposalDescription;
  const int present = int(fs::exists(fs::symlink_status(src, ec))) + int(fs::exists(fs::symlink_status(json, ec))) +
                      int(fs::exists(fs::symlink_status(desc, ec)));
  if (present == 0) {
    r.status = ProposalStatus::empty;
    r.reason = fmt::format("the proposer wrote none of {}, {}, {}", kProposalSource, kProposalSpace, kProposalDescription);
    return r;
  }
  for (const auto& [path, what] : {std::pair{src, kProposalSource}, {json, kProposalSpace}, {desc, kProposalDescription}})
    if (auto why = plain_file_problem(root, path, what); !why.empty())
      return reject(FailureKind::proposal, "incomplete proposal: " + why);

  // The description: one line.
  std::string d = read_file(desc);
  while (!d.empty() && (d.back() == '\n' || d.back() == '\r' || d.back() == ' ')) d.pop_back();
  if (d.find('\n') != std::string::npos) d = d.substr(0, d.find('\n')) + " (more lines dropped)";
  r.description = d.size() > kMaxDescription ? d.substr(0, kMaxDescription) + "..." : d;

  // The source and its headers (by include name, from the working directory).
  if (fs::file_size(src, ec) > kMaxSourceBytes)
    return reject(FailureKind::proposal, fmt::format("{} is over {} bytes", kProposalSource, kMaxSourceBytes));
  // The installed source ends in a line naming the template: its compile hash (the variants' key and the
  // cubin cache key) is then its own, even when the code equals its parent's or an earlier proposal's.
  r.source = read_file(src);
  const std::string written = *r.source;
  *r.source += fmt::format("{}// attn-tuner: template {}, proposed from {} (docs/proposer.md)\n",
                           written.empty() || written.back() == '\n' ? "" : "\n", name, parent.name());
  std::map<std::string, std::string> headers;
  for (const auto& [inc, text] : local_includes(src.string())) {
    const fs::path rel = fs::path(inc).lexically_normal();
    if (rel.is_absolute() || rel.empty() || *rel.begin() == "..")
      return reject(FailureKind::proposal, fmt::format("#include \"{}\" leaves the working directory", inc));
    if (auto why = plain_file_problem(root, root / rel, "#include \"" + inc + "\""); !why.empty())
      return reject(FailureKind::proposal, why);
    headers[rel.string()] = text;
  }
  r.headers_json = nlohmann::json(headers).dump();
  std::map<std::string, std::string> proposed = headers;
  proposed["template.cu"] = written;
  proposed["space.json"] = read_file(json);
  r.diff = diff_files(parent_files(parent), proposed, parent.name(), name);
  if (r.description.empty()) return reject(FailureKind::proposal, std::string(kProposalDescription) + " is empty");

  // The space JSON, installed under the template's name.
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(proposed["space.json"]);
  } catch (const nlohmann::json::exception& e) {
    return reject(FailureKind::proposal, fmt::format("{}: invalid JSON: {}", kProposalSpace, e.what()));
  }
  if (!j.is_object()) return reject(FailureKind::proposal, fmt::format("{}: not a JSON object", kProposalSpace));
  if (j.contains("kernel") && !(j["kernel"].is_string() && j["kernel"].get<std::string>() == parent.kernel()))
    return reject(FailureKind::proposal,
                  fmt::format("{}: kernel must be \"{}\" (the ABI's entry point), got {}", kProposalSpace,
                              parent.kernel(), j["kernel"].dump()));
  j["name"] = name;
  j["source"] = name + ".cu";
  j["kernel"] = parent.kernel();
  r.space_json = format_template_json(j);  // the repository's layout: diffs of later ideas apply

  fs::remove_all(install_dir, ec);
  const fs::path inst(install_dir);
  for (const auto& [inc, text] : headers) write_file(inst / inc, text);
  write_file(inst / (name + ".cu"), *r.source);
  write_file(inst / (name + ".json"), *r.space_json);
  std::optional<TemplateSpace> loaded;
  try {
    loaded = TemplateSpace::load((inst / (name + ".json")).string());
  } catch (const std::exception& e) {
    return reject(FailureKind::proposal, fmt::format("{} does not load: {}", kProposalSpace, e.what()));
  }
  TemplateSpace& space = *loaded;
  r.default_config = space.default_config();

  // NVRTC, then the ABI.
  const CompileRequest req = compile_request(space, space.default_config());
  r.compiled = compiler.compile(req);
  if (!r.compiled->ok)
    return reject(FailureKind::compile, "compile error (default config): " + compile_error_line(r.compiled->log));
  const KernelAbi abi = check_kernel_abi(req);
  if (!abi.ok) return reject(FailureKind::proposal, "wrong ABI: " + abi.problem);
  r.space = std::move(*loaded);
  r.status = ProposalStatus::accepted;
  return r;
}

}  // namespace attn
