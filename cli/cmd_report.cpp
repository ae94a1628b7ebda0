// `attn-tuner report [--db PATH] --out DIR [--suite S] [--baseline FILE] [--python EXE] [--tflops X]
// [--tbps Y]`: the morning report (docs/report.md) on one suite (db/suite_choice.hpp). Checks the input, writes DIR/cases.json (per-case
// work and roofline floor from workload/roofline), and runs report/report.py, which reads the DB
// read-only and draws index.html and its PNG images with matplotlib. DIR is built in a sibling
// "<DIR>.partial" and renamed at the end: a failed report leaves an earlier one as it was.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "cli/read_suite.hpp"
#include "report/python_runner.hpp"
#include "core/templates_dir.hpp"
#include "proposer/idea_context.hpp"
#include "proposer/parent_template.hpp"
#include "report/report_cases.hpp"
#include "db/champion_score.hpp"
#include "db/store.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::string db = "runs/attn-tuner.db";
  std::string out;
  std::string suite;
  std::string baseline;
  std::string python;
  double tflops = 0, tbps = 0;  ///< 0: from the GPU of the run (ceilings_for_gpu)
};

/// Folder of report.py: $ATTN_TUNER_REPORT_DIR, else the source tree's report/.
std::string report_script_dir() {
  if (const char* env = std::getenv("ATTN_TUNER_REPORT_DIR"); env && *env) return env;
#ifdef ATTN_SOURCE_DIR
  return std::string(ATTN_SOURCE_DIR) + "/report";
#else
  return "report";
#endif
}

/// --out may be new, empty, or an earlier report (index.html, cases.json and PNG files only).
void check_out_dir(const fs::path& out) {
  if (!fs::exists(out)) return;
  if (!fs::is_directory(out)) throw CliError(fmt::format("report: --out {} exists and is not a folder", out.string()));
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    const bool ours = e.is_regular_file() && (name == "index.html" || name == "cases.json" ||
                                              e.path().extension() == ".png");
    if (!ours)
      throw CliError(fmt::format("report: --out {} holds '{}', which is not part of an earlier report; choose a "
                                 "new or empty folder",
                                 out.string(), name));
  }
}

/// The last `n` non-empty lines of `text`, joined by newlines.
std::string tail_lines(const std::string& text, std::size_t n) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::string out;
  for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : "\n") + lines[i];
  return out;
}

void run_report(const ReportOptions& o) {
  if (!fs::is_regular_file(o.db))
    throw CliError(fmt::format("report: no experiment DB at {} (pass --db PATH)", o.db));
  fs::path out = fs::path(o.out).lexically_normal();
  if (!out.has_filename()) out = out.parent_path();
  if (out.empty()) throw CliError("report: --out needs a folder name");
  check_out_dir(out);
  if (!o.baseline.empty() && !fs::is_regular_file(o.baseline))
    throw CliError(fmt::format("report: --baseline {}: no such file", o.baseline));
  if (o.tflops < 0 || o.tbps < 0) throw CliError("report: --tflops and --tbps must be positive");

  std::vector<RunRecord> runs;
  std::optional<ChampionRecord> champion;
  std::string suite = o.suite;
  std::string gpu;
  std::optional<ExperimentDb> db;  // open from here to the bucket champions below
  try {
    db.emplace(ExperimentDb::open(o.db, ExperimentDb::Mode::read_only));
    runs = db->runs();
    if (runs.empty())
      throw CliError(fmt::format("report: {} has no runs yet: nothing to report (start one with `attn-tuner run`)",
                                 o.db));
    try {
      suite = choose_read_suite(*db, suite, false).suite;
    } catch (const CliError& e) {
      throw CliError(fmt::format("report: {}", e.what()));
    }
    std::vector<RunRecord> mine;
    for (const auto& r : runs)
      if (r.suite == suite) mine.push_back(r);
    runs = std::move(mine);
    gpu = runs.back().gpu_name;
    if (auto c = db->champion(suite, ChampionScope::overall)) {
      if (auto it = db->iteration(c->iteration_id))
        for (const auto& r : runs)
          if (r.id == it->run_id) gpu = r.gpu_name;  // % of peak on the GPU the champion was timed on
    }
  } catch (const CliError&) {
    throw;
  } catch (const std::exception& e) {  // not a DB, an empty file, another schema
    throw CliError(fmt::format("report: cannot read the experiment DB {}: {}", o.db, e.what()));
  }

  NamedCeilings ceil = ceilings_for_gpu(gpu);
  if (o.tflops > 0 || o.tbps > 0) {
    if (o.tflops > 0) ceil.ceilings.flops_per_s = o.tflops * 1e12;
    if (o.tbps > 0) ceil.ceilings.bytes_per_s = o.tbps * 1e12;
    ceil.source = "given with --tflops / --tbps; otherwise " + ceil.source;
  }
  nlohmann::json cases;
  try {
    cases = report_case_work(runs, ceil);
  } catch (const std::invalid_argument& e) {
    throw CliError(fmt::format("report: {}", e.what()));
  }
  try {  // bucket champions: the rule the export uses (db/shape_buckets.hpp), computed here for report.py
    cases["buckets"] = report_bucket_champions(*db, runs);
  } catch (const std::invalid_argument& e) {
    throw CliError(fmt::format("report: {}", e.what()));
  } catch (const std::exception& e) {
    throw CliError(fmt::format("report: cannot read the experiment DB {}: {}", o.db, e.what()));
  }

  {  // the wins landed in the repository templates (idea land): the Ideas section says which are, which not yet
    nlohmann::json landed = nlohmann::json::object();
    for (const auto& [hash, t] : landed_in_templates(default_templates_dir())) landed[hash] = t;
    cases["landed"] = landed;
  }
  try {  // each champion's score by the one rule (db/champion_score.hpp), the number `status` and `query best` show
    nlohmann::json scores = nlohmann::json::array();
    for (const auto& c : db->champions(suite))
      if (const auto it = db->iteration(c.iteration_id); it)
        if (const auto ms = champion_score_ms(c.scope, *it))
          scores.push_back({{"scope", to_string(c.scope)}, {"iteration_id", c.iteration_id}, {"score_ms", *ms}});
    cases["champion_scores"] = scores;
  } catch (const std::exception& e) {
    throw CliError(fmt::format("report: cannot read the experiment DB {}: {}", o.db, e.what()));
  }
  try {  // the champion's profile (proposer/idea_context.hpp): the report's Profile section
    cases["profile"] = {{"markdown", champion_profile_markdown(*db, suite)}};
  } catch (const std::exception& e) {
    cases["profile"] = {{"error", e.what()}};
  }
  const fs::path script = fs::path(report_script_dir()) / "report.py";
  if (!fs::is_regular_file(script))
    throw CliError(fmt::format("report: the report script is not at {} (set ATTN_TUNER_REPORT_DIR to the folder "
                               "holding report.py)",
                               script.string()));
  std::string python;
  try {
    python = find_python(o.python, {"matplotlib", "numpy"},
                         "Install Debian's python3-matplotlib (scripts/setup.sh does), or name an interpreter "
                         "that has it with --python or ATTN_TUNER_PYTHON.");
  } catch (const std::runtime_error& e) {
    throw CliError(fmt::format("report: {}", e.what()));
  }

  const fs::path tmp = out.string() + ".partial";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  {
    std::ofstream f(tmp / "cases.json");
    f << cases.dump(1) << "\n";
    if (!f) throw CliError(fmt::format("report: cannot write {}", (tmp / "cases.json").string()));
  }
  std::vector<std::string> args = {"--db", o.db, "--out", tmp.string(), "--suite", suite, "--cases",
                                   (tmp / "cases.json").string()};
  if (!o.baseline.empty()) args.insert(args.end(), {"--baseline", o.baseline});
  if (db->immutable()) args.push_back("--immutable");  // read-only storage: as this process reads it
  ScriptResult r;
  try {
    r = run_python_script(python, script.string(), args);
  } catch (const std::runtime_error& e) {
    fs::remove_all(tmp);
    throw CliError(fmt::format("report: {}", e.what()));
  }
  if (r.exit_code != 0) {
    fs::remove_all(tmp);
    std::string msg = tail_lines(r.err, r.exit_code == 2 ? 1 : 25);
    if (msg.rfind("error: ", 0) == 0) msg.erase(0, 7);
    if (r.exit_code == 2) throw CliError(fmt::format("report: {}", msg));
    throw std::runtime_error(fmt::format("report: {} {} failed (exit code {}):\n{}", python, script.string(),
                                         r.exit_code, msg));
  }
  if (fs::exists(out)) fs::remove_all(out);  // an earlier report (check_out_dir)
  fs::rename(tmp, out);
  std::fputs(r.err.c_str(), stderr);  // matplotlib warnings, if any
  std::printf("%s", fmt::format("wrote {}: suite {}, {} run(s); python {}\n{}", (out / "index.html").string(), suite,
                                runs.size(), python, r.out)
                        .c_str());
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand(
      "report", "write the morning report: one HTML page with PNG images from the experiment DB (docs/report.md)");
  cmd->add_option("--db", o->db, "experiment DB (read-only)")->capture_default_str();
  cmd->add_option("--out", o->out, "folder to write (new, empty, or an earlier report, which is replaced)")
      ->required();
  cmd->add_option("--suite", o->suite, "suite to report on (default: the only one, else the latest run's, said on the first line)");
  cmd->add_option("--baseline", o->baseline,
                  "per-case latencies to draw beside the champion: harness JSON (or the JSON lines of "
                  "scripts/device/step_harness.sh), or CSV case_id,us");
  cmd->add_option("--python", o->python,
                  "Python 3 with matplotlib (default: $ATTN_TUNER_PYTHON, /usr/bin/python3, python3 on PATH)");
  cmd->add_option("--tflops", o->tflops, "compute peak, TFLOP/s (default: from the champion run's GPU name)");
  cmd->add_option("--tbps", o->tbps, "memory bandwidth, TB/s (default: from the champion run's GPU name)");
  cmd->callback([o] { run_report(*o); });
}

}  // namespace attn
