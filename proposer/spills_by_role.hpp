// Which role of a warp-specialised kernel spills (issue 49's kit: ptxas reports spills for the whole kernel): the
// build of a config with only one role's code (blocks/kernel.cuh's ATTN_ONLY_ROLE: 1 the producer, 2 the converters,
// 3 the consumers) or without it (-1..-3), its ptxas spills, for the idea and for its parent.
#pragma once
#include <string>
#include <vector>

#include "gpu/compiler.hpp"

namespace attn {

/// The lines `idea check` prints under a spills finding: per role, the spill bytes (stores + loads) of the idea's
/// one-role build of `idea` and of the parent's of `parent`; and when the whole build spills more than its roles
/// alone (fa3_tma's default config spills 4 + 4 bytes that way), the idea's builds without one role each (ATTN_ONLY_ROLE
/// -1..-3) and the roles whose code the rest needs together. `whole_idea` / `whole_parent`: the whole builds' spill bytes. A template without the roles
/// (its one-role builds are its whole build, byte for byte) gives one line saying so; a role build that fails to
/// compile is named. Never throws (a compile error is a line).
std::vector<std::string> spills_by_role(const Compiler& compiler, const CompileRequest& idea,
                                        const CompileRequest& parent, const CompiledVariant& whole_idea,
                                        const CompiledVariant& whole_parent);

}  // namespace attn
