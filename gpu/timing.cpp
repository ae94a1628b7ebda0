#include "gpu/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "gpu/driver_api.hpp"
#include "gpu/nvml.hpp"

namespace attn {
namespace {

// Quantile q of sorted `v` with linear interpolation (numpy.quantile default).
double quantile(const std::vector<double>& v, double q) {
  const double pos = q * double(v.size() - 1);
  const std::size_t lo = std::size_t(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

}  // namespace

SampleStats summarize(std::vector<double> s) {
  if (s.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(s.begin(), s.end());
  SampleStats st;
  st.count = int(s.size());
  st.min = s.front();
  st.max = s.back();
  st.median = quantile(s, 0.5);
  st.q1 = quantile(s, 0.25);
  st.q3 = quantile(s, 0.75);
  st.spread = (s.size() >= 2 && st.median > 0) ? (st.q3 - st.q1) / st.median : 0.0;
  return st;
}

SpreadCriterion::SpreadCriterion(const TimingParams& p) : p_(p) {
  if (p.min_samples < 1 || p.max_samples < p.min_samples || p.max_seconds <= 0 || p.target_spread < 0 ||
      p.warmup < 0)
    throw std::invalid_argument(
        "timing parameters need warmup >= 0, 1 <= min_samples <= max_samples, max_seconds > 0, "
        "target_spread >= 0");
}

bool SpreadCriterion::is_finished(double elapsed_s) const {
  const int n = int(samples_.size());
  if (n >= p_.max_samples) return true;
  if (n < p_.min_samples) return false;
  if (elapsed_s >= p_.max_seconds) return true;
  return summarize(samples_).spread <= p_.target_spread;
}

L2Flusher::L2Flusher(const DeviceInfo& info)
    : buf_(std::size_t(std::max<std::int64_t>(info.l2_bytes, 1 << 20)) * 2) {}

void L2Flusher::flush(CUstream s) {
  // A new value each time, so no level of the memory system can skip the writes.
  check(cu::api().cuMemsetD32Async(buf_.ptr(), ++counter_, buf_.bytes() / 4, s), "cuMemsetD32Async");
}

TimingResult time_cold(const std::function<void(CUstream)>& launch, const Stream& stream, L2Flusher& flusher,
                       const TimingParams& params, StoppingCriterion& criterion, const std::string& pci_bus_id,
                       const SampleHooks& hooks) {
  for (int i = 0; i < params.warmup; ++i) {
    flusher.flush(stream.get());
    launch(stream.get());
  }
  stream.synchronize();

  criterion.reset();
  std::vector<double> samples;
  EventPair events;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  bool go_on = true;
  do {
    if (hooks.before) hooks.before(stream.get());
    flusher.flush(stream.get());
    events.record_start(stream.get());
    launch(stream.get());
    events.record_stop(stream.get());
    const double ms = events.elapsed_ms();
    samples.push_back(ms);
    criterion.add_sample(ms);
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (hooks.after) go_on = hooks.after(int(samples.size()) - 1);
  } while (go_on && !criterion.is_finished(elapsed));

  const SampleStats st = summarize(samples);
  TimingResult r;
  r.median_ms = st.median;
  r.spread = st.spread;
  r.samples = st.count;
  r.min_ms = st.min;
  r.wall_s = elapsed;
  r.sm_clock_mhz = sm_clock_mhz(pci_bus_id);
  return r;
}

}  // namespace attn
