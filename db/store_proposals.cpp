// ExperimentDb: the proposals of the proposer hook (docs/proposer.md) and what their templates achieved.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "db/store_rows.hpp"

namespace attn {

using sqlite::kNowSql;
namespace rows = db::rows;

std::int64_t ExperimentDb::begin_proposal(const ProposalRecord& p) {
  require_writable("begin_proposal");
  if (p.command.empty()) throw std::invalid_argument("begin_proposal: empty proposer command");
  if (p.parent_template.empty()) throw std::invalid_argument("begin_proposal: empty parent template");
  sqlite::Transaction tx(conn_);
  const auto r = run(p.run_id);
  if (!r) throw std::invalid_argument(fmt::format("begin_proposal: no run {} in {}", p.run_id, path()));
  if (r->status != RunStatus::running)
    throw std::invalid_argument(fmt::format("begin_proposal: run {} has ended ({})", p.run_id, to_string(r->status)));
  if (p.parent_iteration_id && !iteration(*p.parent_iteration_id))
    throw std::invalid_argument(fmt::format("begin_proposal: no iteration {} in {}", *p.parent_iteration_id, path()));
  conn_.prepare("INSERT INTO proposals (run_id, command, parent_template, parent_iteration_id) VALUES (?, ?, ?, ?)")
      .bind(1, p.run_id)
      .bind(2, p.command)
      .bind(3, p.parent_template)
      .bind(4, p.parent_iteration_id)
      .run();
  const std::int64_t id = conn_.last_insert_rowid();
  tx.commit();
  return id;
}

void ExperimentDb::finish_proposal(const ProposalRecord& p) {
  require_writable("finish_proposal");
  const auto fail = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("finish_proposal {}: {}", p.id, why));
  };
  if (p.status == ProposalStatus::running) throw fail("a finished proposal cannot be running");
  if (p.status == ProposalStatus::accepted && (p.template_name.empty() || !p.source || !p.space_json))
    throw fail("an accepted proposal needs its template name, source and space JSON");
  try {
    if (!nlohmann::json::parse(p.headers_json).is_object()) throw fail("headers_json is not a JSON object");
  } catch (const nlohmann::json::parse_error& e) {
    throw fail(fmt::format("headers_json does not parse: {}", e.what()));
  }
  sqlite::Transaction tx(conn_);
  const auto current = proposal(p.id);
  if (!current) throw fail(fmt::format("no such proposal in {}", path()));
  if (current->status != ProposalStatus::running)
    throw fail(fmt::format("already finished ({})", to_string(current->status)));
  if (!p.template_name.empty())
    if (const auto other = proposal_by_template(p.template_name); other && other->id != p.id)
      throw fail(fmt::format("template name {} belongs to proposal {}", p.template_name, other->id));
  conn_
      .prepare(fmt::format(
          "UPDATE proposals SET status = ?, reason = ?, description = ?, template = NULLIF(?, ''), source = ?, "
          "space_json = ?, headers_json = ?, diff = ?, exit_status = ?, proposer_ms = ?, output = ?, "
          "finished_at = {} WHERE id = ?",
          kNowSql))
      .bind(1, to_string(p.status))
      .bind(2, p.reason)
      .bind(3, p.description)
      .bind(4, p.template_name)
      .bind(5, p.source)
      .bind(6, p.space_json)
      .bind(7, p.headers_json)
      .bind(8, p.diff)
      .bind(9, p.exit_status)
      .bind(10, p.proposer_ms)
      .bind(11, p.output)
      .bind(12, p.id)
      .run();
  tx.commit();
}

std::optional<ProposalRecord> ExperimentDb::proposal(std::int64_t id) {
  auto st = conn_.prepare(fmt::format("SELECT {} FROM proposals WHERE id = ?", rows::kProposalColumns));
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return rows::read_proposal(st);
}

std::optional<ProposalRecord> ExperimentDb::proposal_by_template(const std::string& template_name) {
  auto st = conn_.prepare(fmt::format("SELECT {} FROM proposals WHERE template = ?", rows::kProposalColumns));
  st.bind(1, template_name);
  if (!st.step()) return std::nullopt;
  return rows::read_proposal(st);
}

std::vector<ProposalRecord> ExperimentDb::proposals() {
  auto st = conn_.prepare(fmt::format("SELECT {} FROM proposals ORDER BY id", rows::kProposalColumns));
  std::vector<ProposalRecord> out;
  while (st.step()) out.push_back(rows::read_proposal(st));
  return out;
}

std::vector<std::int64_t> ExperimentDb::mark_interrupted_proposals() {
  require_writable("mark_interrupted_proposals");
  auto st = conn_.prepare(fmt::format(
      "UPDATE proposals SET status = 'interrupted', finished_at = {}, "
      "reason = CASE WHEN reason = '' THEN 'the daemon ended before the proposal was checked' ELSE reason END "
      "WHERE status = 'running' RETURNING id",
      kNowSql));
  std::vector<std::int64_t> ids;
  while (st.step()) ids.push_back(st.column_int64(0));
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<ProposalSummary> ExperimentDb::proposal_summaries(const std::optional<std::string>& suite) {
  std::vector<ProposalSummary> out;
  for (auto& p : proposals()) out.push_back({std::move(p), 0, 0, std::nullopt, std::nullopt, {}});
  const std::string suite_filter = suite ? " AND suite = ?" : "";
  auto counts = conn_.prepare(
      "SELECT count(*), count(*) FILTER (WHERE status = 'crash') FROM iteration_rows WHERE proposal_id = ?" + suite_filter);
  auto best = conn_.prepare("SELECT id, geomean_ms FROM iteration_rows WHERE proposal_id = ? AND status IN ('keep', "
                            "'discard') AND geomean_ms IS NOT NULL" + suite_filter + " ORDER BY geomean_ms, id LIMIT 1");
  auto champs = conn_.prepare(
      "SELECT c.suite, c.scope FROM champions c JOIN iteration_rows i ON i.id = c.iteration_id WHERE i.proposal_id = ?" +
      std::string(suite ? " AND c.suite = ?" : "") + " ORDER BY c.suite, c.scope");
  for (auto& s : out) {
    for (auto* st : {&counts, &best, &champs}) {
      st->reset();
      st->bind(1, s.proposal.id);
      if (suite) st->bind(2, *suite);
    }
    if (counts.step()) {
      s.iterations = counts.column_int64(0);
      s.crashes = counts.column_int64(1);
    }
    if (best.step()) {
      s.best_iter = best.column_int64(0);
      s.best_ms = best.column_double(1);
    }
    while (champs.step()) s.champion_of.push_back(champs.column_text(0) + ":" + champs.column_text(1));
  }
  return out;
}

}  // namespace attn
