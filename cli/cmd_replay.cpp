// `attn-tuner replay (--db D | --csv F) --strategy S... [--fidelity full|ladder]... [--cutoff X]... --seeds N`:
// replays strategies against a finished DB (or its CSV export) and prints how many evaluations each needs to
// get within 1%, 2%, 5% of the best of the replayed templates (median and quartiles over seeds). No GPU.
// tuner/replay.hpp. The suite: db/suite_choice.hpp's rule. Templates of the proposer hook and the idea queue
// come from the DB, as export takes them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "core/templates_dir.hpp"
#include "cli/read_suite.hpp"
#include "db/store.hpp"
#include "tuner/proposal_template.hpp"
#include "tuner/replay.hpp"

namespace attn {
namespace {

struct ReplayCliOptions {
  std::string db, csv, suite, templates_dir;
  std::vector<std::string> templates, strategies{"random"}, fidelities{"full"};
  std::vector<double> cutoffs{LadderOptions{}.cutoff}, thresholds{0.01, 0.02, 0.05};
  std::size_t seeds = 20;
  std::size_t max_evaluations = 0;
  int screen_samples = LadderOptions{}.screen_max_samples;
  double screen_cost = 0;
  bool resources_ahead = false;
  bool skip_unknown = false;
  bool json = false;
  double max_memory_gb = 4;  ///< the memory bound of a seed, GB of heap (0: none)
  double progress_s = 10;    ///< seconds between progress lines on stderr
};

/// A progress line on stderr at most every `every_s` seconds, and at each seed's end: "replay: strategy random,
/// fidelity ladder, seed 1/2: 240,000 configs proposed, best 0.1931 ms (+4.1 % of the target 0.1854 ms), heap
/// 1.2 GB".
std::function<void(const ReplayProgress&)> progress_printer(const ReplayOptions& ro, double every_s) {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  const std::string what = fmt::format("strategy {}, fidelity {}", ro.strategy, to_string(ro.fidelity));
  return [last, what, every_s](const ReplayProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (!p.done && std::chrono::duration<double>(now - *last).count() < every_s) return;
    *last = now;
    const std::string best = p.best_ms > 0 ? fmt::format("best {:.4f} ms ({:+.1f} % of the target {:.4f} ms)", p.best_ms,
                                                         (p.best_ms / p.target_ms - 1) * 100, p.target_ms)
                                           : std::string("no whole-suite score yet");
    fmt::print(stderr, "replay: {}, seed {}/{}{}: {} configs proposed, {}, heap {:.2f} GB\n", what, p.seed, p.seeds,
               p.done ? " done" : "", p.proposals, best, double(p.memory_bytes) / 1e9);
    std::fflush(stderr);
  };
}

void run_replay(const ReplayCliOptions& o) {
  if (o.db.empty() == o.csv.empty()) throw CliError("replay: give exactly one of --db and --csv");
  if (o.seeds == 0) throw CliError("replay: --seeds must be at least 1");
  if (!(o.max_memory_gb >= 0)) throw CliError("replay: --max-memory must be 0 (no bound) or a positive number of GB");
  const auto& names = strategy_names();
  for (const auto& s : o.strategies)
    if (std::find(names.begin(), names.end(), s) == names.end())
      throw CliError(fmt::format("replay: --strategy: unknown '{}' ({})", s, fmt::join(names, ", ")));
  ReplayTable table;
  std::optional<ExperimentDb> db;  // open while the templates are read: proposals' templates live in it
  try {
    if (!o.db.empty()) {
      if (!std::filesystem::is_regular_file(o.db)) throw CliError("replay: no experiment DB at " + o.db);
      db.emplace(ExperimentDb::open(o.db, ExperimentDb::Mode::read_only));
      const std::string suite = choose_read_suite(*db, o.suite, o.json).suite;
      table = load_replay_table(*db, suite);
    } else {
      table = load_replay_csv(o.csv);
      table.suite = o.suite.empty() ? std::filesystem::path(o.csv).stem().string() : o.suite;
    }
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const CliError*>(&e)) throw;
    throw CliError(fmt::format("replay: cannot read {}: {}", o.db, e.what()));
  }
  const std::string dir = o.templates_dir.empty() ? default_templates_dir() : o.templates_dir;
  std::vector<std::string> tnames = o.templates;
  if (tnames.empty())
    for (const auto& [name, configs] : table.templates) tnames.push_back(name);
  // A template of the proposer hook or the idea queue from its DB row (as export takes it), else from the folder.
  std::vector<TemplateSpace> spaces;
  for (const auto& name : tnames) {
    try {
      spaces.push_back(
          load_template(name, db ? db->proposal_by_template(name) : std::optional<ProposalRecord>(), dir).space);
    } catch (const std::invalid_argument& e) {
      throw CliError(fmt::format("replay: {} (pass --templates DIR, or --template to replay fewer)", e.what()));
    }
  }
  std::size_t rows = 0, full = 0, failed = 0;
  for (const auto& name : tnames)
    if (const auto t = table.templates.find(name); t != table.templates.end())
      for (const auto& [c, e] : t->second) ++rows, full += e.full_ms ? 1 : 0, failed += e.failed ? 1 : 0;
  if (!o.json)
    fmt::print("replay of {} (suite {}, {} template(s)): {} configs ({} with a whole-suite score, {} failed), best "
               "{:.4f} ms; screen cases {}\n",
               table.source, table.suite, tnames.size(), rows, full, failed, table.best_ms(tnames).value_or(0),
               table.screen_case_ids.empty() ? std::string("unknown") : fmt::format("{}", fmt::join(table.screen_case_ids, ", ")));
  std::vector<ReplaySummary> all;
  for (const auto& fid : o.fidelities) {
    ReplayOptions ro;
    try {
      ro.fidelity = parse_fidelity_mode(fid);
    } catch (const std::invalid_argument& e) {
      throw CliError(std::string("replay: --fidelity: ") + e.what());
    }
    const std::vector<double> cutoffs = ro.fidelity == FidelityMode::ladder ? o.cutoffs : std::vector<double>{0};
    for (const auto& strategy : o.strategies)
      for (double cutoff : cutoffs) {
        ro.strategy = strategy;
        ro.cutoff = cutoff;
        ro.thresholds = o.thresholds;
        ro.seeds = o.seeds;
        ro.screen_samples = o.screen_samples;
        if (o.screen_cost > 0) ro.screen_cost = o.screen_cost;
        if (o.max_evaluations) ro.max_evaluations = o.max_evaluations;
        ro.resources_ahead = o.resources_ahead;
        ro.skip_unknown = o.skip_unknown;
        if (o.max_memory_gb > 0) ro.max_memory_bytes = std::size_t(o.max_memory_gb * 1e9);
        ro.progress = progress_printer(ro, o.progress_s);
        try {
          all.push_back(replay(table, spaces, ro));
        } catch (const std::invalid_argument& e) {
          throw CliError(e.what());
        }
        if (!o.json) fmt::print("{}", format_replay(all.back()));
      }
  }
  if (o.json) fmt::print("{}\n", replay_json(all));
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto o = std::make_shared<ReplayCliOptions>();
  auto* cmd = app.add_subcommand("replay", "replay search strategies against a finished DB (no GPU): evaluations to "
                                           "get within 1%, 2%, 5% of its best");
  cmd->add_option("--db", o->db, "finished experiment DB (read-only)");
  cmd->add_option("--csv", o->csv, "or its export by `attn-tuner query csv`");
  cmd->add_option("--suite", o->suite, "suite to replay (default: the only one, else the latest run's, said on the "
                                       "first line)");
  cmd->add_option("--strategy", o->strategies, "strategy (repeatable): exhaustive, random, local, evolutionary, model")
      ->capture_default_str();
  cmd->add_option("--fidelity", o->fidelities, "full | ladder (repeatable)")->capture_default_str();
  cmd->add_option("--cutoff", o->cutoffs, "ladder cut-off (repeatable), e.g. 0.05 0.1 0.2")->capture_default_str();
  cmd->add_option("--within", o->thresholds, "targets as fractions of the best (repeatable)")->capture_default_str();
  cmd->add_option("--seeds", o->seeds, "seeds per setting (1..N)")->capture_default_str();
  cmd->add_option("--max-evaluations", o->max_evaluations, "stop each seed after this many proposals (0: when every target is reached)");
  cmd->add_option("--screen-samples", o->screen_samples, "timing samples per screened case (screen cost estimate)")
      ->capture_default_str();
  cmd->add_option("--screen-cost", o->screen_cost, "a screen's cost in whole-suite evaluations (0: estimate from the DB)");
  cmd->add_flag("--resources-ahead", o->resources_ahead,
                "every config's compile report is known from the start (a space compiled ahead)");
  cmd->add_flag("--skip-unknown", o->skip_unknown,
                "a DB that sampled the space: skip proposals it cannot answer instead of counting them as failed");
  cmd->add_option("--template", o->templates, "template (repeatable); default: every template in the DB");
  cmd->add_option("--templates", o->templates_dir, "templates folder (default: $ATTN_TUNER_TEMPLATES or the source "
                                                   "tree); the proposer hook's and the idea queue's templates come "
                                                   "from the DB");
  cmd->add_flag("--json", o->json, "machine-readable output");
  cmd->add_option("--max-memory", o->max_memory_gb, "memory bound: a seed stops when the heap exceeds this many GB, and "
                                                    "the summary says so (0: no bound)")
      ->capture_default_str();
  cmd->add_option("--progress", o->progress_s, "seconds between progress lines on stderr")->capture_default_str();
  cmd->callback([o] { run_replay(*o); });
}

}  // namespace attn
