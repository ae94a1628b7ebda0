// check_idea_file: the daemon's parse and apply, then the cubins against the parent's (proposer/idea_check.hpp).
#include "proposer/idea_check.hpp"

#include "proposer/serialisation_sites.hpp"
#include "proposer/spills_by_role.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "gpu/abi_check.hpp"
#include "gpu/nvrtc_ptx.hpp"
#include "proposer/idea_apply.hpp"
#include "tuner/idea_parent.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {
namespace {

std::string resources_text(const ResourceUsage& r) {
  return fmt::format("{} registers, {} bytes spill stores, {} bytes spill loads, {} bytes stack", r.registers,
                     r.spill_stores, r.spill_loads, r.stack_frame);
}

CompileRequest request_for(const TemplateSpace& space, const Config& c) {
  return CompileRequest{space.source_path(), space.kernel(), c, {}, space.patchable_names()};
}

}  // namespace

Config in_space_of(const TemplateSpace& space, const Config& c) {
  Config out;
  for (const auto& p : space.parameters())
    if (const auto v = c.find(p.name); v != c.end()) out[p.name] = v->second;
  return space.complete(out);
}

std::string to_string(IdeaCheckCode code) {
  switch (code) {
    case IdeaCheckCode::ok: return "ok";
    case IdeaCheckCode::bad_input: return "bad_input";
    case IdeaCheckCode::does_not_apply: return "does_not_apply";
    case IdeaCheckCode::compile: return "compile";
    case IdeaCheckCode::proposal: return "proposal";
    case IdeaCheckCode::default_changed: return "default_changed";
    case IdeaCheckCode::slow_build: return "slow_build";
    case IdeaCheckCode::spills: return "spills";
    case IdeaCheckCode::already_judged: return "already_judged";
  }
  return "?";
}

std::vector<PtxasWarning> ptxas_warnings(const std::string& log) {
  static const std::regex coded(R"(\((C\d{4})\))");
  std::vector<PtxasWarning> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("ptxas", 0) != 0) continue;
    std::smatch m;
    const bool has_code = std::regex_search(line, m, coded);
    if (!has_code && line.find("warning") == std::string::npos) continue;
    PtxasWarning w{has_code ? m[1].str() : "", line};
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(std::move(w));
  }
  return out;
}

const std::vector<SerialisationPattern>& serialisation_patterns() {
  static const std::vector<SerialisationPattern> patterns = {
      {"C7520", "program dependence on compiler-inserted WG.AR in divergent path", "divergent path",
       "a branch between the issue of a wgmma and the `wgmma.wait_group` that retires it whose divergent path "
       "touches registers that group writes (ptxas puts a warpgroup arrive in that path): a branch on the wgmma "
       "width (if / else over two wgmma shapes), a wgmma under a run-time condition, code in a wait's loop that "
       "uses them. A branch alone is not enough: the kernels' own softmax branches while P V is pending, and an "
       "mbarrier try_wait loop there passed in an author's test. \"Between\" is issue to retire, not only "
       "`wgmma.fence` to `wgmma.commit_group`. Wait for the group first, or make the branch uniform (if constexpr, "
       "a macro)"},
      {"C7514", "non wgmma instructions reading accumulator registers", "reading accumulator registers",
       "code that reads a wgmma's accumulator registers between its issue and the wait_group that retires it: a "
       "rescale of o (o *= alpha reads o) or a row statistic of S while its wgmma is pending; read them after the "
       "wait"},
      {"C7515", "non wgmma instructions defining accumulator registers", "defining accumulator registers",
       "code that writes a wgmma's accumulator registers between its issue and the wait_group that retires it: a "
       "partly zeroed accumulator; zero every accumulator register before the issue, or after the wait"},
      {"C7510", "wgmma pipeline crossing function boundary", "function boundary",
       "a function call between a wgmma's issue and its wait_group (printf, a __noinline__ function, a call that is "
       "not inlined): __forceinline__ it or move it out of that window"},
      {"C7511 / C7512", "insufficient register resources", "insufficient register resources",
       "too many live registers around the wgmma for the register budget (PRODUCER_REGS, CTAS_PER_SM): the "
       "accumulators, the S tile and what the idea keeps live at once; in this project also one accumulator written "
       "by wgmma of two shapes (an m64n64 into half of a 128-key S tile, P V split into n64 and n128 on O) and a "
       "wgmma in flight across the loop's back edge (docs/kernels.md)"}};
  return patterns;
}

std::string serialisation_cause(const std::string& text) {
  for (const auto& p : serialisation_patterns())
    if (text.find(p.match) != std::string::npos) return p.cause;
  return "";
}

bool predicts_slow_kernel(const PtxasWarning& w) {
  return w.text.find("Potential Performance Loss") != std::string::npos ||
         w.text.find("serialized") != std::string::npos || w.text.find("serialised") != std::string::npos;
}

std::vector<IdeaCheckConfig> idea_check_configs(const TemplateSpace& parent, const TemplateSpace& idea_space,
                                                const Config& base) {
  std::vector<IdeaCheckConfig> out;
  const Config b = idea_space.complete(in_space_of(parent, base));
  const auto add = [&](Config c, std::string what, bool on) {
    if (idea_space.check(c)) return;  // the idea's constraints exclude it
    if (std::any_of(out.begin(), out.end(), [&](const IdeaCheckConfig& k) { return k.config == c; })) return;
    out.push_back({c, std::move(what), in_space_of(parent, c), on});
  };
  bool adds = false;
  for (const auto& p : idea_space.parameters()) {
    const auto pp = std::find_if(parent.parameters().begin(), parent.parameters().end(),
                                 [&](const Parameter& q) { return q.name == p.name; });
    for (const auto v : p.values) {
      const bool is_new = pp == parent.parameters().end()
                              ? v != idea_space.default_config().at(p.name)
                              : std::find(pp->values.begin(), pp->values.end(), v) == pp->values.end();
      if (!is_new) continue;
      adds = true;
      Config c = b;
      c[p.name] = v;
      add(c, fmt::format("with {}={}", p.name, v), true);
    }
  }
  if (!adds) add(b, "(a plain code change: every config runs it)", true);
  if (in_space_of(parent, base) != parent.default_config() && adds)
    add(b, "with every new axis at its default (must be the parent's cubin)", false);
  return out;
}

ConfigComparison compare_with_parent(const std::string& label, const CompiledVariant& iv, const CompiledVariant& pv,
                                     const std::set<std::string>& accepted) {
  ConfigComparison out;
  const auto parent_warnings = ptxas_warnings(pv.log);
  for (const auto& w : ptxas_warnings(iv.log)) {
    if (!predicts_slow_kernel(w)) continue;
    const bool in_parent = std::any_of(parent_warnings.begin(), parent_warnings.end(),
                                       [&](const PtxasWarning& p) { return p.code == w.code && p.text == w.text; });
    if (in_parent) {
      out.notes.push_back(fmt::format("note: {}: {} (the parent's build has it too)", label, w.text));
    } else if (accepted.count(w.code)) {
      out.notes.push_back(fmt::format("accepted ({}): {}: {}", w.code, label, w.text));
    } else {
      const std::string cause = serialisation_cause(w.text);
      out.failures.push_back(
          {IdeaCheckCode::slow_build,
           fmt::format("{}: {} (a serialised wgmma cost +33 % in the project's measurements; --accept-warning {} to "
                       "let it pass){}", label, w.text, w.code.empty() ? "CODE" : w.code,
                       cause.empty() ? "" : "; the usual cause: " + cause)});
    }
  }
  const ResourceUsage &ir = iv.resources, &pr = pv.resources;
  const int ispill = ir.spill_stores + ir.spill_loads, pspill = pr.spill_stores + pr.spill_loads;
  if (ispill > pspill) {
    const std::string what = fmt::format("{}: spills {} bytes (stores + loads), the parent's build {}", label, ispill, pspill);
    if (accepted.count("spills")) out.notes.push_back("accepted (spills): " + what);
    else out.failures.push_back({IdeaCheckCode::spills, what + " (--accept-warning spills to let it pass)"});
  }
  return out;
}

IdeaCheckCode IdeaCheckReport::code() const {
  IdeaCheckCode c = IdeaCheckCode::ok;
  for (const auto& f : failures)
    if (c == IdeaCheckCode::ok || static_cast<int>(f.code) < static_cast<int>(c)) c = f.code;
  return c;
}

IdeaCheckReport check_idea_file(const std::string& name, const std::string& bytes, const IdeaCheckOptions& o,
                                const Compiler& compiler) {
  if (!o.parent) throw std::invalid_argument("check_idea_file: no parent template");
  const TemplateSpace& parent = *o.parent;
  IdeaCheckReport r;
  const auto say = [&](std::string line) { r.lines.push_back(std::move(line)); };
  const auto fail = [&](IdeaCheckCode code, std::string message) {
    r.lines.push_back(fmt::format("FAIL {}: {}", to_string(code), message));
    r.failures.push_back({code, std::move(message)});
  };

  // 1. The daemon's parser.
  IdeaFile idea;
  try {
    idea = parse_idea(name, bytes);
  } catch (const IdeaInputError& e) {
    fail(IdeaCheckCode::bad_input, e.what());
    return r;
  }
  say(fmt::format("parsed: {} ({} diff file(s), {} new axis/axes, idea hash {})", idea.description, idea.files.size(),
                  idea.space.size(), idea.hash.substr(0, 12)));
  if (o.judged)  // the daemon's next step: an idea it judged already is skipped, never applied
    if (const RerunDecision d = decide_rerun(*o.judged, idea.hash, o.judged_parent, idea.retry, idea.verdicts, name,
                                             o.judged_suite);
        !d.judge) {
      fail(IdeaCheckCode::already_judged,
           d.skip_note + (d.skipped_for->parent_template == o.judged_parent
                              ? "; the daemon skips it: its hash (Template, Space, Default, diff) is its identity, so "
                                "change the idea (or ask for more verdicts there: Verdicts: N) to have it judged again"
                              : "; the daemon skips it"));
      say(fmt::format("RESULT {}", to_string(IdeaCheckCode::already_judged)));
      return r;
    }

  // 2. The apply and the proposal checks, as the daemon runs them (NVRTC of the idea's default config, ABI).
  // Installed under the parent's own name: NVRTC writes the source's file name into the cubin (symbols of
  // internal linkage: _ZN..._INTERNAL_..._fa3_tma_cu_...), so the daemon's <root>_p<id>.cu builds another cubin
  // from the same code. Under the parent's name, equal code is an equal cubin.
  const IdeaApplied applied = apply_idea(idea, parent, o.work_dir, parent.name(), compiler);
  if (applied.broken_kind != IdeaBrokenKind::none) {
    const IdeaCheckCode code = applied.broken_kind == IdeaBrokenKind::does_not_apply ? IdeaCheckCode::does_not_apply
                               : applied.broken_kind == IdeaBrokenKind::compile      ? IdeaCheckCode::compile
                               : applied.broken_kind == IdeaBrokenKind::bad_input    ? IdeaCheckCode::bad_input
                                                                                     : IdeaCheckCode::proposal;
    fail(code, applied.reason);
    if (applied.check.compiled && !applied.check.compiled->ok) {
      const std::string& log = applied.check.compiled->log;
      say("NVRTC log" + (log.size() > 4000 ? std::string(" (its first 4000 bytes)") : "") + ":\n" + log.substr(0, 4000));
    }
    return r;
  }
  const TemplateSpace& space = *applied.check.space;
  const CompiledVariant& idea_default = *applied.check.compiled;
  say(fmt::format("applied to {}: patch, space, NVRTC of the default config, ABI pass", parent.name()));
  for (const auto& h : applied.inexact_hunks)
    say(fmt::format("note: patch applied a hunk inexactly: {} (the daemon applies it the same way; read the parent "
                    "where it landed: the context may not be the code you meant)", h));
  // Shared memory (attn_launch_info) and the roles' register budgets (setmaxnreg), from one PTX build with line
  // info, which also locates a serialisation (new_serialisation_sites).
  struct PtxFacts {
    PtxBuild ptx;
    std::string smem = "unknown";
    RegisterSplit split;
  };
  const auto ptx_facts = [](const CompileRequest& req) {
    PtxFacts f;
    f.ptx = nvrtc_ptx(req, {"-lineinfo"});
    const PtxBuild& b = f.ptx;
    if (!b.ok) return f;
    const KernelAbi abi = check_ptx_abi(b.ptx, req.kernel);
    if (abi.launch_info.size() > 1) f.smem = fmt::format("{} bytes", abi.launch_info[1]);
    f.split = register_split(b.ptx);
    return f;
  };

  // 3. The default config: the parent's cubin, byte for byte.
  const CompiledVariant parent_default = compiler.compile(request_for(parent, parent.default_config()));
  if (!parent_default.ok) {
    fail(IdeaCheckCode::compile, "the parent's default config does not compile: " + compile_error_line(parent_default.log));
    return r;
  }
  if (parent_default.cubin_hash == idea_default.cubin_hash) {
    say(fmt::format("default config: cubin byte-identical to the parent's ({})", parent_default.cubin_hash.substr(0, 12)));
  } else {
    fail(IdeaCheckCode::default_changed,
         fmt::format("the default config's cubin differs from the parent's (cubin hash {} vs {}; {} vs the parent's {}): "
                     "with every new axis at its default the idea must build the parent's kernel (docs/ideas.md, "
                     "\"What keeps a default cubin byte-identical\")",
                     idea_default.cubin_hash.substr(0, 12), parent_default.cubin_hash.substr(0, 12),
                     resources_text(idea_default.resources), resources_text(parent_default.resources)));
  }

  const auto check_config = [&](const IdeaCheckConfig& k, const std::string& label) {
    const CompiledVariant iv = compiler.compile(request_for(space, k.config));
    if (!iv.ok) {
      fail(IdeaCheckCode::compile, fmt::format("{} ({}): {}", label, config_to_compact(k.config), compile_error_line(iv.log)));
      return;
    }
    Config pc = k.parent;
    if (k.idea_on)
      for (const auto& [axis, v] : o.parent_overrides) pc[axis] = v;
    const CompiledVariant pv = compiler.compile(request_for(parent, pc));
    if (!pv.ok) {
      say(fmt::format("note: the parent's {} does not compile ({}): nothing to compare with", config_to_compact(pc),
                      compile_error_line(pv.log)));
      return;
    }
    const ResourceUsage &ir = iv.resources, &pr = pv.resources;
    const PtxFacts ifacts = ptx_facts(request_for(space, k.config)), pfacts = ptx_facts(request_for(parent, pc));
    const auto split = [](const RegisterSplit& i, const RegisterSplit& p) {
      if (i.producer < 0 && p.producer < 0) return std::string();
      return fmt::format("; per role after setmaxnreg: producer warpgroup {}, consumers {} registers (parent {}, {}: "
                         "the launch's count above is the whole kernel's cap)",
                         i.producer, i.consumers, p.producer, p.consumers);
    };
    say(fmt::format("{}: {} (parent{}: {}; registers {:+d}); shared memory {} (parent {}, attn_launch_info){}", label,
                    resources_text(ir), pc == k.parent ? "" : " built as " + config_to_compact(pc), resources_text(pr),
                    ir.registers - pr.registers, ifacts.smem, pfacts.smem, split(ifacts.split, pfacts.split)));
    if (!k.idea_on) {
      if (iv.cubin_hash != pv.cubin_hash)
        fail(IdeaCheckCode::default_changed, fmt::format("{} ({}): its cubin differs from the parent's build of {}", label,
                                                         config_to_compact(k.config), config_to_compact(k.parent)));
      return;
    }
    if (iv.cubin_hash == pv.cubin_hash)
      say(fmt::format("note: {}: the same cubin as the parent's (the idea changes nothing in this config)", label));
    const ConfigComparison cmp = compare_with_parent(label, iv, pv, o.accepted);
    for (const auto& n : cmp.notes) say(n);
    for (const auto& f : cmp.failures) fail(f.code, f.message);
    const auto found = [&](IdeaCheckCode c) {
      return std::any_of(cmp.failures.begin(), cmp.failures.end(), [&](const IdeaCheckFinding& f) { return f.code == c; });
    };
    if (found(IdeaCheckCode::slow_build))
      for (auto& line : new_serialisation_sites(ifacts.ptx, pfacts.ptx, o.work_dir))
        say(std::move(line));
    if (found(IdeaCheckCode::spills) || (o.accepted.count("spills") && ir.spill_stores + ir.spill_loads >
                                                                           pr.spill_stores + pr.spill_loads))
      for (auto& line : spills_by_role(compiler, request_for(space, k.config), request_for(parent, pc), iv, pv))
        say(std::move(line));
  };

  // 4. The configs with the idea on, each against the parent's build of the same old axes.
  std::vector<std::pair<Config, std::string>> bases = o.bases;
  if (bases.empty()) bases.emplace_back(parent.default_config(), "the default config");
  for (const auto& [base, base_what] : bases) {
    if (const auto why = parent.check(in_space_of(parent, base)))
      say(fmt::format("note: {} is not a valid config of {} ({}); checked as it is", base_what, parent.name(), *why));
    const auto checks = idea_check_configs(parent, space, base);
    if (checks.empty()) say(fmt::format("note: the idea's space refuses every config with the idea on built on {}", base_what));
    for (const auto& k : checks) check_config(k, fmt::format("{} {}", base_what, k.what));
  }
  say(r.failures.empty() ? "RESULT ok" : fmt::format("RESULT {} ({} finding(s))", to_string(r.code()), r.failures.size()));
  return r;
}

}  // namespace attn
