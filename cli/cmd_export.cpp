// `attn-tuner export [--db PATH] --out DIR [--suite S] [--templates DIR] [--force] [--allow-stale-source]
// [--no-buckets] [--bucket-margin F]`: write the tuned champions of a suite (and its bucket champions) as a
// challenge submission directory (docs/export.md). The DB is opened read-only; on any error nothing is
// written.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "db/store.hpp"
#include "export/plan_from_db.hpp"
#include "export/writer.hpp"

namespace attn {
namespace {

struct ExportOptions {
  std::string db = "runs/attn-tuner.db";
  std::string out;
  std::string suite;
  std::string templates;
  bool force = false;
  bool allow_stale_source = false;
  bool no_buckets = false;
  double bucket_margin = 0.03;
};

/// "tuned 0.3010 ms (root seed 0), held-out 0.3052 ms (root seed 1000003, +1.4%)", or why there is none.
std::string holdout_line(const nlohmann::json& p) {
  const auto seed = [](const nlohmann::json& s) { return s.is_number() ? fmt::format("root seed {}", s.get<std::int64_t>()) : std::string("fixed seeds"); };
  std::string line = p.contains("tuned_ms") && p["tuned_ms"].is_number()
                         ? fmt::format("tuned {:.4f} ms ({})", p["tuned_ms"].get<double>(), seed(p.value("root_seed", nlohmann::json())))
                         : std::string("tuned -");
  const nlohmann::json h = p.value("holdout", nlohmann::json());
  if (!h.is_object()) return line + ", held-out: not checked (the daemon checks champions on quick/full/broad)";
  if (!h.value("ok", false))
    return line + fmt::format(", held-out ({}): FAILED: {}", seed(h["root_seed"]), h.value("verdict", std::string()));
  const double ho = h["score_ms"].get<double>();
  line += fmt::format(", held-out {:.4f} ms ({}", ho, seed(h["root_seed"]));
  if (p["tuned_ms"].is_number()) line += fmt::format(", {:+.1f}%", (ho / p["tuned_ms"].get<double>() - 1) * 100);
  return line + ")";
}

/// One line per bucket: "  sliding_window t_max 8192, B·H 32: fa2_mma_i12 0.4500 ms vs fa2_mma_i3 0.5000 ms
/// (-10.0%), exported".
void print_buckets(const nlohmann::json& p) {
  const nlohmann::json rows = p.value("buckets", nlohmann::json::array());
  if (!p.value("buckets_enabled", false)) {
    std::printf("bucket champions: off (--no-buckets)\n");
    return;
  }
  std::printf("%s", fmt::format("bucket champions (family, t_max, B·H; exported when faster than the family champion by "
                                "more than {:.1f}%):\n",
                                p.value("bucket_margin", 0.0) * 100)
                        .c_str());
  for (const auto& b : rows) {
    std::string line = fmt::format("  {}: ", b["bucket"].get<std::string>());
    if (b["champion_iter"].is_number())
      line += fmt::format("iter {} {:.4f} ms", b["champion_iter"].get<std::int64_t>(), b["champion_ms"].get<double>());
    else
      line += "no champion";
    line += fmt::format(" vs {} ", b["reference"].get<std::string>());
    line += b["reference_ms"].is_number() ? fmt::format("{:.4f} ms", b["reference_ms"].get<double>()) : std::string("-");
    if (b["gain"].is_number()) line += fmt::format(" (gain {:.1f}%)", b["gain"].get<double>() * 100);
    line += ", " + b["status"].get<std::string>();
    if (b["variant"].is_string()) line += " -> " + b["variant"].get<std::string>();
    if (!b["note"].get<std::string>().empty()) line += ": " + b["note"].get<std::string>();
    std::printf("%s\n", line.c_str());
  }
}

void run_export(const ExportOptions& o) {
  try {
    check_output_dir(o.out, o.force);  // before any work: a refused --out costs nothing
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  if (!std::filesystem::is_regular_file(o.db))
    throw CliError(fmt::format("export: no experiment DB at {} (pass --db PATH, or start one with `attn-tuner run`)", o.db));
  ExportPlan plan;
  try {
    auto db = ExperimentDb::open(o.db, ExperimentDb::Mode::read_only);
    DbExportOptions options;
    options.suite = o.suite;
    options.templates_dir = o.templates;
    options.allow_stale_source = o.allow_stale_source;
    options.buckets = !o.no_buckets;
    options.bucket_margin = o.bucket_margin;
    plan = build_export_plan(db, options);
  } catch (const std::invalid_argument& e) {
    throw CliError(fmt::format("export: {}", e.what()));
  } catch (const std::runtime_error& e) {  // not a DB, an empty file, another schema
    throw CliError(fmt::format("export: cannot read the experiment DB {}: {}", o.db, e.what()));
  }
  try {
    write_submission_dir(plan, load_submission_templates(), o.out, o.force);
  } catch (const std::invalid_argument& e) {
    throw CliError(fmt::format("export: {}", e.what()));
  }
  std::printf("%s", fmt::format("wrote {} for suite '{}': {} variant(s), {} dispatch rule(s), default {}\n", o.out,
                                plan.suite, plan.variants.size(), plan.rules.size(),
                                plan.variants[static_cast<std::size_t>(plan.default_variant)].name)
                        .c_str());
  for (const auto& v : plan.variants) {
    std::printf("%s", fmt::format("  {}  {}  {}\n", v.name, v.template_name,
                                  v.provenance.value("params", std::string()))
                          .c_str());
    std::printf("    %s\n", holdout_line(v.provenance).c_str());
    if (v.provenance.contains("source_note"))
      std::printf("    %s\n", v.provenance["source_note"].get<std::string>().c_str());
  }
  print_buckets(plan.provenance);
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand("export", "write the tuned champions as a challenge submission directory");
  cmd->add_option("--db", o->db, "experiment DB (read-only)")->capture_default_str();
  cmd->add_option("--out", o->out, "submission directory to write (created; must be empty unless --force)")->required();
  cmd->add_option("--suite", o->suite, "suite whose champions to export (default: the only one with champions)");
  cmd->add_option("--templates", o->templates, "kernel templates folder (default: $ATTN_TUNER_TEMPLATES or the source tree's)");
  cmd->add_flag("--force", o->force, "replace a non-empty --out that holds an earlier export");
  cmd->add_flag("--allow-stale-source", o->allow_stale_source,
                "export even when a template changed since its champion was compiled (ships the current source)");
  cmd->add_flag("--no-buckets", o->no_buckets,
                "export only the champions, no bucket champions (per family x t_max x batch*heads)");
  cmd->add_option("--bucket-margin", o->bucket_margin,
                  "noise guard: a bucket champion is exported only when faster than the family champion on the "
                  "bucket's cases by more than this fraction, in [0, 1)")
      ->capture_default_str();
  cmd->callback([o] { run_export(*o); });
}

}  // namespace attn
