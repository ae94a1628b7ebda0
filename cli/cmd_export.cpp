// `attn-tuner export [--db PATH] --out DIR [--suite S] [--templates DIR] [--force] [--allow-stale-source]
// [--no-buckets] [--bucket-margin F] [--harness DIR [--harness-suite S] [--harness-runs N] [--harness-arg A ...]
// [--harness-timeout S] [--harness-env-dir D]]`: write the tuned champions of a suite (and its bucket
// champions) as a challenge submission directory (docs/export.md). The DB is opened read-only; on any error
// nothing is written. With --harness, the official harness then runs on the written directory and each run is
// recorded in harness_checks (the DB opened writable for that only); its errors leave the submission in place.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/read_suite.hpp"
#include "db/store.hpp"
#include "export/harness_check.hpp"
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
  std::string harness;           // "" = no harness check
  std::string harness_suite;     // "" = the export's suite when the harness has it, else quick
  int harness_runs = 1;
  std::vector<std::string> harness_args;
  double harness_timeout = 1800;
  std::string harness_env_dir;
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

/// Where a variant's template came from, when not from the templates folder: "from idea 33 (16_q_first.idea, run
/// on quick), verdict no_gain: exported like any measured config (docs/ideas.md, \"After the verdict\")", or "from
/// proposal 3 of the proposer hook: <description>"; "" for a repository template.
std::string origin_line(const nlohmann::json& p) {
  if (p.contains("idea") && p["idea"].is_object()) {
    const nlohmann::json& i = p["idea"];
    const std::string verdict = i.value("verdict", "");
    return fmt::format("from idea {} ({}, run on {}), {}: exported like any measured config (docs/ideas.md, "
                       "\"After the verdict\")",
                       i.value("id", std::int64_t(0)), i.value("file", ""), i.value("suite", "?"),
                       verdict.empty() ? "no verdict (" + i.value("status", "?") + ")" : "verdict " + verdict);
  }
  if (p.contains("proposal") && p["proposal"].is_number_integer())
    return fmt::format("from proposal {} of the proposer hook: {}", p["proposal"].get<std::int64_t>(),
                       p.value("proposal_description", ""));
  return "";
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

/// "0.3625 ms (sliding_window 0.3849, sliding_window_global 0.3507, sliding_window_retrieval 0.3529)".
std::string score_text(const HarnessRunResult& r) {
  std::string s = r.score_ms ? fmt::format("{:.4f} ms", *r.score_ms) : std::string("no score");
  std::string families;
  for (const auto& [family, ms] : r.family_ms.items())
    families += fmt::format("{}{} {:.4f}", families.empty() ? "" : ", ", family, ms.get<double>());
  return families.empty() ? s : s + " (" + families + ")";
}

/// The official harness on the written submission, `o.harness_runs` times; each run with a JSON summary is
/// recorded in harness_checks. Bad input (no harness at DIR, no python3): CliError (exit 2); a run without
/// a summary (the harness failed, printed no JSON, timed out) or an invalid submission: std::runtime_error
/// (exit 1). The submission stays in every case.
void run_harness_check(const ExportOptions& o, const ExportPlan& plan) {
  namespace fs = std::filesystem;
  const std::string kept = fmt::format("the submission stays at {}", o.out);
  std::string python;
  try {
    require_harness_dir(o.harness);
    python = find_python3();
  } catch (const std::invalid_argument& e) {
    throw CliError(fmt::format("export --harness: {}; {}", e.what(), kept));
  }
  HarnessInvocation inv;
  inv.python = python;
  inv.harness_dir = fs::absolute(o.harness).lexically_normal().string();
  inv.submission_dir = fs::absolute(o.out).lexically_normal().string();
  inv.suite = o.harness_suite.empty() ? default_harness_suite(plan.suite) : o.harness_suite;
  inv.extra_args = o.harness_args;
  inv.env_dir = o.harness_env_dir.empty() ? "" : fs::absolute(o.harness_env_dir).lexically_normal().string();
  inv.timeout_s = o.harness_timeout;
  std::string log_template = (fs::temp_directory_path() / "attn-harness-XXXXXX").string();
  if (!::mkdtemp(log_template.data()))
    throw std::runtime_error(fmt::format("export --harness: cannot create a folder for the harness output; {}", kept));
  inv.log_dir = log_template;

  HarnessCheckRecord rec;
  rec.suite = inv.suite;
  rec.export_suite = plan.suite;
  rec.root_seed = harness_root_seed_from_env();
  rec.harness_commit = harness_commit(inv.harness_dir);
  rec.harness_args = nlohmann::json(o.harness_args).dump();
  rec.submission_dir = inv.submission_dir;
  nlohmann::json iterations = nlohmann::json::array();
  for (const auto& v : plan.variants)
    iterations.push_back({{"variant", v.name},
                          {"template", v.template_name},
                          {"iteration", v.provenance.value("iteration", nlohmann::json())}});
  rec.iterations_json = iterations.dump();

  std::printf("%s", fmt::format("harness {} ({}): suite {}{}, --serverlike, {} run(s), limit {:g} s each\n",
                                inv.harness_dir, rec.harness_commit ? rec.harness_commit->substr(0, 12) : "not a git checkout",
                                inv.suite,
                                rec.root_seed ? fmt::format(" (root seed {})", *rec.root_seed) : std::string(),
                                o.harness_runs, o.harness_timeout)
                        .c_str());
  std::fflush(stdout);
  std::optional<ExperimentDb> db;
  std::string not_recorded;  // why the checks could not be recorded
  std::vector<std::int64_t> recorded;
  std::vector<double> scores;
  int invalid = 0;
  std::string first_reason;
  for (int i = 1; i <= o.harness_runs; ++i) {
    inv.index = i;
    HarnessRunResult r;
    try {
      r = run_harness_once(inv);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(fmt::format("export --harness: {}; {}", e.what(), kept));
    }
    if (!r.has_summary) {
      const std::string earlier =
          recorded.empty() ? std::string()
                           : fmt::format("\n  the runs before it are recorded as harness check(s) {}-{} in {}",
                                         recorded.front(), recorded.back(), o.db);
      throw std::runtime_error(fmt::format("export --harness: run {}/{}: {}\n  full output: {} and {}{}\n  {}", i,
                                           o.harness_runs, r.error, r.stdout_path, r.stderr_path, earlier, kept));
    }
    if (r.valid) {
      std::printf("%s", fmt::format("  run {}/{}: valid, {}, {:.1f} s\n", i, o.harness_runs, score_text(r), r.wall_s).c_str());
      if (r.score_ms) scores.push_back(*r.score_ms);
    } else {
      ++invalid;
      const std::string reason = r.failure_reason.value_or("no failure reason given");
      if (first_reason.empty()) first_reason = reason;
      std::printf("%s", fmt::format("  run {}/{}: INVALID: {}, {:.1f} s\n", i, o.harness_runs, reason, r.wall_s).c_str());
    }
    std::fflush(stdout);
    rec.valid = r.valid;
    rec.score_ms = r.score_ms;
    rec.family_ms_json = r.family_ms.dump();
    rec.failure_reason = r.failure_reason;
    rec.wall_s = r.wall_s;
    if (not_recorded.empty()) {
      try {
        if (!db) db.emplace(ExperimentDb::open(o.db, ExperimentDb::Mode::read_write));
        recorded.push_back(db->add_harness_check(rec));
      } catch (const std::exception& e) {
        not_recorded = e.what();
      }
    }
  }
  if (!scores.empty()) {
    std::sort(scores.begin(), scores.end());
    const std::size_t n = scores.size();
    const double median = n % 2 ? scores[n / 2] : (scores[n / 2 - 1] + scores[n / 2]) / 2;
    std::printf("%s", fmt::format("harness: median score {:.4f} ms over {} valid run(s) of {} (suite {})\n", median,
                                  n, o.harness_runs, inv.suite)
                          .c_str());
  }
  if (!not_recorded.empty())
    std::printf("%s", fmt::format("harness: the check(s) could not be recorded in {} ({}); the results above are all "
                                  "there is\n",
                                  o.db, not_recorded)
                          .c_str());
  else if (!recorded.empty())
    std::printf("%s", fmt::format("harness: recorded as harness check(s) {}{} in {} (`attn-tuner query harness`)\n",
                                  recorded.front(), recorded.size() > 1 ? fmt::format("-{}", recorded.back()) : "", o.db)
                          .c_str());
  if (invalid > 0)
    throw std::runtime_error(fmt::format(
        "export --harness: the harness found the submission invalid in {} of {} run(s): {}\n  full output: {}\n  {}",
        invalid, o.harness_runs, first_reason, inv.log_dir, kept));
  std::error_code ec;
  fs::remove_all(inv.log_dir, ec);
}

void run_export(const ExportOptions& o) {
  if (!o.harness.empty() && o.harness_runs < 1)
    throw CliError(fmt::format("export: --harness-runs must be at least 1, got {}", o.harness_runs));
  if (!o.harness.empty() && !(o.harness_timeout > 0))
    throw CliError(fmt::format("export: --harness-timeout must be a positive number of seconds, got {:g}", o.harness_timeout));
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
    options.suite = choose_read_suite(db, o.suite, false).suite;
    options.templates_dir = o.templates;
    options.allow_stale_source = o.allow_stale_source;
    options.buckets = !o.no_buckets;
    options.bucket_margin = o.bucket_margin;
    plan = build_export_plan(db, options);
  } catch (const CliError& e) {
    throw CliError(fmt::format("export: {}", e.what()));
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
    if (const std::string origin = origin_line(v.provenance); !origin.empty()) std::printf("    %s\n", origin.c_str());
    if (v.provenance.contains("source_note"))
      std::printf("    %s\n", v.provenance["source_note"].get<std::string>().c_str());
  }
  for (const auto& d : plan.provenance.value("not_exported", nlohmann::json::array()))
    std::printf("%s", fmt::format("  not exported: {} ({})\n", d.value("variant", ""), d.value("why", "")).c_str());
  print_buckets(plan.provenance);
  std::fflush(stdout);
  if (!o.harness.empty()) run_harness_check(o, plan);
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand("export", "write the tuned champions as a challenge submission directory");
  cmd->add_option("--db", o->db, "experiment DB (read-only; written only to record --harness runs)")
      ->capture_default_str();
  cmd->add_option("--out", o->out, "submission directory to write (created; must be empty unless --force)")->required();
  cmd->add_option("--suite", o->suite, "suite whose champions to export (default: the only one, else the latest "
                                       "run's, said on the first line)");
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
  auto* harness = cmd->add_option("--harness", o->harness,
                                  "after writing, run the official harness (a checkout of "
                                  "paradigmxyz/attention-kernel-challenge at this folder) --serverlike on the "
                                  "submission and record each run in the DB (harness_checks)");
  cmd->add_option("--harness-suite", o->harness_suite,
                  "harness suite: smoke | local-dev | quick | full | broad (default: the export's suite when "
                  "the harness has it, else quick)")
      ->needs(harness);
  cmd->add_option("--harness-runs", o->harness_runs, "harness runs (the median score is printed)")
      ->needs(harness)
      ->capture_default_str();
  cmd->add_option("--harness-arg", o->harness_args,
                  "one more argument for eval-submission, after ours (a later option wins); repeat it, and "
                  "write options as --harness-arg=--measure-iters --harness-arg=5")
      ->needs(harness)
      ->allow_extra_args(false);
  cmd->add_option("--harness-timeout", o->harness_timeout,
                  "seconds per harness run; then its whole process group is killed")
      ->needs(harness)
      ->capture_default_str();
  cmd->add_option("--harness-env-dir", o->harness_env_dir,
                  "run_harness.sh's environment: this folder (its sitecustomize.py) first on PYTHONPATH, and "
                  "CC=/usr/bin/gcc")
      ->needs(harness);
  cmd->callback([o] { run_export(*o); });
}

}  // namespace attn
