// Cold-cache kernel timing, the model being nvbench's cold measurement: per sample flush L2 (write a
// buffer of twice the L2 size), record an event, launch, record an event; warm-up launches first; take
// samples until a pluggable stopping criterion says the estimate is good enough.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/driver.hpp"

namespace attn {

/// Named parameters of the timing loop (also the worker protocol's "timing" object).
struct TimingParams {
  int warmup = 3;               ///< untimed launches first (clocks up, instruction cache warm)
  int min_samples = 10;
  int max_samples = 200;
  double max_seconds = 2.0;     ///< stop once min_samples are in and this much wall time has passed
  double target_spread = 0.01;  ///< stop once min_samples are in and spread <= this
  bool operator==(const TimingParams&) const = default;
};

/// Order statistics of a sample set (ms). spread = IQR / median (0 for fewer than 2 samples).
/// Quartiles by linear interpolation between order statistics (numpy's default "linear" method).
struct SampleStats {
  int count = 0;
  double median = 0, q1 = 0, q3 = 0, min = 0, max = 0;
  double spread = 0;
};
/// Throws std::invalid_argument on an empty input.
SampleStats summarize(std::vector<double> samples_ms);

/// Decides when to stop sampling (nvbench's stopping_criterion_base, reduced). Fed one sample at a time.
class StoppingCriterion {
 public:
  virtual ~StoppingCriterion() = default;
  virtual void reset() = 0;
  virtual void add_sample(double ms) = 0;
  /// `elapsed_s`: wall time since the first timed sample.
  virtual bool is_finished(double elapsed_s) const = 0;
  virtual std::string name() const = 0;
};

/// Stops at max_samples, or once min_samples are in and either spread (IQR / median) <= target_spread
/// or elapsed >= max_seconds.
class SpreadCriterion : public StoppingCriterion {
 public:
  explicit SpreadCriterion(const TimingParams& p);
  void reset() override { samples_.clear(); }
  void add_sample(double ms) override { samples_.push_back(ms); }
  bool is_finished(double elapsed_s) const override;
  std::string name() const override { return "spread"; }
  const std::vector<double>& samples() const { return samples_; }

 private:
  TimingParams p_;
  std::vector<double> samples_;
};

/// Result of timing one launch function.
struct TimingResult {
  double median_ms = 0;
  double spread = 0;     ///< IQR / median
  int samples = 0;
  double min_ms = 0;
  unsigned sm_clock_mhz = 0;  ///< NVML after the last sample; 0 without NVML
  double wall_s = 0;          ///< wall time of the timed loop
};

/// Owns the L2-flush buffer: 2 x the device's L2 size, rewritten with cuMemsetD32Async per sample.
class L2Flusher {
 public:
  explicit L2Flusher(const DeviceInfo& info);
  void flush(CUstream s);
  std::size_t bytes() const { return buf_.bytes(); }

 private:
  DeviceBuffer buf_;
  std::uint32_t counter_ = 0;
};

/// Work around each timed sample, outside its events (gpu/sample_checks.hpp): `before` is enqueued ahead of
/// the sample's L2 flush; `after` runs once the sample's stop event has completed, with the sample's index
/// (0-based), and returns false to stop sampling (the sample failed a check; the caller reads why from the
/// hook's owner). Either may be empty.
struct SampleHooks {
  std::function<void(CUstream)> before;
  std::function<bool(int sample)> after;
};

/// Times `launch` (enqueues one kernel call on the given stream) cold: params.warmup untimed launches,
/// then per sample [hooks.before] -> flush L2 -> event -> launch -> event [-> hooks.after], until
/// `criterion` is finished (it is reset first) or hooks.after returns false (then the result holds the
/// samples so far). Launch / CUDA errors propagate as CudaError.
TimingResult time_cold(const std::function<void(CUstream)>& launch, const Stream& stream, L2Flusher& flusher,
                       const TimingParams& params, StoppingCriterion& criterion, const std::string& pci_bus_id,
                       const SampleHooks& hooks = {});

}  // namespace attn
