// Spills per role by one-role builds (proposer/spills_by_role.hpp).
#include "proposer/spills_by_role.hpp"

#include <set>

#include <fmt/format.h>

namespace attn {
namespace {

int spill_bytes(const CompiledVariant& v) { return v.resources.spill_stores + v.resources.spill_loads; }

CompiledVariant one_role(const Compiler& compiler, CompileRequest req, int role) {
  req.extra_options.push_back(fmt::format("-DATTN_ONLY_ROLE={}", role));
  return compiler.compile(req);
}

}  // namespace

std::vector<std::string> spills_by_role(const Compiler& compiler, const CompileRequest& idea,
                                        const CompileRequest& parent, const CompiledVariant& whole_idea,
                                        const CompiledVariant& whole_parent) {
  static const char* kRoles[] = {"producer", "converters", "consumers"};
  std::string text;
  int idea_sum = 0, parent_sum = 0, alone[4] = {0, 0, 0, 0};
  bool roles = false;
  for (int role = 1; role <= 3; ++role) {
    const CompiledVariant i = one_role(compiler, idea, role), p = one_role(compiler, parent, role);
    if (!i.ok || !p.ok)
      return {fmt::format("spills by role: the {}'s build with only the {} does not compile", i.ok ? "parent" : "idea",
                          kRoles[role - 1])};
    roles = roles || i.cubin_hash != whole_idea.cubin_hash;
    alone[role] = spill_bytes(i);
    idea_sum += spill_bytes(i);
    parent_sum += spill_bytes(p);
    text += fmt::format("{}{} {} (parent {})", text.empty() ? "" : ", ", kRoles[role - 1], spill_bytes(i), spill_bytes(p));
  }
  if (!roles) return {"spills by role: none to tell (the template has no ATTN_ONLY_ROLE roles: blocks/kernel.cuh)"};
  std::vector<std::string> out{fmt::format(
      "spills by role (bytes, stores + loads, of a build with only that role's code; blocks/kernel.cuh ATTN_ONLY_ROLE): "
      "{}; the whole build {} (parent {})",
      text, spill_bytes(whole_idea), spill_bytes(whole_parent))};
  const int rest = spill_bytes(whole_idea) - idea_sum, parent_rest = spill_bytes(whole_parent) - parent_sum;
  if (rest <= 0 && parent_rest <= 0) return out;
  // What no role spills alone: the idea's builds without one role each say which roles it takes together.
  std::string without, needs;
  std::set<std::string> hashes;
  for (int role = 1; role <= 3; ++role) {
    const CompiledVariant w = one_role(compiler, idea, -role);
    if (!w.ok) return {out[0], fmt::format("spills by role: the idea's build without the {} does not compile", kRoles[role - 1])};
    hashes.insert(w.cubin_hash);
    without += fmt::format("{}without the {} {}", without.empty() ? "" : ", ", kRoles[role - 1], spill_bytes(w));
    // Needed by the rest: leaving the role out saves more than the role spills alone.
    if (spill_bytes(whole_idea) - spill_bytes(w) > alone[role])
      needs += fmt::format("{}the {}", needs.empty() ? "" : " and ", kRoles[role - 1]);
  }
  if (hashes.size() == 1)  // a kernel.cuh that knows only ATTN_ONLY_ROLE 1..3 builds no role for -1..-3
    return {out[0], fmt::format("spills by role: {} byte(s) of the whole build are no role's alone; the template's "
                                "blocks/kernel.cuh cannot leave one role out (ATTN_ONLY_ROLE -1..-3: write the kit "
                                "again from this build)", std::max(rest, 0))};
  out.push_back(fmt::format("spills by role: {} byte(s) of the whole build (parent {}) are no role's alone; the idea's "
                            "builds {} bytes{}",
                            std::max(rest, 0), std::max(parent_rest, 0), without,
                            needs.empty() ? std::string()
                                          : fmt::format(": they need {} together (a value live across the roles' split, "
                                                        "or ptxas's allocation across them)", needs)));
  return out;
}

}  // namespace attn
