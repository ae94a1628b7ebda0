// Runs a trace build (kernels_templates/blocks/trace.cuh, ATTN_TRACE=1) of a template on one case: times
// it and the same config built without the trace (so the trace's own cost is shown), launches the trace
// build once more with the buffer zeroed, reads the buffer back and checks the traced outputs against the
// fp32 reference. In-process: a diagnostic for one config, not the daemon's isolated evaluation.
#pragma once
#include <string>
#include <vector>

#include "gpu/attn_kernel.hpp"
#include "gpu/case_data.hpp"
#include "gpu/driver.hpp"
#include "gpu/trace.hpp"
#include "workload/validation.hpp"

namespace attn {

/// A config compiled twice: with ATTN_TRACE=1 (traced) and without (plain; empty: not timed).
struct TraceRequest {
  std::vector<char> traced_cubin, plain_cubin;
  std::string kernel;
  CaseSpec spec;
  int warmup = 5;   ///< untimed launches before each build's timed ones
  int launches = 30;  ///< timed launches per build (back to back, L2 warm; median reported)
};

struct TraceResult {
  TraceLayout layout;
  std::vector<TraceRow> rows;
  LaunchInfo launch;
  unsigned grid = 0;         ///< CTAs launched (the persistent grid or the ABI grid's x * y * z)
  double traced_us = 0;      ///< median launch time of the trace build
  double plain_us = 0;       ///< the same without the trace (0 when not timed)
  ValidationResult outputs;  ///< the trace build's o and lse against the reference
};

/// Throws std::invalid_argument when the traced cubin has no attn_trace_info (not a trace build), and the
/// errors of load_attn_kernel, PreparedLaunch and decode_trace; CudaError on a device error.
TraceResult run_trace(CaseBuilder& cases, const TraceRequest& req);

}  // namespace attn
