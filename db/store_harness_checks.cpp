// ExperimentDb: harness checks (runs of the official challenge harness on an exported submission,
// `export --harness`, export/harness_check.hpp).
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/store.hpp"

namespace attn {

namespace {

constexpr const char* kHarnessColumns =
    "id, ran_at, suite, export_suite, root_seed, valid, score_ms, family_ms_json, failure_reason, harness_commit, "
    "harness_args, submission_dir, iterations_json, wall_s";

/// `text` re-serialised compactly; std::invalid_argument naming `what` when it does not parse.
std::string canonical_json(const std::string& text, const char* what) {
  try {
    return nlohmann::json::parse(text).dump();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("add_harness_check: {} does not parse as JSON: {}", what, e.what()));
  }
}

}  // namespace

std::int64_t ExperimentDb::add_harness_check(const HarnessCheckRecord& h) {
  require_writable("add_harness_check");
  if (h.suite.empty()) throw std::invalid_argument("add_harness_check: empty suite");
  if (h.submission_dir.empty()) throw std::invalid_argument("add_harness_check: empty submission dir");
  if ((h.score_ms && !std::isfinite(*h.score_ms)) || (h.wall_s && !std::isfinite(*h.wall_s)))
    throw std::invalid_argument("add_harness_check: non-finite score or wall time");
  const std::string family = canonical_json(h.family_ms_json, "family_ms_json");
  const std::string args = canonical_json(h.harness_args, "harness_args");
  const std::string iterations = canonical_json(h.iterations_json, "iterations_json");
  sqlite::Transaction tx(conn_);
  auto ins = conn_.prepare(
      "INSERT INTO harness_checks (suite, export_suite, root_seed, valid, score_ms, family_ms_json, failure_reason, "
      "harness_commit, harness_args, submission_dir, iterations_json, wall_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  ins.bind(1, h.suite)
      .bind(2, h.export_suite)
      .bind(3, h.root_seed)
      .bind(4, h.valid)
      .bind(5, h.score_ms)
      .bind(6, family)
      .bind(7, h.failure_reason)
      .bind(8, h.harness_commit)
      .bind(9, args)
      .bind(10, h.submission_dir)
      .bind(11, iterations)
      .bind(12, h.wall_s);
  ins.run();
  const std::int64_t id = conn_.last_insert_rowid();
  tx.commit();
  return id;
}

std::vector<HarnessCheckRecord> ExperimentDb::harness_checks() {
  {  // A version-6 file opened read-only has no such table yet (db/schema.hpp, readable_without).
    auto exists = conn_.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'harness_checks'");
    exists.step();
    if (exists.column_int64(0) == 0) return {};
  }
  auto st = conn_.prepare(fmt::format("SELECT {} FROM harness_checks ORDER BY id", kHarnessColumns));
  std::vector<HarnessCheckRecord> out;
  while (st.step()) {
    HarnessCheckRecord h;
    h.id = st.column_int64(0);
    h.ran_at = st.column_text(1);
    h.suite = st.column_text(2);
    h.export_suite = st.column_text(3);
    h.root_seed = st.column_opt_int64(4);
    h.valid = st.column_int64(5) != 0;
    h.score_ms = st.column_opt_double(6);
    h.family_ms_json = st.column_text(7);
    h.failure_reason = st.column_opt_text(8);
    h.harness_commit = st.column_opt_text(9);
    h.harness_args = st.column_text(10);
    h.submission_dir = st.column_text(11);
    h.iterations_json = st.column_text(12);
    h.wall_s = st.column_opt_double(13);
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace attn
