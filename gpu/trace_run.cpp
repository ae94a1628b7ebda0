#include "gpu/trace_run.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "gpu/driver_api.hpp"

namespace attn {
namespace {

/// Median of `launches` timed launches after `warmup` untimed ones, microseconds.
double median_launch_us(const PreparedLaunch& launch, const Stream& stream, int warmup, int launches) {
  for (int i = 0; i < warmup; ++i) launch.enqueue(stream.get());
  std::vector<double> us;
  EventPair ev;
  for (int i = 0; i < launches; ++i) {
    ev.record_start(stream.get());
    launch.enqueue(stream.get());
    ev.record_stop(stream.get());
    us.push_back(ev.elapsed_ms() * 1e3);
  }
  if (us.empty()) return 0;
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

}  // namespace

TraceResult run_trace(CaseBuilder& cases, const TraceRequest& req) {
  const DeviceCase& c = cases.get(req.spec);
  Stream stream;
  TraceResult out;
  if (!req.plain_cubin.empty()) {
    const Module plain(req.plain_cubin);
    const AttnKernel k = load_attn_kernel(plain, req.kernel);
    const PreparedLaunch launch(k, c.args());
    out.plain_us = median_launch_us(launch, stream, req.warmup, req.launches);
    stream.synchronize();
  }
  const Module traced(req.traced_cubin);
  const AttnKernel k = load_attn_kernel(traced, req.kernel);
  out.launch = k.info;
  std::vector<std::uint8_t> info_bytes;
  try {
    info_bytes = traced.read_global("attn_trace_info");
  } catch (const CudaError&) {
    throw std::invalid_argument("the cubin has no attn_trace_info: not a trace build (compile with ATTN_TRACE=1 "
                                "a template that includes blocks/trace.cuh)");
  }
  if (info_bytes.size() != 4 * sizeof(int)) throw std::invalid_argument("attn_trace_info is not 4 ints");
  int info[4];
  std::memcpy(info, info_bytes.data(), sizeof info);
  out.layout = {info[0], info[1], info[2], info[3]};

  const PreparedLaunch launch(k, c.args());
  out.grid = launch.ctas();
  out.traced_us = median_launch_us(launch, stream, req.warmup, req.launches);
  stream.synchronize();
  const auto [trace_ptr, trace_bytes] = traced.global("attn_trace");
  // On the launch's stream: a plain cuMemsetD8 runs on the legacy stream, which this non-blocking stream
  // does not wait for, and would overwrite what the kernel has already written.
  check(cu::api().cuMemsetD8Async(trace_ptr, 0, trace_bytes, stream.get()), "cuMemsetD8Async(attn_trace)");
  // NaN poison: an element the kernel does not write fails validation.
  check(cu::api().cuMemsetD8Async(c.o.ptr(), 0xFF, c.o.bytes(), stream.get()), "cuMemsetD8Async(o)");
  check(cu::api().cuMemsetD8Async(c.lse.ptr(), 0xFF, c.lse.bytes(), stream.get()), "cuMemsetD8Async(lse)");
  launch.enqueue(stream.get());
  stream.synchronize();

  const std::vector<std::uint8_t> bytes = traced.read_global("attn_trace");
  std::vector<std::uint64_t> words(bytes.size() / sizeof(std::uint64_t));
  std::memcpy(words.data(), bytes.data(), words.size() * sizeof(std::uint64_t));
  out.rows = decode_trace(words, out.layout);
  out.outputs = validate_outputs(c.o.to_vector<bf16_bits>(c.qkv_elems()), c.lse.to_vector<float>(c.lse_elems()),
                                 c.ref_o, c.ref_lse);
  return out;
}

}  // namespace attn
