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

double fresh_too_slow_ms(double median_ms) { return 2 * median_ms + 0.005; }

namespace {

/// Waits for the variant, copies o/lse back and validates them against a host reference.
ValidationResult validate_on_host(const DeviceCase& c, const Stream& stream, const Tolerances& tol,
                                  const std::vector<bf16_bits>& ref_o, const std::vector<float>& ref_lse) {
  stream.synchronize();
  const auto o = c.o.to_vector<bf16_bits>(c.qkv_elems());
  const auto lse = c.lse.to_vector<float>(c.lse_elems());
  return validate_outputs(o, lse, ref_o, ref_lse, tol);
}

ValidationResult validate_on_host(const DeviceCase& c, const Stream& stream, const Tolerances& tol) {
  return validate_on_host(c, stream, tol, c.ref_o, c.ref_lse);
}

}  // namespace

Evaluator::Evaluator(const Context& ctx, const DeviceValidator* validator)
    : ctx_(ctx), validator_(validator), flusher_(ctx.info()) {}

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
        // Poison: 0xFFFF is a bf16 NaN, 0xFFFFFFFF an fp32 NaN, so unwritten elements fail validation.
        check(cu::api().cuMemsetD8Async(c.o.ptr(), 0xFF, c.o.bytes(), stream_.get()), "cuMemsetD8Async");
        check(cu::api().cuMemsetD8Async(c.lse.ptr(), 0xFF, c.lse.bytes(), stream_.get()), "cuMemsetD8Async");
        launch_attn(k, c.args(), stream_.get());
        const ValidationResult v = validator_ ? validator_->validate(c, stream_.get(), options.tolerances)
                                              : validate_on_host(c, stream_, options.tolerances);
        CaseResult& cr = r.cases[i];
        cr.validated = true;
        cr.passed = v.passed;
        cr.o_max_abs_diff = v.o_max_abs_diff;
        cr.lse_max_abs_diff = v.lse_max_abs_diff;
        all_passed = all_passed && v.passed;
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
      const bool verify = options.validate;  // EvalOptions: the checks run on validated evaluations only
      for (std::size_t i = 0; i < cases.size(); ++i) {
        const DeviceCase& c = *cases[i];
        stage = "timing case " + c.spec.case_id;
        const PreparedLaunch launch(k, c.args());  // tensor maps encoded here, outside the timed region
        const TimingResult t = time_cold([&](CUstream s) { launch.enqueue(s); }, stream_, flusher_,
                                         options.timing, criterion, ctx_.info().pci_bus_id);
        CaseResult& cr = r.cases[i];
        cr.timed = true;
        cr.median_ms = t.median_ms;
        cr.spread = t.spread;
        cr.samples = t.samples;
        cr.sm_clock_mhz = t.sm_clock_mhz;
        fams.push_back(c.spec.family);
        lat.push_back(t.median_ms);

        // Physics first: no kernel that does the work is faster than the case's roofline floor.
        if (verify && options.check_floor) {
          cr.floor_ms = c.work.floor_s(options.ceilings) * 1e3;
          if (auto why = below_floor_verdict(c.spec.case_id, t.median_ms, cr.floor_ms, options.floor_margin)) {
            stream_.synchronize();
            return finish(FailureKind::below_floor,
                          fmt::format("{} ({:.0f} TFLOP/s, {:.2f} TB/s)", *why, options.ceilings.flops_per_s / 1e12,
                                      options.ceilings.bytes_per_s / 1e12));
          }
        }
        // Fresh inputs in the same buffers, o/lse left as the samples wrote them: a kernel that remembers
        // a result, skips work or keys anything on its buffers shows it here (docs/verification.md).
        if (verify && options.check_fresh && c.has_check_set()) {
          stage = "checking case " + c.spec.case_id + " on fresh inputs";
          EventPair events;
          std::vector<std::uint64_t> masks;  // applied to q/k/v now, undone in reverse (each is an XOR)
          auto launch_masked = [&](std::uint64_t seed) {
            c.mask_inputs(seed, stream_.get());
            masks.push_back(seed);
            flusher_.flush(stream_.get());
            events.record_start(stream_.get());
            launch.enqueue(stream_.get());
            events.record_stop(stream_.get());
            return double(events.elapsed_ms());
          };
          auto unmask = [&] {  // the tuning inputs again, for what comes next
            for (; !masks.empty(); masks.pop_back()) c.mask_inputs(masks.back(), stream_.get());
          };
          ValidationResult v;
          double again_ms = 0;
          const double limit_ms = fresh_too_slow_ms(t.median_ms);
          try {
            cr.fresh_ms = launch_masked(c.check_seed);
            v = validator_ ? validator_->validate_against(c, c.check_ref_o_dev.ptr(), c.check_ref_lse_dev.ptr(),
                                                          stream_.get(), options.tolerances)
                           : validate_on_host(c, stream_, options.tolerances, c.check_ref_o, c.check_ref_lse);
            unmask();
            // Slow once may be a hiccup: a launch on other fresh data (no reference needed) decides.
            if (v.passed && cr.fresh_ms > limit_ms) {
              again_ms = launch_masked(check_seed_for(c.check_seed, c.spec));
              unmask();
            }
          } catch (const CudaError&) {
            try {
              unmask();
            } catch (const CudaError&) {  // a dead context: the worker exits anyway
            }
            throw;
          }
          cr.fresh_o_max_abs_diff = v.o_max_abs_diff;
          cr.fresh_lse_max_abs_diff = v.lse_max_abs_diff;
          if (!v.passed) {
            stream_.synchronize();
            return finish(FailureKind::inconsistent,
                          fmt::format("case {}: a timed launch on fresh inputs in the same buffers is wrong (o diff "
                                      "{:.3g}, lse diff {:.3g}): the result depends on something other than the "
                                      "inputs",
                                      c.spec.case_id, v.o_max_abs_diff, v.lse_max_abs_diff));
          }
          if (again_ms > limit_ms) {
            stream_.synchronize();
            return finish(FailureKind::inconsistent,
                          fmt::format("case {}: timed launches on fresh inputs in the same buffers took {:.2f} and "
                                      "{:.2f} us against a median of {:.2f} us over {} samples (limit {:.2f} us): "
                                      "the speed depends on seeing the same inputs again",
                                      c.spec.case_id, cr.fresh_ms * 1e3, again_ms * 1e3, t.median_ms * 1e3,
                                      t.samples, limit_ms * 1e3));
          }
        }
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
