// ExperimentDb: held-out checks (configs timed on the cases of a root seed that tuning never uses).
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "db/store_rows.hpp"

namespace attn {

namespace rows = db::rows;

std::int64_t ExperimentDb::add_holdout_check(const HoldoutCheckRecord& h) {
  require_writable("add_holdout_check");
  for (const auto* v : {&h.score_ms, &h.window_ms, &h.global_ms, &h.retrieval_ms, &h.tuned_ms})
    if (*v && !std::isfinite(**v))
      throw std::invalid_argument(fmt::format("add_holdout_check: non-finite score for iteration {}", h.iteration_id));
  nlohmann::json cases;
  try {
    cases = nlohmann::json::parse(h.cases_json);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("add_holdout_check: cases_json does not parse: {}", e.what()));
  }
  if (!cases.is_array()) throw std::invalid_argument("add_holdout_check: cases_json is not a JSON list");
  sqlite::Transaction tx(conn_);
  if (!run(h.run_id)) throw std::invalid_argument(fmt::format("add_holdout_check: no run {} in {}", h.run_id, path()));
  auto st = conn_.prepare("SELECT suite FROM iteration_rows WHERE id = ?");
  st.bind(1, h.iteration_id);
  if (!st.step())
    throw std::invalid_argument(fmt::format("add_holdout_check: no iteration {} in {}", h.iteration_id, path()));
  if (st.column_text(0) != h.suite)
    throw std::invalid_argument(fmt::format("add_holdout_check: iteration {} is of suite {}, not {}", h.iteration_id,
                                            st.column_text(0), h.suite));
  auto ins = conn_.prepare(
      "INSERT INTO holdout_checks (run_id, iteration_id, suite, root_seed, role, ok, score_ms, window_ms, global_ms, "
      "retrieval_ms, tuned_ms, verdict, cases_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  ins.bind(1, h.run_id)
      .bind(2, h.iteration_id)
      .bind(3, h.suite)
      .bind(4, h.root_seed)
      .bind(5, to_string(h.role))
      .bind(6, h.ok)
      .bind(7, h.score_ms)
      .bind(8, h.window_ms)
      .bind(9, h.global_ms)
      .bind(10, h.retrieval_ms)
      .bind(11, h.tuned_ms)
      .bind(12, h.verdict)
      .bind(13, cases.dump());
  ins.run();
  const std::int64_t id = conn_.last_insert_rowid();
  tx.commit();
  return id;
}

std::vector<HoldoutCheckRecord> ExperimentDb::holdout_checks(const std::optional<std::int64_t>& iteration_id,
                                                             const std::optional<std::string>& suite) {
  std::string sql = fmt::format("SELECT {} FROM holdout_checks WHERE 1", rows::kHoldoutColumns);
  if (iteration_id) sql += " AND iteration_id = ?";
  if (suite) sql += " AND suite = ?";
  sql += " ORDER BY id";
  auto st = conn_.prepare(sql);
  int p = 1;
  if (iteration_id) st.bind(p++, *iteration_id);
  if (suite) st.bind(p++, *suite);
  std::vector<HoldoutCheckRecord> out;
  while (st.step()) out.push_back(rows::read_holdout(st));
  return out;
}

}  // namespace attn
