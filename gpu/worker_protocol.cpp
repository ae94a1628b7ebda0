#include "gpu/worker_protocol.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

namespace attn {
namespace {
using nlohmann::json;

// Non-finite doubles are not JSON numbers: write them as "inf", "-inf", "nan".
json num(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

double get_num(const json& j, const char* key) {
  if (!j.contains(key)) throw std::invalid_argument(fmt::format("missing field '{}'", key));
  const json& v = j.at(key);
  if (v.is_number()) return v.get<double>();
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  throw std::invalid_argument(fmt::format("field '{}' is not a number: {}", key, v.dump()));
}

template <class T>
T get(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) throw std::invalid_argument(fmt::format("missing field '{}'", key));
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann's get<int>() casts any number: a float beyond int is undefined behaviour, a large integer
    // wraps. So an integer field must be a JSON integer within T's range (found by fuzz/fuzz_protocol).
    const json& v = j.at(key);
    const bool fits = v.is_number_unsigned() ? std::in_range<T>(v.get<std::uint64_t>())
                      : v.is_number_integer() ? std::in_range<T>(v.get<std::int64_t>())
                                              : false;
    if (!fits)
      throw std::invalid_argument(fmt::format("field '{}' must be an integer in [{}, {}]: {}", key,
                                              std::numeric_limits<T>::min(), std::numeric_limits<T>::max(),
                                              v.dump()));
    return v.is_number_unsigned() ? T(v.get<std::uint64_t>()) : T(v.get<std::int64_t>());
  }
  try {
    return j.at(key).get<T>();
  } catch (const json::exception& e) {
    throw std::invalid_argument(fmt::format("field '{}' has the wrong type: {}", key, j.at(key).dump()));
  }
}

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  if (!j.contains(key)) return fallback;
  return get<T>(j, key);
}

}  // namespace

std::string ReplyStatus::name() const {
  if (rejected) return "rejected";
  if (failure == FailureKind::none) return "ok";
  return to_string(failure);
}

void put_status(json& j, const ReplyStatus& s) {
  j["status"] = s.name();
  j["message"] = s.message;
}

ReplyStatus reply_status_from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("response is not a JSON object");
  const auto name = get<std::string>(j, "status");
  ReplyStatus s;
  s.message = get_or<std::string>(j, "message", "");
  if (name == "ok") return s;
  if (name == "rejected") {
    s.rejected = true;
    return s;
  }
  const auto kind = failure_kind_from_string(name);
  if (!kind || *kind == FailureKind::none) throw std::invalid_argument("unknown response status '" + name + "'");
  s.failure = *kind;
  return s;
}

// ---- hello ----
json to_json(const HelloResponse& m) {
  json j = {{"gpu_name", m.gpu_name},
            {"pci_bus_id", m.pci_bus_id},
            {"driver_version", m.driver_version},
            {"cc_major", m.cc_major},
            {"cc_minor", m.cc_minor},
            {"sm_count", m.sm_count},
            {"l2_bytes", m.l2_bytes},
            {"max_smem_per_block_optin", m.max_smem_per_block_optin},
            {"sm_clock_mhz", m.sm_clock_mhz},
            {"nvrtc_version", m.nvrtc_version},
            {"pid", m.pid}};
  if (!m.uuid.empty()) j["uuid"] = m.uuid;
  put_status(j, m.status);
  return j;
}

HelloResponse hello_response_from_json(const json& j) {
  HelloResponse m;
  m.status = reply_status_from_json(j);
  if (!m.status.ok()) return m;
  m.gpu_name = get<std::string>(j, "gpu_name");
  m.pci_bus_id = get<std::string>(j, "pci_bus_id");
  m.driver_version = get<int>(j, "driver_version");
  m.cc_major = get<int>(j, "cc_major");
  m.cc_minor = get<int>(j, "cc_minor");
  m.sm_count = get<int>(j, "sm_count");
  m.l2_bytes = get<std::int64_t>(j, "l2_bytes");
  m.max_smem_per_block_optin = get<int>(j, "max_smem_per_block_optin");
  m.sm_clock_mhz = get<unsigned>(j, "sm_clock_mhz");
  m.nvrtc_version = get<std::string>(j, "nvrtc_version");
  m.pid = get<int>(j, "pid");
  m.uuid = get_or<std::string>(j, "uuid", "");
  return m;
}

// ---- prepare ----
json to_json(const PrepareRequest& m) {
  json cases = json::array();
  for (const auto& c : m.cases) cases.push_back(case_to_json(c));
  json j = {{"cmd", "prepare"}, {"cases", cases}};
  if (m.evict) j["evict"] = true;
  return j;
}

PrepareRequest prepare_request_from_json(const json& j) {
  if (!j.contains("cases") || !j.at("cases").is_array())
    throw std::invalid_argument("prepare needs \"cases\": a list of CaseSpec objects");
  PrepareRequest m;
  for (const auto& c : j.at("cases")) m.cases.push_back(case_from_json(c));
  m.evict = get_or<bool>(j, "evict", false);
  return m;
}

json to_json(const PrepareResponse& m) {
  json j = {{"cases", m.cases}, {"built", m.built}, {"ms", num(m.ms)}};
  put_status(j, m.status);
  return j;
}

PrepareResponse prepare_response_from_json(const json& j) {
  PrepareResponse m;
  m.status = reply_status_from_json(j);
  if (!m.status.ok()) return m;
  m.cases = get<int>(j, "cases");
  m.built = get<int>(j, "built");
  m.ms = get_num(j, "ms");
  return m;
}

// ---- timing, case results ----
json to_json(const TimingParams& t) {
  return {{"warmup", t.warmup},           {"min_samples", t.min_samples},
          {"max_samples", t.max_samples}, {"max_seconds", t.max_seconds},
          {"target_spread", t.target_spread}};
}

TimingParams timing_params_from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("\"timing\" must be an object");
  TimingParams t;
  t.warmup = get_or<int>(j, "warmup", t.warmup);
  t.min_samples = get_or<int>(j, "min_samples", t.min_samples);
  t.max_samples = get_or<int>(j, "max_samples", t.max_samples);
  t.max_seconds = get_or<double>(j, "max_seconds", t.max_seconds);
  t.target_spread = get_or<double>(j, "target_spread", t.target_spread);
  return t;
}

json to_json(const CaseResult& c) {
  json j = {{"case_id", c.case_id},
            {"family", family_name(c.family)},
            {"median_ms", num(c.median_ms)},
            {"spread", num(c.spread)},
            {"samples", c.samples},
            {"sm_clock_mhz", c.sm_clock_mhz},
            {"o_max_abs_diff", num(c.o_max_abs_diff)},
            {"lse_max_abs_diff", num(c.lse_max_abs_diff)},
            {"passed", c.passed},
            {"validated", c.validated},
            {"timed", c.timed}};
  // The verification's figures, only where it ran (so older readers and the fake worker need nothing new).
  if (c.floor_ms != 0) j["floor_ms"] = num(c.floor_ms);
  if (c.checked_samples != 0) j["checked_samples"] = c.checked_samples;
  if (c.fresh_ms != 0) {
    j["fresh_ms"] = num(c.fresh_ms);
    j["fresh_o_max_abs_diff"] = num(c.fresh_o_max_abs_diff);
    j["fresh_lse_max_abs_diff"] = num(c.fresh_lse_max_abs_diff);
  }
  return j;
}

CaseResult case_result_from_json(const json& j) {
  CaseResult c;
  c.case_id = get<std::string>(j, "case_id");
  c.family = parse_family(get<std::string>(j, "family"));
  c.median_ms = get_num(j, "median_ms");
  c.spread = get_num(j, "spread");
  c.samples = get<int>(j, "samples");
  c.sm_clock_mhz = get<unsigned>(j, "sm_clock_mhz");
  c.o_max_abs_diff = get_num(j, "o_max_abs_diff");
  c.lse_max_abs_diff = get_num(j, "lse_max_abs_diff");
  c.passed = get<bool>(j, "passed");
  c.validated = get<bool>(j, "validated");
  c.timed = get<bool>(j, "timed");
  if (j.contains("floor_ms")) c.floor_ms = get_num(j, "floor_ms");
  if (j.contains("checked_samples")) c.checked_samples = get<int>(j, "checked_samples");
  if (j.contains("fresh_ms")) {
    c.fresh_ms = get_num(j, "fresh_ms");
    c.fresh_o_max_abs_diff = get_num(j, "fresh_o_max_abs_diff");
    c.fresh_lse_max_abs_diff = get_num(j, "fresh_lse_max_abs_diff");
  }
  return c;
}

// ---- eval ----
json to_json(const EvalRequest& m) {
  json j = {{"cmd", "eval"},
            {"cubin", m.cubin_path},
            {"kernel", m.kernel},
            {"timing", to_json(m.timing)},
            {"validate", m.validate},
            {"time", m.time}};
  if (!m.case_ids.empty()) j["cases"] = m.case_ids;
  if (!m.check_floor) j["check_floor"] = false;
  if (!m.check_fresh) j["check_fresh"] = false;
  if (!m.check_samples) j["check_samples"] = false;
  return j;
}

EvalRequest eval_request_from_json(const json& j) {
  EvalRequest m;
  m.cubin_path = get<std::string>(j, "cubin");
  m.kernel = get<std::string>(j, "kernel");
  if (j.contains("timing")) m.timing = timing_params_from_json(j.at("timing"));
  m.validate = get_or<bool>(j, "validate", true);
  m.time = get_or<bool>(j, "time", true);
  m.check_floor = get_or<bool>(j, "check_floor", true);
  m.check_fresh = get_or<bool>(j, "check_fresh", true);
  m.check_samples = get_or<bool>(j, "check_samples", true);
  if (j.contains("cases")) {
    const json& ids = j.at("cases");
    if (!ids.is_array()) throw std::invalid_argument("field 'cases' must be a list of case_id strings");
    std::set<std::string> seen;
    for (const auto& id : ids) {
      if (!id.is_string()) throw std::invalid_argument("field 'cases' must be a list of case_id strings: " + id.dump());
      if (!seen.insert(id.get<std::string>()).second)
        throw std::invalid_argument("field 'cases' names case '" + id.get<std::string>() + "' twice");
      m.case_ids.push_back(id.get<std::string>());
    }
  }
  return m;
}

std::vector<CaseSpec> select_cases(const std::vector<CaseSpec>& suite, const std::vector<std::string>& case_ids) {
  if (case_ids.empty()) return suite;
  for (const auto& id : case_ids)
    if (std::none_of(suite.begin(), suite.end(), [&](const CaseSpec& c) { return c.case_id == id; }))
      throw std::invalid_argument("eval: case '" + id + "' is not in the prepared suite");
  std::vector<CaseSpec> out;
  for (const auto& c : suite)
    if (std::find(case_ids.begin(), case_ids.end(), c.case_id) != case_ids.end()) out.push_back(c);
  return out;
}

json to_json(const EvalResponse& m) {
  json cases = json::array();
  for (const auto& c : m.cases) cases.push_back(to_json(c));
  json fam = json::object();
  for (const auto& [f, v] : m.family_median_ms) fam[family_name(f)] = num(v);
  json j = {{"launch",
             {{"threads", m.launch.threads},
              {"smem_bytes", m.launch.smem_bytes},
              {"block_m", m.launch.block_m},
              {"grid_mode", m.launch.grid_mode},
              {"tma_rows", {m.launch.tma_q_rows, m.launch.tma_kv_rows, m.launch.tma_o_rows}},
              {"ctas_per_sm", m.launch.ctas_per_sm}}},
            {"cases", cases},
            {"score_ms", num(m.score_ms)},
            {"family_median_ms", fam},
            {"wall_ms", num(m.wall_ms)}};
  put_status(j, m.status);
  return j;
}

EvalResponse eval_response_from_json(const json& j) {
  EvalResponse m;
  m.status = reply_status_from_json(j);
  if (m.status.rejected) return m;
  if (j.contains("launch")) {
    const json& l = j.at("launch");
    m.launch = {get<int>(l, "threads"), get<int>(l, "smem_bytes"), get<int>(l, "block_m"), get<int>(l, "grid_mode")};
    if (l.contains("tma_rows")) {  // generation-2 fields (absent in older workers' replies)
      const json& r = l.at("tma_rows");
      if (!r.is_array() || r.size() != 3 || !r[0].is_number_integer() || !r[1].is_number_integer() ||
          !r[2].is_number_integer())
        throw std::invalid_argument("field 'tma_rows' is not a list of 3 integers");
      m.launch.tma_q_rows = r[0].get<int>();
      m.launch.tma_kv_rows = r[1].get<int>();
      m.launch.tma_o_rows = r[2].get<int>();
    }
    if (l.contains("ctas_per_sm")) m.launch.ctas_per_sm = get<int>(l, "ctas_per_sm");
  }
  if (j.contains("cases")) {
    if (!j.at("cases").is_array()) throw std::invalid_argument("field 'cases' is not a list");
    for (const auto& c : j.at("cases")) m.cases.push_back(case_result_from_json(c));
  }
  m.score_ms = j.contains("score_ms") ? get_num(j, "score_ms") : std::numeric_limits<double>::quiet_NaN();
  if (j.contains("family_median_ms"))
    for (const auto& [name, v] : j.at("family_median_ms").items()) {
      json one = {{"v", v}};
      m.family_median_ms[parse_family(name)] = get_num(one, "v");
    }
  m.wall_ms = j.contains("wall_ms") ? get_num(j, "wall_ms") : 0;
  return m;
}

EvalResponse to_eval_response(const EvalResult& r) {
  EvalResponse m;
  m.status.failure = r.status;
  m.status.message = r.message;
  m.launch = r.launch;
  m.cases = r.cases;
  m.score_ms = r.score_ms;
  m.family_median_ms = r.family_median_ms;
  m.wall_ms = r.wall_ms;
  return m;
}

std::string request_command(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("request is not a JSON object");
  const auto cmd = get<std::string>(j, "cmd");
  if (cmd != "hello" && cmd != "prepare" && cmd != "eval" && cmd != "quit")
    throw std::invalid_argument("unknown cmd '" + cmd + "' (expected hello, prepare, eval or quit)");
  return cmd;
}

}  // namespace attn
