#include "daemon/db_merge.hpp"

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "db/schema.hpp"
#include "db/store.hpp"
#include "tuner/champion.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {
namespace fs = std::filesystem;

namespace {

/// The columns of `table` in `schema` ("main" or "src"), in table order.
std::vector<std::string> columns_of(sqlite::Connection& conn, const std::string& schema, const std::string& table) {
  auto st = conn.prepare(fmt::format("SELECT name FROM pragma_table_info('{}', '{}') ORDER BY cid", table, schema));
  std::vector<std::string> cols;
  while (st.step()) cols.push_back(st.column_text(0));
  return cols;
}

/// INSERT INTO main.<table> (every column) SELECT <column or its replacement> FROM src.<table> <tail>.
void copy_rows(sqlite::Connection& conn, const std::string& table, const std::map<std::string, std::string>& replace,
               const std::string& tail) {
  const auto cols = columns_of(conn, "main", table);
  std::string names, exprs;
  for (const auto& c : cols) {
    names += (names.empty() ? "" : ", ") + c;
    const auto r = replace.find(c);
    exprs += (exprs.empty() ? "" : ", ") + (r == replace.end() ? "s." + c : r->second);
  }
  conn.exec(fmt::format("INSERT INTO main.{} ({}) SELECT {} FROM src.{} s {}", table, names, exprs, table, tail));
}

std::int64_t scalar(sqlite::Connection& conn, const std::string& sql) {
  auto st = conn.prepare(sql);
  st.step();
  return st.is_null(0) ? 0 : st.column_int64(0);
}

/// Opens `path` read-only and checks that it is an attn-tuner DB of this build's schema version; returns each
/// run's identity (run_identity) with its id.
std::vector<std::pair<std::string, std::int64_t>> check_input(const std::string& path) {
  if (!fs::is_regular_file(path)) throw std::invalid_argument(fmt::format("db merge: no such DB {}", path));
  auto conn = sqlite::Connection::open(path, sqlite::OpenMode::read_only);
  db::configure_connection(conn);
  const int v = db::read_schema_version(conn);
  if (v != db::kSchemaVersion)
    throw std::invalid_argument(fmt::format(
        "db merge: {} has schema version {}, this attn-tuner merges version {} only{}", path, v, db::kSchemaVersion,
        v < db::kSchemaVersion ? fmt::format(" (migrate it first: attn-tuner db migrate {})", path)
                               : std::string(" (use a newer attn-tuner)")));
  // A run is the same run in every copy of a DB and in a merge of it: same start, host, suite, end and first config.
  auto st = conn.prepare(
      "SELECT r.id, r.started_at, r.host, r.suite, COALESCE(r.ended_at, ''), COALESCE((SELECT params_json FROM "
      "iterations WHERE run_id = r.id ORDER BY id LIMIT 1), '') FROM runs r ORDER BY r.id");
  std::vector<std::pair<std::string, std::int64_t>> out;
  while (st.step())
    out.emplace_back(nlohmann::json::array({st.column_text(1), st.column_text(2), st.column_text(3), st.column_text(4),
                                            st.column_text(5)})
                         .dump(),
                     st.column_int64(0));
  return out;
}

/// Refuses inputs that hold one run twice (two copies of one DB, or a merged DB and one of its parts): merging
/// both would double its iterations. Checked on every input before anything is written.
void check_runs_unique(const std::vector<std::string>& inputs) {
  std::map<std::string, std::pair<std::string, std::int64_t>> seen;  // identity -> (input, run id)
  for (const auto& in : inputs)
    for (const auto& [identity, id] : check_input(in)) {
      const auto [it, inserted] = seen.emplace(identity, std::pair(in, id));
      if (inserted || it->second.first == in) continue;  // one input's own runs are its business
      const auto j = nlohmann::json::parse(identity);
      throw std::invalid_argument(fmt::format(
          "db merge: run {} of {} (started {} on '{}', suite {}) is also run {} of {}: the inputs hold the same run "
          "(copies of one DB, or a merged DB and one of its parts); merging both would double its iterations",
          id, in, j[0].get<std::string>(), j[1].get<std::string>(), j[2].get<std::string>(), it->second.second,
          it->second.first));
    }
}

/// One input's champion of one (suite, scope), as a candidate of the merged champion rule.
struct Candidate {
  std::int64_t iter = 0;     // in OUT
  double score_ms = 0;       // the score it holds its title with (A/B/A re-timed in its own run)
  double rel_spread = 0;     // max relative spread of its case timings
  std::string source;        // the input it came from
};

/// The merged champion rule (docs/scale-out.md): the inputs' champions of a (suite, scope) are taken in
/// input order; a candidate replaces the current one when tuner/champion's rule promotes it with the two
/// recorded scores standing in for the A/B/A re-timing (A1 = A2 = the holder's recorded score, B = the
/// candidate's): it must be faster by more than the measured spread and the 0.5 % floor.
std::vector<std::string> recompute_champions(ExperimentDb& db, const std::map<std::pair<std::string, ChampionScope>,
                                                                           std::vector<Candidate>>& candidates) {
  std::vector<std::string> notes;
  for (const auto& [key, list] : candidates) {
    const Candidate* holder = &list.front();
    std::vector<std::string> why;
    for (std::size_t i = 1; i < list.size(); ++i) {
      const Candidate& c = list[i];
      const ChampionDecision d = decide_champion({holder->score_ms, c.score_ms, holder->rel_spread, c.rel_spread},
                                                 {holder->score_ms, c.score_ms, holder->score_ms});
      why.push_back(fmt::format("iter {} ({:.4f} ms, {}) vs iter {} ({:.4f} ms, {}): {}", c.iter, c.score_ms, c.source,
                                holder->iter, holder->score_ms, holder->source, verdict_name(d.verdict)));
      if (d.promote()) holder = &c;
    }
    nlohmann::json aba = {{"reason", "db merge: the inputs' champions compared on their recorded scores"},
                          {"rule", "tuner/champion decide_champion with A1 = A2 = holder's score, B = candidate's"},
                          {"candidates", list.size()},
                          {"source", holder->source},
                          {"comparisons", why}};
    db.set_champion({key.first, key.second, holder->iter, holder->score_ms, ""}, aba.dump());
    notes.push_back(fmt::format("{} {}: iter {} {:.4f} ms (from {}, {} candidate(s))", key.first, to_string(key.second),
                                holder->iter, holder->score_ms, holder->source, list.size()));
  }
  return notes;
}

/// Copies the attached input `src` (at `path`) into main. Returns its champions as candidates.
void merge_one(sqlite::Connection& conn, const std::string& path, MergeSummary& sum,
               std::map<std::pair<std::string, ChampionScope>, std::vector<Candidate>>& candidates) {
  const std::int64_t off_run = scalar(conn, "SELECT MAX(id) FROM main.runs");
  const std::int64_t off_it = scalar(conn, "SELECT MAX(id) FROM main.iteration_rows");
  const std::int64_t off_prop = scalar(conn, "SELECT MAX(id) FROM main.proposals");
  const std::int64_t off_hold = scalar(conn, "SELECT MAX(id) FROM main.holdout_checks");
  const std::int64_t off_hist = scalar(conn, "SELECT MAX(id) FROM main.champion_history");
  const auto plus = [](const std::string& col, std::int64_t off) { return fmt::format("s.{} + {}", col, off); };

  copy_rows(conn, "runs", {{"id", plus("id", off_run)}}, "ORDER BY s.id");
  sum.runs += scalar(conn, "SELECT count(*) FROM src.runs");

  // Proposal templates: a name another input used already gets this proposal's new id.
  conn.exec("DROP TABLE IF EXISTS temp.tmap");
  conn.exec("CREATE TEMP TABLE tmap (old TEXT PRIMARY KEY, new TEXT NOT NULL)");
  {
    auto st = conn.prepare(
        "SELECT s.id, s.template FROM src.proposals s WHERE s.template IN (SELECT template FROM main.proposals "
        "WHERE template IS NOT NULL)");
    std::vector<std::pair<std::int64_t, std::string>> clashes;
    while (st.step()) clashes.emplace_back(st.column_int64(0), st.column_text(1));
    for (const auto& [id, name] : clashes) {
      const std::string renamed = proposal_template_name(name, id + off_prop);
      conn.prepare("INSERT INTO temp.tmap (old, new) VALUES (?, ?)").bind(1, name).bind(2, renamed).run();
      ++sum.proposals_renamed;
    }
  }
  const std::string tmpl = "COALESCE((SELECT t.new FROM temp.tmap t WHERE t.old = s.template), s.template)";
  // Configs (schema 10): name lists and configs by value, a proposal's template renamed as above; cmap maps this
  // input's config ids onto OUT's.
  conn.exec("INSERT OR IGNORE INTO main.param_names (names) SELECT names FROM src.param_names ORDER BY id");
  conn.exec("DROP TABLE IF EXISTS temp.nmap");
  conn.exec("CREATE TEMP TABLE nmap (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)");
  conn.exec("INSERT INTO temp.nmap SELECT s.id, m.id FROM src.param_names s JOIN main.param_names m ON m.names = "
            "s.names");
  conn.exec(fmt::format("INSERT OR IGNORE INTO main.configs (template, names_id, param_values) SELECT {}, n.new, "
                        "s.param_values FROM src.configs s JOIN temp.nmap n ON n.old = s.names_id ORDER BY s.id",
                        tmpl));
  conn.exec("DROP TABLE IF EXISTS temp.cmap");
  conn.exec("CREATE TEMP TABLE cmap (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)");
  conn.exec(fmt::format("INSERT INTO temp.cmap SELECT s.id, m.id FROM src.configs s JOIN temp.nmap n ON n.old = "
                        "s.names_id JOIN main.configs m ON m.template = {} AND m.param_values = s.param_values AND "
                        "m.names_id = n.new",
                        tmpl));
  const std::string config = "(SELECT c.new FROM temp.cmap c WHERE c.old = s.config_id)";

  // Variants by content hash: the first input's row is kept, the others map onto it.
  const std::int64_t before = scalar(conn, "SELECT count(*) FROM main.variant_rows");
  auto vcols = columns_of(conn, "main", "variant_rows");
  vcols.erase(vcols.begin());  // id: a new one
  std::string names;
  for (const auto& c : vcols) names += (names.empty() ? "" : ", ") + c;
  std::string exprs;
  for (const auto& c : vcols) exprs += (exprs.empty() ? "" : ", ") + (c == "config_id" ? config : "s." + c);
  conn.exec(fmt::format("INSERT INTO main.variant_rows ({}) SELECT {} FROM src.variant_rows s WHERE NOT EXISTS "
                        "(SELECT 1 FROM main.variant_rows m WHERE m.content_hash = s.content_hash) ORDER BY s.id",
                        names, exprs));
  const std::int64_t added = scalar(conn, "SELECT count(*) FROM main.variant_rows") - before;
  sum.variants_shared += scalar(conn, "SELECT count(*) FROM src.variant_rows") - added;
  conn.exec("DROP TABLE IF EXISTS temp.vmap");
  conn.exec("CREATE TEMP TABLE vmap (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)");
  conn.exec("INSERT INTO temp.vmap SELECT s.id, m.id FROM src.variant_rows s JOIN main.variant_rows m ON "
            "m.content_hash = s.content_hash");

  copy_rows(conn, "proposals",
            {{"id", plus("id", off_prop)},
             {"run_id", plus("run_id", off_run)},
             {"parent_iteration_id", plus("parent_iteration_id", off_it)},
             {"template", tmpl},
             {"space_json", "CASE WHEN s.space_json IS NOT NULL AND s.template IN (SELECT old FROM temp.tmap) THEN "
                            "json_set(s.space_json, '$.name', " + tmpl + ") ELSE s.space_json END"}},
            "ORDER BY s.id");
  sum.proposals += scalar(conn, "SELECT count(*) FROM src.proposals");

  conn.exec("INSERT OR IGNORE INTO main.gpus (uuid) SELECT uuid FROM src.gpus ORDER BY id");
  copy_rows(conn, "iteration_rows",
            {{"gpu_key", "(SELECT m.id FROM src.gpus k JOIN main.gpus m ON m.uuid = k.uuid WHERE k.id = s.gpu_key)"},
             {"id", plus("id", off_it)},
             {"run_id", plus("run_id", off_run)},
             {"variant_id", "(SELECT v.new FROM temp.vmap v WHERE v.old = s.variant_id)"},
             {"proposal_id", plus("proposal_id", off_prop)},
             {"config_id", config}},
            "ORDER BY s.id");
  sum.iterations += scalar(conn, "SELECT count(*) FROM src.iteration_rows");
  // Provenance: where each iteration came from. An input that is itself a merge passes its sources on.
  conn.prepare(fmt::format(
                   "INSERT INTO main.iteration_sources (iteration_id, source_db, source_run_id, source_iteration_id, "
                   "host) SELECT s.id + {0}, COALESCE(p.source_db, ?), COALESCE(p.source_run_id, s.run_id), "
                   "COALESCE(p.source_iteration_id, s.id), COALESCE(p.host, r.host) FROM src.iteration_rows s "
                   "JOIN src.runs r ON r.id = s.run_id LEFT JOIN src.iteration_sources p ON p.iteration_id = s.id "
                   "ORDER BY s.id",
                   off_it))
      .bind(1, fs::absolute(path).lexically_normal().string())
      .run();

  conn.exec("INSERT OR IGNORE INTO main.cases (case_id, family) SELECT case_id, family FROM src.cases ORDER BY id");
  copy_rows(conn, "case_rows",
            {{"iteration_id", plus("iteration_id", off_it)},
             {"case_key", "(SELECT m.id FROM src.cases k JOIN main.cases m ON m.case_id = k.case_id AND m.family = "
                          "k.family WHERE k.id = s.case_key)"}},
            "");
  sum.case_results += scalar(conn, "SELECT count(*) FROM src.case_rows");
  copy_rows(conn, "holdout_checks",
            {{"id", plus("id", off_hold)},
             {"run_id", plus("run_id", off_run)},
             {"iteration_id", plus("iteration_id", off_it)}},
            "ORDER BY s.id");
  sum.holdout_checks += scalar(conn, "SELECT count(*) FROM src.holdout_checks");
  copy_rows(conn, "champion_history",
            {{"id", plus("id", off_hist)},
             {"iteration_id", plus("iteration_id", off_it)},
             {"previous_iteration_id", plus("previous_iteration_id", off_it)}},
            "ORDER BY s.id");

  // The idea queue's ideas and verdicts (docs/ideas.md): run, parent and best iteration and proposal remapped;
  // template and parent template renamed with their proposal (a stacked idea's parent is an earlier idea's).
  const std::int64_t off_idea = scalar(conn, "SELECT MAX(id) FROM main.ideas");
  copy_rows(conn, "ideas",
            {{"id", plus("id", off_idea)},
             {"run_id", plus("run_id", off_run)},
             {"parent_iteration_id", plus("parent_iteration_id", off_it)},
             {"proposal_id", plus("proposal_id", off_prop)},
             {"best_iteration_id", plus("best_iteration_id", off_it)},
             {"template", tmpl},
             {"parent_template",
              "COALESCE((SELECT t.new FROM temp.tmap t WHERE t.old = s.parent_template), s.parent_template)"}},
            "ORDER BY s.id");
  sum.ideas += scalar(conn, "SELECT count(*) FROM src.ideas");
  // Their A/B/A record names iterations too: "parent_iter", "idea_iter" and the "iter" of each of "looks" get
  // the iteration offset where they are integers (anything else in aba_json is kept as it is). The free-text
  // reason keeps the source's iteration numbers.
  const std::string this_input = fmt::format("id > {} AND CASE WHEN json_valid(aba_json) THEN ", off_idea);
  for (const char* key : {"$.parent_iter", "$.idea_iter"})
    conn.exec(fmt::format("UPDATE main.ideas SET aba_json = json_replace(aba_json, '{0}', json_extract(aba_json, "
                          "'{0}') + {1}) WHERE {2}json_type(aba_json, '{0}') = 'integer' ELSE 0 END",
                          key, off_it, this_input));
  conn.exec(fmt::format(
      "UPDATE main.ideas SET aba_json = json_replace(aba_json, '$.looks', (SELECT json_group_array(CASE WHEN "
      "l.type != 'object' THEN json(aba_json -> l.fullkey) WHEN json_type(l.value, '$.iter') = 'integer' THEN "
      "json_replace(l.value, '$.iter', json_extract(l.value, '$.iter') + {0}) ELSE json(l.value) END) FROM "
      "json_each(aba_json, '$.looks') l)) WHERE {1}json_type(aba_json, '$.looks') = 'array' ELSE 0 END",
      off_it, this_input));

  // Spare evaluations (schema 11, docs/daemon.md): both iterations remapped.
  copy_rows(conn, "spare_evaluations",
            {{"iteration_id", plus("iteration_id", off_it)},
             {"screened_iteration_id", plus("screened_iteration_id", off_it)}},
            "ORDER BY s.iteration_id");

  // The idea agent's calls and the idea files they wrote (schema 9, docs/ideas.md): run, champion iteration and
  // call ids remapped, the parent template renamed with its proposal; the queue names (ideas.file) are kept.
  const std::int64_t off_agent = scalar(conn, "SELECT MAX(id) FROM main.idea_agent_calls");
  copy_rows(conn, "idea_agent_calls",
            {{"id", plus("id", off_agent)},
             {"run_id", plus("run_id", off_run)},
             {"champion_iteration_id", plus("champion_iteration_id", off_it)},
             {"parent_template",
              "COALESCE((SELECT t.new FROM temp.tmap t WHERE t.old = s.parent_template), s.parent_template)"}},
            "ORDER BY s.id");
  copy_rows(conn, "idea_agent_ideas", {{"call_id", plus("call_id", off_agent)}}, "ORDER BY s.rowid");

  // Harness checks (`export --harness`, docs/export.md). Their iterations_json lists the exported variants,
  // [{"variant", "template", "iteration"}, ...] (a bare integer is taken as an iteration id): each iteration
  // gets the offset and each template the proposal rename, as the iteration it names; "variant" stays the
  // folder's name in submission_dir.
  const std::int64_t off_harness = scalar(conn, "SELECT MAX(id) FROM main.harness_checks");
  copy_rows(conn, "harness_checks", {{"id", plus("id", off_harness)}}, "ORDER BY s.id");
  sum.harness_checks += scalar(conn, "SELECT count(*) FROM src.harness_checks");
  conn.exec(fmt::format(
      "UPDATE main.harness_checks SET iterations_json = (SELECT json_group_array(CASE WHEN e.type = 'integer' THEN "
      "e.value + {0} WHEN e.type != 'object' THEN json(iterations_json -> e.fullkey) ELSE json_replace(e.value, "
      "'$.iteration', CASE WHEN json_type(e.value, '$.iteration') = 'integer' THEN json_extract(e.value, "
      "'$.iteration') + {0} ELSE json(e.value -> '$.iteration') END, '$.template', CASE WHEN json_type(e.value, "
      "'$.template') = 'text' THEN COALESCE((SELECT t.new FROM temp.tmap t WHERE t.old = json_extract(e.value, "
      "'$.template')), json_extract(e.value, '$.template')) ELSE json(e.value -> '$.template') END) END) FROM "
      "json_each(iterations_json) e) WHERE id > {1} AND CASE WHEN json_valid(iterations_json) THEN "
      "json_type(iterations_json) = 'array' ELSE 0 END",
      off_it, off_harness));

  // This input's champions: candidates of the merged rule.
  auto st = conn.prepare(
      "SELECT c.suite, c.scope, c.iteration_id, c.score_ms, (SELECT MAX(spread) FROM src.case_results r WHERE "
      "r.iteration_id = c.iteration_id) FROM src.champions c ORDER BY c.suite, c.scope");
  while (st.step()) {
    Candidate c;
    c.iter = st.column_int64(2) + off_it;
    c.score_ms = st.column_double(3);
    c.rel_spread = st.column_opt_double(4).value_or(0);
    c.source = path;
    candidates[{st.column_text(0), parse_champion_scope(st.column_text(1))}].push_back(c);
  }
}

}  // namespace

MergeSummary merge_experiment_dbs(const std::string& out, const std::vector<std::string>& inputs, bool force) {
  if (inputs.empty()) throw std::invalid_argument("db merge: no input DB");
  std::set<std::string> seen;
  for (const auto& in : inputs) {
    if (!fs::exists(in)) throw std::invalid_argument(fmt::format("db merge: no such DB {}", in));
    const std::string canon = fs::weakly_canonical(in).string();
    if (!seen.insert(canon).second)
      throw std::invalid_argument(fmt::format("db merge: {} is given twice (its rows would be doubled)", in));
    if (fs::exists(out) && fs::equivalent(in, out))
      throw std::invalid_argument(fmt::format("db merge: the output {} is also an input", out));
  }
  check_runs_unique(inputs);  // also each input's schema version
  if (fs::exists(out)) {
    if (!force) throw std::invalid_argument(fmt::format("db merge: {} exists (pick a new file, or --force to replace it)", out));
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(out + suffix);
  }
  const auto remove_out = [&] {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(out + suffix, ec);
  };
  MergeSummary sum;
  try {
    auto db = ExperimentDb::open(out);
    auto& conn = db.connection();
    std::map<std::pair<std::string, ChampionScope>, std::vector<Candidate>> candidates;
    std::set<std::string> gpu_names;
    for (const auto& in : inputs) {
      conn.prepare("ATTACH DATABASE ? AS src").bind(1, in).run();
      try {
        sqlite::Transaction tx(conn);
        conn.exec("PRAGMA defer_foreign_keys = ON");  // proposals and iterations refer to each other
        merge_one(conn, in, sum, candidates);
        tx.commit();
      } catch (...) {
        conn.exec("DETACH DATABASE src");
        throw;
      }
      conn.exec("DETACH DATABASE src");
      ++sum.inputs;
    }
    {
      auto st = conn.prepare("SELECT DISTINCT gpu_name FROM runs WHERE gpu_name != '' ORDER BY 1");
      while (st.step()) gpu_names.insert(st.column_text(0));
    }
    if (gpu_names.size() > 1)
      sum.warnings.push_back(fmt::format("the inputs were timed on different GPU models ({}): champions compare "
                                         "scores across them",
                                         fmt::join(gpu_names, ", ")));
    sum.champions = recompute_champions(db, candidates);
    sum.variants = scalar(conn, "SELECT count(*) FROM variants");
    for (const char* check : {"PRAGMA foreign_key_check", "PRAGMA integrity_check"}) {
      auto st = conn.prepare(check);
      if (st.step() && !(std::string(check) == "PRAGMA integrity_check" && st.column_text(0) == "ok"))
        throw std::runtime_error(fmt::format("db merge: {} failed on {}: {}", check, out, st.column_text(0)));
    }
  } catch (...) {
    remove_out();
    throw;
  }
  return sum;
}

}  // namespace attn
