// `attn-tuner query [--db PATH] [--format table|json|tsv] <what>`: read the experiment DB.
// The commands that read one suite (top, proposals, csv) take it by the rule of db/suite_choice.hpp (--suite,
// else the only suite, else the latest run's, said on the first line); the listings (best, history, tsv, ideas,
// harness) show every suite with a suite column unless --suite.
//   best [--suite S]              champions per suite and scope
//   top N [--suite S]             the N fastest keep/discard iterations of one suite by geomean
//   history [--suite S] [--limit N]  the last N iterations, oldest first (0 = all)
//   show ITER                     one iteration: variant, resources, per-case results
//   sql "SELECT ..."              one read-only statement (a write is refused)
//   tsv [--suite S] [--out FILE]  iters.tsv rebuilt from the DB (stdout without --out)
//   csv [--suite S] [--out FILE]  per-case results of a suite as CSV, the input of `attn-tuner replay --csv`
//   proposals [--suite S] [--id N]  the proposer hook's proposals with their best score on one suite (one in full
//                                   with --id)
//   harness                       the official harness's runs on exported submissions (`export --harness`)
//   ideas [--id N]                the idea queue's ideas ranked by measured effect (one in full with --id)
// The DB is opened read-only and never created.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/query_ideas.hpp"
#include "cli/read_suite.hpp"
#include "db/champion_score.hpp"
#include "db/iters_tsv.hpp"
#include "db/store.hpp"
#include "db/text_table.hpp"
#include "core/templates_dir.hpp"
#include "proposer/parent_template.hpp"
#include "tuner/replay.hpp"

namespace attn {
namespace {

struct QueryOptions {
  std::string db = "runs/attn-tuner.db";
  std::string format = "table";
  std::string suite;
  std::int64_t top_n = 0;
  std::int64_t limit = 50;
  std::optional<std::int64_t> idea_id;
  std::int64_t iter = 0;
  std::string sql;
  std::string out;
  std::int64_t proposal_id = 0;

  std::optional<std::string> suite_filter() const {
    return suite.empty() ? std::nullopt : std::optional(suite);
  }
};

ExperimentDb open_db(const QueryOptions& o) {
  if (!std::filesystem::exists(o.db)) {
    throw CliError(fmt::format("no experiment DB at {} (pass --db PATH, or start one with `attn-tuner run`)", o.db));
  }
  try {
    return ExperimentDb::open(o.db, ExperimentDb::Mode::read_only);
  } catch (const std::exception& e) {
    throw CliError(e.what());
  }
}

void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

/// Prints `table` (table/tsv formats) or `json` (json format).
void emit(const QueryOptions& o, const TextTable& table, const nlohmann::json& json) {
  if (o.format == "json") print(json.dump(2) + "\n");
  else if (o.format == "tsv") print(render_tsv(table));
  else print(render_aligned(table));
}

std::string opt_int(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "-"; }
std::string opt_g(const std::optional<double>& v, const char* spec = "{:.3g}") {
  return v ? fmt::format(fmt::runtime(spec), *v) : "-";
}
std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

std::vector<std::string> iteration_cells(const IterationRecord& it) {
  return {std::to_string(it.iter),    it.suite,
          to_string(it.status),       to_string(it.failure_kind),
          format_ms(it.geomean_ms),   format_delta_ms(it.delta_ms),
          format_ms(it.window_ms),    format_ms(it.global_ms),
          format_ms(it.retrieval_ms), or_dash(it.template_name),
          or_dash(it.params),         or_dash(it.description)};
}
const std::vector<std::string> kIterationColumns = {
    "iter",      "suite",     "status",       "failure_kind", "geomean_ms", "delta_ms",
    "window_ms", "global_ms", "retrieval_ms", "template",     "params",     "description"};

void run_best(const QueryOptions& o) {
  auto db = open_db(o);
  auto champions = db.champions(o.suite_filter());
  // score_ms: the champion's score (db/champion_score.hpp, the number `status` and `export` show); aba_b_ms: its
  // time in the A/B/A re-timing that promoted it.
  TextTable table{{"suite", "scope", "iter", "score_ms", "aba_b_ms", "status", "template", "params", "promoted_at"},
                  {}};
  auto json = nlohmann::json::array();
  for (const auto& c : champions) {
    auto it = db.iteration(c.iteration_id);
    const std::optional<double> score = it ? champion_score_ms(c.scope, *it) : std::nullopt;
    table.rows.push_back({c.suite, to_string(c.scope), std::to_string(c.iteration_id), format_ms(score),
                          format_ms(c.score_ms), it ? to_string(it->status) : "-",
                          it ? or_dash(it->template_name) : "-", it ? or_dash(it->params) : "-", c.promoted_at});
    nlohmann::json j = c;
    j["aba_b_ms"] = c.score_ms;
    j["score_ms"] = score ? nlohmann::json(*score) : nlohmann::json(nullptr);
    if (it) {
      j["template"] = it->template_name;
      j["params"] = it->params;
      j["geomean_ms"] = it->geomean_ms ? nlohmann::json(*it->geomean_ms) : nlohmann::json(nullptr);
    }
    json.push_back(std::move(j));
  }
  if (champions.empty() && o.format == "table") {
    print(o.suite.empty() ? "no champions yet\n" : fmt::format("no champions yet for suite {}\n", o.suite));
    return;
  }
  emit(o, table, json);
}

void run_top(const QueryOptions& o) {
  if (o.top_n <= 0) throw CliError(fmt::format("top: N must be a positive count, got {}", o.top_n));
  auto db = open_db(o);
  const std::string suite = choose_read_suite(db, o.suite, o.format != "table").suite;
  auto rows = db.iterations({.suite = suite,
                             .run_id = std::nullopt,
                             .statuses = {IterationStatus::keep, IterationStatus::discard},
                             .order = IterationQuery::Order::geomean_asc,
                             .limit = o.top_n});
  TextTable table{kIterationColumns, {}};
  table.columns.insert(table.columns.begin(), "rank");
  auto json = nlohmann::json::array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].geomean_ms) continue;  // no score, no rank
    auto cells = iteration_cells(rows[i]);
    cells.insert(cells.begin(), std::to_string(i + 1));
    table.rows.push_back(std::move(cells));
    json.push_back(rows[i]);
  }
  emit(o, table, json);
}

void run_history(const QueryOptions& o) {
  if (o.limit < 0) throw CliError(fmt::format("history: --limit must be >= 0 (0 = all), got {}", o.limit));
  auto db = open_db(o);
  auto rows = db.iterations({.suite = o.suite_filter(),
                             .run_id = std::nullopt,
                             .statuses = {},
                             .order = IterationQuery::Order::iter_desc,
                             .limit = o.limit ? std::optional(o.limit) : std::nullopt});
  std::reverse(rows.begin(), rows.end());
  TextTable table{kIterationColumns, {}};
  for (const auto& it : rows) table.rows.push_back(iteration_cells(it));
  emit(o, table, nlohmann::json(rows));
}

void run_show(const QueryOptions& o) {
  auto db = open_db(o);
  auto it = db.iteration(o.iter);
  if (!it) throw CliError(fmt::format("show: no iteration {} in {}", o.iter, o.db));
  std::optional<VariantRecord> variant;
  if (it->variant_id) variant = db.variant(*it->variant_id);

  if (o.format == "json") {
    nlohmann::json j = {{"iteration", *it}, {"variant", nullptr}, {"cases", it->cases}};
    j["iteration"].erase("cases");
    if (variant) j["variant"] = *variant;
    print(j.dump(2) + "\n");
    return;
  }
  std::vector<std::pair<std::string, std::string>> fields = {
      {"iter", std::to_string(it->iter)},
      {"run", std::to_string(it->run_id)},
      {"suite", it->suite},
      {"status", to_string(it->status)},
      {"failure_kind", to_string(it->failure_kind)},
      {"template", or_dash(it->template_name)},
      {"params", or_dash(it->params)},
      {"geomean_ms", format_ms(it->geomean_ms)},
      {"delta_ms", format_delta_ms(it->delta_ms)},
      {"window_ms", format_ms(it->window_ms)},
      {"global_ms", format_ms(it->global_ms)},
      {"retrieval_ms", format_ms(it->retrieval_ms)},
      {"description", or_dash(it->description)},
      {"started_at", it->started_at},
      {"finished_at", or_dash(it->finished_at)},
      {"gpu_ms", opt_g(it->gpu_ms, "{:.1f}")},
      {"compile_ms", opt_g(it->compile_ms, "{:.1f}")},
      {"variant", it->variant_id ? std::to_string(*it->variant_id) : "-"},
      {"proposal", it->proposal_id ? std::to_string(*it->proposal_id) : "-"},
  };
  if (variant) {
    fields.insert(fields.end(), {{"content_hash", variant->content_hash},
                                 {"compile_ok", variant->compile_ok ? "yes" : "no"},
                                 {"variant_compile_ms", opt_g(variant->compile_ms, "{:.1f}")},
                                 {"registers", opt_int(variant->registers)},
                                 {"smem_bytes", opt_int(variant->smem_bytes)},
                                 {"spill_bytes", opt_int(variant->spill_bytes)},
                                 {"cubin_path", or_dash(variant->cubin_path)}});
  }
  TextTable kv{{"field", "value"}, {}};
  for (auto& [k, v] : fields) kv.rows.push_back({k, v});
  TextTable cases{{"case_id", "family", "median_ms", "spread", "samples", "sm_clock_mhz", "o_max_abs_diff",
                   "lse_max_abs_diff", "passed"},
                  {}};
  for (const auto& c : it->cases) {
    cases.rows.push_back({c.case_id, family_name(c.family), format_ms(c.median_ms), opt_g(c.spread, "{:.4f}"),
                          std::to_string(c.samples), opt_int(c.sm_clock_mhz), opt_g(c.o_max_abs_diff),
                          opt_g(c.lse_max_abs_diff), c.passed ? "yes" : "no"});
  }
  if (o.format == "tsv") {
    print(render_tsv(kv) + "\n" + render_tsv(cases));
    return;
  }
  std::string text = render_aligned(kv);
  text.erase(0, text.find('\n') + 1);  // a field list reads better without its header
  print(text);
  if (variant && !variant->compile_ok && !variant->compile_log.empty()) {
    print("\ncompile_log:\n" + variant->compile_log + (variant->compile_log.back() == '\n' ? "" : "\n"));
  }
  print(it->cases.empty() ? "\nno case results\n" : "\n" + render_aligned(cases));
}

void run_sql(const QueryOptions& o) {
  auto db = open_db(o);
  SqlResult result;
  try {
    result = db.sql_readonly(o.sql);
  } catch (const std::exception& e) {
    throw CliError(e.what());
  }
  TextTable table{result.columns, {}};
  auto json_rows = nlohmann::json::array();
  for (const auto& row : result.rows) {
    auto& cells = table.rows.emplace_back();
    auto& jrow = json_rows.emplace_back(nlohmann::json::array());
    for (const auto& v : row) {
      cells.push_back(v.value_or("NULL"));
      jrow.push_back(v ? nlohmann::json(*v) : nlohmann::json(nullptr));
    }
  }
  emit(o, table, {{"columns", result.columns}, {"rows", json_rows}});
}

void run_tsv(const QueryOptions& o) {
  auto db = open_db(o);
  auto rows = db.iterations({.suite = o.suite_filter(),
                             .run_id = std::nullopt,
                             .statuses = {IterationStatus::keep, IterationStatus::discard, IterationStatus::crash,
                                          IterationStatus::interrupted},
                             .order = IterationQuery::Order::iter_asc,
                             .limit = std::nullopt});
  if (o.out.empty()) {
    print(render_all(rows));
    return;
  }
  try {
    write_all(o.out, rows);
  } catch (const std::exception& e) {
    throw CliError(e.what());
  }
  print(fmt::format("wrote {} iterations to {}\n", rows.size(), o.out));
}

void run_csv(const QueryOptions& o) {
  auto db = open_db(o);
  const std::string suite = choose_read_suite(db, o.suite, o.out.empty()).suite;
  if (o.out.empty()) {
    std::ostringstream text;
    write_replay_csv(db, suite, text);
    print(text.str());
    return;
  }
  const std::string tmp = o.out + ".tmp";
  std::size_t n = 0;
  {
    std::ofstream f(tmp);
    if (!f) throw CliError("csv: cannot write " + tmp);
    n = write_replay_csv(db, suite, f);
    if (!f.flush()) throw CliError("csv: cannot write " + tmp);
  }
  std::filesystem::rename(tmp, o.out);
  print(fmt::format("wrote {} iterations of suite {} to {}\n", n, suite, o.out));
}

void run_proposals(const QueryOptions& o) {
  auto db = open_db(o);
  if (o.proposal_id > 0) {
    const auto p = db.proposal(o.proposal_id);
    if (!p) throw CliError(fmt::format("proposals: no proposal {} in {}", o.proposal_id, o.db));
    if (o.format == "json") {
      print(nlohmann::json(*p).dump(2) + "\n");
      return;
    }
    TextTable kv{{"field", "value"}, {}};
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"proposal", std::to_string(p->id)},
             {"run", std::to_string(p->run_id)},
             {"status", to_string(p->status)},
             {"template", or_dash(p->template_name)},
             {"parent", p->parent_template + (p->parent_iteration_id ? " (iter " + std::to_string(*p->parent_iteration_id) + ")" : "")},
             {"command", p->command},
             {"started_at", p->started_at},
             {"finished_at", or_dash(p->finished_at)},
             {"proposer", or_dash(p->exit_status) + (p->proposer_ms ? fmt::format(" after {:.1f} s", *p->proposer_ms / 1000) : "")},
             {"description", or_dash(p->description)},
             {"reason", or_dash(p->reason)}})
      kv.rows.push_back({k, v});
    std::string text = render_aligned(kv);
    text.erase(0, text.find('\n') + 1);
    print(text);
    print("\ndiff against " + p->parent_template + ":\n" + (p->diff.empty() ? "(none)\n" : p->diff));
    if (!p->output.empty()) print("\nproposer output:\n" + p->output + (p->output.back() == '\n' ? "" : "\n"));
    return;
  }
  const std::string suite = choose_read_suite(db, o.suite, o.format != "table").suite;
  const auto rows = db.proposal_summaries(suite);
  TextTable table{{"proposal", "status", "template", "parent", "suite", "iterations", "crashes", "best_ms",
                   "best_iter", "champion", "started_at", "description"},
                  {}};
  auto json = nlohmann::json::array();
  for (const auto& s : rows) {
    const auto& p = s.proposal;
    std::string what = p.description;
    if (!p.reason.empty()) what += (what.empty() ? "" : "; ") + p.reason;
    std::string champion;
    for (const auto& c : s.champion_of) champion += (champion.empty() ? "" : ",") + c;
    table.rows.push_back({std::to_string(p.id), to_string(p.status), or_dash(p.template_name), p.parent_template,
                          suite, std::to_string(s.iterations), std::to_string(s.crashes), format_ms(s.best_ms),
                          opt_int(s.best_iter), or_dash(champion),
                          p.started_at, or_dash(what)});
    nlohmann::json j = {{"id", p.id},
                        {"status", to_string(p.status)},
                        {"template", p.template_name},
                        {"parent_template", p.parent_template},
                        {"suite", suite},
                        {"command", p.command},
                        {"started_at", p.started_at},
                        {"description", p.description},
                        {"reason", p.reason},
                        {"iterations", s.iterations},
                        {"crashes", s.crashes},
                        {"best_ms", s.best_ms ? nlohmann::json(*s.best_ms) : nlohmann::json(nullptr)},
                        {"best_iter", s.best_iter ? nlohmann::json(*s.best_iter) : nlohmann::json(nullptr)},
                        {"champion_of", s.champion_of}};
    json.push_back(std::move(j));
  }
  if (rows.empty() && o.format == "table") {
    print("no proposals yet (attn-tuner run --proposer CMD; docs/proposer.md)\n");
    return;
  }
  emit(o, table, json);
}

}  // namespace

void run_harness(const QueryOptions& o) {
  auto db = open_db(o);
  const auto checks = db.harness_checks();
  TextTable table{{"id", "ran_at", "suite", "export_suite", "root_seed", "valid", "score_ms", "families_ms",
                   "failure_reason", "harness_commit", "iterations", "submission_dir"},
                  {}};
  auto json = nlohmann::json::array();
  for (const auto& h : checks) {
    std::string families, iterations;
    const nlohmann::json family_ms = nlohmann::json::parse(h.family_ms_json, nullptr, false);
    if (family_ms.is_object())
      for (const auto& [family, ms] : family_ms.items())
        if (ms.is_number()) families += fmt::format("{}{}={:.4f}", families.empty() ? "" : ",", family, ms.get<double>());
    const nlohmann::json exported = nlohmann::json::parse(h.iterations_json, nullptr, false);
    if (exported.is_array())
      for (const auto& v : exported)
        if (v.is_object() && v.contains("iteration") && v["iteration"].is_number())
          iterations += (iterations.empty() ? "" : ",") + std::to_string(v["iteration"].get<std::int64_t>());
    table.rows.push_back({std::to_string(h.id), h.ran_at, h.suite, h.export_suite, opt_int(h.root_seed),
                          h.valid ? "yes" : "NO", format_ms(h.score_ms), or_dash(families),
                          or_dash(h.failure_reason.value_or("")), h.harness_commit ? h.harness_commit->substr(0, 12) : "-",
                          or_dash(iterations), h.submission_dir});
    const auto parsed = [](const std::string& text) {
      auto j = nlohmann::json::parse(text, nullptr, false);
      return j.is_discarded() ? nlohmann::json(text) : j;
    };
    json.push_back({{"id", h.id},
                    {"ran_at", h.ran_at},
                    {"suite", h.suite},
                    {"export_suite", h.export_suite},
                    {"root_seed", h.root_seed ? nlohmann::json(*h.root_seed) : nlohmann::json()},
                    {"valid", h.valid},
                    {"score_ms", h.score_ms ? nlohmann::json(*h.score_ms) : nlohmann::json()},
                    {"family_ms", parsed(h.family_ms_json)},
                    {"failure_reason", h.failure_reason ? nlohmann::json(*h.failure_reason) : nlohmann::json()},
                    {"harness_commit", h.harness_commit ? nlohmann::json(*h.harness_commit) : nlohmann::json()},
                    {"harness_args", parsed(h.harness_args)},
                    {"submission_dir", h.submission_dir},
                    {"iterations", parsed(h.iterations_json)},
                    {"wall_s", h.wall_s ? nlohmann::json(*h.wall_s) : nlohmann::json()}});
  }
  if (checks.empty() && o.format == "table") {
    print("no harness checks yet (`attn-tuner export --out DIR --harness HARNESS_DIR` records them)\n");
    return;
  }
  emit(o, table, json);
}

void add_query_command(CLI::App& app) {
  auto o = std::make_shared<QueryOptions>();
  auto* q = app.add_subcommand("query", "Read the experiment DB: best | top N | history | show ITER | sql | tsv | csv | proposals | harness | ideas");
  q->add_option("--db", o->db, "Experiment DB (SQLite) to read; never created")->capture_default_str();
  q->add_option("--format", o->format, "Output format")
      ->check(CLI::IsMember({"table", "json", "tsv"}))
      ->capture_default_str();
  q->require_subcommand(1);
  q->fallthrough();  // `query best --db X` works as well as `query --db X best`

  auto* best = q->add_subcommand("best", "Champions per suite and scope (overall and per family)");
  best->add_option("--suite", o->suite, "Only this suite");
  best->callback([o] { run_best(*o); });

  auto* top = q->add_subcommand("top", "The N fastest keep/discard iterations of one suite by geomean");
  top->add_option("N", o->top_n, "How many")->required();
  top->add_option("--suite", o->suite, "Suite (default: the only one, else the latest run's, said on the first line)");
  top->callback([o] { run_top(*o); });

  auto* history = q->add_subcommand("history", "The last iterations, oldest first");
  history->add_option("--suite", o->suite, "Only this suite");
  history->add_option("--limit", o->limit, "How many (0 = all)")->capture_default_str();
  history->callback([o] { run_history(*o); });

  auto* show = q->add_subcommand("show", "One iteration: params, scores, variant resources, per-case results");
  show->add_option("ITER", o->iter, "Iteration number")->required();
  show->callback([o] { run_show(*o); });

  auto* sql = q->add_subcommand("sql", "Run one read-only SQL statement (see docs/db-schema.md)");
  sql->add_option("QUERY", o->sql, "e.g. \"SELECT id, geomean_ms FROM iterations ORDER BY geomean_ms LIMIT 5\"")
      ->required();
  sql->callback([o] { run_sql(*o); });

  auto* csv = q->add_subcommand("csv", "Per-case results of every finished iteration of a suite, as CSV (replay input)");
  csv->add_option("--suite", o->suite, "Suite (default: the only one, else the latest run's, said on stderr)");
  csv->add_option("--out", o->out, "Write this file (atomically) instead of printing to stdout");
  csv->callback([o] { run_csv(*o); });
  auto* proposals = q->add_subcommand("proposals", "The proposer hook's proposals with their best score");
  proposals->add_option("--suite", o->suite, "Scores on this suite (default: the only one, else the latest run's, "
                                             "said on the first line)");
  proposals->add_option("--id", o->proposal_id, "Show this proposal in full: reason, diff, proposer output");
  proposals->callback([o] { run_proposals(*o); });

  auto* harness = q->add_subcommand("harness", "The official harness's runs on exported submissions (export --harness)");
  harness->callback([o] { run_harness(*o); });
  auto* ideas = q->add_subcommand("ideas", "The idea queue's ideas, ranked by measured effect vs their parent");
  ideas->add_option("--id", o->idea_id, "Show this idea in full: verdict, A/B/A, held-out, the diff as queued");
  ideas->callback([o] {
    auto db = open_db(*o);
    print(render_ideas(db, o->format, o->idea_id, landed_in_templates(default_templates_dir())));
  });
  auto* tsv = q->add_subcommand("tsv", "Rebuild iters.tsv from the DB");
  tsv->add_option("--suite", o->suite, "Only this suite");
  tsv->add_option("--out", o->out, "Write this file atomically instead of printing to stdout");
  tsv->callback([o] { run_tsv(*o); });
}

}  // namespace attn
