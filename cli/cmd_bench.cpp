// `attn-tuner bench`: compile one config of a template, evaluate it on a suite through an isolated worker
// (the daemon's path: same validation, timing and failure handling), and print per case the latency,
// throughput, distance to the roofline floor and max diffs, then the suite score and the floor score.
#include <cmath>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/variant_request.hpp"
#include "gpu/compiler.hpp"
#include "gpu/worker_client.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/space.hpp"
#include "workload/case_spec.hpp"
#include "workload/layout.hpp"
#include "workload/roofline.hpp"

namespace attn {
namespace {
using nlohmann::json;

struct BenchOptions {
  std::string template_name, config_json, suite = "quick", manifest, templates_dir, cache_dir;
  std::string db;  ///< --db: a template of that DB's proposer hook or idea queue (cli/variant_request.hpp)
  std::vector<std::string> defines;  ///< NAME=VALUE macros outside the space (measurement-only switches)
  std::vector<std::string> nvrtc_options;  ///< extra NVRTC options (measurement: other code of the same config)
  std::int64_t root_seed = 0;
  bool json = false;
  bool validate = true;  ///< false: time only (ablation builds whose outputs are knowingly wrong)
  bool check_floor = true, check_fresh = true, check_samples = true;  ///< the verification (docs/verification.md)
  int device = 0;
  double tflops = 989, tbps = 3.35;  // H100 SXM datasheet (roofline.hpp Ceilings)
  double eval_deadline_s = 600, prepare_deadline_s = 900;
  TimingParams timing;
};

std::string family_medians_text(const std::map<Family, double>& m, double scale) {
  std::string s;
  for (const auto& [f, v] : m) s += fmt::format("{}{} {:.2f}", s.empty() ? "" : ", ", family_short_name(f), v * scale);
  return s;
}

void run_bench(const BenchOptions& o) {
  const VariantRequest vr = resolve_variant("bench", o.templates_dir, o.template_name, o.config_json, o.defines, o.db);
  const TemplateSpace& space = vr.space;
  const Config& config = vr.config;
  std::vector<std::string> extra_options = vr.extra_options;
  extra_options.insert(extra_options.end(), o.nvrtc_options.begin(), o.nvrtc_options.end());
  std::vector<CaseSpec> suite;
  try {
    suite = o.manifest.empty() ? builtin_suite(o.suite, o.root_seed) : suite_from_manifest_file(o.manifest);
    SpreadCriterion check_timing(o.timing);
  } catch (const std::invalid_argument& e) {
    throw CliError(fmt::format("bench: {}", e.what()));
  }
  if (suite.empty()) throw CliError("bench: the suite has no cases");

  CompilerOptions copts;
  copts.cache_dir = o.cache_dir;
  copts.allow_process_state = true;  // bench compiles this one config in its process (the worker compiles the rest)
  const Compiler compiler(copts);
  const CompiledVariant v = compiler.compile(compile_request(space, config, extra_options));
  if (!v.ok) throw std::runtime_error(fmt::format("bench: {} does not compile:\n{}", config_to_compact(config), v.log));
  if (v.cubin_path.empty()) throw std::runtime_error("bench: the cubin could not be written to the compile cache");

  // The worker's helper kernels (fill_normal.cu, reference_fp32.cu) come from the built-in templates folder,
  // as in `run`: a user's --templates folder holds only the template benched.
  std::vector<std::string> extra{"--cache", compiler.cache_dir()};
  WorkerClient client(default_worker_command(o.device, extra));
  const HelloResponse hello = client.hello(std::chrono::seconds(120));
  if (!hello.status.ok()) throw std::runtime_error(fmt::format("bench: worker hello: {} ({})", hello.status.name(), hello.status.message));
  const PrepareResponse prep =
      client.prepare(suite, std::chrono::milliseconds(std::int64_t(o.prepare_deadline_s * 1000)));
  if (!prep.status.ok()) throw std::runtime_error(fmt::format("bench: prepare: {} ({})", prep.status.name(), prep.status.message));
  // --no-validate times builds that drop work on purpose: their timed samples are not checked either.
  EvalRequest req{v.cubin_path, space.kernel(), o.timing, o.validate, true, {}, o.check_floor, o.check_fresh,
                  o.validate && o.check_samples};
  const EvalResponse r = client.eval(req, std::chrono::milliseconds(std::int64_t(o.eval_deadline_s * 1000)));

  const Ceilings ceil{o.tflops * 1e12, o.tbps * 1e12};
  std::vector<Family> fams;
  std::vector<double> floors;
  std::vector<CaseWork> works;
  for (const auto& c : suite) {
    works.push_back(case_work(build_layout(c), c.t_max));
    fams.push_back(c.family);
    floors.push_back(works.back().floor_s(ceil));
  }
  const SuiteScore floor_score = suite_score(fams, floors);

  if (o.json) {
    json cases = json::array();
    for (std::size_t i = 0; i < r.cases.size() && i < suite.size(); ++i) {
      json c = to_json(r.cases[i]);
      c["floor_us"] = floors[i] * 1e6;
      c["flops"] = works[i].flops;
      c["bytes"] = works[i].bytes;
      cases.push_back(c);
    }
    json out = {{"template", space.name()},
                {"config", json::parse(config_to_json(config))},
                {"hash", v.hash},
                {"resources", {{"registers", v.resources.registers}, {"spill_stores", v.resources.spill_stores},
                               {"spill_loads", v.resources.spill_loads}, {"static_smem", v.resources.static_smem}}},
                {"gpu", hello.gpu_name},
                {"driver_version", hello.driver_version},
                {"sm_clock_mhz", hello.sm_clock_mhz},
                {"status", r.status.name()},
                {"message", r.status.message},
                {"cases", cases},
                {"score_ms", std::isfinite(r.score_ms) ? json(r.score_ms) : json(nullptr)},
                {"wall_ms", r.wall_ms},
                {"floor_score_ms", floor_score.geomean * 1e3}};
    fmt::print("{}\n", out.dump(2));
  } else {
    fmt::print("{} {} on {} ({} SMs, driver {}, SM clock {} MHz)\n", space.name(), config_to_compact(config),
               hello.gpu_name, hello.sm_count, hello.driver_version, hello.sm_clock_mhz);
    fmt::print("variant {}: {} registers, spills {}/{} bytes, static smem {}, launch {} threads, {} bytes dynamic smem\n",
               v.hash.substr(0, 8), v.resources.registers, v.resources.spill_stores, v.resources.spill_loads,
               v.resources.static_smem, r.launch.threads, r.launch.smem_bytes);
    fmt::print("{:<20} {:<9} {:>10} {:>8} {:>8} {:>7} {:>7} {:>4} {:>10} {:>10} {}\n", "case_id", "family", "us",
               "TFLOP/s", "GB/s", "floor%", "spread", "n", "o_diff", "lse_diff", "pass");
    for (std::size_t i = 0; i < r.cases.size() && i < suite.size(); ++i) {
      const CaseResult& c = r.cases[i];
      const double s = c.median_ms * 1e-3;
      const bool t = c.timed && s > 0;
      fmt::print("{:<20} {:<9} {:>10} {:>8} {:>8} {:>7} {:>6.2f}% {:>4} {:>10.3g} {:>10.3g} {}\n", c.case_id,
                 family_short_name(c.family), t ? fmt::format("{:.2f}", s * 1e6) : "-",
                 t ? fmt::format("{:.1f}", works[i].flops / s / 1e12) : "-",
                 t ? fmt::format("{:.0f}", works[i].bytes / s / 1e9) : "-",
                 t ? fmt::format("{:.1f}", floors[i] / s * 100) : "-", c.spread * 100, c.samples,
                 c.o_max_abs_diff, c.lse_max_abs_diff, c.validated ? (c.passed ? "yes" : "NO") : "-");
    }
    // The verification's figures (docs/verification.md): the sign twin's launch per case, where it ran.
    std::string fresh;
    for (std::size_t i = 0; i < r.cases.size(); ++i)
      if (r.cases[i].fresh_ms > 0)
        fresh += fmt::format("{}{} {:.2f} us (o diff {:.3g})", fresh.empty() ? "" : ", ", r.cases[i].case_id,
                             r.cases[i].fresh_ms * 1e3, r.cases[i].fresh_o_max_abs_diff);
    if (!fresh.empty()) fmt::print("sign twin (the last sample's inputs, v's signs drawn anew): {}\n", fresh);
    if (std::isfinite(r.score_ms))
      fmt::print("score {:.2f} us (geomean of family medians: {}); floor score {:.2f} us ({}); {:.2f}x the floor\n",
                 r.score_ms * 1e3, family_medians_text(r.family_median_ms, 1e3), floor_score.geomean * 1e6,
                 family_medians_text(floor_score.family_median, 1e6), r.score_ms * 1e-3 / floor_score.geomean);
  }
  if (!r.status.ok())
    throw std::runtime_error(fmt::format("bench: {}: {}", r.status.name(), r.status.message));
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand("bench", "time one config of a template on a suite through an isolated worker; "
                                          "per case latency, TFLOP/s, GB/s, % of the roofline floor, max diffs");
  cmd->add_option("--template", o->template_name, "template name (kernels_templates/<name>.json)")->required();
  cmd->add_option("--db", o->db, kTemplateDbHelp);
  cmd->add_option("--config", o->config_json, "config as JSON; parameters it does not name take the template's default");
  cmd->add_option("--define", o->defines,
                  "NAME=VALUE macro outside the parameter space (repeatable; measurement-only switches such as "
                  "fa3_tma's FOLD_SCALE)");
  cmd->add_option("--nvrtc-option", o->nvrtc_options,
                  "extra NVRTC option for this config's compile (repeatable; measurement: e.g. -Ofc=max, whose code "
                  "differs; accepted here because bench compiles one config in its process)");
  auto* suite = cmd->add_option("--suite", o->suite, "built-in suite: smoke, local-dev, quick, full, broad (default quick)");
  cmd->add_option("--manifest", o->manifest, "suite manifest JSON file (harness format)")->excludes(suite);
  cmd->add_option("--seed", o->root_seed, "root seed of the built-in suite's per-case seeds");
  cmd->add_flag("--json", o->json, "print one JSON object instead of the table");
  cmd->add_flag("--no-validate{false}", o->validate,
                "time without checking the outputs (ablation builds that remove work on purpose, e.g. fa3_tma's "
                "ABLATE_* switches); the pass column then reads '-'");
  cmd->add_flag("--no-floor-check{false}", o->check_floor,
                "do not fail a case timed below 0.9 x its roofline floor at the GPU's ceilings (below_floor; "
                "docs/verification.md)");
  cmd->add_flag("--no-fresh-check{false}", o->check_fresh,
                "do not launch again on each case's inputs with o and lse poisoned, nor on its sign twin (the last "
                "timed sample's inputs with v's signs drawn anew; inconsistent; docs/verification.md)");
  cmd->add_flag("--no-sample-check{false}", o->check_samples,
                "time every sample on the tuning inputs, unchecked, instead of on inputs of new magnitudes with o "
                "and lse poisoned before it and checked on rows drawn after it (inconsistent; docs/verification.md)");
  cmd->add_option("--templates", o->templates_dir, "templates folder");
  cmd->add_option("--cache", o->cache_dir, "compile cache folder");
  cmd->add_option("--device", o->device, "CUDA device ordinal")->check(CLI::NonNegativeNumber);
  cmd->add_option("--tflops", o->tflops, "compute ceiling for the floor, TFLOP/s (default H100 989)")->check(CLI::PositiveNumber);
  cmd->add_option("--tbps", o->tbps, "bandwidth ceiling for the floor, TB/s (default H100 3.35)")->check(CLI::PositiveNumber);
  cmd->add_option("--deadline", o->eval_deadline_s, "seconds the evaluation may take before the worker is killed (hang)");
  cmd->add_option("--warmup", o->timing.warmup, "untimed launches per case");
  cmd->add_option("--min-samples", o->timing.min_samples, "timed samples per case, at least");
  cmd->add_option("--max-samples", o->timing.max_samples, "timed samples per case, at most");
  cmd->add_option("--max-seconds", o->timing.max_seconds, "stop sampling a case after this many seconds");
  cmd->add_option("--target-spread", o->timing.target_spread, "stop sampling once IQR/median is below this");
  cmd->callback([o] { run_bench(*o); });
}

}  // namespace attn
