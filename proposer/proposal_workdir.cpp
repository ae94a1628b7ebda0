// write_proposal_workdir: the files a proposer reads, and the contract it works under.
#include "proposer/proposal_workdir.hpp"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/iters_tsv.hpp"
#include "gpu/compiler.hpp"
#include "proposer/idea_context.hpp"
#include "core/text_file.hpp"
#include "workload/validation.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace {

void write_file(const fs::path& path, const std::string& text) { write_text_file(path.string(), text); }

std::string opt_num(const std::optional<double>& v) { return v ? fmt::format("{:.4f}", *v) : "-"; }
template <class T>
std::string opt_int(const std::optional<T>& v) {
  return v ? std::to_string(*v) : "-";
}

std::string champion_text(const ProposalContext& c) {
  const IterationRecord& it = c.champion;
  std::string s = fmt::format(
      "template: {}\niteration: {}\nsuite: {}\nparams: {}\ngeomean_ms: {}\nwindow_ms: {}\nglobal_ms: {}\n"
      "retrieval_ms: {}\ndescription: {}\n",
      it.template_name, it.iter, it.suite, it.params, opt_num(it.geomean_ms), opt_num(it.window_ms),
      opt_num(it.global_ms), opt_num(it.retrieval_ms), tsv_text(it.description));
  if (const auto& v = c.champion_variant)
    s += fmt::format("registers: {}\nspill_bytes: {}\nstatic_smem_bytes: {}\ncompile_ms: {}\n", opt_int(v->registers),
                     opt_int(v->spill_bytes), opt_int(v->smem_bytes), opt_num(v->compile_ms));
  return s;
}

}  // namespace

std::string champion_cases_tsv(const IterationRecord& it) {
  std::string s = "case_id\tfamily\tmedian_ms\tspread\tsamples\to_max_abs_diff\tlse_max_abs_diff\tpassed\n";
  for (const auto& c : it.cases)
    s += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", c.case_id, family_name(c.family), opt_num(c.median_ms),
                     c.spread ? fmt::format("{:.4f}", *c.spread) : "-", c.samples,
                     c.o_max_abs_diff ? fmt::format("{:.3g}", *c.o_max_abs_diff) : "-",
                     c.lse_max_abs_diff ? fmt::format("{:.3g}", *c.lse_max_abs_diff) : "-", c.passed ? 1 : 0);
  return s;
}

namespace {

std::string top_tsv(const std::vector<IterationRecord>& top) {
  std::string s = "rank\titer\ttemplate\tgeomean_ms\twindow_ms\tglobal_ms\tretrieval_ms\tparams\n";
  for (std::size_t i = 0; i < top.size(); ++i) {
    const auto& it = top[i];
    s += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", i + 1, it.iter, it.template_name, opt_num(it.geomean_ms),
                     opt_num(it.window_ms), opt_num(it.global_ms), opt_num(it.retrieval_ms), it.params);
  }
  return s;
}

/// The judged ideas (status done) of the idea queue, oldest first.
std::vector<const IdeaRecord*> judged_ideas(const std::vector<IdeaRecord>& ideas) {
  std::vector<const IdeaRecord*> out;
  for (const auto& i : ideas)
    if (i.status == IdeaStatus::done && i.verdict != IdeaVerdict::none) out.push_back(&i);
  return out;
}

std::string pct(const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : "-"; }

/// results/ideas_tried.tsv: one line per judged idea; text fields through tsv_text (tabs and newlines
/// escaped), "-" for a missing number.
std::string ideas_tsv(const std::vector<IdeaRecord>& ideas) {
  std::string s = "idea\tfile\tdescription\tparent\ttemplate\tverdict\tbroken_kind\tdelta_pct\tnoise_pct\treason\n";
  for (const IdeaRecord* i : judged_ideas(ideas))
    s += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", i->id, tsv_text(i->file), tsv_text(i->description),
                     tsv_text(i->parent_template), tsv_text(i->template_name.empty() ? "-" : i->template_name),
                     to_string(i->verdict), i->broken_kind == IdeaBrokenKind::none ? "-" : to_string(i->broken_kind),
                     pct(i->delta_pct),
                     pct(i->noise_pct), tsv_text(i->reason));
  return s;
}

/// PROPOSE.md: the contract, with this call's values filled in.
std::string propose_md(const ProposalContext& c, const std::vector<std::string>& headers) {
  const TemplateSpace& p = *c.parent;
  const Tolerances tol;
  std::string header_list;
  for (const auto& h : headers) header_list += (header_list.empty() ? "" : ", ") + ("`" + h + "`");
  if (header_list.empty()) header_list = "none";
  return fmt::format(R"md(# Proposal {id}: a new kernel template for attn-tuner

attn-tuner tunes block-sparse causal attention forward kernels (bf16, head dim 128, Hopper sm_90a) for the
Attention Kernel Challenge. You are its proposer: write a new kernel template (CUDA C++ compiled by NVRTC)
that you expect to be faster than the champion below. The daemon verifies it, tunes its parameters, times it
and keeps it only if it wins. This directory is yours: read anything in it, write only in it.

## What is here
- `{parent}.cu`, `{parent}.json`: the champion's template and its parameter space. Headers it includes,
  beside it: {headers}.
- `context.json`: these facts, machine-readable (champion config and scores, file names, the limit).
- `results/champion.txt`: the champion (iteration {iter}, template `{parent}`, config `{params}`):
  score {score} ms on suite `{suite}`, per-family medians, registers, spills, static smem.
- `results/champion_cases.tsv`: its per-case medians (ms), spread, samples, max abs diffs.
- `results/champion_compile.log`: the NVRTC / ptxas log of its compile (registers, spills per kernel).
- `results/top_configs.tsv`: the {k} fastest configs on `{suite}`, best first.
- `results/recent_iters.tsv`: the last {n} iterations in iters.tsv format (keep / discard / crash and why).
- `results/ideas_tried.tsv`: the {m} kernel ideas already tried and judged (the idea queue, one per line):
  file, description, parent template, verdict (`win`: faster than its parent by more than the noise;
  `no_gain`: within the noise; `slower`; `broken`, with its kind: did not apply, compile, ABI, wrong
  results...), delta_pct (score vs the parent, %, negative is faster), noise_pct, reason. Do not propose
  these again: a `win` is in the champion's lineage already, the others did not pay.
- `profile/PROFILE.md`: where the champion's cycles go (registers, spills, ptxas diagnostics, the SASS
  instruction mix per kv tile, the trace where measured); `IDEA.md`: the rules of the kernel idea queue,
  whose limits of NVRTC and ptxas hold for a template too.

## What to write: all three files, or none
- `{src}`: the new template. It may include the headers in this directory (`#include "name"`); your edited
  copy of a header is part of your proposal. Includes name files inside this directory (no absolute path,
  no `..`), plain files (no symlinks). 1 MiB at most.
- `{space}`: its parameter space, in the format of `{parent}.json`: parameters with their values,
  constraints (muparser expressions, `%` is modulo) and a `default` config, which is compiled and checked
  first (make it the config you expect to be fastest). The daemon sets `name` and `source`; `kernel` must
  be `{kernel}`.
- `{desc}`: one line, what you changed and why. It goes into the log and the DB.
Writing none of them means "no proposal this time"; that is fine.

## The ABI (kernels_templates/ABI.md)
```
extern "C" __global__ void {kernel}(
    const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,   // [B, H, t_max, 128]
    const int* row_ptr,   // [B, H, t_max/128 + 1]
    const int* col_idx,   // [B, H, col_width]
    const int* seq_lens,  // [B]
    __nv_bfloat16* o,     // [B, H, t_max, 128]
    float* lse,           // [B, H, t_max], natural log
    int batch_size, int num_heads, int t_max, int col_width
    /* optionally a 13th parameter: four 128-byte CUtensorMap (q, k, v, o), see {parent}.cu if it has one */);
extern "C" __device__ int attn_launch_info[4];  // {{threads per CTA, dynamic smem bytes, BLOCK_M, grid mode}}
                                                // or [8]: + tensor-map rows of q, kv, o and CTAs per SM
```
Grid (t_max / BLOCK_M, num_heads, batch_size) in grid mode 0, persistent (SMs x CTAs per SM) in mode 1.
The kernel writes every element of o and lse: o = 0 and lse = -inf for rows with no allowed key.

## What makes a proposal valid
Checked in this order before any GPU time; a failure is logged as a crash iteration with its reason and
the run goes on:
1. the three files exist, the description is one non-empty line, includes stay in this directory;
2. `{space}` loads: valid JSON, non-empty value lists, constraints that parse, a valid default;
3. the default config compiles with NVRTC: `-arch=sm_90a -std=c++17 -I<cuda>/include -I<this dir>`,
   each parameter as `-DNAME=VALUE`;
4. its PTX has the `extern "C"` entry `{kernel}` with the ABI's parameters (8 pointers, 4 ints,
   optionally the 512-byte tensor maps) and a defined `attn_launch_info` with valid values.
Then it is tuned like any template: every config is validated on every case of the suite against an fp32
reference with the harness's tolerances (o: |a - b| <= {oa:g} + {orr:g} |ref|; lse: |a - b| <= {la:g} +
{lr:g} |ref|); a fault, hang or wrong result is a crash of that config, in a separate worker process.
Latency is timed cold (L2 flushed) per case; score = geometric mean over families of the per-family median
(ms, lower is better). It becomes champion only by beating the champion by more than the measured noise in
an A/B/A re-timing, and only a champion reaches the export.

## Rules
- You have {timeout:g} s of wall-clock time; then you and every process you started are killed.
- Write only in this directory. Writes to the repository's kernels_templates/ or to the experiment DB's
  folder are detected, undone where possible, and the proposal is rejected.
- You get no path to the experiment DB, and must not look for it.
)md",
                     fmt::arg("id", c.proposal_id), fmt::arg("parent", p.name()), fmt::arg("headers", header_list),
                     fmt::arg("iter", c.champion.iter), fmt::arg("params", c.champion.params),
                     fmt::arg("score", opt_num(c.champion.geomean_ms)), fmt::arg("suite", c.suite),
                     fmt::arg("k", c.top.size()), fmt::arg("n", c.recent.size()),
                     fmt::arg("m", judged_ideas(c.ideas).size()), fmt::arg("src", kProposalSource),
                     fmt::arg("space", kProposalSpace), fmt::arg("desc", kProposalDescription),
                     fmt::arg("kernel", p.kernel()), fmt::arg("oa", tol.output_atol), fmt::arg("orr", tol.output_rtol),
                     fmt::arg("la", tol.lse_atol), fmt::arg("lr", tol.lse_rtol), fmt::arg("timeout", c.timeout_s));
}

}  // namespace

void write_proposal_workdir(const std::string& dir, const ProposalContext& c) {
  if (!c.parent) throw std::invalid_argument("write_proposal_workdir: no parent template");
  const TemplateSpace& p = *c.parent;
  const fs::path root(dir);
  if (fs::exists(root)) throw std::runtime_error("proposal workdir " + dir + " exists already");
  fs::create_directories(root);

  const std::string source_name = p.name() + ".cu", space_name = p.name() + ".json";
  write_file(root / source_name, read_text_file(p.source_path()));
  write_file(root / space_name, read_text_file(p.json_path()));
  std::vector<std::string> headers;
  for (const auto& [name, text] : local_includes(p.source_path())) {
    const fs::path rel = fs::path(name).lexically_normal();
    if (rel.is_absolute() || rel.string().rfind("..", 0) == 0) continue;  // outside the template folder
    write_file(root / rel, text);
    headers.push_back(rel.string());
  }

  write_file(root / "results" / "champion.txt", champion_text(c));
  write_file(root / "results" / "champion_cases.tsv", champion_cases_tsv(c.champion));
  write_file(root / "results" / "champion_compile.log",
             c.champion_variant ? c.champion_variant->compile_log : std::string("(no compile log recorded)\n"));
  write_file(root / "results" / "top_configs.tsv", top_tsv(c.top));
  write_file(root / "results" / "recent_iters.tsv", render_all(c.recent));
  write_file(root / "results" / "ideas_tried.tsv", ideas_tsv(c.ideas));
  write_file(root / "PROPOSE.md", propose_md(c, headers));
  // The idea author's rules and the champion's profile (proposer/idea_context.hpp): a proposer may write an
  // idea's worth of change as a whole template too.
  write_file(root / "IDEA.md", idea_md(p, headers, "."));
  ProfileInput profile;
  profile.template_name = p.name();
  profile.kernel = p.kernel();
  profile.params = c.champion.params_json;
  profile.champion = c.champion;
  profile.templates_arg = ".";
  if (c.champion_variant) {
    profile.compile_log = c.champion_variant->compile_log;
    if (!c.champion_variant->cubin_path.empty()) profile.cubin_path = c.champion_variant->cubin_path;
  }
  write_champion_profile(root.string(), profile);

  const auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::ordered_json j = {
      {"proposal_id", c.proposal_id},
      {"suite", c.suite},
      {"timeout_s", c.timeout_s},
      {"parent", {{"template", p.name()}, {"source", source_name}, {"space", space_name}, {"kernel", p.kernel()},
                  {"headers", headers}}},
      {"champion",
       {{"iteration", c.champion.iter},
        {"params", nlohmann::json::parse(c.champion.params_json.empty() ? "{}" : c.champion.params_json)},
        {"geomean_ms", opt(c.champion.geomean_ms)},
        {"window_ms", opt(c.champion.window_ms)},
        {"global_ms", opt(c.champion.global_ms)},
        {"retrieval_ms", opt(c.champion.retrieval_ms)},
        {"registers", c.champion_variant && c.champion_variant->registers ? nlohmann::json(*c.champion_variant->registers)
                                                                          : nlohmann::json(nullptr)},
        {"spill_bytes", c.champion_variant && c.champion_variant->spill_bytes
                            ? nlohmann::json(*c.champion_variant->spill_bytes)
                            : nlohmann::json(nullptr)}}},
      {"ideas_tried", {{"file", "results/ideas_tried.tsv"}, {"count", judged_ideas(c.ideas).size()}}},
      {"outputs", {{"source", kProposalSource}, {"space", kProposalSpace}, {"description", kProposalDescription}}}};
  write_file(root / "context.json", j.dump(2) + "\n");
}

}  // namespace attn
