#include "db/store_rows.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace attn::db::rows {

std::pair<std::string, std::string> render_params(const std::string& names_json, const std::string& values_json) {
  // A name list is shared by many rows: parsed once per thread.
  thread_local std::unordered_map<std::string, std::vector<std::string>> names_cache;
  auto found = names_cache.find(names_json);
  if (found == names_cache.end()) {
    if (names_cache.size() > 1024) names_cache.clear();
    found = names_cache.emplace(names_json, nlohmann::json::parse(names_json).get<std::vector<std::string>>()).first;
  }
  const auto& names = found->second;
  const nlohmann::json values = nlohmann::json::parse(values_json);
  if (!values.is_array() || values.size() != names.size())
    throw std::runtime_error("configs: " + values_json + " does not match the names " + names_json);
  std::string pj = "{", compact;
  for (std::size_t k = 0; k < names.size(); ++k) {
    const nlohmann::json& v = values[k];
    if (k) {
      pj += ',';
      compact += ',';
    }
    pj += nlohmann::json(names[k]).dump();
    pj += ':';
    pj += v.dump();
    compact += names[k];
    compact += '=';
    if (v.is_string()) compact += v.get<std::string>();
    else if (v.is_boolean()) compact += v.get<bool>() ? "1" : "0";
    else compact += v.dump();
  }
  return {pj + "}", compact};
}

RunRecord read_run(const sqlite::Statement& st) {
  RunRecord r;
  r.id = st.column_int64(0);
  r.started_at = st.column_text(1);
  r.ended_at = st.column_text(2);
  r.suite = st.column_text(3);
  r.suite_json = st.column_text(4);
  r.strategy = st.column_text(5);
  r.templates = nlohmann::json::parse(st.column_text(6)).get<std::vector<std::string>>();
  r.gpu_name = st.column_text(7);
  r.driver = st.column_text(8);
  r.sm_clock_mhz = st.column_opt_int64(9);
  r.git_commit = st.column_text(10);
  r.host = st.column_text(11);
  r.status = parse_run_status(st.column_text(12));
  r.stop_reason = st.column_text(13);
  return r;
}

VariantRecord read_variant(const sqlite::Statement& st) {
  VariantRecord v;
  v.id = st.column_int64(0);
  v.template_name = st.column_text(1);
  std::tie(v.params_json, v.params) = render_params(st.column_text(2), st.column_text(3));
  v.content_hash = st.column_text(4);
  v.compile_ok = st.column_int64(5) != 0;
  v.compile_ms = st.column_opt_double(6);
  v.compile_log = st.column_text(7);
  v.registers = st.column_opt_int64(8);
  v.smem_bytes = st.column_opt_int64(9);
  v.spill_bytes = st.column_opt_int64(10);
  v.cubin_path = st.column_text(11);
  v.created_at = st.column_text(12);
  v.cubin_hash = st.column_text(13);
  return v;
}

IterationRecord read_iteration(const sqlite::Statement& st) {
  IterationRecord it;
  it.iter = st.column_int64(0);
  it.run_id = st.column_int64(1);
  it.variant_id = st.column_opt_int64(2);
  it.suite = st.column_text(3);
  it.template_name = st.column_text(4);
  std::tie(it.params_json, it.params) = render_params(st.column_text(5), st.column_text(6));
  it.status = parse_iteration_status(st.column_text(7));
  it.failure_kind = parse_failure_kind(st.column_text(8));
  it.geomean_ms = st.column_opt_double(9);
  it.delta_ms = st.column_opt_double(10);
  it.window_ms = st.column_opt_double(11);
  it.global_ms = st.column_opt_double(12);
  it.retrieval_ms = st.column_opt_double(13);
  it.description = st.column_text(14);
  it.started_at = st.column_text(15);
  it.finished_at = st.column_text(16);
  it.gpu_ms = st.column_opt_double(17);
  it.compile_ms = st.column_opt_double(18);
  it.fidelity = parse_fidelity(st.column_text(19));
  it.screen_ms = st.column_opt_double(20);
  it.root_seed = st.column_opt_int64(21);
  it.proposal_id = st.column_opt_int64(22);
  it.gpu_index = st.column_opt_int64(23);
  it.gpu_uuid = st.column_opt_text(24).value_or("");
  it.sm_clock_mhz = st.column_opt_int64(25);
  return it;
}

ProposalRecord read_proposal(const sqlite::Statement& st) {
  ProposalRecord p;
  p.id = st.column_int64(0);
  p.run_id = st.column_int64(1);
  p.command = st.column_text(2);
  p.started_at = st.column_text(3);
  p.finished_at = st.column_text(4);
  p.parent_template = st.column_text(5);
  p.parent_iteration_id = st.column_opt_int64(6);
  p.template_name = st.column_text(7);
  p.status = parse_proposal_status(st.column_text(8));
  p.reason = st.column_text(9);
  p.description = st.column_text(10);
  p.source = st.column_opt_text(11);
  p.space_json = st.column_opt_text(12);
  p.headers_json = st.column_text(13);
  p.diff = st.column_text(14);
  p.exit_status = st.column_text(15);
  p.proposer_ms = st.column_opt_double(16);
  p.output = st.column_text(17);
  return p;
}

CaseResultRecord read_case(const sqlite::Statement& st, int first) {
  CaseResultRecord c;
  c.case_id = st.column_text(first);
  c.family = parse_family(st.column_text(first + 1));
  c.median_ms = st.column_opt_double(first + 2);
  c.spread = st.column_opt_double(first + 3);
  c.samples = st.column_int64(first + 4);
  c.sm_clock_mhz = st.column_opt_int64(first + 5);
  c.o_max_abs_diff = st.column_opt_double(first + 6);
  c.lse_max_abs_diff = st.column_opt_double(first + 7);
  c.passed = st.column_int64(first + 8) != 0;
  return c;
}

ChampionRecord read_champion(const sqlite::Statement& st, int first) {
  ChampionRecord c;
  c.suite = st.column_text(first);
  c.scope = parse_champion_scope(st.column_text(first + 1));
  c.iteration_id = st.column_int64(first + 2);
  c.score_ms = st.column_double(first + 3);
  c.promoted_at = st.column_text(first + 4);
  return c;
}

HoldoutCheckRecord read_holdout(const sqlite::Statement& st) {
  HoldoutCheckRecord h;
  h.id = st.column_int64(0);
  h.run_id = st.column_int64(1);
  h.iteration_id = st.column_int64(2);
  h.suite = st.column_text(3);
  h.root_seed = st.column_int64(4);
  h.role = parse_holdout_role(st.column_text(5));
  h.ok = st.column_int64(6) != 0;
  h.score_ms = st.column_opt_double(7);
  h.window_ms = st.column_opt_double(8);
  h.global_ms = st.column_opt_double(9);
  h.retrieval_ms = st.column_opt_double(10);
  h.tuned_ms = st.column_opt_double(11);
  h.verdict = st.column_text(12);
  h.cases_json = st.column_text(13);
  h.checked_at = st.column_text(14);
  return h;
}

}  // namespace attn::db::rows
