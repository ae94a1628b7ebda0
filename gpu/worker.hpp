// The isolated GPU worker behind `attn-tuner worker`: reads one JSON request per line, writes one JSON
// response per line (gpu/worker_protocol.hpp). It owns the CUDA context, the built cases and the timing
// buffers; after a fault (a sticky CUDA error) it answers, then exits with kWorkerFaultExit.
#pragma once
#include <istream>
#include <memory>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "gpu/case_data.hpp"
#include "gpu/compiler.hpp"

namespace attn {

/// Exit codes of the worker process.
inline constexpr int kWorkerExitOk = 0;     ///< after "quit" or end of input
inline constexpr int kWorkerFaultExit = 3;  ///< after answering a request that ended in a fault

struct WorkerOptions {
  int device = 0;              ///< CUDA device ordinal
  CompilerOptions compiler;    ///< for the helper kernels (fill_normal, reference_fp32)
  CaseBuilderOptions cases;
};

/// One worker's state. The GPU is touched only on the first request that needs it (hello, prepare,
/// eval), so a malformed request is answered "rejected" even where no GPU is present.
class Worker {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker();

  /// Answers one request. Sets `exit_code` >= 0 when the worker must exit after writing the answer
  /// (quit: 0; fault: kWorkerFaultExit). Never throws: every problem becomes the response's status.
  nlohmann::json handle(const nlohmann::json& request, int& exit_code);
  /// Parses `line` and answers it (a line that is not JSON is "rejected").
  nlohmann::json handle_line(const std::string& line, int& exit_code);

 private:
  struct Gpu;
  WorkerOptions options_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<Gpu> gpu_;
  std::vector<CaseSpec> suite_;

  Gpu& gpu();
  nlohmann::json hello();
  nlohmann::json prepare(const nlohmann::json& request);
  nlohmann::json eval(const nlohmann::json& request, int& exit_code);
};

/// The request loop: one response line per request line, flushed; blank lines are ignored.
/// Returns the exit code (0 at EOF or quit, kWorkerFaultExit after a fault).
int run_worker_loop(std::istream& in, std::ostream& out, WorkerOptions options);

}  // namespace attn
