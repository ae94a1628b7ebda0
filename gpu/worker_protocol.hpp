// Messages between the daemon (WorkerClient) and `attn-tuner worker`: one JSON object per line, one
// response per request. Every response carries "status": "ok", "rejected" (the worker understood the line
// but refused the request: bad JSON, unknown command, missing file, no prepared suite; it keeps running)
// or a FailureKind name (fault: the worker exits after this response), and "message".
// docs/gpu.md lists every field.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/evaluate.hpp"
#include "gpu/failure.hpp"
#include "gpu/timing.hpp"
#include "workload/case_spec.hpp"

namespace attn {

/// The outcome part of every response.
struct ReplyStatus {
  FailureKind failure = FailureKind::none;
  bool rejected = false;
  std::string message;
  bool ok() const { return failure == FailureKind::none && !rejected; }
  /// "ok", "rejected" or to_string(failure).
  std::string name() const;
  bool operator==(const ReplyStatus&) const = default;
};
/// Reads "status" and "message"; throws std::invalid_argument when "status" is missing or unknown.
ReplyStatus reply_status_from_json(const nlohmann::json& j);
void put_status(nlohmann::json& j, const ReplyStatus& s);

// ---- hello ----
/// {"cmd":"hello"} -> the device the worker runs on.
struct HelloResponse {
  ReplyStatus status;
  std::string gpu_name;
  std::string pci_bus_id;
  int driver_version = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  int max_smem_per_block_optin = 0;
  unsigned sm_clock_mhz = 0;
  std::string nvrtc_version;
  int pid = 0;
  std::string uuid;  ///< "GPU-..." from NVML; optional in JSON ("" when unknown)
  bool operator==(const HelloResponse&) const = default;
};
nlohmann::json to_json(const HelloResponse& m);
HelloResponse hello_response_from_json(const nlohmann::json& j);

// ---- prepare ----
/// {"cmd":"prepare","cases":[CaseSpec...],"evict":false}: builds (or finds cached) every case; they become
/// the suite that later evals run on, in this order. "evict" (optional, default false): afterwards free
/// every cached case that is in neither this suite nor the one prepared before it, so rotating seeds
/// all night does not pile up device memory while a tuning and a held-out suite alternate cheaply.
struct PrepareRequest {
  std::vector<CaseSpec> cases;
  bool evict = false;
  bool operator==(const PrepareRequest&) const = default;
};
struct PrepareResponse {
  ReplyStatus status;
  int cases = 0;      ///< in the suite now
  int built = 0;      ///< newly built by this request (the rest were cached)
  double ms = 0;      ///< wall time of the request
  bool operator==(const PrepareResponse&) const = default;
};
nlohmann::json to_json(const PrepareRequest& m);
PrepareRequest prepare_request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const PrepareResponse& m);
PrepareResponse prepare_response_from_json(const nlohmann::json& j);

// ---- eval ----
/// {"cmd":"eval","cubin":path,"kernel":name,"timing":{...},"validate":true,"time":true,"cases":[id...]}
/// "cases" (optional, since the fidelity ladder) names a subset of the prepared suite by case_id, to
/// evaluate in the suite's order; absent or empty = every prepared case (what older daemons send).
/// "check_floor", "check_fresh", "check_samples" (optional, default true; written only when false):
/// EvalOptions' switches of the verification (docs/verification.md), for `bench` and tests.
struct EvalRequest {
  std::string cubin_path;
  std::string kernel;
  TimingParams timing;
  bool validate = true;
  bool time = true;
  std::vector<std::string> case_ids{};
  bool check_floor = true;
  bool check_fresh = true;
  bool check_samples = true;
  bool operator==(const EvalRequest&) const = default;
};
/// status: ok | wrong_result | inconsistent | below_floor | device_limit | compile | fault (| rejected); the
/// rest as EvalResult.
struct EvalResponse {
  ReplyStatus status;
  LaunchInfo launch;
  std::vector<CaseResult> cases;
  double score_ms = 0;  ///< NaN (JSON null) when nothing was timed
  std::map<Family, double> family_median_ms;
  double wall_ms = 0;
};
/// Writes "cases" only when case_ids is non-empty, so a whole-suite request is byte-for-byte what it was.
nlohmann::json to_json(const EvalRequest& m);
/// Throws std::invalid_argument when "cases" is not a list of strings or repeats a case_id.
EvalRequest eval_request_from_json(const nlohmann::json& j);
/// The prepared cases an eval request selects, in suite order: every case when `case_ids` is empty.
/// Throws std::invalid_argument naming the first case_id that is not prepared.
std::vector<CaseSpec> select_cases(const std::vector<CaseSpec>& suite, const std::vector<std::string>& case_ids);
nlohmann::json to_json(const EvalResponse& m);
EvalResponse eval_response_from_json(const nlohmann::json& j);
EvalResponse to_eval_response(const EvalResult& r);

nlohmann::json to_json(const TimingParams& t);
/// Missing fields keep their defaults; throws std::invalid_argument on a mistyped field.
TimingParams timing_params_from_json(const nlohmann::json& j);
nlohmann::json to_json(const CaseResult& c);
CaseResult case_result_from_json(const nlohmann::json& j);

/// The "cmd" of a request; throws std::invalid_argument when absent or not one of hello, prepare, eval,
/// quit.
std::string request_command(const nlohmann::json& j);

}  // namespace attn
