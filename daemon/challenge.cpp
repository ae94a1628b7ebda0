// One champion challenge at a time (daemon/challenge.hpp).
#include "daemon/challenge.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "daemon/worker_answers.hpp"

namespace attn::tuning {

ChallengeSeat::ChallengeSeat(const TimingParams& timing, const std::vector<CaseSpec>& holdout, RunStats& stats,
                             std::function<void(const Contender&, double)> retimed)
    : timing_(timing), holdout_(holdout), stats_(stats), retimed_(std::move(retimed)) {}

Challenge ChallengeSeat::take(GpuSlot& slot) { return Challenge(*this, slot); }

Challenge::Challenge(ChallengeSeat& seat, GpuSlot& slot) : lock_(seat.mu_), seat_(&seat), slot_(&slot) {}

std::optional<Measured> Challenge::retime(const Contender& c) {
  slot_->ensure_cases();
  const EvalResponse r = slot_->eval(EvalRequest{c.cubin_path, c.kernel, seat_->timing_, false, true, {}});
  if (!r.status.ok() || !(r.score_ms > 0)) {
    spdlog::warn("re-timing iter {} failed: {} {}", c.iter, r.status.name(), r.status.message);
    return std::nullopt;
  }
  if (seat_->retimed_) seat_->retimed_(c, r.wall_ms);
  return to_measured(r);
}

HoldoutResult Challenge::on_holdout(const Contender& c) {
  HoldoutResult h;
  const auto t0 = Clock::now();
  const EvalResponse r = slot_->eval(EvalRequest{c.cubin_path, c.kernel, seat_->timing_, true, true, {}});
  const double ms = r.wall_ms > 0 ? r.wall_ms : seconds_since(t0) * 1000;
  seat_->stats_.add([&](RunCounters& s) { s.holdout_ms += ms; });
  for (const auto& cr : r.cases) h.cases.push_back(to_record(cr));
  if (r.status.ok() && r.score_ms > 0) {
    h.ok = true;
    h.measured = to_measured(r);
    return h;
  }
  h.failure = r.status.ok() ? "no score" : r.status.name() + ": " + r.status.message;
  h.kind = failure_kind(r.status);
  for (const auto& cr : r.cases)
    if (cr.validated && !cr.passed) {
      h.failure = fmt::format("wrong result on {}: o max diff {:.3g}", cr.case_id, cr.o_max_abs_diff);
      break;
    }
  return h;
}

HoldoutResult Challenge::holdout(const Contender& c) {
  HoldoutResult h;
  if (!slot_->prepare_other(seat_->holdout_)) {  // its time counts as case building
    h.failure = "the worker could not build the held-out cases";
    return h;
  }
  h = on_holdout(c);
  if (slot_->ready()) slot_->ensure_cases();
  return h;
}

std::pair<HoldoutResult, HoldoutResult> Challenge::holdout_pair(const Contender& a, const Contender& b) {
  std::pair<HoldoutResult, HoldoutResult> out;
  if (!slot_->prepare_other(seat_->holdout_)) {
    out.first.failure = out.second.failure = "the worker could not build the held-out cases";
    return out;
  }
  out.first = on_holdout(a);
  if (slot_->ready()) out.second = on_holdout(b);  // a crash of the first restarted the worker: none
  else out.second.failure = "not run: the worker restarted after the other's failure";
  if (slot_->ready()) slot_->ensure_cases();
  return out;
}

}  // namespace attn::tuning
