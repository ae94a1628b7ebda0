// ExperimentDb: the ideas of the idea queue (`run --ideas DIR`, docs/ideas.md).
#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/store.hpp"

namespace attn {

using sqlite::kNowSql;

namespace {

constexpr const char* kIdeaColumns =
    "id, run_id, file, idea_hash, description, hypothesis, diff, space_json, default_json, parent_template, "
    "parent_iteration_id, proposal_id, template, status, verdict, broken_kind, reason, configs, best_iteration_id, "
    "best_ms, parent_ms, idea_ms, delta_pct, noise_pct, aba_json, holdout_parent_ms, holdout_idea_ms, gpu_s, wall_s, "
    "started_at, finished_at";

void check_idea(const IdeaRecord& i, const char* what) {
  const auto fail = [&](const std::string& why) { return std::invalid_argument(fmt::format("{}: {}", what, why)); };
  if (i.file.empty()) throw fail("empty file name");
  if (i.idea_hash.empty()) throw fail("empty idea hash");
  if (i.status == IdeaStatus::done && i.verdict == IdeaVerdict::none) throw fail("a done idea needs a verdict");
  for (const auto& [text, name] : {std::pair{&i.space_json, "space_json"}, {&i.default_json, "default_json"},
                                   {&i.aba_json, "aba_json"}}) {
    try {
      if (!nlohmann::json::parse(*text).is_object()) throw fail(fmt::format("{} is not a JSON object", name));
    } catch (const nlohmann::json::parse_error& e) {
      throw fail(fmt::format("{} does not parse: {}", name, e.what()));
    }
  }
  for (const auto& x : {i.best_ms, i.parent_ms, i.idea_ms, i.delta_pct, i.noise_pct, i.holdout_parent_ms,
                        i.holdout_idea_ms, i.gpu_s, i.wall_s})
    if (x && !std::isfinite(*x)) throw fail("a non-finite number");
}

bool has_ideas_table(sqlite::Connection& conn) {
  auto st = conn.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'ideas'");
  st.step();
  return st.column_int64(0) != 0;
}

IdeaRecord read_idea(sqlite::Statement& st) {
  IdeaRecord i;
  int c = 0;
  i.id = st.column_int64(c++);
  i.run_id = st.column_int64(c++);
  i.file = st.column_text(c++);
  i.idea_hash = st.column_text(c++);
  i.description = st.column_text(c++);
  i.hypothesis = st.column_text(c++);
  i.diff = st.column_text(c++);
  i.space_json = st.column_text(c++);
  i.default_json = st.column_text(c++);
  i.parent_template = st.column_text(c++);
  i.parent_iteration_id = st.column_opt_int64(c++);
  i.proposal_id = st.column_opt_int64(c++);
  i.template_name = st.column_text(c++);
  i.status = parse_idea_status(st.column_text(c++));
  i.verdict = parse_idea_verdict(st.column_text(c++));
  i.broken_kind = parse_idea_broken_kind(st.column_text(c++));
  i.reason = st.column_text(c++);
  i.configs = st.column_int64(c++);
  i.best_iteration_id = st.column_opt_int64(c++);
  for (auto* x : {&i.best_ms, &i.parent_ms, &i.idea_ms, &i.delta_pct, &i.noise_pct}) *x = st.column_opt_double(c++);
  i.aba_json = st.column_text(c++);
  for (auto* x : {&i.holdout_parent_ms, &i.holdout_idea_ms, &i.gpu_s, &i.wall_s}) *x = st.column_opt_double(c++);
  i.started_at = st.column_text(c++);
  i.finished_at = st.column_opt_text(c++).value_or("");
  return i;
}

// The columns add_idea and update_idea write (all but id, run_id, file, idea_hash, started_at, finished_at),
// in the order bind_idea_fields binds them.
constexpr const char* kIdeaFields[] = {
    "description", "hypothesis", "diff", "space_json", "default_json", "parent_template", "parent_iteration_id",
    "proposal_id", "template", "status", "verdict", "broken_kind", "reason", "configs", "best_iteration_id",
    "best_ms", "parent_ms", "idea_ms", "delta_pct", "noise_pct", "aba_json", "holdout_parent_ms",
    "holdout_idea_ms", "gpu_s", "wall_s"};

/// Binds kIdeaFields of `i` from parameter `c` on; returns the next parameter index.
int bind_idea_fields(sqlite::Statement& st, const IdeaRecord& i, int c) {
  st.bind(c++, i.description).bind(c++, i.hypothesis).bind(c++, i.diff).bind(c++, i.space_json);
  st.bind(c++, i.default_json).bind(c++, i.parent_template).bind(c++, i.parent_iteration_id);
  st.bind(c++, i.proposal_id).bind(c++, i.template_name).bind(c++, to_string(i.status)).bind(c++, to_string(i.verdict));
  st.bind(c++, to_string(i.broken_kind)).bind(c++, i.reason).bind(c++, i.configs).bind(c++, i.best_iteration_id);
  for (const auto& x : {i.best_ms, i.parent_ms, i.idea_ms, i.delta_pct, i.noise_pct}) st.bind(c++, x);
  st.bind(c++, i.aba_json);
  for (const auto& x : {i.holdout_parent_ms, i.holdout_idea_ms, i.gpu_s, i.wall_s}) st.bind(c++, x);
  return c;
}

/// "CASE WHEN <status> IN ('done', 'interrupted') THEN now ELSE NULL END" for finished_at, status bound as `?`.
std::string finished_at_sql() {
  return fmt::format("CASE WHEN ? IN ('done', 'interrupted') THEN {} ELSE NULL END", kNowSql);
}

}  // namespace

std::int64_t ExperimentDb::add_idea(const IdeaRecord& i) {
  require_writable("add_idea");
  check_idea(i, "add_idea");
  sqlite::Transaction tx(conn_);
  if (!run(i.run_id)) throw std::invalid_argument(fmt::format("add_idea: no run {} in {}", i.run_id, path()));
  std::string cols, marks;
  for (const char* f : kIdeaFields) {
    cols += std::string(", ") + f;
    marks += ", ?";
  }
  auto st = conn_.prepare(fmt::format("INSERT INTO ideas (run_id, file, idea_hash{}, finished_at) VALUES (?, ?, ?{}, {})",
                                      cols, marks, finished_at_sql()));
  st.bind(1, i.run_id).bind(2, i.file).bind(3, i.idea_hash);
  st.bind(bind_idea_fields(st, i, 4), to_string(i.status));
  st.run();
  const std::int64_t id = conn_.last_insert_rowid();
  tx.commit();
  return id;
}

void ExperimentDb::update_idea(const IdeaRecord& i) {
  require_writable("update_idea");
  check_idea(i, "update_idea");
  std::string sets;
  for (const char* f : kIdeaFields) sets += std::string(sets.empty() ? "" : ", ") + f + " = ?";
  sqlite::Transaction tx(conn_);
  auto st = conn_.prepare(fmt::format("UPDATE ideas SET {}, finished_at = {} WHERE id = ?", sets, finished_at_sql()));
  const int c = bind_idea_fields(st, i, 1);
  st.bind(c, to_string(i.status)).bind(c + 1, i.id);
  st.run();
  if (conn_.changes() != 1) throw std::invalid_argument(fmt::format("update_idea: no idea {} in {}", i.id, path()));
  tx.commit();
}

std::optional<IdeaRecord> ExperimentDb::idea(std::int64_t id) {
  if (!has_ideas_table(conn_)) return std::nullopt;
  auto st = conn_.prepare(fmt::format("SELECT {} FROM ideas WHERE id = ?", kIdeaColumns));
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return read_idea(st);
}

std::vector<IdeaRecord> ExperimentDb::ideas() {
  std::vector<IdeaRecord> out;
  if (!has_ideas_table(conn_)) return out;  // a version-7 file opened read-only (db/schema.hpp, readable_without)
  auto st = conn_.prepare(fmt::format("SELECT {} FROM ideas ORDER BY id", kIdeaColumns));
  while (st.step()) out.push_back(read_idea(st));
  return out;
}

std::vector<std::int64_t> ExperimentDb::mark_interrupted_ideas() {
  require_writable("mark_interrupted_ideas");
  auto st = conn_.prepare(fmt::format(
      "UPDATE ideas SET status = 'interrupted', finished_at = {}, "
      "reason = CASE WHEN reason = '' THEN 'the daemon ended before its verdict' ELSE reason END "
      "WHERE status IN ('checking', 'tuning', 'judging') RETURNING id",
      kNowSql));
  std::vector<std::int64_t> ids;
  while (st.step()) ids.push_back(st.column_int64(0));
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace attn
