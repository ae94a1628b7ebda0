// The idea agent's calls and their ideas (db/store_idea_agents.hpp).
#include "db/store_idea_agents.hpp"

#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {
namespace {

using sqlite::kNowSql;

void check_status(const std::string& s, const char* what) {
  static const std::set<std::string> statuses{"running", "done", "failed", "interrupted"};
  if (!statuses.count(s)) throw std::invalid_argument(fmt::format("{}: unknown status '{}'", what, s));
}

bool has_tables(sqlite::Connection& conn) {
  auto st = conn.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'idea_agent_calls'");
  st.step();
  return st.column_int64(0) != 0;
}

constexpr const char* kCallColumns =
    "id, run_id, command, status, reason, exit_status, agent_ms, output, parent_template, champion_iteration_id, "
    "context_json, started_at, finished_at";

}  // namespace

std::int64_t begin_idea_agent_call(ExperimentDb& db, const IdeaAgentCallRecord& c) {
  check_status(c.status, "begin_idea_agent_call");
  if (!db.run(c.run_id)) throw std::invalid_argument(fmt::format("begin_idea_agent_call: no run {} in {}", c.run_id, db.path()));
  auto& conn = db.connection();
  conn.prepare("INSERT INTO idea_agent_calls (run_id, command, status, parent_template, champion_iteration_id) "
               "VALUES (?, ?, ?, ?, ?)")
      .bind(1, c.run_id)
      .bind(2, c.command)
      .bind(3, c.status)
      .bind(4, c.parent_template)
      .bind(5, c.champion_iteration_id)
      .run();
  return conn.last_insert_rowid();
}

void finish_idea_agent_call(ExperimentDb& db, const IdeaAgentCallRecord& c) {
  check_status(c.status, "finish_idea_agent_call");
  auto& conn = db.connection();
  conn.prepare(fmt::format("UPDATE idea_agent_calls SET status = ?, reason = ?, exit_status = ?, agent_ms = ?, "
                           "output = ?, parent_template = ?, champion_iteration_id = ?, context_json = ?, "
                           "finished_at = CASE WHEN ? = 'running' THEN NULL ELSE {} END WHERE id = ?",
                           kNowSql))
      .bind(1, c.status)
      .bind(2, c.reason)
      .bind(3, c.exit_status)
      .bind(4, c.agent_ms)
      .bind(5, c.output)
      .bind(6, c.parent_template)
      .bind(7, c.champion_iteration_id)
      .bind(8, c.context_json)
      .bind(9, c.status)
      .bind(10, c.id)
      .run();
  if (conn.changes() != 1)
    throw std::invalid_argument(fmt::format("finish_idea_agent_call: no call {} in {}", c.id, db.path()));
}

void add_idea_agent_idea(ExperimentDb& db, const IdeaAgentIdeaRecord& i) {
  db.connection()
      .prepare("INSERT INTO idea_agent_ideas (call_id, file, queued_as, idea_hash, text) VALUES (?, ?, ?, ?, ?)")
      .bind(1, i.call_id)
      .bind(2, i.file)
      .bind(3, i.queued_as)
      .bind(4, i.idea_hash)
      .bind(5, i.text)
      .run();
}

std::vector<IdeaAgentCallRecord> idea_agent_calls(ExperimentDb& db) {
  std::vector<IdeaAgentCallRecord> out;
  auto& conn = db.connection();
  if (!has_tables(conn)) return out;
  auto st = conn.prepare(fmt::format("SELECT {} FROM idea_agent_calls ORDER BY id", kCallColumns));
  while (st.step()) {
    IdeaAgentCallRecord c;
    int k = 0;
    c.id = st.column_int64(k++);
    c.run_id = st.column_int64(k++);
    c.command = st.column_text(k++);
    c.status = st.column_text(k++);
    c.reason = st.column_text(k++);
    c.exit_status = st.column_text(k++);
    c.agent_ms = st.column_opt_double(k++);
    c.output = st.column_text(k++);
    c.parent_template = st.column_text(k++);
    c.champion_iteration_id = st.column_opt_int64(k++);
    c.context_json = st.column_text(k++);
    c.started_at = st.column_text(k++);
    c.finished_at = st.column_opt_text(k++).value_or("");
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<IdeaAgentIdeaRecord> idea_agent_ideas(ExperimentDb& db, std::optional<std::int64_t> call_id) {
  std::vector<IdeaAgentIdeaRecord> out;
  auto& conn = db.connection();
  if (!has_tables(conn)) return out;
  auto st = conn.prepare("SELECT call_id, file, queued_as, idea_hash, text FROM idea_agent_ideas "
                         "WHERE ? IS NULL OR call_id = ? ORDER BY rowid");
  st.bind(1, call_id).bind(2, call_id);
  while (st.step())
    out.push_back({st.column_int64(0), st.column_text(1), st.column_text(2), st.column_text(3), st.column_text(4)});
  return out;
}

std::vector<std::int64_t> mark_interrupted_idea_agent_calls(ExperimentDb& db) {
  std::vector<std::int64_t> ids;
  auto& conn = db.connection();
  if (!has_tables(conn)) return ids;
  {
    auto st = conn.prepare("SELECT id FROM idea_agent_calls WHERE status = 'running' ORDER BY id");
    while (st.step()) ids.push_back(st.column_int64(0));
  }
  conn.prepare(fmt::format("UPDATE idea_agent_calls SET status = 'interrupted', reason = 'the daemon ended before the "
                           "call did', finished_at = {} WHERE status = 'running'", kNowSql))
      .run();
  return ids;
}

}  // namespace attn
