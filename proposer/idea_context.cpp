// write_idea_context, IDEA.md and the champion's profile (proposer/idea_context.hpp).
#include "proposer/idea_context.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/iters_tsv.hpp"
#include "proposer/champion_template.hpp"
#include "proposer/idea_apply.hpp"
#include "proposer/idea_check.hpp"
#include "proposer/idea_file.hpp"
#include "proposer/parent_template.hpp"
#include "proposer/proposal_workdir.hpp"
#include "proposer/sass_profile.hpp"
#include "core/templates_dir.hpp"
#include "core/text_file.hpp"
#include "tuner/proposal_template.hpp"
#include "workload/validation.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace {

std::string opt_num(const std::optional<double>& v, const char* f = "{:.4f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : "-";
}

/// ptxas's serialisation codes IDEA.md explains: "C7520, C7515, ...".
std::string serialisation_codes() {
  std::string s;
  for (const auto& p : serialisation_patterns()) s += fmt::format("{}{}", s.empty() ? "" : ", ", p.codes);
  return s;
}

/// IDEA.md's list of ptxas's serialisation messages with their usual causes.
std::string serialisation_rows() {
  std::string s;
  for (const auto& p : serialisation_patterns()) s += fmt::format("  - {} \"{}\": {};\n", p.codes, p.message, p.cause);
  return s;
}

/// IDEA.md's lines on the files only the kit has (`idea context`; the proposer's folder has neither).
std::string kit_files() {
  return fmt::format(R"md(
- `template/ABI.md`: the kernel ABI the host honours (kernels_templates/ABI.md): the entry point's parameters,
  the `attn_launch_info` fields the host reads (threads, dynamic shared memory, BLOCK_M, grid mode, ...) and
  the macros' rule. An idea keeps it; `idea check` fails (`proposal`) where it does not.
- `parent.json`: the parent (`template`), why it is the parent (`why`), the template whose measurements stand
  for it (`measured`), its best config on the suite (`config`, iteration `iteration`): the config the daemon
  tunes your idea from first, and the one `idea check --kit` checks; and `top`: its {} best configs with their
  scores (`geomean_ms`, one row a config, fastest first): the configs the daemon tunes your idea from first
  (`attn-tuner run --idea-top`). Read where they differ (SCHEDULE, EPILOGUE, ...): your idea is tuned at each
  of them, not only at the best.)md",
                     kIdeaTopConfigs);
}

std::string exit_code_rows() {
  std::string s;
  const std::pair<IdeaCheckCode, std::string> rows[] = {
      {IdeaCheckCode::ok, "it passes: the daemon will accept it and tune it"},
      {IdeaCheckCode::bad_input, "the daemon's parser refuses the file (verdict broken, bad_input)"},
      {IdeaCheckCode::does_not_apply, "a hunk fails or names a file the parent lacks (broken, does_not_apply)"},
      {IdeaCheckCode::compile, "NVRTC fails on the default config or a config with the idea on (broken, compile)"},
      {IdeaCheckCode::proposal, "the space does not load or the kernel's ABI is wrong (broken, proposal)"},
      {IdeaCheckCode::default_changed, "the default config's cubin is not the parent's, byte for byte"},
      {IdeaCheckCode::slow_build, "ptxas predicts a slow kernel (wgmma serialised: " + serialisation_codes() +
                                      ") where the parent's build of that config does not; --accept-warning CODE lets it pass"},
      {IdeaCheckCode::spills, "a config with the idea on spills more than the parent's build of it; "
                              "--accept-warning spills lets it pass"},
      {IdeaCheckCode::already_judged, "this idea (its hash: Template, Space, Default and diff) was judged on this suite "
                                      "already and the daemon will skip it (with `--kit` or `--db`); change it, or write "
                                      "`Retry: yes` to have it judged on a newer parent"}};
  for (const auto& [code, what] : rows) s += fmt::format("| {} | `{}` | {} |\n", static_cast<int>(code), to_string(code), what);
  s += "| 1 | | the tool itself failed (patch(1) missing, a folder not writable) |\n";
  s += "| 2 | | bad usage (no parent template named, an unreadable file); an option the parser does not know "
       "exits 105-109 (CLI11's codes: `--help` lists the options) |\n";
  return s;
}

std::string family_of(const CaseResultRecord& c) { return family_name(c.family); }

/// The trace commands for each family's slowest case of the champion, with paths relative to the kit's root.
std::string trace_howto(const ProfileInput& in) {
  std::map<std::string, const CaseResultRecord*> slowest;
  for (const auto& c : in.champion.cases) {
    if (!c.median_ms) continue;
    auto& s = slowest[family_of(c)];
    if (!s || *c.median_ms > *s->median_ms) s = &c;
  }
  std::string s =
      "`attn-tuner trace` (on a GPU) builds the champion with clock64 stamps and prints, per role (producer, "
      "converters, consumer warpgroups), the cycles of each step of its loop per kv tile. On the GPU machine, for "
      "each family's slowest case of the champion, run these in the kit's root (the folder that holds IDEA.md): "
      "their paths are relative to it, so they hold wherever the kit was copied.\n\n```sh\nmkdir -p traces\n";
  const std::string config = in.params.empty() ? "{}" : in.params;
  for (const auto& [family, c] : slowest)
    s += fmt::format("attn-tuner trace --templates {} --template {} --config '{}' --suite {} --case {}{} > traces/{}.txt\n",
                     in.templates_arg, in.template_name, config, in.champion.suite, c->case_id,
                     in.champion.root_seed ? fmt::format(" --seed {}", *in.champion.root_seed) : "", family);
  return s + "```\n";
}

/// The lines at the top of PROFILE.md for what it lacks, why, and the command that fills it in; "" when whole.
std::string missing_text(const ProfileInput& in, const std::vector<std::string>& missing, bool no_trace) {
  if (missing.empty()) return "";
  std::string s = "## Missing here\nThis profile lacks (nothing below stands in for it):\n";
  for (const auto& m : missing) s += "- " + m + "\n";
  s += fmt::format(
      "\nTo get {}: on a GPU machine (its CUDA toolkit has cuobjdump), in the kit's root: {}\n```sh\n{} --trace {}\n```\n"
      "writes a new kit (`--out`: a fresh folder) with what is missing (`--db`: the DB this kit was written from, where it is on "
      "that machine).\n",
      missing.size() > 1 ? "them" : "it", no_trace ? "run the commands of \"Trace\" below, then" : "",
      in.context_command, no_trace || in.trace_dir.empty() ? "traces" : in.trace_dir);
  return s;
}

/// kernels_templates/ABI.md: the one in `templates_dir`, else the repository's (a test's templates folder has none).
std::string abi_md_path(const std::string& templates_dir) {
  for (const auto& d : {templates_dir, default_templates_dir()})
    if (fs::exists(fs::path(d) / "ABI.md")) return (fs::path(d) / "ABI.md").string();
  throw std::runtime_error(fmt::format("idea context: no ABI.md in {} nor {}", templates_dir, default_templates_dir()));
}

}  // namespace

std::string idea_md(const TemplateSpace& parent, const std::vector<std::string>& headers, const std::string& tdir) {
  const std::string root = proposal_root_template(parent.name());
  std::string header_list;
  for (const auto& h : headers) header_list += fmt::format("`{}`, ", h);
  if (!header_list.empty()) header_list.resize(header_list.size() - 2);
  else header_list = "none";
  std::string keys;
  for (const char* k : kIdeaHeaderKeys) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", k);
  const Tolerances tol;
  return fmt::format(R"md(# Writing a kernel idea for attn-tuner

attn-tuner tunes block-sparse causal attention forward kernels (bf16, head dim 128, Hopper sm_90a, CUDA C++
compiled by NVRTC) overnight. An **idea** is a small change to the current champion's template: a text file
`<name>.idea` of header lines, a blank line and a unified diff. The daemon applies it to the parent (the
template in `template/`), checks it without a GPU, tunes it within a budget (the parent's best configs first,
with the idea's new values on), and judges it A/B/A against the parent on one GPU plus a held-out seed:
`win` (faster than both looks at the parent by more than the noise; the next idea stacks on it), `no_gain`,
`slower`, or `broken` with the kind. Only the measured effect counts.

## What is here
- `{tdir}/`: the parent, `{root}.cu`, `{root}.json` (its parameter space) and the headers it includes
  ({headers}). Write your diff against these files; paths in the diff are relative to that folder. The
  parent is the template the daemon applies your idea to (`parent.json` says which and why): the repository
  template once the wins of its lineage are landed in it, else the latest win; not the champion's template
  when that holds an idea that did not win.{parent_json}
- `champion.json`, `champion_cases.tsv`: the champion (its template, which may hold an idea beyond the parent), its config, scores and per-case
  medians (ms, lower is better; score = geometric mean over families of the per-family median).
- `ideas_tried.tsv`, `ideas_tried/`: every idea judged so far, with verdict, delta vs its parent (%) and noise;
  each as an idea file. Do not send one again unchanged (its hash is its identity: it is skipped).
- `profile/PROFILE.md`: where the champion's cycles go: registers and spills, ptxas diagnostics, the SASS
  instruction mix per kv tile (MUFU, F2F/F2FP, HGMMA, barrier waits), the trace per role where measured.

## The file
```
Description: one line, what the idea does                    (required)
Hypothesis: one line, why it could be faster                 (optional)
Template: {root}                                           (optional: the template it is written against)
Space: {{"MY_AXIS": [0, 1]}}                                   (optional: new parameter axes, one JSON line)
Default: {{"MY_AXIS": 0}}                                      (required with Space: the parent's behaviour)
Retry: yes                                                   (optional: judge it again on a new parent)
Verdicts: 2                                                  (optional: judged again on the same parent, up to 2 verdicts)

--- a/{root}.cu
+++ b/{root}.cu
@@ -120,6 +120,9 @@
 ...
```
Limits (the daemon's parser; beyond them the verdict is `broken`, `bad_input`):
- headers: exactly these keys: {keys}; each at most once; `Key: value` on one line; lines starting with `#`
  are comments; the headers end at the first blank line (or at a line starting with `--- ` or `diff `).
- Description, Hypothesis, Template, Retry, Verdicts: at most **{hmax} bytes** each (UTF-8, after `Key:` and the spaces
  around the value). Space and Default: at most **{jmax} bytes** each.
- the whole file: at most **{fmax} bytes**, UTF-8, no NUL byte.
- Space: a JSON object of new axes, names `[A-Z][A-Z0-9_]*`, each a non-empty list of distinct integers that
  the parent does not have already (change an existing axis' values with a diff of `{root}.json` instead).
  Default: a value from each axis' list, and no other key. Retry: `yes` or `no`. Verdicts: 1 to 9.
- an idea cannot add a constraint to the space: every combination of its new values with the parent's axes
  is a config the tuner may build. Guard a combination the code cannot run in the preprocessor, and say in
  the Hypothesis which combinations you guard and how: a fallback (`#if MY_AXIS && BLOCK_N == 128` around the new code, the
  parent's code otherwise: that config runs the parent's kernel, and `idea check` says "the same cubin as the
  parent's" for it) or `#error "MY_AXIS needs BLOCK_N 128"` (that config fails to compile: the tuner counts it
  a crash and moves on, and `idea check` fails with `compile` when it builds that combination, e.g. at the
  parent's best config). Prefer the fallback where the parent's best configs (`parent.json`) hit it.
- the diff: unified (`diff -u`, `git diff`); hunks whose line counts add up; paths relative to this folder
  (a leading `a/`, `b/`, `kernels_templates/` is dropped, and the two folders `diff -ru OLD NEW` writes when
  the `---` and `+++` paths differ only in them); no absolute path, no `..`, no binary patch. A
  Space-only idea may have no diff.
- after the apply, the default config must compile (NVRTC) and keep the kernel's ABI (the entry point
  `{kernel}` and `attn_launch_info`, see the top of `{root}.cu`).

## The files an idea may touch
`{root}.cu`, `{root}.json` and the headers the template includes, recursively (every local `#include "..."`
is followed, resolved beside the including file): today {headers}. An idea may create a header if a file it
touches includes it. No other template's `.cu` or `.json`, nothing outside this folder.

## Keep the default config's cubin byte-identical
With every new axis at its Default, the idea must build exactly the parent's cubin: that config is the
control, and the tuner explores the new axis against it. What keeps it identical:
- new code behind the new axis' macro, with the parent's code in the default branch:
  `#ifndef MY_AXIS` / `#define MY_AXIS 0` / `#endif`, then `#if MY_AXIS ... #else (old code) #endif` or
  `if constexpr (MY_AXIS)`.
- no new member, template parameter or `static constexpr` in a type the default path uses (a `static
  constexpr` added to `Pipeline<T>`, a new `Traits` argument: both changed the default cubin; NVRTC emits such
  names into it). Namespace-scope `constexpr` constants are emitted as globals too. Put new constants in
  macros, enums or function-local constants; keep the old code verbatim under `#else` when you restructure.
- comments and whitespace are free; renaming or reordering existing code is not (the cubin can change).
`attn-tuner idea check` compares the two cubins.

## NVRTC's and ptxas's limits
- NVRTC, not nvcc: `-arch=sm_90a -std=c++17`, no host code and no host headers beyond CUDA's; includes resolve
  beside the including file, then CUDA's include folder.
- no generic lambdas in device code (`[&](auto x)` is rejected): give the parameter a type or use a template
  function.
- ptxas serialises every wgmma of the kernel ("Potential Performance Loss: wgmma.mma_async instructions are
  serialized due to ...") when code between the issue of a wgmma and the `wgmma.wait_group` that retires it
  breaks the pipeline (that window, not only `wgmma.fence` to `wgmma.commit_group`). It compiles, it is valid,
  and it is about 33 % slower. `idea check` fails on it and names the usual cause; ptxas names only the
  kernel, so the check adds `where:` lines: the calls, conditional branches and accumulator reads and writes
  inside a wgmma window in your build's PTX that the parent's build of the same config has not, one line a
  place, with its source line and the line it was inlined at (a branch is a candidate: ptxas objects only
  when the divergent path touches the pending registers; the scan reads the PTX in text order, so a window
  across a loop's back edge is not followed). The patterns:
{serialisation}- spills (local memory, LDL/STL) are slow; `idea check` compares them with the parent's.
- results must pass the harness's tolerances against an fp32 reference: o within {oa:g} + {orr:g}|ref|,
  lse within {la:g} + {lr:g}|ref| (bf16 P fails them: P and V are fp16).

## Ideas that stack
A win becomes the parent of the next idea of its lineage; an idea written against an older parent must
still apply to the new one:
- keep hunks small, with their usual three lines of context, away from lines other ideas change;
- an idea that changes what a value means (a scale, a layout) must change every place that reads it; a win
  after it was written may read it in a branch of its own (a new axis keeps the old code under `#else`): the
  hunk still applies to the old path, the build passes the check, and configs with both on come out
  `wrong_result`. Check it against the current champion (`--db`) and read the parent where the value is used;
- prefer a new axis (default off) over a plain code change: the tuner can turn it off where it does not pay;
- name the `Template:` (`{root}`), not a proposal's name; write `Retry: yes` to have it judged again on a
  new parent after a verdict on an older one;
- an idea that changes an existing axis' values diffs `{root}.json`; one that adds an axis uses Space/Default.

## Check it before you send it
```sh
attn-tuner idea check my.idea --kit KIT --cache CACHE     # KIT: this folder; at the parent's best config (parent.json)
attn-tuner idea check my.idea --kit KIT --cache CACHE --config '{{"PINGPONG": 1}}'   # at this config instead, with it on
attn-tuner idea check my.idea --db DB --suite full --cache CACHE   # where the DB is: the same parent, and what was judged
```
It runs the daemon's parser, the apply (GNU patch: a hunk applied at an offset or with fuzz is reported),
NVRTC on the default config, then on the base config with each new value on. The base config is the
parent's best config (`config` in `parent.json`) when you give no `--config`: check there first, that is
where the daemon starts. `--config JSON` replaces it, and the values it does not name come from the parent's
JSON default (`default` in `{tdir}/{root}.json`), not from `parent.json`'s best config: `{{"PINGPONG": 1}}`
is the JSON default with PINGPONG 1. To check near the parent's best, give a whole config: `config` or an
entry of `top` in `parent.json`, with your change. Without `--kit` or `--db` and without `--config` the base
is the JSON default config, which is not what the daemon tunes.
It compares the default cubin with the parent's, byte for byte: the line `default config: cubin
byte-identical to the parent's (<hash>)` is the proof that your default is unchanged (on a base other than
the default, the base with every new axis at its default must be the parent's cubin too). A config with the
idea on whose line says "the same cubin as the parent's (the idea changes nothing in this config)" runs the
parent's code: the idea does nothing there. For each config it compares registers, spills, shared memory
(`attn_launch_info`) and ptxas diagnostics with the parent's build of the same config. An idea that routes a
config to another path (EPILOGUE 1 running the EPILOGUE 2 code when its axis is on) compares with the
parent's build of that path: `--parent-config '{{"EPILOGUE": 2}}'`. ptxas reports spills for the whole
kernel; on a spills finding the check builds the config again with only one role's code (producer,
converters, consumers: `ATTN_ONLY_ROLE`, blocks/kernel.cuh) and prints each role's spill bytes beside the
parent's; what no role spills alone it traces with builds that leave one role out, naming the roles the rest
needs together (ptxas allocates each build anew: indications, not an exact split). Each config's line gives
the roles' register budgets after `setmaxnreg` (the producer warpgroup and its converters: PRODUCER_REGS; the
consumers: the rest, at most 240); the launch's register count is the whole kernel's cap and does not move.
`--cache CACHE`: a compile cache folder that you keep between checks (any writable folder; without it the
default is $ATTN_TUNER_CACHE or ~/.cache/attn-tuner, which a sandbox may not keep). NVRTC builds the parent
and the idea at each config (about 15 s a build); with the cache the parent's builds are reused and a
repeated check took 15-55 s in the authors' runs: use it. Exit codes (the
smallest finding wins):

| code | finding | meaning |
|---|---|---|
{codes}
)md",
                     fmt::arg("root", root), fmt::arg("tdir", tdir), fmt::arg("parent", parent.name()), fmt::arg("headers", header_list),
                     fmt::arg("keys", keys), fmt::arg("hmax", kIdeaHeaderMaxBytes), fmt::arg("jmax", kIdeaJsonHeaderMaxBytes),
                     fmt::arg("fmax", kIdeaFileMaxBytes), fmt::arg("kernel", parent.kernel()),
                     fmt::arg("oa", tol.output_atol), fmt::arg("orr", tol.output_rtol), fmt::arg("la", tol.lse_atol),
                     fmt::arg("lr", tol.lse_rtol), fmt::arg("codes", exit_code_rows()), fmt::arg("serialisation", serialisation_rows()),
                     fmt::arg("parent_json", tdir == "template" ? kit_files() : std::string()));
}

std::string idea_context_command(const std::string& db_path, const std::string& suite) {
  return fmt::format("attn-tuner idea context --db {} --suite {} --out NEW_KIT", db_path, suite);
}

std::string write_champion_profile(const std::string& dir, const ProfileInput& in) {
  const fs::path p = fs::path(dir) / "profile";
  fs::create_directories(p);
  write_text_file((p / "compile.log").string(), in.compile_log.empty() ? "(no compile log recorded)\n" : in.compile_log);
  std::vector<std::string> missing;
  const ResourceUsage r = parse_ptxas_resources(in.compile_log, in.kernel);
  std::string md = "\n## Resources (ptxas -v)\n";
  md += r.registers < 0 ? "Not in the compile log.\n"
                        : fmt::format("{} registers per thread, {} bytes spill stores, {} bytes spill loads, {} bytes "
                                      "stack frame, {} bytes static smem.\n",
                                      r.registers, r.spill_stores, r.spill_loads, r.stack_frame, r.static_smem);
  const auto warnings = ptxas_warnings(in.compile_log);
  md += "\n## ptxas diagnostics\n";
  if (warnings.empty()) md += "None (no serialised wgmma).\n";
  for (const auto& w : warnings) md += fmt::format("- {}\n", w.text);

  md += "\n## SASS instruction mix\n";
  const auto tool = find_disassembler();
  if (!in.cubin_path || !fs::exists(*in.cubin_path)) {
    missing.push_back("the SASS instruction mix: no cubin of the champion here (its build failed or is not at its "
                      "recorded path)");
  } else if (!tool) {
    missing.push_back("the SASS instruction mix (`sass.txt`, `sass_mix.tsv`): no disassembler (cuobjdump or nvdisasm "
                      "of the CUDA toolkit) on the machine that wrote this kit: it was written without the GPU "
                      "machine's toolkit");
  } else {
    try {
      const std::string listing = disassemble_cubin(*tool, *in.cubin_path);
      write_text_file((p / "sass.txt").string(), listing);
      const SassProfile sp = parse_sass(listing);
      const std::string table = sass_profile_text(sp);
      write_text_file((p / "sass_mix.tsv").string(), table);
      md += "Static counts from `sass.txt` (" + fs::path(*tool).filename().string() +
            "): the whole kernel, and each loop whose body issues HGMMA (a branch back to an earlier address; the "
            "innermost ones are one kv tile of a consumer loop). Classes: MUFU.EX2 the exponentials, F2FP/F2F "
            "conversions, SYNCS the mbarrier arrives and waits, BAR the named barriers, WARPGROUP the wgmma "
            "arrive/depbar waits, LDL/STL spills.\n\n```\n" + table + "```\n";
    } catch (const std::exception& e) {
      missing.push_back(fmt::format("the SASS instruction mix: the disassembly failed: {}", e.what()));
    }
  }
  if (!missing.empty()) md += "Not here: see \"Missing here\" at the top.\n";

  md += "\n## Trace: cycles per kv tile and per role\n";
  md += fmt::format(
      "Units: SM clock cycles (clock64 stamps), at the SM clock of the champion's measurement ({}; cycles / MHz = "
      "us). One thread per role stamps: a consumer row counts one consumer warpgroup (each warpgroup its own "
      "stamps: with CONSUMERS 2, two warpgroups run these cycles side by side), the producer and converter rows "
      "count the CTA (its TMA thread, its first converter warp). `cyc/kvtile` divides by the (work tile, kv tile) "
      "pairs that row handled: per warpgroup for a consumer, per CTA for the producer and the converters.\n\n",
      in.champion.sm_clock_mhz ? fmt::format("{} MHz", *in.champion.sm_clock_mhz) : std::string("not recorded"));
  std::vector<fs::path> traces;
  if (!in.trace_dir.empty() && fs::is_directory(in.trace_dir))
    for (const auto& e : fs::directory_iterator(in.trace_dir))
      if (e.is_regular_file() && e.path().extension() == ".txt") traces.push_back(e.path());
  std::sort(traces.begin(), traces.end());
  if (traces.empty()) {
    missing.push_back("the trace (cycles per kv tile and per role): the DB holds no trace, and `attn-tuner trace` "
                      "needs the GPU");
    md += "Not here: see \"Missing here\" at the top. " + trace_howto(in);
  }
  for (const auto& t : traces) {
    const std::string text = read_text_file(t.string());
    write_text_file((p / "trace" / t.filename()).string(), text);
    md += fmt::format("### {}\n```\n{}```\n", t.filename().string(), text);
  }
  md = fmt::format("# The champion's profile\n\nTemplate `{}`, config `{}`.\n\n", in.template_name, in.params) +
       missing_text(in, missing, traces.empty()) + md;
  write_text_file((p / "PROFILE.md").string(), md);
  return md;
}

std::string champion_profile_markdown(ExperimentDb& db, const std::string& suite_requested) {
  const std::string suite = champion_suite(db, suite_requested);
  const auto rec = db.champion(suite, ChampionScope::overall);
  if (!rec) throw std::invalid_argument(fmt::format("{}: no overall champion for suite '{}'", db.path(), suite));
  const auto it = db.iteration(rec->iteration_id);
  if (!it) throw std::invalid_argument(fmt::format("{}: the champion's iteration {} is missing", db.path(), rec->iteration_id));
  ProfileInput in;
  in.template_name = proposal_root_template(it->template_name);
  in.params = it->params_json;
  in.champion = *it;
  in.templates_arg = "template";
  in.context_command = idea_context_command(db.path(), suite);
  if (it->variant_id)
    if (const auto v = db.variant(*it->variant_id)) {
      in.compile_log = v->compile_log;
      if (!v->cubin_path.empty()) in.cubin_path = v->cubin_path;
    }
  char tmpl[] = "/tmp/attn-profile-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("champion_profile_markdown: cannot make a temporary folder");
  std::string md;
  try {
    md = write_champion_profile(tmpl, in);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmpl, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(tmpl, ec);
  return md;
}

std::string ideas_tried_tsv(const std::vector<IdeaRecord>& ideas, const std::vector<RunRecord>& runs) {
  std::map<std::int64_t, std::string> suite_of;
  for (const auto& r : runs) suite_of[r.id] = r.suite;
  std::string s = "idea\tfile\tdescription\thypothesis\tparent\tverdict\tbroken_kind\tdelta_pct\tnoise_pct\tconfigs\treason"
                  "\tsuite\tidea_hash\n";
  for (const auto& i : ideas) {
    if (i.status != IdeaStatus::done || i.verdict == IdeaVerdict::none) continue;
    s += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", i.id, tsv_text(i.file), tsv_text(i.description),
                     tsv_text(i.hypothesis), tsv_text(i.parent_template), to_string(i.verdict),
                     i.broken_kind == IdeaBrokenKind::none ? "-" : to_string(i.broken_kind), opt_num(i.delta_pct, "{:.2f}"),
                     opt_num(i.noise_pct, "{:.2f}"), i.configs, tsv_text(i.reason), tsv_text(suite_of[i.run_id]),
                     i.idea_hash);
  }
  return s;
}

std::string idea_file_text(const IdeaRecord& i) {
  std::string s = fmt::format("Description: {}\n", i.description);
  if (!i.hypothesis.empty()) s += fmt::format("Hypothesis: {}\n", i.hypothesis);
  if (!i.parent_template.empty()) s += fmt::format("Template: {}\n", proposal_root_template(i.parent_template));
  if (i.space_json != "{}" && !i.space_json.empty()) s += fmt::format("Space: {}\nDefault: {}\n", i.space_json, i.default_json);
  return s + "\n" + i.diff;
}

IdeaContextSummary write_idea_context(const std::string& dir, ExperimentDb& db, const IdeaContextRequest& req) {
  const fs::path root(dir);
  if (fs::exists(root) && !fs::is_empty(root)) throw std::runtime_error("idea context: " + dir + " is not empty");
  fs::create_directories(root);
  const fs::path scratch = root / ".parent";
  ChampionTemplate c = load_champion_template(db, req.suite, req.templates_dir, scratch.string());
  const std::string troot = proposal_root_template(c.space.name());
  // The parent: the daemon's (tuner/idea_parent.hpp), which is not the champion's template when that holds an
  // idea that did not win.
  const ParentTemplate parent = load_parent_template(db, c.suite, troot, req.templates_dir, (scratch / "p").string());
  const std::vector<std::string> headers = write_idea_parent_files(parent.space, (root / "template").string());

  write_text_file((root / "IDEA.md").string(), idea_md(parent.space, headers, "template"));
  write_text_file((root / "template" / "ABI.md").string(), read_text_file(abi_md_path(req.templates_dir)));
  nlohmann::ordered_json pj = {{"suite", c.suite},
                               {"template", parent.space.name()},
                               {"template_root", troot},
                               {"why", parent.rule.why},
                               {"landed", parent.rule.landed},
                               {"wins", parent.rule.win_ideas},
                               {"measured", parent.rule.measured},
                               {"iteration", parent.best ? nlohmann::json(parent.best->iter) : nlohmann::json(nullptr)},
                               {"geomean_ms", parent.best && parent.best->geomean_ms ? nlohmann::json(*parent.best->geomean_ms)
                                                                                     : nlohmann::json(nullptr)},
                               {"config", nlohmann::json::parse(config_to_json(parent.config))},
                               {"top", nlohmann::json::array()}};
  for (const auto& it : top_of_template(db, c.suite, parent.rule.measured, kIdeaTopConfigs))
    pj["top"].push_back({{"iteration", it.iter},
                         {"geomean_ms", it.geomean_ms ? nlohmann::json(*it.geomean_ms) : nlohmann::json(nullptr)},
                         {"config", nlohmann::json::parse(config_to_json(in_space_of(parent.space, config_from_json(it.params_json))))}});
  write_text_file((root / "parent.json").string(), pj.dump(2) + "\n");
  write_text_file((root / "champion_cases.tsv").string(), champion_cases_tsv(c.champion));
  const auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::ordered_json j = {{"suite", c.suite},
                              {"iteration", c.champion.iter},
                              {"template", c.space.name()},
                              {"template_root", troot},
                              {"config", nlohmann::json::parse(config_to_json(c.config))},
                              {"geomean_ms", opt(c.champion.geomean_ms)},
                              {"window_ms", opt(c.champion.window_ms)},
                              {"global_ms", opt(c.champion.global_ms)},
                              {"retrieval_ms", opt(c.champion.retrieval_ms)},
                              {"root_seed", c.champion.root_seed ? nlohmann::json(*c.champion.root_seed) : nlohmann::json(nullptr)}};
  if (c.variant) {
    j["registers"] = c.variant->registers ? nlohmann::json(*c.variant->registers) : nlohmann::json(nullptr);
    j["spill_bytes"] = c.variant->spill_bytes ? nlohmann::json(*c.variant->spill_bytes) : nlohmann::json(nullptr);
  }
  write_text_file((root / "champion.json").string(), j.dump(2) + "\n");

  const std::vector<IdeaRecord> ideas = db.ideas();
  write_text_file((root / "ideas_tried.tsv").string(), ideas_tried_tsv(ideas, db.runs()));
  std::size_t judged = 0;
  for (const auto& i : ideas) {
    if (i.status != IdeaStatus::done || i.verdict == IdeaVerdict::none || i.file.empty()) continue;
    ++judged;
    std::string name = fs::path(i.file).filename().string();
    if (fs::path(name).extension() != ".idea") name += ".idea";
    write_text_file((root / "ideas_tried" / fmt::format("{}_{}", i.id, name)).string(), idea_file_text(i));
  }

  // The champion's cubin: the recorded one when it is here, else built now (the compile cache).
  ProfileInput pin;
  pin.template_name = troot;
  pin.kernel = c.space.kernel();
  // The champion's config in the parent's space (template/ is the parent): the trace commands build it there.
  pin.params = config_to_json(in_space_of(parent.space, c.config));
  pin.champion = c.champion;
  pin.trace_dir = req.trace_dir;
  pin.templates_arg = "template";  // relative to the kit's root: the kit may be copied
  pin.context_command = idea_context_command(fs::absolute(db.path()).string(), c.suite);
  if (c.variant) pin.compile_log = c.variant->compile_log;
  // A DB keeps no log of a successful compile (the research DB's are cleared): the build gives ptxas's lines.
  const bool have_log = parse_ptxas_resources(pin.compile_log, pin.kernel).registers >= 0;
  if (have_log && c.variant && !c.variant->cubin_path.empty() && fs::exists(c.variant->cubin_path)) {
    pin.cubin_path = c.variant->cubin_path;
  } else {
    CompilerOptions copts;
    copts.cache_dir = req.cache_dir;
    const Compiler compiler(copts);
    const CompiledVariant v = compiler.compile({c.space.source_path(), c.space.kernel(), c.config, {}, c.space.patchable_names()});
    if (v.ok) {
      pin.cubin_path = v.cubin_path;
      if (!have_log) pin.compile_log = v.log;
    }
  }
  write_champion_profile(root.string(), pin);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  IdeaContextSummary s;
  s.parent_template = parent.space.name();
  s.champion_iter = c.champion.iter;
  s.text = fmt::format("wrote {}: IDEA.md, template/ ({} from {}, {} header(s)), parent.json ({}), the champion (iter {}, "
                       "{}, {} on {}), {} idea(s) tried, profile/PROFILE.md",
                       dir, troot, parent.space.name(), headers.size(), parent.rule.why, c.champion.iter, c.space.name(),
                       opt_num(c.champion.geomean_ms), c.suite, judged);
  return s;
}

}  // namespace attn
