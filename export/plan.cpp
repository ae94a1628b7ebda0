#include "export/plan.hpp"

#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "tuner/space.hpp"

namespace attn {
namespace {

bool is_variant_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char ch : s)
    if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'))
      return false;
  return true;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

void check_variant(const ExportVariant& v, std::size_t index) {
  const std::string where = fmt::format("export plan: variant {} '{}'", index, v.name);
  if (!is_variant_name(v.name)) throw std::invalid_argument(where + ": name must be [A-Za-z0-9_]{1,64}");
  if (v.template_name.empty()) throw std::invalid_argument(where + ": no template name");
  if (!is_identifier(v.kernel))
    throw std::invalid_argument(where + ": kernel symbol '" + v.kernel + "' is not a C identifier");
  if (v.source.empty()) throw std::invalid_argument(where + ": empty CUDA source");
  if (v.cubin.empty()) throw std::invalid_argument(where + ": empty cubin");
  for (const auto& [name, value] : v.defines)
    if (!is_identifier(name)) throw std::invalid_argument(where + ": define '" + name + "' is not a C identifier");
  for (const auto& opt : v.nvrtc_options) {
    if (opt.empty() || starts_with(opt, "-arch") || starts_with(opt, "--gpu-architecture") ||
        starts_with(opt, "-I") || starts_with(opt, "--include-path") || starts_with(opt, "-D") ||
        starts_with(opt, "--define-macro"))
      throw std::invalid_argument(where + ": NVRTC option '" + opt +
                                  "' is empty or set by setup() itself (-arch, -I and -D are derived)");
  }
  std::set<std::string> header_names;
  for (const auto& [name, text] : v.headers) {
    if (name.empty() || name.find_first_of("\\\"'\n") != std::string::npos || name.find("..") != std::string::npos ||
        name.front() == '/')
      throw std::invalid_argument(where + ": header name '" + name + "' must be a relative include name");
    if (!header_names.insert(name).second) throw std::invalid_argument(where + ": header '" + name + "' twice");
  }
  if (v.launch) {
    const LaunchInfo& i = *v.launch;
    if (i.threads < 1 || i.threads > 1024 || i.smem_bytes < 0 || i.block_m < 1 || (i.grid_mode != 0 && i.grid_mode != 1) ||
        i.ctas_per_sm < 1)
      throw std::invalid_argument(fmt::format("{}: launch info {{{}, {}, {}, {}, ..., {}}} is malformed", where, i.threads,
                                              i.smem_bytes, i.block_m, i.grid_mode, i.ctas_per_sm));
  }
}

}  // namespace

std::vector<int> drop_unreached_variants(ExportPlan& plan) {
  std::vector<bool> reached(plan.variants.size(), false);
  if (plan.default_variant >= 0 && std::size_t(plan.default_variant) < reached.size()) reached[plan.default_variant] = true;
  for (const ShapeRule& r : plan.rules)
    if (r.variant >= 0 && std::size_t(r.variant) < reached.size()) reached[r.variant] = true;
  std::vector<int> to(plan.variants.size(), -1);
  std::vector<ExportVariant> kept;
  for (std::size_t i = 0; i < plan.variants.size(); ++i)
    if (reached[i]) {
      to[i] = int(kept.size());
      kept.push_back(std::move(plan.variants[i]));
    }
  plan.variants = std::move(kept);
  for (ShapeRule& r : plan.rules) r.variant = to[r.variant];
  plan.default_variant = to[plan.default_variant];
  for (auto it = plan.family_variants.begin(); it != plan.family_variants.end();) {
    if (to[it->second] < 0) {
      it = plan.family_variants.erase(it);  // labelled with the default, which serves its shapes no rule takes
    } else {
      it->second = to[it->second];
      ++it;
    }
  }
  return to;
}

bool ShapeRule::matches(int batch_size, int num_heads, int t_max, int col_width) const {
  return min_batch_size <= batch_size && batch_size <= max_batch_size && min_num_heads <= num_heads &&
         num_heads <= max_num_heads && min_t_max <= t_max && t_max <= max_t_max && min_col_width <= col_width &&
         col_width <= max_col_width;
}

void check_export_plan(const ExportPlan& plan) {
  const int n = static_cast<int>(plan.variants.size());
  if (n == 0) throw std::invalid_argument("export plan: no variants");
  if (n > kMaxExportVariants)
    throw std::invalid_argument(
        fmt::format("export plan: {} variants, the harness allows at most {}", n, kMaxExportVariants));
  std::set<std::string> names;
  for (std::size_t i = 0; i < plan.variants.size(); ++i) {
    check_variant(plan.variants[i], i);
    if (!names.insert(plan.variants[i].name).second)
      throw std::invalid_argument("export plan: variant name '" + plan.variants[i].name + "' twice");
  }
  if (plan.default_variant < 0 || plan.default_variant >= n)
    throw std::invalid_argument(fmt::format("export plan: default variant {} out of range 0..{}", plan.default_variant, n - 1));
  for (const auto& [family, index] : plan.family_variants)
    if (index < 0 || index >= n)
      throw std::invalid_argument(
          fmt::format("export plan: variant {} of family {} out of range 0..{}", index, family_name(family), n - 1));
  for (std::size_t i = 0; i < plan.rules.size(); ++i) {
    const ShapeRule& r = plan.rules[i];
    const std::string where = fmt::format("export plan: rule {} '{}'", i, r.label);
    if (r.variant < 0 || r.variant >= n)
      throw std::invalid_argument(fmt::format("{}: variant {} out of range 0..{}", where, r.variant, n - 1));
    auto bounds = [&](const char* what, int lo, int hi, int least) {
      if (lo < least || lo > hi)
        throw std::invalid_argument(fmt::format("{}: {} bounds [{}, {}] (need {} <= min <= max)", where, what, lo, hi, least));
    };
    bounds("batch_size", r.min_batch_size, r.max_batch_size, 1);
    bounds("num_heads", r.min_num_heads, r.max_num_heads, 1);
    bounds("t_max", r.min_t_max, r.max_t_max, kBlockSize);
    bounds("col_width", r.min_col_width, r.max_col_width, 1);
  }
}

int pick_variant(const ExportPlan& plan, int batch_size, int num_heads, int t_max, int col_width) {
  for (const ShapeRule& r : plan.rules)
    if (r.matches(batch_size, num_heads, t_max, col_width)) return r.variant;
  return plan.default_variant;
}

std::vector<ManifestEntry> variant_manifest(const ExportPlan& plan) {
  std::map<int, std::vector<Family>> families_of;  // variant index -> families it serves
  for (Family f : kAllFamilies) {
    const auto it = plan.family_variants.find(f);
    families_of[it == plan.family_variants.end() ? plan.default_variant : it->second].push_back(f);
  }
  std::vector<ManifestEntry> out;
  for (auto& [index, families] : families_of) {
    ManifestEntry e{plan.variants.at(static_cast<std::size_t>(index)).name, std::move(families)};
    if (e.families.size() == std::size(kAllFamilies)) e.families.clear();  // catch-all
    out.push_back(std::move(e));
  }
  return out;
}

nlohmann::ordered_json variant_manifest_json(const ExportPlan& plan) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ManifestEntry& e : variant_manifest(plan)) {
    nlohmann::ordered_json j = {{"name", e.name}};
    if (!e.families.empty()) {
      j["families"] = nlohmann::ordered_json::array();
      for (Family f : e.families) j["families"].push_back(family_name(f));
    }
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::ordered_json launch_info_json(const std::optional<LaunchInfo>& info) {
  if (!info) return nullptr;
  const LaunchInfo& i = *info;
  return {i.threads, i.smem_bytes, i.block_m, i.grid_mode, i.tma_q_rows, i.tma_kv_rows, i.tma_o_rows, i.ctas_per_sm};
}

nlohmann::ordered_json plan_summary_json(const ExportPlan& plan) {
  nlohmann::ordered_json variants = nlohmann::ordered_json::array();
  for (const ExportVariant& v : plan.variants) {
    nlohmann::ordered_json j = {{"name", v.name},
                        {"template", v.template_name},
                        {"kernel", v.kernel},
                        {"defines", v.defines},
                        {"nvrtc_options", v.nvrtc_options},
                        {"cubin_bytes", v.cubin.size()},
                        {"headers", nlohmann::json::array()},
                        {"provenance", v.provenance}};
    for (const auto& h : v.headers) j["headers"].push_back(h.first);
    j["launch_info"] = launch_info_json(v.launch);
    variants.push_back(std::move(j));
  }
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (const ShapeRule& r : plan.rules)
    rules.push_back({{"variant", plan.variants.at(static_cast<std::size_t>(r.variant)).name},
                     {"batch_size", {r.min_batch_size, r.max_batch_size}},
                     {"num_heads", {r.min_num_heads, r.max_num_heads}},
                     {"t_max", {r.min_t_max, r.max_t_max}},
                     {"col_width", {r.min_col_width, r.max_col_width}},
                     {"label", r.label}});
  nlohmann::ordered_json families = nlohmann::ordered_json::object();
  for (const auto& [f, index] : plan.family_variants)
    families[family_name(f)] = plan.variants.at(static_cast<std::size_t>(index)).name;
  return {{"suite", plan.suite},
          {"default_variant", plan.variants.at(static_cast<std::size_t>(plan.default_variant)).name},
          {"family_variants", families},
          {"variants", variants},
          {"dispatch_rules", rules},
          {"variant_manifest", variant_manifest_json(plan)},
          {"provenance", plan.provenance}};
}

}  // namespace attn
