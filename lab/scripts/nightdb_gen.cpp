// A night's DB without a GPU (issue 38): writes N iterations of the fa3_tma template on the `full` suite through
// ExperimentDb's own calls, in the daemon's order (begin_iteration, upsert_variant, set_iteration_variant,
// finish_iteration), with the daemon's shares and texts as the research DB of runs 1-8 has them: 79 % screened out
// (3 screen cases, 5 samples), 20 % evaluated on the whole suite (9 cases), 1 % crashes (compile errors with
// their log, wrong results); new bests kept and promoted (champion, family champions, held-out checks), one run
// per 62,500 iterations, a few proposals and ideas. Configs are distinct points of fa3_tma's space, the valid
// ones first (188,928 of 995,328), so that the champions export. A whole-suite iteration's variant has the
// content hash its config has with the current template (Compiler::content_hash), and its cubin_path is
// /tmp/nightdb-cache/<hash>.cubin, where `attn-tuner compile --cache /tmp/nightdb-cache` puts it
// (lab/scripts/nightdb_measure.sh does that for the exported variants, as a night's compile cache has them).
// The connection runs with synchronous=OFF and commits every 2,000 iterations (sqlite::Batch: the calls'
// transactions are savepoints inside it): what is measured is the DB it leaves, not the write path.
// Build: cmake --build build --target nightdb_gen. Usage: build/nightdb_gen DB ITERATIONS [SEED]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/sqlite_batch.hpp"
#include "db/store.hpp"
#include "gpu/compiler.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/space.hpp"
#include "workload/case_spec.hpp"

using namespace attn;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Gen {
  std::mt19937_64 rng;
  std::string hex(int chars) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < chars; ++i) s += d[rng() % 16];
    return s;
  }
  double uni(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); }
  bool chance(double p) { return uni(0, 1) < p; }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DB ITERATIONS [SEED]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const long n = std::stol(argv[2]);  // at most |space| (995,328): one suite
  Gen g{std::mt19937_64(argc > 3 ? std::stoull(argv[3]) : 38)};
  const std::string src = ATTN_SOURCE_DIR;
  const auto space = nlohmann::json::parse(read_file(src + "/kernels_templates/fa3_tma.json"));
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> axes;
  for (const auto& [name, p] : space["parameters"].items())
    axes.push_back({name, p["values"].get<std::vector<nlohmann::json>>()});
  const TemplateSpace tspace = TemplateSpace::load(src + "/kernels_templates/fa3_tma.json");
  const Compiler compiler;
  const CompileSources sources = read_compile_sources(tspace.source_path());
  const std::string kernel_source = read_file(src + "/kernels_templates/fa3_tma.cu");
  const auto cases = builtin_suite("full", 0);
  std::vector<const CaseSpec*> screen;  // one case per family, as plan_screen picks
  for (const auto& c : cases)
    if (c.case_id.ends_with("-2")) screen.push_back(&c);

  auto db = ExperimentDb::open(path);
  db.connection().exec("PRAGMA synchronous = OFF");
  RunRecord run;
  run.suite = "full";
  run.suite_json = suite_to_manifest_json(cases);
  run.strategy = "random";
  run.templates = {"fa3_tma"};
  run.gpu_name = "NVIDIA H100 80GB HBM3";
  run.driver = "580.95.05";
  run.sm_clock_mhz = 1980;
  run.git_commit = "0000000000000000000000000000000000000000";
  run.host = "nightdb-gen";
  std::int64_t run_id = 0;
  std::uint64_t space_size = 1;
  for (const auto& [name, values] : axes) space_size *= values.size();
  // The space's points split into the valid ones and the others, each in odometer order (the first axis
  // fastest); lab/scripts/nightdb_clone.py splits them the same way.
  auto point = [&](std::uint64_t idx) {
    nlohmann::json cfg = nlohmann::json::object();
    for (const auto& [name, values] : axes) {
      cfg[name] = values[idx % values.size()];
      idx /= values.size();
    }
    return cfg;
  };
  std::vector<std::uint32_t> valid, invalid;
  for (std::uint64_t idx = 0; idx < space_size; ++idx)
    (tspace.check(config_from_json(point(idx).dump())) ? invalid : valid).push_back(static_cast<std::uint32_t>(idx));
  std::fprintf(stderr, "fa3_tma: %zu valid configs of %llu\n", valid.size(),
               static_cast<unsigned long long>(space_size));
  constexpr std::uint64_t kStride = 1000003;  // a prime: i -> i * kStride mod n is one to one
  double best_screen = 0.19, best_ms = 0.30;
  std::int64_t best_iter = 0, proposals = 0, ideas = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<sqlite::Batch> batch;
  for (long i = 0; i < n; ++i) {
    if (i % 2000 == 0) {  // 2,000 iterations a commit: the generator's speed, not the rows
      if (batch) batch->commit();
      batch.reset();
      batch.emplace(db.connection());
    }
    if (i % 62500 == 0) {
      if (run_id) db.end_run(run_id, RunStatus::stopped, "budget reached");
      run_id = db.begin_run(run);
    }
    if (i % 50000 == 25000 && best_iter) {  // a proposal of the hook, rejected; an idea, judged
      ProposalRecord p;
      p.run_id = run_id;
      p.command = "scripts/proposers/llm_example.sh";
      p.parent_template = "fa3_tma";
      p.parent_iteration_id = best_iter;
      p.id = db.begin_proposal(p);
      p.status = ProposalStatus::rejected;
      p.reason = "NVRTC: fa3_tma_p.cu(88): error: identifier \"kStages\" is undefined";
      p.description = "prefetch the next K tile one stage earlier";
      p.template_name = fmt::format("fa3_tma_p{}", p.id);
      p.source = kernel_source;
      p.space_json = space.dump();
      p.diff = "--- a/fa3_tma.cu\n+++ b/fa3_tma.cu\n@@ -80,7 +80,7 @@\n-  constexpr int kAhead = 1;\n+  constexpr int kAhead = 2;\n";
      p.exit_status = "exited with code 0";
      p.proposer_ms = 42000;
      p.output = std::string(4000, 'x');
      db.finish_proposal(p);
      ++proposals;
      IdeaRecord idea;
      idea.run_id = run_id;
      idea.file = fmt::format("idea_{}.idea", ideas);
      idea.idea_hash = g.hex(32);
      idea.description = "stage K one tile ahead";
      idea.hypothesis = "the producer waits on the K barrier";
      idea.diff = p.diff;
      idea.parent_template = "fa3_tma";
      idea.parent_iteration_id = best_iter;
      idea.status = IdeaStatus::tuning;
      idea.id = db.add_idea(idea);
      idea.status = IdeaStatus::done;
      idea.verdict = IdeaVerdict::no_gain;
      idea.reason = "within the noise of its parent";
      idea.configs = 12;
      db.update_idea(idea);
      ++ideas;
    }
    // Config i: for i below the V valid configs the valid one at (i * kStride) mod V, then the invalid one at
    // ((i - V) * kStride) mod (|space| - V); a point is the digits of its index in the axes' radices (names
    // sorted, values in the space file's order). Distinct for every i below |space| (995,328 for fa3_tma), and
    // lab/scripts/nightdb_clone.py derives the same config from the same i.
    const std::uint64_t u = static_cast<std::uint64_t>(i);
    const nlohmann::json cfg = point(u < valid.size() ? valid[(u * kStride) % valid.size()]
                                                      : invalid[((u - valid.size()) * kStride) % invalid.size()]);
    IterationRecord it;
    it.run_id = run_id;
    it.suite = "full";
    it.template_name = "fa3_tma";
    it.params_json = cfg.dump();
    const double r = g.uni(0, 1);
    std::string move = r < 0.48   ? "random sample (no new valid child in 64 tries)"
                       : r < 0.7  ? "random sample (no new valid child in 64 tries with up to 4 parameters moved)"
                       : r < 0.9  ? fmt::format("crossover of iter {} x iter {}, mutated SCHEDULE 2->0", g.rng() % (i + 1), g.rng() % (i + 1))
                                  : fmt::format("mutated BLOCK_N 128->64 of iter {}", g.rng() % (i + 1));
    const std::string head = move + " [fa3_tma]";
    it.root_seed = 0;
    it.iter = db.begin_iteration(it);

    const double kind = g.uni(0, 1);
    const bool compile_error = kind < 0.005;
    VariantRecord v;
    v.template_name = "fa3_tma";
    v.params_json = it.params_json;
    v.content_hash = g.hex(32);
    v.compile_ok = !compile_error;
    v.compile_ms = g.uni(400, 1200);
    if (compile_error) {
      v.compile_log = "fa3_tma.cu(412): error: static assertion failed with \"the K/V ring does not fit in shared "
                      "memory\"\n          static_assert(kSmemBytes <= 232448, \"the K/V ring does not fit in shared "
                      "memory\");\n          ^\n1 error detected in the compilation of \"fa3_tma.cu\".\n";
    } else {
      v.registers = 128 + static_cast<std::int64_t>(g.rng() % 112);
      v.smem_bytes = 1024;
      v.spill_bytes = g.chance(0.1) ? 48 : 0;
      if (kind >= 0.795)  // evaluated in full: exportable, with the hash the daemon's compile cache gives it
        v.content_hash = compiler.content_hash(compile_request(tspace, config_from_json(v.params_json)), sources);
      v.cubin_path = "/tmp/nightdb-cache/" + v.content_hash + ".cubin";
      v.cubin_hash = g.hex(32);
    }
    it.variant_id = db.upsert_variant(v);
    db.set_iteration_variant(it.iter, *it.variant_id);
    it.compile_ms = v.compile_ms;
    if (compile_error) {
      it.status = IterationStatus::crash;
      it.failure_kind = FailureKind::compile;
      it.description = head + "; compile error: fa3_tma.cu(412): error: static assertion failed with \"the K/V ring "
                              "does not fit in shared memory\"";
      db.finish_iteration(it);
      continue;
    }
    it.gpu_index = 0;
    it.gpu_uuid = "GPU-1d1ae532-afb5-c2d1-b12c-95d18fb57450";
    it.sm_clock_mhz = 1980;
    const double screen_ms = best_screen * g.uni(0.98, 2.5);
    it.screen_ms = screen_ms;
    const double above = (screen_ms / best_screen - 1) * 100;
    const std::string regs = fmt::format("{} regs{}", *v.registers, *v.spill_bytes ? ", spills 48+0 B" : "");
    auto case_of = [&](const CaseSpec& c, double ms, int samples) {
      CaseResultRecord cr;
      cr.case_id = c.case_id;
      cr.family = c.family;
      cr.median_ms = ms;
      cr.spread = g.uni(0.0002, 0.002);
      cr.samples = samples;
      cr.sm_clock_mhz = 1980;
      cr.o_max_abs_diff = 0.0078125;
      cr.lse_max_abs_diff = 2.86102294921875e-06;
      cr.passed = true;
      return cr;
    };
    const std::string screened = fmt::format(
        "screened on 3 of 9 cases (full-window-2, full-global-2, full-retrieval-2) with at most 5 samples: {:.4f} ms, ",
        screen_ms);
    if (kind < 0.795) {  // stopped by the screen
      it.status = IterationStatus::discard;
      it.fidelity = Fidelity::screen;
      it.gpu_ms = g.uni(10, 15);
      for (const auto* c : screen) it.cases.push_back(case_of(*c, screen_ms * g.uni(0.9, 1.1), 3));
      it.description = fmt::format("{}; screened out on 3 of 9 cases with at most 5 samples: {:.4f} ms, {:.1f}% above "
                                   "the best screen {:.4f} ms (cut-off 10%); {}",
                                   head, screen_ms, above, best_screen, regs);
      db.finish_iteration(it);
      continue;
    }
    // The whole suite.
    best_screen = std::min(best_screen, screen_ms);
    it.fidelity = Fidelity::full;
    it.gpu_ms = g.uni(60, 120);
    const double ms = best_ms * g.uni(0.995, 1.6);
    double fam[3] = {ms * g.uni(0.8, 0.9), ms * g.uni(1.0, 1.1), ms * g.uni(1.1, 1.2)};
    for (const auto& c : cases) it.cases.push_back(case_of(c, fam[static_cast<int>(c.family)] * g.uni(0.7, 1.3), 20));
    const std::string prefix = fmt::format("{}; {}{:.1f}% above the best screen {:.4f} ms, within the cut-off 10%: "
                                           "evaluated in full; ", head, screened, above, best_screen);
    if (kind > 0.995) {
      it.status = IterationStatus::crash;
      it.failure_kind = FailureKind::wrong_result;
      it.cases.back().passed = false;
      it.description = prefix + "wrong result: full-retrieval-3 o max abs diff 0.0625 > tolerance 0.03125; " + regs;
      db.finish_iteration(it);
      continue;
    }
    it.geomean_ms = ms;
    it.delta_ms = ms - best_ms;
    it.window_ms = fam[0];
    it.global_ms = fam[1];
    it.retrieval_ms = fam[2];
    const bool better = ms < best_ms;
    it.status = better ? IterationStatus::keep : IterationStatus::discard;
    it.description = prefix + fmt::format("{:.4f} ms ({:+.4f} vs the champion); {}", ms, ms - best_ms, regs);
    db.finish_iteration(it);
    if (better) {
      const double prev = best_ms;
      best_ms = ms;
      const nlohmann::json aba = {{"a1_ms", prev}, {"b_ms", ms}, {"a2_ms", prev * 1.001}, {"gpu_index", 0}};
      HoldoutCheckRecord h;
      h.run_id = run_id;
      h.iteration_id = it.iter;
      h.suite = "full";
      h.root_seed = 20260415;
      h.role = HoldoutRole::challenger;
      h.ok = true;
      h.score_ms = ms * 1.01;
      h.window_ms = fam[0];
      h.global_ms = fam[1];
      h.retrieval_ms = fam[2];
      h.tuned_ms = ms;
      h.verdict = "allowed: within the noise of its tuned score";
      nlohmann::json cj = nlohmann::json::array();
      for (const auto& c : it.cases) cj.push_back(c);
      h.cases_json = cj.dump();
      db.add_holdout_check(h);
      db.set_champion({"full", ChampionScope::overall, it.iter, ms, ""}, aba.dump());
      db.set_champion({"full", ChampionScope::sliding_window, it.iter, fam[0], ""}, aba.dump());
      best_iter = it.iter;
    }
    if ((i + 1) % 100000 == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "%ld iterations, %.0f s\n", i + 1, s);
    }
  }
  if (run_id) db.end_run(run_id, RunStatus::stopped, "budget reached");
  if (batch) batch->commit();
  std::printf("%ld iterations, %lld proposals, %lld ideas in %s\n", n, static_cast<long long>(proposals),
              static_cast<long long>(ideas), path.c_str());
  return 0;
}
