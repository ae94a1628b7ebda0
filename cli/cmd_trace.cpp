// `attn-tuner trace`: where a config's time goes inside the kernel. Compiles the config with ATTN_TRACE=1
// (kernels_templates/blocks/trace.cuh) and without, runs both on one case (gpu/trace_run.hpp), and prints
// per role (producer, converter, consumer warpgroups) the cycles of each step of its loop, per kv tile,
// plus the end-of-kernel idle time of the schedule; --csv writes every event.
#include <cmath>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/variant_request.hpp"
#include "gpu/compiler.hpp"
#include "gpu/trace_run.hpp"
#include "tuner/compile_request.hpp"
#include "workload/case_spec.hpp"

namespace attn {
namespace {

struct TraceOptions {
  std::string template_name, config_json, suite = "full", case_id, csv, templates_dir, cache_dir;
  std::string db;  ///< --db: a template of that DB's proposer hook or idea queue (cli/variant_request.hpp)
  std::vector<std::string> defines;
  std::int64_t root_seed = 0;
  int device = 0, launches = 30;
};

CaseSpec find_case(const TraceOptions& o) {
  std::vector<CaseSpec> suite;
  try {
    suite = builtin_suite(o.suite, o.root_seed);
  } catch (const std::invalid_argument& e) {
    throw CliError(fmt::format("trace: {}", e.what()));
  }
  std::string ids;
  for (const auto& c : suite) {
    if (c.case_id == o.case_id) return c;
    ids += (ids.empty() ? "" : ", ") + c.case_id;
  }
  throw CliError(fmt::format("trace: suite {} has no case '{}' (its cases: {})", o.suite, o.case_id, ids));
}

// Cycles per (work tile, kv tile) pair of one row: a consumer row sees each pair once, as does the CTA's
// producer and converter row, so every role's cycles are divided by the pairs its rows handled.
void print_summary(const TraceSummary& s) {
  const double pairs = s.consumer_roles > 0 ? double(s.kv_tiles) / s.consumer_roles : NAN;
  fmt::print("{:<10} {:<52} {:>9} {:>7} {:>10}\n", "role", "step (time up to the event)", "Mcycles", "share",
             "cyc/kvtile");
  for (const TraceStep& st : s.steps) {
    const double total = double(s.role_cycles[int(st.role)]);
    const double per = st.role == TraceRole::consumer ? double(s.kv_tiles) : pairs;
    fmt::print("{:<10} {:<52} {:>9.2f} {:>6.1f}% {:>10.0f}\n", trace_role_name(st.role), st.step, st.cycles / 1e6,
               total > 0 ? 100.0 * st.cycles / total : 0.0, per > 0 ? st.cycles / per : NAN);
  }
}

void run_trace_command(const TraceOptions& o) {
  const VariantRequest vr = resolve_variant("trace", o.templates_dir, o.template_name, o.config_json, o.defines, o.db);
  const CaseSpec spec = find_case(o);
  for (const auto& opt : vr.extra_options)
    if (opt.rfind("-DATTN_TRACE=", 0) == 0) throw CliError("trace: ATTN_TRACE is set by trace itself");

  CompilerOptions copts;
  copts.cache_dir = o.cache_dir;
  const Compiler compiler(copts);
  auto build = [&](bool traced) {
    std::vector<std::string> extra = vr.extra_options;
    if (traced) extra.push_back("-DATTN_TRACE=1");
    const CompiledVariant v = compiler.compile(compile_request(vr.space, vr.config, extra));
    if (!v.ok)
      throw std::runtime_error(fmt::format("trace: {} does not compile{}:\n{}", config_to_compact(vr.config),
                                           traced ? " with ATTN_TRACE=1" : "", v.log));
    return v;
  };
  const CompiledVariant traced = build(true), plain = build(false);

  const Context ctx(o.device);
  CaseBuilder cases(ctx, compiler);
  TraceRequest req{traced.cubin, plain.cubin, vr.space.kernel(), spec};
  req.launches = o.launches;
  const TraceResult r = run_trace(cases, req);
  const TraceSummary s = summarize_trace(r.rows);

  fmt::print("{} {} on {}, case {} ({} x {} heads, t_max {})\n", vr.space.name(), config_to_compact(vr.config),
             ctx.info().name, spec.case_id, spec.batch_size, spec.num_heads, spec.t_max);
  fmt::print("trace build: {} registers, spills {}/{} bytes; plain build: {} registers, spills {}/{} bytes\n",
             traced.resources.registers, traced.resources.spill_stores, traced.resources.spill_loads,
             plain.resources.registers, plain.resources.spill_stores, plain.resources.spill_loads);
  fmt::print("launch (median of {}, L2 warm): traced {:.2f} us, plain {:.2f} us ({:+.1f}% from the trace)\n",
             o.launches, r.traced_us, r.plain_us, 100.0 * (r.traced_us / r.plain_us - 1));
  fmt::print("traced outputs vs the fp32 reference: {} (o diff {:.3g}, lse diff {:.3g})\n",
             r.outputs.passed ? "pass" : "FAIL", r.outputs.o_max_abs_diff, r.outputs.lse_max_abs_diff);
  fmt::print("{} of {} CTAs traced on {} SMs; {} work tiles and {} kv tiles counted over the consumer warpgroups; span {:.1f} us; "
             "end-of-kernel idle per CTA {:.1f} us ({:.1f}% of the span){}\n",
             s.ctas, r.grid, s.sms, s.work_tiles, s.kv_tiles, s.span_ns / 1e3, s.mean_tail_ns / 1e3,
             s.span_ns > 0 ? 100.0 * s.mean_tail_ns / s.span_ns : 0.0,
             s.dropped ? fmt::format("; {} events dropped (rows full)", s.dropped) : "");
  print_summary(s);
  if (!o.csv.empty()) {
    std::ofstream f(o.csv);
    if (!f) throw CliError(fmt::format("trace: cannot write '{}'", o.csv));
    write_trace_csv(f, r.rows);
    fmt::print("events: {}\n", o.csv);
  }
  if (!r.outputs.passed) throw std::runtime_error("trace: the trace build's outputs are outside the tolerances");
}

}  // namespace

void add_trace_command(CLI::App& app) {
  auto o = std::make_shared<TraceOptions>();
  auto* cmd = app.add_subcommand(
      "trace", "where one config's time goes inside the kernel: a trace build (ATTN_TRACE=1) stamps each step of "
               "every role, per CTA, on one case; prints cycles per step and kv tile, and the schedule's tail");
  cmd->add_option("--template", o->template_name, "template name (one that includes blocks/trace.cuh: fa3_tma)")
      ->required();
  cmd->add_option("--db", o->db, kTemplateDbHelp);
  cmd->add_option("--config", o->config_json, "config as JSON; parameters it does not name take the template's default");
  cmd->add_option("--define", o->defines, "NAME=VALUE macro outside the parameter space (repeatable)");
  cmd->add_option("--suite", o->suite, "built-in suite of the case (default full)");
  cmd->add_option("--case", o->case_id, "case id in the suite (attn-tuner suites lists them)")->required();
  cmd->add_option("--seed", o->root_seed, "root seed of the suite's per-case seeds");
  cmd->add_option("--csv", o->csv, "write every event (cta, role, smid, index, event, cycle) to this file");
  cmd->add_option("--launches", o->launches, "timed launches per build (median)")->check(CLI::PositiveNumber);
  cmd->add_option("--templates", o->templates_dir, "templates folder");
  cmd->add_option("--cache", o->cache_dir, "compile cache folder");
  cmd->add_option("--device", o->device, "CUDA device ordinal")->check(CLI::NonNegativeNumber);
  cmd->callback([o] { run_trace_command(*o); });
}

}  // namespace attn
