// `attn-tuner suites`: print a suite's cases with their work and roofline floor, and the suite's floor
// score (the harness's rule applied to the floors); optionally write the suite as a harness manifest.
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "workload/case_spec.hpp"
#include "workload/layout.hpp"
#include "workload/roofline.hpp"

namespace attn {
namespace {

struct SuitesOptions {
  std::string name, manifest, write_manifest;
  bool json = false;
  std::int64_t root_seed = 0;
  double tflops = 989, tbps = 3.35;  // H100 SXM datasheet, as roofline.hpp Ceilings
};

struct NamedSuite {
  std::string name;
  std::vector<CaseSpec> cases;
  std::string seeds;  ///< where the seeds come from, for the header line
};

struct CaseRow {
  CaseSpec spec;
  BlockSparseLayout layout;
  CaseWork work;
};

std::vector<NamedSuite> resolve_suites(const SuitesOptions& o) {
  std::vector<NamedSuite> out;
  try {
    if (!o.manifest.empty()) {
      out.push_back({o.manifest, suite_from_manifest_file(o.manifest), "seeds from the manifest"});
    } else {
      for (const auto& n : builtin_suite_names()) {
        if (!o.name.empty() && n != o.name) continue;
        const bool fixed = n == "smoke" || n == "local-dev";
        out.push_back({n, {}, fixed ? "the harness's seeds" : fmt::format("seeds from root seed {}", o.root_seed)});
      }
      if (out.empty()) builtin_suite(o.name);  // throws: unknown suite, with the known names
      for (auto& s : out) s.cases = builtin_suite(s.name, o.root_seed);
    }
  } catch (const std::invalid_argument& e) {
    throw CliError(fmt::format("suites: {}", e.what()));
  }
  return out;
}

std::string shape_of(const CaseSpec& c) {
  std::string s = fmt::format("{}x{}x{} w{}", c.batch_size, c.num_heads, c.t_max, c.window_blocks);
  if (c.family == Family::sliding_window_global) s += fmt::format(" g{}", c.global_blocks);
  if (c.family == Family::sliding_window_retrieval)
    s += fmt::format(" r{} bias{:g}", c.retrieval_blocks, c.retrieval_local_bias);
  return s + fmt::format(" min{:g}", c.seq_len_min_ratio);
}

void print_table(const NamedSuite& suite, const std::vector<CaseRow>& rows, const SuiteScore& score,
                 const Ceilings& ceil) {
  fmt::print("suite {} ({} cases, {}; ceilings {:g} TFLOP/s, {:g} TB/s)\n", suite.name, rows.size(), suite.seeds,
             ceil.flops_per_s / 1e12, ceil.bytes_per_s / 1e12);
  fmt::print("  {:<20} {:<9} {:>10} {:<36} {:>9} {:>9} {:>8} {:>9} {}\n", "case_id", "family", "seed", "shape",
             "kv-pairs", "GFLOP", "MB", "floor_us", "bound");
  for (const auto& r : rows)
    fmt::print("  {:<20} {:<9} {:>10} {:<36} {:>9} {:>9.3f} {:>8.2f} {:>9.2f} {}\n", r.spec.case_id,
               family_short_name(r.spec.family), r.spec.seed, shape_of(r.spec), r.work.kv_block_pairs,
               r.work.flops / 1e9, r.work.bytes / 1e6, r.work.floor_s(ceil) * 1e6,
               r.work.compute_bound(ceil) ? "compute" : "memory");
  std::string medians;
  for (const auto& [f, m] : score.family_median)
    medians += fmt::format("{}{} {:.2f}", medians.empty() ? "" : ", ", family_short_name(f), m * 1e6);
  fmt::print("  floor score: {:.2f} us (geomean over families of the median floor: {})\n\n", score.geomean * 1e6,
             medians);
}

nlohmann::json suite_json(const NamedSuite& suite, const std::vector<CaseRow>& rows, const SuiteScore& score,
                          const Ceilings& ceil) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json j = case_to_json(r.spec);
    j["work"] = {{"seq_lens", r.layout.seq_lens},
                 {"col_width", r.layout.col_width},
                 {"density", r.layout.density},
                 {"kv_block_pairs", r.work.kv_block_pairs},
                 {"flops", r.work.flops},
                 {"bytes", r.work.bytes},
                 {"floor_us", r.work.floor_s(ceil) * 1e6},
                 {"bound", r.work.compute_bound(ceil) ? "compute" : "memory"}};
    cases.push_back(std::move(j));
  }
  nlohmann::json medians = nlohmann::json::object();
  for (const auto& [f, m] : score.family_median) medians[family_name(f)] = m * 1e6;
  return {{"name", suite.name},
          {"cases", std::move(cases)},
          {"floor_score_us", score.geomean * 1e6},
          {"family_floor_median_us", std::move(medians)}};
}

void write_manifest_file(const std::string& path, const std::vector<NamedSuite>& suites) {
  std::ofstream out(path);
  if (!out) throw CliError(fmt::format("suites: cannot write manifest '{}'", path));
  out << suite_to_manifest_json(suites.front().cases);
  out.close();
  if (!out) throw CliError(fmt::format("suites: writing manifest '{}' failed", path));
  std::fprintf(stderr, "wrote %zu cases of suite %s to %s\n", suites.front().cases.size(),
               suites.front().name.c_str(), path.c_str());
}

void run_suites(const SuitesOptions& o) {
  if (!(o.tflops > 0) || !(o.tbps > 0))
    throw CliError(fmt::format("suites: --tflops {} and --tbps {} must be positive", o.tflops, o.tbps));
  const Ceilings ceil{o.tflops * 1e12, o.tbps * 1e12};
  const auto suites = resolve_suites(o);
  if (!o.write_manifest.empty()) {
    if (o.name.empty() && o.manifest.empty())
      throw CliError("suites: --write-manifest needs one suite: give --name or --manifest");
    write_manifest_file(o.write_manifest, suites);
  }

  nlohmann::json all = nlohmann::json::array();
  for (const auto& suite : suites) {
    std::vector<CaseRow> rows;
    std::vector<Family> families;
    std::vector<double> floors;
    for (const auto& c : suite.cases) {
      CaseRow r{c, build_layout(c), {}};
      r.work = case_work(r.layout, c.t_max);
      families.push_back(c.family);
      floors.push_back(r.work.floor_s(ceil));
      rows.push_back(std::move(r));
    }
    const SuiteScore score = suite_score(families, floors);
    if (o.json)
      all.push_back(suite_json(suite, rows, score, ceil));
    else
      print_table(suite, rows, score, ceil);
  }
  if (o.json) {
    const nlohmann::json doc = {{"root_seed", o.root_seed},
                                {"ceilings", {{"tflops", o.tflops}, {"tbps", o.tbps}}},
                                {"suites", std::move(all)}};
    fmt::print("{}\n", doc.dump(2));
  }
}

}  // namespace

void add_suites_command(CLI::App& app) {
  auto opts = std::make_shared<SuitesOptions>();
  CLI::App* cmd = app.add_subcommand(
      "suites", "Print a suite's cases with kv-block pairs, FLOPs, bytes and roofline floor (all built-in suites "
                "when neither --name nor --manifest is given)");
  auto* name = cmd->add_option("--name", opts->name, "built-in suite: smoke, local-dev, quick, full, broad");
  auto* manifest = cmd->add_option("--manifest", opts->manifest, "harness suite manifest JSON file");
  name->excludes(manifest);
  cmd->add_flag("--json", opts->json, "machine-readable output: the CaseSpec fields plus the work of each case");
  cmd->add_option("--root-seed", opts->root_seed,
                  "root seed of the per-case seeds of quick/full/broad (smoke and local-dev have fixed seeds)")
      ->capture_default_str();
  cmd->add_option("--tflops", opts->tflops, "compute ceiling, TFLOP/s (default: H100 SXM dense bf16)")
      ->capture_default_str();
  cmd->add_option("--tbps", opts->tbps, "memory ceiling, TB/s (default: H100 SXM HBM3)")->capture_default_str();
  cmd->add_option("--write-manifest", opts->write_manifest, "also write the suite as harness manifest JSON to FILE");
  cmd->callback([opts] { run_suites(*opts); });
}

}  // namespace attn
