// ExperimentDb: iterations and their case results.
#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "db/configs.hpp"
#include "db/store.hpp"
#include "db/store_rows.hpp"

namespace attn {

using sqlite::kNowSql;
namespace rows = db::rows;

namespace {

void check_finish_rules(const IterationRecord& it) {
  const auto status = it.status;
  const auto kind = it.failure_kind;
  auto fail = [&](const char* rule) {
    throw std::invalid_argument(fmt::format("finish_iteration {}: status {} with failure_kind {}: {}", it.iter,
                                            to_string(status), to_string(kind), rule));
  };
  switch (status) {
    case IterationStatus::running: fail("a finished iteration cannot be running"); break;
    case IterationStatus::keep:
    case IterationStatus::discard:
      if (kind != FailureKind::none) fail("keep and discard have failure_kind none");
      if (status == IterationStatus::keep && !it.geomean_ms) fail("keep needs a geomean_ms");
      if (status == IterationStatus::keep && it.fidelity != Fidelity::full)
        fail("keep needs fidelity full (a screened-only config is never kept)");
      break;
    case IterationStatus::crash:
      if (kind == FailureKind::none || kind == FailureKind::interrupted) {
        fail("crash needs a failure kind (compile, device_limit, fault, hang, wrong_result, worker_died, proposal, "
             "inconsistent, below_floor)");
      }
      break;
    case IterationStatus::interrupted:
      if (kind != FailureKind::interrupted) fail("interrupted has failure_kind interrupted");
      break;
  }
}

}  // namespace

bool ExperimentDb::has_evaluated(const std::string& template_name, const std::string& params_json,
                                 const std::string& suite) {
  const auto config = db::config_id(conn_, template_name, params_json, false);
  if (!config) return false;
  auto st = conn_.prepare(
      "SELECT EXISTS (SELECT 1 FROM iteration_rows WHERE config_id = ? AND suite = ? "
      "AND status IN ('keep', 'discard', 'crash'))");
  st.bind(1, *config).bind(2, suite);
  st.step();
  return st.column_int64(0) != 0;
}

std::int64_t ExperimentDb::begin_iteration(const IterationRecord& it) {
  require_writable("begin_iteration");
  sqlite::Transaction tx(conn_);
  const std::int64_t iter = insert_iteration_row(it);
  tx.commit();
  return iter;
}

std::pair<std::int64_t, std::int64_t> ExperimentDb::begin_iteration_with_variant(const IterationRecord& it,
                                                                               const VariantRecord& variant,
                                                                               std::optional<std::int64_t> spare_of) {
  require_writable("begin_iteration_with_variant");
  sqlite::Transaction tx(conn_);
  const std::int64_t variant_id = upsert_variant_row(variant);
  IterationRecord with = it;
  with.variant_id = variant_id;
  const std::int64_t iter = insert_iteration_row(with);
  if (spare_of) {
    if (!iteration(*spare_of))
      throw std::invalid_argument(fmt::format("begin_iteration: spare evaluation of unknown iteration {}", *spare_of));
    conn_.prepare("INSERT INTO spare_evaluations (iteration_id, screened_iteration_id) VALUES (?, ?)")
        .bind(1, iter)
        .bind(2, *spare_of)
        .run();
  }
  tx.commit();
  return {iter, variant_id};
}

std::vector<std::pair<std::int64_t, std::int64_t>> ExperimentDb::spare_evaluations() {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  auto tables = conn_.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'spare_evaluations'");
  if (!tables.step()) return out;
  auto st = conn_.prepare("SELECT iteration_id, screened_iteration_id FROM spare_evaluations ORDER BY iteration_id");
  while (st.step()) out.emplace_back(st.column_int64(0), st.column_int64(1));
  return out;
}

std::int64_t ExperimentDb::insert_iteration_row(const IterationRecord& it) {
  if (it.suite.empty()) throw std::invalid_argument("begin_iteration: empty suite name");
  if (it.template_name.empty()) throw std::invalid_argument("begin_iteration: empty template name");
  const std::string params_json = canonical_params_json(it.params_json);
  auto r = run(it.run_id);
  if (!r) throw std::invalid_argument(fmt::format("begin_iteration: no run {} in {}", it.run_id, path()));
  if (r->status != RunStatus::running) {
    throw std::invalid_argument(
        fmt::format("begin_iteration: run {} has ended ({})", it.run_id, to_string(r->status)));
  }
  if (it.variant_id && !db::variant_exists(conn_, *it.variant_id)) {
    throw std::invalid_argument(fmt::format("begin_iteration: no variant {} in {}", *it.variant_id, path()));
  }
  if (it.proposal_id && !proposal(*it.proposal_id)) {
    throw std::invalid_argument(fmt::format("begin_iteration: no proposal {} in {}", *it.proposal_id, path()));
  }
  const std::int64_t config = *db::config_id(conn_, it.template_name, params_json, true);
  auto st = conn_.prepare(
      "INSERT INTO iteration_rows (run_id, variant_id, suite, config_id, description, root_seed, proposal_id) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, it.run_id)
      .bind(2, it.variant_id)
      .bind(3, it.suite)
      .bind(4, config)
      .bind(5, it.description)
      .bind(6, it.root_seed)
      .bind(7, it.proposal_id);
  st.run();
  return conn_.last_insert_rowid();
}

void ExperimentDb::set_iteration_variant(std::int64_t iter, std::int64_t variant_id) {
  require_writable("set_iteration_variant");
  sqlite::Transaction tx(conn_);
  auto status = conn_.prepare("SELECT status FROM iteration_rows WHERE id = ?");
  status.bind(1, iter);
  if (!status.step()) throw std::invalid_argument(fmt::format("set_iteration_variant: no iteration {}", iter));
  if (auto s = status.column_text(0); s != "running") {
    throw std::invalid_argument(
        fmt::format("set_iteration_variant: iteration {} is already finished ({})", iter, s));
  }
  status.run();
  if (!db::variant_exists(conn_, variant_id))
    throw std::invalid_argument(fmt::format("set_iteration_variant: no variant {}", variant_id));
  conn_.prepare("UPDATE iteration_rows SET variant_id = ? WHERE id = ?").bind(1, variant_id).bind(2, iter).run();
  tx.commit();
}

void ExperimentDb::finish_iteration(const IterationRecord& it) {
  require_writable("finish_iteration");
  check_finish_rules(it);
  sqlite::Transaction tx(conn_);
  auto status = conn_.prepare("SELECT status FROM iteration_rows WHERE id = ?");
  status.bind(1, it.iter);
  if (!status.step()) throw std::invalid_argument(fmt::format("finish_iteration: no iteration {} in {}", it.iter, path()));
  if (auto s = status.column_text(0); s != "running") {
    throw std::invalid_argument(fmt::format("finish_iteration: iteration {} is already finished ({})", it.iter, s));
  }
  status.run();
  if (it.variant_id && !db::variant_exists(conn_, *it.variant_id)) {
    throw std::invalid_argument(fmt::format("finish_iteration {}: no variant {}", it.iter, *it.variant_id));
  }

  auto up = conn_.prepare(fmt::format(
      "UPDATE iteration_rows SET variant_id = COALESCE(?, variant_id), status = ?, failure_kind = ?, "
      "geomean_ms = ?, delta_ms = ?, window_ms = ?, global_ms = ?, retrieval_ms = ?, description = ?, "
      "gpu_ms = ?, compile_ms = ?, fidelity = ?, screen_ms = ?, root_seed = COALESCE(?, root_seed), "
      "gpu_index = ?, gpu_key = ?, sm_clock_mhz = ?, finished_at = {} WHERE id = ?",
      kNowSql));
  up.bind(1, it.variant_id)
      .bind(2, to_string(it.status))
      .bind(3, to_string(it.failure_kind))
      .bind(4, it.geomean_ms)
      .bind(5, it.delta_ms)
      .bind(6, it.window_ms)
      .bind(7, it.global_ms)
      .bind(8, it.retrieval_ms)
      .bind(9, it.description)
      .bind(10, it.gpu_ms)
      .bind(11, it.compile_ms)
      .bind(12, to_string(it.fidelity))
      .bind(13, it.screen_ms)
      .bind(14, it.root_seed)
      .bind(15, it.gpu_index)
      .bind(16, it.gpu_uuid.empty() ? std::optional<std::int64_t>() : db::gpu_key(conn_, it.gpu_uuid))
      .bind(17, it.sm_clock_mhz)
      .bind(18, it.iter);
  up.run();

  auto ins = conn_.prepare(
      "INSERT INTO case_rows (iteration_id, case_key, median_ms, spread, samples, sm_clock_mhz, "
      "o_max_abs_diff, lse_max_abs_diff, passed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  // A max diff is inf where a pair had exactly one finite member (a NaN left in o or lse: an unwritten
  // element, as the poison shows it); the DB refuses non-finite numbers, so it is stored as NULL (the
  // iteration's description gives the inf).
  auto finite = [](const std::optional<double>& x) { return x && std::isfinite(*x) ? x : std::nullopt; };
  std::set<std::string> case_ids;
  for (const auto& c : it.cases) {
    if (!case_ids.insert(c.case_id).second)
      throw std::invalid_argument(fmt::format("finish_iteration {}: case {} is given twice", it.iter, c.case_id));
    ins.reset();
    ins.bind(1, it.iter)
        .bind(2, db::case_key(conn_, c.case_id, c.family))
        .bind(3, c.median_ms)
        .bind(4, c.spread)
        .bind(5, c.samples)
        .bind(6, c.sm_clock_mhz)
        .bind(7, finite(c.o_max_abs_diff))
        .bind(8, finite(c.lse_max_abs_diff))
        .bind(9, c.passed);
    try {
      ins.run();
    } catch (const sqlite::Error& e) {
      throw std::invalid_argument(fmt::format("finish_iteration {}: case {}: {}", it.iter, c.case_id, e.what()));
    }
  }
  tx.commit();
}

std::vector<IterationRecord> ExperimentDb::mark_interrupted_iterations() {
  require_writable("mark_interrupted_iterations");
  sqlite::Transaction tx(conn_);
  auto st = conn_.prepare(fmt::format(
      "UPDATE iteration_rows SET status = 'interrupted', failure_kind = 'interrupted', finished_at = {} "
      "WHERE status = 'running' RETURNING id",
      kNowSql));
  std::vector<std::int64_t> ids;
  while (st.step()) ids.push_back(st.column_int64(0));
  std::sort(ids.begin(), ids.end());
  std::vector<IterationRecord> out;
  for (auto id : ids) out.push_back(*iteration(id));
  tx.commit();
  return out;
}

std::vector<IterationRecord> ExperimentDb::iterations(const IterationQuery& q) {
  std::string sql = fmt::format("SELECT {} FROM {} WHERE 1", rows::kIterationColumns, rows::kIterationFrom);
  // In id order the rows are read by a scan of the table (`+` keeps SQLite off the suite index): through the index a
  // suite of a night's DB is a million lookups and a sort, three times as long. Fastest first uses the index.
  const bool by_id = q.order != IterationQuery::Order::geomean_asc;
  if (q.suite) sql += by_id ? " AND +i.suite = ?" : " AND i.suite = ?";
  if (q.run_id) sql += " AND i.run_id = ?";
  if (!q.statuses.empty()) {
    sql += " AND i.status IN (";
    for (std::size_t i = 0; i < q.statuses.size(); ++i) sql += i ? ", ?" : "?";
    sql += ")";
  }
  if (q.fidelity) sql += " AND i.fidelity = ?";
  switch (q.order) {
    case IterationQuery::Order::iter_asc: sql += " ORDER BY i.id"; break;
    case IterationQuery::Order::iter_desc: sql += " ORDER BY i.id DESC"; break;
    case IterationQuery::Order::geomean_asc: sql += " ORDER BY i.geomean_ms IS NULL, i.geomean_ms, i.id"; break;
  }
  if (q.limit) {
    if (*q.limit < 0) throw std::invalid_argument(fmt::format("iterations: negative limit {}", *q.limit));
    sql += " LIMIT ?";
  }
  auto st = conn_.prepare(sql);
  int p = 1;
  if (q.suite) st.bind(p++, *q.suite);
  if (q.run_id) st.bind(p++, *q.run_id);
  for (auto s : q.statuses) st.bind(p++, to_string(s));
  if (q.fidelity) st.bind(p++, to_string(*q.fidelity));
  if (q.limit) st.bind(p++, *q.limit);
  std::vector<IterationRecord> out;
  while (st.step()) out.push_back(rows::read_iteration(st));
  return out;
}

SearchHistory ExperimentDb::search_history(const std::string& suite) {
  SearchHistory h;
  std::unordered_map<std::int64_t, std::string> names;  // param_names: a handful of lists
  {
    auto st = conn_.prepare("SELECT id, names FROM param_names");
    while (st.step()) names.emplace(st.column_int64(0), st.column_text(1));
  }
  std::unordered_map<std::int64_t, std::size_t> index;  // configs.id -> h.configs
  auto st = conn_.prepare(
      "SELECT i.id, i.config_id, i.status, i.failure_kind, i.geomean_ms, i.screen_ms, c.template, c.names_id, "
      "c.param_values FROM iteration_rows i JOIN configs c ON c.id = i.config_id WHERE i.suite = ? AND i.status IN "
      "('keep', 'discard', 'crash') ORDER BY i.id");
  st.bind(1, suite);
  while (st.step()) {
    HistoryRow r;
    r.iter = st.column_int64(0);
    const auto [at, added] = index.try_emplace(st.column_int64(1), h.configs.size());
    if (added) h.configs.push_back({st.column_text(6), names.at(st.column_int64(7)), st.column_text(8)});
    r.config = at->second;
    r.status = parse_iteration_status(st.column_text(2));
    r.failure_kind = parse_failure_kind(st.column_text(3));
    r.geomean_ms = st.column_opt_double(4);
    r.screen_ms = st.column_opt_double(5);
    h.rows.push_back(r);
  }
  return h;
}

std::pair<std::size_t, std::optional<std::int64_t>> ExperimentDb::finished_tail() {
  auto st = conn_.prepare("SELECT count(*), max(id) FROM iteration_rows WHERE status != 'running'");
  st.step();
  return {static_cast<std::size_t>(st.column_int64(0)), st.column_opt_int64(1)};
}

std::vector<IterationRecord> ExperimentDb::finished_after(std::optional<std::int64_t> after) {
  // Both scans run on the id (the rowid) from `after`: the few rows a run finished since its last line.
  auto st = conn_.prepare(fmt::format(
      "SELECT {} FROM {} WHERE i.id > ?1 AND i.id < coalesce((SELECT min(id) FROM iteration_rows WHERE id > ?1 AND "
      "status = 'running'), 9223372036854775807) ORDER BY i.id",
      rows::kIterationColumns, rows::kIterationFrom));
  st.bind(1, after.value_or(0));
  std::vector<IterationRecord> out;
  while (st.step()) out.push_back(rows::read_iteration(st));
  return out;
}

std::optional<std::int64_t> ExperimentDb::first_finished() {
  auto st = conn_.prepare("SELECT id FROM iteration_rows WHERE status != 'running' ORDER BY id LIMIT 1");
  if (!st.step()) return std::nullopt;
  return st.column_int64(0);
}

std::optional<IterationRecord> ExperimentDb::iteration(std::int64_t iter) {
  auto st = conn_.prepare(
      fmt::format("SELECT {} FROM {} WHERE i.id = ?", rows::kIterationColumns, rows::kIterationFrom));
  st.bind(1, iter);
  if (!st.step()) return std::nullopt;
  auto it = rows::read_iteration(st);
  it.cases = case_results(iter);
  return it;
}

std::vector<CaseResultRecord> ExperimentDb::case_results(std::int64_t iter) {
  auto st = conn_.prepare(
      fmt::format("SELECT {} FROM case_results WHERE iteration_id = ? ORDER BY case_id", rows::kCaseColumns));
  st.bind(1, iter);
  std::vector<CaseResultRecord> out;
  while (st.step()) out.push_back(rows::read_case(st));
  return out;
}

std::optional<IterationRecord> ExperimentDb::best(const std::string& suite) {
  auto found = iterations({.suite = suite,
                           .run_id = std::nullopt,
                           .statuses = {IterationStatus::keep},
                           .order = IterationQuery::Order::geomean_asc,
                           .limit = 1});
  if (found.empty() || !found.front().geomean_ms) return std::nullopt;
  return found.front();
}

}  // namespace attn
