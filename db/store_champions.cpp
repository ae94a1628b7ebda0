// ExperimentDb: champions per (suite, scope) and their promotion history.
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "db/store_rows.hpp"

namespace attn {

using sqlite::kNowSql;
namespace rows = db::rows;

std::optional<ChampionRecord> ExperimentDb::champion(const std::string& suite, ChampionScope scope) {
  auto st = conn_.prepare(
      fmt::format("SELECT {} FROM champions WHERE suite = ? AND scope = ?", rows::kChampionColumns));
  st.bind(1, suite).bind(2, to_string(scope));
  if (!st.step()) return std::nullopt;
  return rows::read_champion(st);
}

// Scope order as in ChampionScope (overall first), not alphabetical.
static constexpr const char* kScopeOrder =
    "CASE scope WHEN 'overall' THEN 0 WHEN 'sliding_window' THEN 1 WHEN 'sliding_window_global' THEN 2 "
    "ELSE 3 END";

std::vector<ChampionRecord> ExperimentDb::champions(const std::optional<std::string>& suite) {
  auto st = conn_.prepare(fmt::format("SELECT {} FROM champions {} ORDER BY suite, {}", rows::kChampionColumns,
                                      suite ? "WHERE suite = ?" : "", kScopeOrder));
  if (suite) st.bind(1, *suite);
  std::vector<ChampionRecord> out;
  while (st.step()) out.push_back(rows::read_champion(st));
  return out;
}

void ExperimentDb::set_champion(const ChampionRecord& c, const std::string& aba_json) {
  require_writable("set_champion");
  if (!std::isfinite(c.score_ms) || c.score_ms <= 0) {
    throw std::invalid_argument(fmt::format("set_champion: score_ms {} is not a positive finite number", c.score_ms));
  }
  auto aba = nlohmann::json::parse(aba_json.empty() ? "{}" : aba_json, nullptr, /*allow_exceptions=*/false);
  if (aba.is_discarded()) throw std::invalid_argument(fmt::format("set_champion: aba_json is not JSON: {}", aba_json));

  sqlite::Transaction tx(conn_);
  auto it = conn_.prepare("SELECT suite, status FROM iteration_rows WHERE id = ?");
  it.bind(1, c.iteration_id);
  if (!it.step()) throw std::invalid_argument(fmt::format("set_champion: no iteration {} in {}", c.iteration_id, path()));
  if (it.column_text(0) != c.suite) {
    throw std::invalid_argument(fmt::format("set_champion: iteration {} belongs to suite {}, not {}", c.iteration_id,
                                            it.column_text(0), c.suite));
  }
  if (auto s = it.column_text(1); s != "keep" && s != "discard") {
    throw std::invalid_argument(
        fmt::format("set_champion: iteration {} has status {}; a champion is a keep or discard iteration",
                    c.iteration_id, s));
  }
  it.run();
  auto previous = champion(c.suite, c.scope);

  conn_.prepare(fmt::format("INSERT INTO champions (suite, scope, iteration_id, score_ms, promoted_at) "
                            "VALUES (?, ?, ?, ?, {}) ON CONFLICT (suite, scope) DO UPDATE SET "
                            "iteration_id = excluded.iteration_id, score_ms = excluded.score_ms, "
                            "promoted_at = excluded.promoted_at",
                            kNowSql))
      .bind(1, c.suite)
      .bind(2, to_string(c.scope))
      .bind(3, c.iteration_id)
      .bind(4, c.score_ms)
      .run();
  conn_.prepare("INSERT INTO champion_history (suite, scope, iteration_id, score_ms, previous_iteration_id, "
                "previous_score_ms, aba_json, promoted_at) "
                "SELECT suite, scope, iteration_id, score_ms, ?, ?, ?, promoted_at FROM champions "
                "WHERE suite = ? AND scope = ?")
      .bind(1, previous ? std::optional(previous->iteration_id) : std::nullopt)
      .bind(2, previous ? std::optional(previous->score_ms) : std::nullopt)
      .bind(3, aba.dump())
      .bind(4, c.suite)
      .bind(5, to_string(c.scope))
      .run();
  tx.commit();
}

std::vector<ChampionPromotion> ExperimentDb::champion_history(const std::optional<std::string>& suite) {
  auto st = conn_.prepare(fmt::format(
      "SELECT {}, id, previous_iteration_id, previous_score_ms, aba_json FROM champion_history {} ORDER BY id",
      rows::kChampionColumns, suite ? "WHERE suite = ?" : ""));
  if (suite) st.bind(1, *suite);
  std::vector<ChampionPromotion> out;
  while (st.step()) {
    ChampionPromotion p;
    p.champion = rows::read_champion(st);
    p.id = st.column_int64(5);
    p.previous_iteration_id = st.column_opt_int64(6);
    p.previous_score_ms = st.column_opt_double(7);
    p.aba_json = st.column_text(8);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace attn
