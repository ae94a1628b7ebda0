// `attn-tuner compile`: NVRTC-compile configs of a template (no GPU needed) and print each variant's
// resources (registers, spills, stack, static smem), compile time and whether the cache answered.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/templates_dir.hpp"
#include "cli/variant_request.hpp"
#include "gpu/compiler.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/shard.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

struct CompileCliOptions {
  std::string template_name, config_json, templates_dir, cache_dir;
  std::string db;  ///< --db: a template of that DB's proposer hook or idea queue (cli/variant_request.hpp)
  std::vector<std::string> nvrtc_options;
  std::string shard;  ///< "K/N": shard K of N of the space (tuner/shard.hpp, as `run --shard`)
  bool all = false, no_cache = false, show_log = false;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  unsigned procs = std::max(1u, std::thread::hardware_concurrency());  ///< compile worker processes, 0 = in this one
};

void run_compile(const CompileCliOptions& o) {
  // The template and one config as bench takes them: --config over the template's default (cli/variant_request).
  const VariantRequest vr = resolve_variant("compile", o.templates_dir, o.template_name, o.all ? "" : o.config_json, {}, o.db);
  TemplateSpace space = vr.space;

  std::vector<Config> configs;
  if (o.all) {
    if (!o.shard.empty()) {  // the same partition as `run --shard` (tuner/shard.hpp)
      try {
        const Shard sh = parse_shard(o.shard);
        space.restrict_to_shard(sh.index, sh.count);
      } catch (const std::invalid_argument& e) {
        throw CliError(fmt::format("compile: {}", e.what()));
      }
    }
    configs = space.enumerate();
    if (!o.shard.empty()) fmt::print("shard {}: {} config(s) of the space\n", o.shard, configs.size());
  } else {
    configs.push_back(vr.config);
  }

  CompilerOptions copts;
  copts.cache_dir = o.cache_dir;
  copts.use_cache = !o.no_cache;
  copts.procs.procs = std::min<unsigned>(o.procs, unsigned(configs.size()));
  const Compiler compiler(copts);
  const unsigned pool_jobs = std::max(1u, std::min<unsigned>(o.jobs, unsigned(configs.size())));
  CompilePool pool(compiler, pool_jobs);
  // Configs that differ only in patchable parameters share a compile once one of them is in the cache.
  const auto request = [&](const Config& c) { return compile_request(space, c, o.nvrtc_options); };
  std::vector<std::future<CompiledVariant>> futures;
  for (const auto& c : configs) futures.push_back(pool.submit(request(c)));

  fmt::print("template {} ({}), {} config(s), cache {}, NVRTC {}\n", space.name(), space.source_path(),
             configs.size(), o.no_cache ? "off" : compiler.cache_dir(),
             copts.procs.procs ? fmt::format("in {} compile worker process(es)", copts.procs.procs) : "in this process");
  fmt::print("{:<6} {:>5} {:>9} {:>9} {:>6} {:>7} {:>9} {:<5} {:<8} {}\n", "status", "regs", "spill_st",
             "spill_ld", "stack", "smem", "ms", "cache", "hash", "config");
  int failures = 0, hits = 0, spilling = 0;
  double nvrtc_ms = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < futures.size(); ++i) {
    // A source or header missing for a moment is not the config's fault: compiled again, as in the daemon.
    const CompiledVariant v =
        compiler.retry_transient(futures[i].get(), request(configs[i]));
    const auto& r = v.resources;
    hits += v.cache_hit ? 1 : 0;
    spilling += v.ok && (r.spill_stores > 0 || r.spill_loads > 0) ? 1 : 0;
    nvrtc_ms += v.cache_hit ? 0 : v.compile_ms;
    fmt::print("{:<6} {:>5} {:>9} {:>9} {:>6} {:>7} {:>9.1f} {:<5} {:<8} {}\n", v.ok ? "ok" : "FAIL",
               r.registers, r.spill_stores, r.spill_loads, r.stack_frame, r.static_smem, v.compile_ms,
               v.cache_hit ? (v.patched_from.empty() ? "hit" : "patch") : "miss", v.hash.substr(0, 8),
               config_to_compact(configs[i]));
    if (!v.ok) {
      ++failures;
      fmt::print(stderr, "--- {} failed:\n{}\n", config_to_compact(configs[i]), v.log);
    } else if (o.show_log) {
      fmt::print("{}\n", v.log);
    }
    std::fflush(stdout);
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("summary: {} config(s), {} ok, {} failed, {} from the cache, {} spilling; NVRTC {:.0f} s over {} "
             "job(s) and {} process(es), wall {:.0f} s\n",
             configs.size(), configs.size() - failures, failures, hits, spilling, nvrtc_ms / 1e3, pool_jobs,
             std::max(1u, copts.procs.procs), wall_s);
  if (failures)
    throw std::runtime_error(fmt::format("compile: {} of {} config(s) failed", failures, configs.size()));
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto o = std::make_shared<CompileCliOptions>();
  auto* cmd = app.add_subcommand("compile", "NVRTC-compile configs of a template and print their resources "
                                            "(no GPU needed); exits 1 if any config fails");
  cmd->add_option("--template", o->template_name, "template name (kernels_templates/<name>.json)")->required();
  cmd->add_option("--db", o->db, kTemplateDbHelp);
  auto* config = cmd->add_option("--config", o->config_json, "one config as JSON, e.g. '{\"BLOCK_N\":64}'; parameters "
                                                               "it does not name take the template's default");
  auto* all = cmd->add_flag("--all", o->all, "every valid config of the parameter space")->excludes(config);
  cmd->add_option("--shard", o->shard, "with --all: K/N compiles shard K (0-based) of N, the partition of `run --shard` "
                                       "(a stable hash of each config), to split the space over N machines")->needs(all);
  cmd->add_option("--jobs,-j", o->jobs, "parallel NVRTC compiles")->check(CLI::PositiveNumber);
  cmd->add_option("--compile-procs", o->procs, "NVRTC in N compile worker processes (default: one per core; 0: in "
                                               "this process, where NVRTC compiles serialise)");
  cmd->add_option("--templates", o->templates_dir, "templates folder (default: $ATTN_TUNER_TEMPLATES or the "
                                                   "source tree's kernels_templates)");
  cmd->add_option("--cache", o->cache_dir, "compile cache folder (default: $ATTN_TUNER_CACHE or ~/.cache/attn-tuner)");
  cmd->add_flag("--no-cache", o->no_cache, "always run NVRTC, write nothing");
  cmd->add_option("--option", o->nvrtc_options, "extra NVRTC option, repeatable (e.g. --option=--use_fast_math)");
  cmd->add_flag("--log", o->show_log, "print the NVRTC log (ptxas -v) of each variant");
  cmd->callback([o] { run_compile(*o); });
}

}  // namespace attn
