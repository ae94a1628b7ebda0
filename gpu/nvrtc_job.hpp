// One NVRTC run as data: the bytes it compiles (source and headers, read once by Compiler::compile), its options,
// and what NVRTC gave back. The same job runs in the daemon's process or in a compile worker
// (`attn-tuner compile-worker`, gpu/compile_procs.hpp), which reads no file: what is hashed is what is compiled.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace attn {

/// What NVRTC compiles: `source` under the program name `name` (the template's path, as NVRTC prints it in
/// errors), with `headers` as (name as included, text) pairs given to nvrtcCreateProgram, and `options`.
/// Two headers of the same name must have the same text (run_nvrtc refuses the job otherwise).
struct NvrtcJob {
  std::string name;
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> options;
  bool operator==(const NvrtcJob&) const = default;
};

/// What NVRTC gave back. rc: the nvrtcResult of nvrtcCompileProgram (0 = NVRTC_SUCCESS), or of
/// nvrtcCreateProgram when that failed; log: the program log (a line naming the problem when NVRTC did not
/// run); cubin: empty unless rc == 0 and NVRTC produced one; ms: wall time of the compile.
struct NvrtcOutput {
  int rc = -1;
  std::string log;
  std::vector<char> cubin;
  double ms = 0;
  bool operator==(const NvrtcOutput&) const = default;
};

/// The nvrtcResult value of a compile error in the source (NVRTC_ERROR_COMPILATION): deterministic, cacheable.
int nvrtc_compilation_error_code();
/// nvrtcGetErrorString(rc).
std::string nvrtc_error_name(int rc);

/// Runs NVRTC on `job` in this process (it reads no file of the job's: the headers are given in memory; CUDA's
/// own headers come from the -I options). Never throws but std::bad_alloc. Two headers of one name with
/// different texts give rc = NVRTC_ERROR_INVALID_INPUT and a log naming the header.
NvrtcOutput run_nvrtc(const NvrtcJob& job);

/// RFC 4648 base64 (with padding) of `bytes`, and back; base64_decode throws std::invalid_argument on a
/// character outside the alphabet or a length that is not a multiple of 4.
std::string base64_encode(std::string_view bytes);
std::vector<char> base64_decode(std::string_view text);

/// The compile worker's request and answer lines (docs/gpu.md, "Compile workers"):
/// {"cmd":"compile","name":..,"source":..,"headers":[[name,text],..],"options":[..]} and
/// {"status":"ok","message":"","rc":0,"log":..,"cubin":base64,"ms":..}. The _from_json functions throw
/// std::invalid_argument (or nlohmann's exceptions) on a missing or mistyped field.
nlohmann::json to_json(const NvrtcJob& job);
NvrtcJob nvrtc_job_from_json(const nlohmann::json& j);
nlohmann::json to_json(const NvrtcOutput& out);
NvrtcOutput nvrtc_output_from_json(const nlohmann::json& j);

}  // namespace attn
