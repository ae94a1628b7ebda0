#include "export/db_variant.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpu/compiler.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/proposal_template.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace {

std::string identifier_part(const std::string& s) {
  std::string out = s;
  for (char& ch : out)
    if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) ch = '_';
  return out.substr(0, 40);
}

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read " + what + " '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string export_variant_name(const std::string& template_name, std::int64_t iter) {
  return identifier_part(template_name) + "_i" + std::to_string(iter);
}

ExportVariant load_export_variant(const IterationRecord& it, const VariantRecord& vr,
                                  const std::vector<std::string>& scopes, bool allow_stale_source,
                                  const std::string& templates_dir, const std::optional<ProposalRecord>& proposal) {
  const std::int64_t iter = it.iter;
  LoadedTemplate loaded = [&] {
    try {
      return load_template(vr.template_name, proposal, templates_dir);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("iteration {}: {}", iter, e.what()));
    }
  }();
  const TemplateSpace& space = loaded.space;
  ExportVariant v;
  v.name = export_variant_name(vr.template_name, iter);
  v.template_name = vr.template_name;
  v.kernel = space.kernel();
  v.source = read_text(space.source_path(), "template source");
  v.headers = local_includes(space.source_path());

  CompilerOptions compiler_options;
  compiler_options.use_cache = false;
  const Compiler compiler(compiler_options);
  const CompileRequest request = compile_request(space, config_from_json(vr.params_json));
  v.defines = request.defines;
  const std::string hash = compiler.content_hash(request);
  bool source_matches = hash == vr.content_hash;
  // A changed source (a refactor, a comment) whose cubin comes out byte-identical is the same kernel: the
  // exported source still builds the exported cubin.
  std::optional<CompiledVariant> recompiled;
  std::string same_cubin_note, cubin_verdict;
  if (!source_matches && !vr.cubin_hash.empty()) {
    recompiled = compiler.compile(request);
    if (recompiled->ok && recompiled->cubin_hash == vr.cubin_hash) {
      source_matches = true;
      same_cubin_note = fmt::format("template source changed since iteration {} was compiled, recompiled cubin "
                                    "byte-identical to the recorded one (cubin hash {})",
                                    iter, vr.cubin_hash.substr(0, 12));
    } else {
      cubin_verdict = recompiled->ok ? fmt::format(" Its recompiled cubin differs from the recorded one (cubin hash {}, "
                                                   "recorded {}).", recompiled->cubin_hash, vr.cubin_hash)
                                     : " It does not compile now: " + compile_error_line(recompiled->log) + ".";
    }
  } else if (!source_matches) {
    cubin_verdict = " No cubin hash is recorded for it to compare a recompiled cubin with (a DB older than schema "
                    "version 6: `attn-tuner db cubin-hashes` records them while the sources still match).";
  }
  if (!source_matches && !allow_stale_source)
    throw std::invalid_argument(fmt::format(
        "iteration {} ({} {}): {} now hashes to {}, not to the variant's content hash {}: the template source, its "
        "headers, the NVRTC options or the NVRTC version changed since it was compiled, so the exported source "
        "would not be the cubin's.{} Re-tune, or pass --allow-stale-source to export the cubin with the current source",
        iter, vr.template_name, vr.params, space.source_path(), hash, vr.content_hash, cubin_verdict));
  // The submission's setup() derives -arch, -I and -D; ptxas -v and the daemon's -no-cache (gpu/compiler.cpp)
  // are the tuning's bookkeeping, not the code: only the options that shape the cubin travel.
  for (const auto& opt : compiler.nvrtc_options(request))
    if (opt.rfind("-arch", 0) != 0 && opt.rfind("-I", 0) != 0 && opt.rfind("-D", 0) != 0 &&
        opt.rfind("--ptxas-options", 0) != 0 && opt != kNoNvrtcCache)
      v.nvrtc_options.push_back(opt);

  std::string cubin_origin = "db cubin_path";
  if (!same_cubin_note.empty()) {
    v.cubin.assign(recompiled->cubin.begin(), recompiled->cubin.end());
    cubin_origin = "recompiled from the changed source, byte-identical to the recorded cubin";
  } else if (!vr.cubin_path.empty() && fs::is_regular_file(vr.cubin_path)) {
    const std::string bytes = read_text(vr.cubin_path, "cubin");
    v.cubin.assign(bytes.begin(), bytes.end());
  } else if (source_matches) {
    const CompiledVariant compiled = compiler.compile(request);
    if (!compiled.ok)
      throw std::invalid_argument(fmt::format("iteration {}: cubin '{}' is gone and recompiling {} failed: {}", iter,
                                              vr.cubin_path, vr.template_name, compiled.log));
    v.cubin.assign(compiled.cubin.begin(), compiled.cubin.end());
    cubin_origin = "recompiled (cubin_path missing)";
  } else {
    throw std::invalid_argument(fmt::format(
        "iteration {}: cubin '{}' is gone and the template changed since, so it cannot be rebuilt", iter, vr.cubin_path));
  }
  if (v.cubin.empty()) throw std::invalid_argument(fmt::format("iteration {}: cubin '{}' is empty", iter, vr.cubin_path));

  v.provenance = {{"iteration", iter},
                  {"variant_id", vr.id},
                  {"content_hash", vr.content_hash},
                  {"params", vr.params},
                  {"scopes", scopes},
                  {"geomean_ms", it.geomean_ms ? nlohmann::json(*it.geomean_ms) : nlohmann::json(nullptr)},
                  {"window_ms", it.window_ms ? nlohmann::json(*it.window_ms) : nlohmann::json(nullptr)},
                  {"global_ms", it.global_ms ? nlohmann::json(*it.global_ms) : nlohmann::json(nullptr)},
                  {"retrieval_ms", it.retrieval_ms ? nlohmann::json(*it.retrieval_ms) : nlohmann::json(nullptr)},
                  {"registers", vr.registers ? nlohmann::json(*vr.registers) : nlohmann::json(nullptr)},
                  {"spill_bytes", vr.spill_bytes ? nlohmann::json(*vr.spill_bytes) : nlohmann::json(nullptr)},
                  {"cubin", cubin_origin},
                  {"cubin_hash", vr.cubin_hash.empty() ? nlohmann::json(nullptr) : nlohmann::json(vr.cubin_hash)},
                  {"source_matches_cubin", source_matches}};
  if (!same_cubin_note.empty()) v.provenance["source_note"] = same_cubin_note;
  if (proposal) {
    v.provenance["proposal"] = proposal->id;
    v.provenance["proposal_description"] = proposal->description;
    v.provenance["proposal_parent"] = proposal->parent_template;
  }
  return v;
}


}  // namespace attn
