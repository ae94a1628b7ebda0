#include "gpu/evaluate.hpp"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "gpu/driver_api.hpp"
#include "workload/roofline.hpp"

namespace attn {

FailureKind classify_cuda_error(const CudaError& e) {
  if (e.sticky()) return FailureKind::fault;
  if (e.resource_limit()) return FailureKind::device_limit;
  switch (e.result()) {
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
      return FailureKind::compile;
    default:
      return FailureKind::fault;
  }
}

std::optional<std::string> below_floor_verdict(const std::string& case_id, double median_ms, double floor_ms,
                                               double margin) {
  if (!(floor_ms > 0) || !(median_ms < margin * floor_ms)) return std::nullopt;
  return fmt::format("case {}: {:.2f} us is below its roofline floor of {:.2f} us (x {:.2g} margin = {:.2f} us): "
                     "impossible for a kernel that does the work",
                     case_id, median_ms * 1e3, floor_ms * 1e3, margin, margin * floor_ms * 1e3);
}

Evaluator::Evaluator(const Context& ctx, const DeviceValidator* validator, SeedDraw draw)
    : ctx_(ctx), validator_(validator), flusher_(ctx.info()), draw_(std::move(draw)) {
  if (!draw_) draw_ = [this] { return (std::uint64_t(seeds_()) << 32) ^ std::uint64_t(seeds_()); };
}

EvalResult Evaluator::evaluate(const std::vector<char>& cubin, const std::string& kernel,
                               const std::vector<const DeviceCase*>& cases, const EvalOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  EvalResult r;
  auto finish = [&](FailureKind status, std::string message) -> EvalResult {
    r.status = status;
    r.message = std::move(message);
    r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::move(r);
  };
  auto wrong = [](const ValidationResult& v) {
    return fmt::format("o diff {:.3g}, lse diff {:.3g}", v.o_max_abs_diff, v.lse_max_abs_diff);
  };
  for (const DeviceCase* c : cases) {
    CaseResult cr;
    cr.case_id = c->spec.case_id;
    cr.family = c->spec.family;
    cr.passed = true;
    r.cases.push_back(cr);
  }

  std::string stage = "loading the cubin";
  try {
    Module module(cubin);
    AttnKernel k;
    try {
      k = load_attn_kernel(module, kernel);
    } catch (const std::invalid_argument& e) {
      return finish(FailureKind::compile, e.what());
    }
    r.launch = k.info;
    for (const DeviceCase* c : cases)
      if (c->spec.t_max % k.info.block_m != 0)
        return finish(FailureKind::compile, fmt::format("BLOCK_M {} does not divide t_max {} of case {}",
                                                        k.info.block_m, c->spec.t_max, c->spec.case_id));

    bool all_passed = true;
    if (options.validate) {
      for (std::size_t i = 0; i < cases.size(); ++i) {
        const DeviceCase& c = *cases[i];
        stage = "validating case " + c.spec.case_id;
        poison_outputs(c, stream_.get());
        launch_attn(k, c.args(), stream_.get());
        const ValidationResult v = validate_case(c, validator_, stream_.get(), options.tolerances);
        CaseResult& cr = r.cases[i];
        cr.validated = true;
        cr.passed = v.passed;
        cr.o_max_abs_diff = v.o_max_abs_diff;
        cr.lse_max_abs_diff = v.lse_max_abs_diff;
        all_passed = all_passed && v.passed;
        // The same inputs again, right after, o/lse poisoned again: a kernel that recognises inputs it has seen
        // (by pointer or content, as the launch before or any earlier one) and skips work leaves poison here.
        if (v.passed && options.check_fresh) {
          stage = "launching case " + c.spec.case_id + " again";
          poison_outputs(c, stream_.get());
          launch_attn(k, c.args(), stream_.get());
          const ValidationResult again = validate_case(c, validator_, stream_.get(), options.tolerances);
          if (!again.passed)
            return finish(FailureKind::inconsistent,
                          fmt::format("case {}: a second launch on the same inputs, with o and lse poisoned again, "
                                      "is wrong ({}) where the first was right: the kernel reuses work of an "
                                      "earlier launch",
                                      c.spec.case_id, wrong(again)));
        }
      }
    }
    if (!all_passed) {
      int failed = 0;
      std::string first;
      for (const auto& cr : r.cases)
        if (!cr.passed && failed++ == 0)
          first = fmt::format("{} (o diff {:.3g}, lse diff {:.3g})", cr.case_id, cr.o_max_abs_diff, cr.lse_max_abs_diff);
      return finish(FailureKind::wrong_result,
                    fmt::format("{} of {} cases outside the tolerances, first: {}", failed, cases.size(), first));
    }

    if (options.time) {
      SpreadCriterion criterion(options.timing);
      std::vector<Family> fams;
      std::vector<double> lat;
      const bool verify = options.validate;  // EvalOptions: the floor and the sign twin need validation
      for (std::size_t i = 0; i < cases.size(); ++i) {
        const DeviceCase& c = *cases[i];
        const PreparedLaunch launch(k, c.args());  // tensor maps encoded here, outside the timed region
        stage = "timing case " + c.spec.case_id;
        // The case's inputs go back to the tuning inputs when `inputs` ends, also when a check fails or throws.
        std::optional<SampleInputs> inputs;
        std::optional<SampleChecks> checks;
        const bool twin = verify && options.check_fresh && c.kernels;
        if ((options.check_samples || twin) && c.kernels) {
          sample_buffers_.reserve(options.timing.max_samples, options.sample_rows);
          inputs.emplace(c);
          checks.emplace(c, validator_, options.tolerances, sample_buffers_, options.sample_rows);
        }
        SampleHooks hooks;
        if (options.check_samples && checks) {
          hooks.before = [&](CUstream s) { inputs->fresh(s, draw_); };  // new inputs, o and lse poisoned
          hooks.after = [&](int sample) { return checks->after(stream_.get(), sample, draw_()); };
        }
        const TimingResult t = time_cold([&](CUstream s) { launch.enqueue(s); }, stream_, flusher_,
                                         options.timing, criterion, ctx_.info().pci_bus_id, hooks);
        if (hooks.after) checks->finish(stream_.get());  // the samples' checks, read once
        CaseResult& cr = r.cases[i];
        cr.timed = true;
        cr.median_ms = t.median_ms;
        cr.spread = t.spread;
        cr.samples = t.samples;
        cr.sm_clock_mhz = t.sm_clock_mhz;
        if (hooks.after) {
          cr.checked_samples = checks->validated();
          if (checks->failure()) {
            inputs->restore(stream_.get());
            stream_.synchronize();
            return finish(FailureKind::inconsistent, *checks->failure());
          }
        }
        fams.push_back(c.spec.family);
        lat.push_back(t.median_ms);

        // Physics first: no kernel that does the work is faster than the case's roofline floor.
        if (verify && options.check_floor) {
          cr.floor_ms = c.work.floor_s(options.ceilings) * 1e3;
          if (auto why = below_floor_verdict(c.spec.case_id, t.median_ms, cr.floor_ms, options.floor_margin)) {
            if (inputs) inputs->restore(stream_.get());
            stream_.synchronize();
            return finish(FailureKind::below_floor,
                          fmt::format("{} ({:.0f} TFLOP/s, {:.2f} TB/s)", *why, options.ceilings.flops_per_s / 1e12,
                                      options.ceilings.bytes_per_s / 1e12));
          }
        }
        // The sign twin: the last sample's inputs with v's signs drawn anew, o/lse left as that sample wrote them.
        // A kernel that returns a result it computed before (keyed on |x|, q_c k_c, q and k, the scores, or on
        // outputs that look done) shows it on the drawn rows (docs/verification.md).
        if (twin) {
          stage = "checking case " + c.spec.case_id + " on its sign twin";
          inputs->twin(stream_.get(), draw_);
          flusher_.flush(stream_.get());
          EventPair events;
          events.record_start(stream_.get());
          launch.enqueue(stream_.get());
          events.record_stop(stream_.get());
          cr.fresh_ms = events.elapsed_ms();
          const SampleVerdict v = checks->check_now(stream_.get(), draw_());
          cr.fresh_o_max_abs_diff = v.o_max_abs_diff;
          cr.fresh_lse_max_abs_diff = v.lse_max_abs_diff;
          if (!v.passed) {
            inputs->restore(stream_.get());
            stream_.synchronize();
            return finish(FailureKind::inconsistent, twin_failure_message(c.spec.case_id, v));
          }
        }
        if (inputs) inputs->restore(stream_.get());  // the tuning inputs again, for what comes next
      }
      if (!lat.empty()) {
        try {
          const SuiteScore s = suite_score(fams, lat);
          r.score_ms = s.geomean;
          r.family_median_ms = s.family_median;
        } catch (const std::invalid_argument&) {
          // a zero latency (empty kernel below event resolution): no score
        }
      }
    }
    stage = "finishing";
    stream_.synchronize();
  } catch (const CudaError& e) {
    return finish(classify_cuda_error(e), fmt::format("{} while {}", e.what(), stage));
  } catch (const std::invalid_argument& e) {
    return finish(FailureKind::compile, fmt::format("{} while {}", e.what(), stage));
  }
  return finish(FailureKind::none, "ok");
}

}  // namespace attn
