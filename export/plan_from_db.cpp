#include "export/plan_from_db.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "export/shape_rules.hpp"
#include "gpu/compiler.hpp"
#include "tuner/proposal_template.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace {

/// One champion row with the iteration and the variant it points to.
struct Champion {
  ChampionRecord record;
  IterationRecord iteration;
  VariantRecord variant;
};

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

Champion load_champion(ExperimentDb& db, const ChampionRecord& c) {
  const std::string who = fmt::format("{}: champion '{}' of suite '{}'", db.path(), to_string(c.scope), c.suite);
  auto it = db.iteration(c.iteration_id);
  if (!it) throw std::invalid_argument(fmt::format("{} points to iteration {}, which is not in the DB", who, c.iteration_id));
  if (it->status != IterationStatus::keep && it->status != IterationStatus::discard)
    throw std::invalid_argument(fmt::format("{} is iteration {} with status {}, not a measured result", who, it->iter,
                                            to_string(it->status)));
  if (!it->variant_id)
    throw std::invalid_argument(fmt::format("{} (iteration {}) has no compiled variant", who, it->iter));
  auto v = db.variant(*it->variant_id);
  if (!v) throw std::invalid_argument(fmt::format("{} (iteration {}) points to variant {}, which is not in the DB", who,
                                                  it->iter, *it->variant_id));
  if (!v->compile_ok)
    throw std::invalid_argument(fmt::format("{} (iteration {}): its variant {} failed to compile", who, it->iter, v->id));
  return {c, std::move(*it), std::move(*v)};
}

std::string suites_with_champions(ExperimentDb& db) {
  std::set<std::string> suites;
  for (const auto& c : db.champions()) suites.insert(c.suite);
  std::string out;
  for (const auto& s : suites) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

std::string pick_suite(ExperimentDb& db, const std::string& requested) {
  if (!requested.empty()) return requested;
  std::set<std::string> suites;
  for (const auto& c : db.champions()) suites.insert(c.suite);
  if (suites.empty())
    throw std::invalid_argument(fmt::format("{}: no champions yet (nothing to export; run `attn-tuner run` first)", db.path()));
  if (suites.size() > 1)
    throw std::invalid_argument(
        fmt::format("{}: champions for several suites ({}): pass --suite", db.path(), suites_with_champions(db)));
  return *suites.begin();
}

/// A temporary folder, removed with its contents on destruction.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/attn-export-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("export: cannot make a temporary folder");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

/// The variant's files and metadata; `scopes` are the champion scopes it wins. A template proposed by the
/// proposer hook (`proposal`) comes from its DB row, not from `templates_dir`.
ExportVariant export_variant(const Champion& c, const std::vector<std::string>& scopes, const DbExportOptions& options,
                             const std::string& templates_dir, const std::optional<ProposalRecord>& proposal) {
  const VariantRecord& vr = c.variant;
  const std::int64_t iter = c.iteration.iter;
  std::optional<TempDir> proposal_dir;
  TemplateSpace space = [&] {
    try {
      if (proposal) {
        proposal_dir.emplace();
        return TemplateSpace::load(write_proposal_template(*proposal, proposal_dir->path));
      }
      return TemplateSpace::load_named(templates_dir, vr.template_name);
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("iteration {}: template '{}' not usable from '{}': {}", iter,
                                              vr.template_name,
                                              proposal ? fmt::format("proposal {} in the DB", proposal->id) : templates_dir,
                                              e.what()));
    }
  }();
  ExportVariant v;
  v.name = identifier_part(vr.template_name) + "_i" + std::to_string(iter);
  v.template_name = vr.template_name;
  v.kernel = space.kernel();
  v.defines = config_from_json(vr.params_json);
  v.source = read_text(space.source_path(), "template source");
  v.headers = local_includes(space.source_path());

  CompilerOptions compiler_options;
  compiler_options.use_cache = false;
  const Compiler compiler(compiler_options);
  const CompileRequest request{space.source_path(), space.kernel(), v.defines, {}};
  const std::string hash = compiler.content_hash(request);
  const bool source_matches = hash == vr.content_hash;
  if (!source_matches && !options.allow_stale_source)
    throw std::invalid_argument(fmt::format(
        "iteration {} ({} {}): {} now hashes to {}, not to the variant's content hash {}: the template source, its "
        "headers, the NVRTC options or the NVRTC version changed since it was compiled, so the exported source "
        "would not be the cubin's. Re-tune, or pass --allow-stale-source to export the cubin with the current source",
        iter, vr.template_name, vr.params, space.source_path(), hash, vr.content_hash));
  for (const auto& opt : compiler.nvrtc_options(request))
    if (opt.rfind("-arch", 0) != 0 && opt.rfind("-I", 0) != 0 && opt.rfind("-D", 0) != 0 &&
        opt.rfind("--ptxas-options", 0) != 0)
      v.nvrtc_options.push_back(opt);

  std::string cubin_origin = "db cubin_path";
  if (!vr.cubin_path.empty() && fs::is_regular_file(vr.cubin_path)) {
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

  const IterationRecord& it = c.iteration;
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
                  {"source_matches_cubin", source_matches}};
  if (proposal) {
    v.provenance["proposal"] = proposal->id;
    v.provenance["proposal_description"] = proposal->description;
    v.provenance["proposal_parent"] = proposal->parent_template;
  }
  return v;
}

std::vector<CaseSpec> tuned_cases(ExperimentDb& db, const Champion& overall, const std::string& suite) {
  const auto run = db.run(overall.iteration.run_id);
  if (run && !run->suite_json.empty()) {
    try {
      return suite_from_manifest_json(run->suite_json);
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("{}: run {} has an unreadable suite_json: {}", db.path(), run->id, e.what()));
    }
  }
  const auto& names = builtin_suite_names();
  if (std::find(names.begin(), names.end(), suite) != names.end()) return builtin_suite(suite);
  throw std::invalid_argument(fmt::format("{}: run {} of suite '{}' stores no cases and '{}' is not a built-in suite",
                                          db.path(), overall.iteration.run_id, suite, suite));
}

}  // namespace

ExportPlan build_export_plan(ExperimentDb& db, const DbExportOptions& options) {
  const std::string suite = pick_suite(db, options.suite);
  const auto overall_record = db.champion(suite, ChampionScope::overall);
  if (!overall_record)
    throw std::invalid_argument(fmt::format("{}: no overall champion for suite '{}' (suites with champions: {})", db.path(),
                                            suite, suites_with_champions(db)));
  const std::string templates_dir = options.templates_dir.empty() ? default_templates_dir() : options.templates_dir;

  // Champions: overall first (the default variant), then each family's.
  std::vector<Champion> champions{load_champion(db, *overall_record)};
  std::map<Family, std::size_t> family_champion;  // family -> index into champions
  for (Family f : kAllFamilies)
    if (const auto c = db.champion(suite, champion_scope_of(f))) {
      family_champion[f] = champions.size();
      champions.push_back(load_champion(db, *c));
    }

  // One exported variant per distinct variant id, in champion order.
  ExportPlan plan;
  plan.suite = suite;
  std::map<std::int64_t, int> index_of_variant;  // variant id -> plan index
  std::vector<const Champion*> representative;   // plan index -> first champion with that variant
  std::vector<std::vector<std::string>> scopes;
  for (const Champion& c : champions) {
    const auto [it, inserted] = index_of_variant.emplace(c.variant.id, static_cast<int>(representative.size()));
    if (inserted) {
      representative.push_back(&c);
      scopes.emplace_back();
    }
    scopes[static_cast<std::size_t>(it->second)].push_back(to_string(c.record.scope));
  }
  for (std::size_t i = 0; i < representative.size(); ++i) {
    plan.variants.push_back(export_variant(*representative[i], scopes[i], options, templates_dir,
                                           db.proposal_by_template(representative[i]->variant.template_name)));
    // The tuned score beside the held-out one (the latest check of this config, if any).
    const IterationRecord& it = representative[i]->iteration;
    auto& p = plan.variants.back().provenance;
    p["root_seed"] = it.root_seed ? nlohmann::json(*it.root_seed) : nlohmann::json(nullptr);
    // Same measure as the held-out score (the suite geomean): the A/B/A score of the overall champion,
    // the first-look geomean of a family-only champion.
    const bool overall = representative[i]->record.scope == ChampionScope::overall;
    p["tuned_ms"] = overall ? nlohmann::json(representative[i]->record.score_ms)
                            : (it.geomean_ms ? nlohmann::json(*it.geomean_ms) : nlohmann::json(nullptr));
    const auto checks = db.holdout_checks(it.iter);
    p["holdout"] = checks.empty() ? nlohmann::json(nullptr) : nlohmann::json(checks.back());
    if (!checks.empty()) p["holdout"].erase("cases");
  }
  plan.default_variant = 0;
  for (const auto& [family, ci] : family_champion)
    plan.family_variants[family] = index_of_variant.at(champions[ci].variant.id);

  // Each variant's measured median per case (passed cases only), from its champion iteration.
  std::vector<std::map<std::string, double>> latency(plan.variants.size());
  for (std::size_t i = 0; i < representative.size(); ++i)
    for (const CaseResultRecord& r : representative[i]->iteration.cases)
      if (r.passed && r.median_ms) latency[i][r.case_id] = *r.median_ms;

  const std::vector<CaseSpec> cases = tuned_cases(db, champions.front(), suite);
  std::vector<CaseAssignment> assignments;
  nlohmann::json case_choices = nlohmann::json::object();
  for (const CaseSpec& spec : cases) {
    CaseAssignment a;
    a.spec = spec;
    const auto fc = plan.family_variants.find(spec.family);
    a.variant = fc == plan.family_variants.end() ? plan.default_variant : fc->second;
    for (const auto& per_variant : latency) {
      const auto found = per_variant.find(spec.case_id);
      a.latency_ms.push_back(found == per_variant.end() ? std::nullopt : std::optional<double>(found->second));
    }
    if (const auto base = a.latency_ms[static_cast<std::size_t>(a.variant)]) {
      int fastest = a.variant;
      for (std::size_t v = 0; v < a.latency_ms.size(); ++v)
        if (a.latency_ms[v] && *a.latency_ms[v] < *a.latency_ms[static_cast<std::size_t>(fastest)])
          fastest = static_cast<int>(v);
      if (*a.latency_ms[static_cast<std::size_t>(fastest)] < *base * (1.0 - options.override_margin)) a.variant = fastest;
    }
    case_choices[spec.case_id] = plan.variants[static_cast<std::size_t>(a.variant)].name;
    assignments.push_back(std::move(a));
  }
  plan.rules = build_shape_rules(assignments);

  nlohmann::json champion_rows = nlohmann::json::array();
  for (const Champion& c : champions)
    champion_rows.push_back({{"scope", to_string(c.record.scope)},
                             {"iteration", c.record.iteration_id},
                             {"score_ms", c.record.score_ms},
                             {"promoted_at", c.record.promoted_at},
                             {"variant", plan.variants[static_cast<std::size_t>(index_of_variant.at(c.variant.id))].name}});
  const auto run = db.run(champions.front().iteration.run_id);
  plan.provenance = {{"db", db.path()},
                     {"suite", suite},
                     {"run_id", champions.front().iteration.run_id},
                     {"gpu_name", run ? run->gpu_name : ""},
                     {"champions", champion_rows},
                     {"case_variants", case_choices},
                     {"override_margin", options.override_margin}};
  check_export_plan(plan);
  return plan;
}

}  // namespace attn
