// What the loop makes of a worker's answer (daemon/worker_answers.hpp).
#include "daemon/worker_answers.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace attn::tuning {

bool ends_worker(const ReplyStatus& s) {
  return s.failure == FailureKind::fault || s.failure == FailureKind::hang || s.failure == FailureKind::worker_died ||
         s.rejected;
}

FailureKind failure_kind(const ReplyStatus& s) { return s.rejected ? FailureKind::worker_died : s.failure; }

Measured to_measured(const EvalResponse& r) {
  Measured m;
  m.score_ms = r.score_ms;
  m.family_ms = r.family_median_ms;
  m.wall_ms = r.wall_ms;
  for (const auto& c : r.cases) m.rel_spread = std::max(m.rel_spread, c.spread);
  return m;
}

CaseResultRecord to_record(const CaseResult& c) {
  CaseResultRecord r;
  r.case_id = c.case_id;
  r.family = c.family;
  if (c.timed) {
    r.median_ms = c.median_ms;
    r.spread = c.spread;
    r.samples = c.samples;
    if (c.sm_clock_mhz) r.sm_clock_mhz = c.sm_clock_mhz;
  }
  if (c.validated) {
    r.o_max_abs_diff = c.o_max_abs_diff;
    r.lse_max_abs_diff = c.lse_max_abs_diff;
  }
  r.passed = c.passed;
  return r;
}

std::string resources_text(const CompiledVariant& cv) {
  const auto& r = cv.resources;
  std::string s = fmt::format("{} regs", r.registers);
  if (r.spill_stores + r.spill_loads > 0) s += fmt::format(", spills {}+{} B", r.spill_stores, r.spill_loads);
  if (cv.log.find("C7520") != std::string::npos || cv.log.find("C7512") != std::string::npos ||
      cv.log.find("serialized") != std::string::npos)
    s += ", wgmma serialized";
  return s;
}

namespace {
Outcome outcome_from(std::int64_t iter, IterationStatus status, FailureKind kind, std::optional<double> geomean_ms,
                     std::optional<double> screen_ms) {
  if (status != IterationStatus::crash) {
    if (geomean_ms) return Outcome::success(iter, *geomean_ms);
    if (screen_ms) return Outcome::success(iter, *screen_ms);
  }
  return Outcome::failed(iter, to_string(kind));
}
}  // namespace

Outcome outcome_of(const IterationRecord& it) {
  return outcome_from(it.iter, it.status, it.failure_kind, it.geomean_ms, it.screen_ms);
}

Outcome outcome_of(const HistoryRow& r) { return outcome_from(r.iter, r.status, r.failure_kind, r.geomean_ms, r.screen_ms); }

unsigned sm_clock_of(const EvalResponse& r) {
  std::vector<unsigned> mhz;
  for (const auto& c : r.cases)
    if (c.timed && c.sm_clock_mhz) mhz.push_back(c.sm_clock_mhz);
  if (mhz.empty()) return 0;
  std::nth_element(mhz.begin(), mhz.begin() + std::ptrdiff_t(mhz.size() / 2), mhz.end());
  return mhz[mhz.size() / 2];
}

std::chrono::milliseconds watchdog_deadline(double factor, double min_s, double cap_s, double champion_eval_ms) {
  double s = cap_s;
  if (champion_eval_ms > 0) s = std::min(std::max(factor * champion_eval_ms / 1000.0, min_s), cap_s);
  return std::chrono::milliseconds(std::int64_t(s * 1000));
}

}  // namespace attn::tuning
