#include "gpu/worker.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpu/evaluate.hpp"
#include "gpu/nvml.hpp"
#include "gpu/worker_protocol.hpp"

namespace attn {
namespace {
using nlohmann::json;

json status_only(ReplyStatus s) {
  json j = json::object();
  put_status(j, s);
  return j;
}

json rejected(const std::string& why) { return status_only({FailureKind::none, true, why}); }

}  // namespace

struct Worker::Gpu {
  Context ctx;
  CaseBuilder cases;
  DeviceValidator validator;
  Evaluator evaluator;
  Ceilings ceilings;  ///< of this GPU, for the floor check (docs/verification.md)
  Gpu(int device, const Compiler& compiler, const CaseBuilderOptions& opts)
      : ctx(device), cases(ctx, compiler, opts), validator(ctx, compiler, cases.templates_dir()),
        evaluator(ctx, host_validation() ? nullptr : &validator), ceilings(floor_check_ceilings(ctx.info().name)) {}
  /// ATTN_TUNER_HOST_VALIDATION=1: validate on the host (the path before the device validation; for A/B
  /// measurements and cross-checks, docs/gpu.md).
  static bool host_validation() {
    const char* e = std::getenv("ATTN_TUNER_HOST_VALIDATION");
    return e && std::string(e) == "1";
  }
};

Worker::Worker(WorkerOptions options)
    : options_(std::move(options)), compiler_(std::make_unique<Compiler>(options_.compiler)) {}

Worker::~Worker() = default;

Worker::Gpu& Worker::gpu() {
  if (!gpu_) gpu_ = std::make_unique<Gpu>(options_.device, *compiler_, options_.cases);
  return *gpu_;
}

json Worker::handle_line(const std::string& line, int& exit_code) {
  json request;
  try {
    request = json::parse(line);
  } catch (const json::exception& e) {
    return rejected(fmt::format("request is not JSON ({}): {}", e.what(), line.substr(0, 200)));
  }
  return handle(request, exit_code);
}

json Worker::handle(const json& request, int& exit_code) {
  exit_code = -1;
  std::string cmd;
  try {
    cmd = request_command(request);
  } catch (const std::exception& e) {
    return rejected(e.what());
  }
  try {
    if (cmd == "quit") {
      exit_code = kWorkerExitOk;
      return status_only({});
    }
    if (cmd == "hello") return hello();
    if (cmd == "prepare") return prepare(request);
    return eval(request, exit_code);
  } catch (const CudaError& e) {
    // Outside an evaluation (context creation, case building): a sticky error or a missing device makes
    // this worker useless; anything else (out of memory for a case) only refuses the request.
    if (e.sticky() || !gpu_ || e.result() == CUDA_ERROR_NO_DEVICE) {
      exit_code = kWorkerFaultExit;
      return status_only({FailureKind::fault, false, e.what()});
    }
    return rejected(e.what());
  } catch (const std::exception& e) {
    return rejected(e.what());
  }
}

json Worker::hello() {
  Gpu& g = gpu();
  const DeviceInfo& d = g.ctx.info();
  HelloResponse m;
  m.gpu_name = d.name;
  m.pci_bus_id = d.pci_bus_id;
  m.driver_version = d.driver_version;
  m.cc_major = d.cc_major;
  m.cc_minor = d.cc_minor;
  m.sm_count = d.sm_count;
  m.l2_bytes = d.l2_bytes;
  m.max_smem_per_block_optin = d.max_smem_per_block_optin;
  m.sm_clock_mhz = sm_clock_mhz(d.pci_bus_id);
  m.uuid = gpu_uuid(d.pci_bus_id);
  m.nvrtc_version = nvrtc_version_string();
  m.pid = int(::getpid());
  m.status.message = "ok";
  return to_json(m);
}

json Worker::prepare(const json& request) {
  const PrepareRequest req = prepare_request_from_json(request);
  const auto t0 = std::chrono::steady_clock::now();
  Gpu& g = gpu();
  PrepareResponse m;
  for (const auto& spec : req.cases) {
    const bool had = g.cases.contains(spec);
    const DeviceCase& c = g.cases.get(spec);
    if (!had) {
      ++m.built;
      spdlog::info("worker: built case {} in {:.0f} ms", spec.case_id, c.build_ms);
    }
  }
  if (req.evict) {
    std::vector<CaseSpec> keep = req.cases;
    keep.insert(keep.end(), suite_.begin(), suite_.end());
    if (const std::size_t freed = g.cases.retain(keep))
      spdlog::info("worker: freed {} cached case(s) of earlier seeds", freed);
  }
  suite_ = req.cases;
  m.cases = int(suite_.size());
  m.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  m.status.message = "ok";
  return to_json(m);
}

json Worker::eval(const json& request, int& exit_code) {
  const EvalRequest req = eval_request_from_json(request);
  if (suite_.empty()) return rejected("eval before prepare: no cases in the suite");
  std::ifstream f(req.cubin_path, std::ios::binary);
  if (!f) return rejected("cannot read cubin '" + req.cubin_path + "'");
  const std::vector<char> cubin((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  SpreadCriterion check_params(req.timing);  // throws std::invalid_argument on bad timing parameters

  Gpu& g = gpu();
  std::vector<const DeviceCase*> cases;
  for (const auto& spec : select_cases(suite_, req.case_ids)) cases.push_back(&g.cases.get(spec));
  EvalOptions opts;
  opts.validate = req.validate;
  opts.time = req.time;
  opts.timing = req.timing;
  opts.check_floor = req.check_floor;
  opts.check_fresh = req.check_fresh;
  opts.check_samples = req.check_samples;
  opts.ceilings = g.ceilings;
  const EvalResult r = g.evaluator.evaluate(cubin, req.kernel, cases, opts);
  spdlog::info("worker: eval {} -> {} ({:.0f} ms)", req.cubin_path, to_string(r.status), r.wall_ms);
  if (r.status == FailureKind::fault) exit_code = kWorkerFaultExit;
  return to_json(to_eval_response(r));
}

int run_worker_loop(std::istream& in, std::ostream& out, WorkerOptions options) {
  Worker worker(std::move(options));
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    int exit_code = -1;
    const json response = worker.handle_line(line, exit_code);
    out << response.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    out.flush();
    if (exit_code >= 0) return exit_code;
  }
  return kWorkerExitOk;
}

}  // namespace attn
