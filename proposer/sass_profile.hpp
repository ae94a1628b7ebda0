// The SASS instruction mix of a cubin, on the CPU (docs/ideas.md, "The champion's profile"): the listing of
// cuobjdump -sass (or nvdisasm), counts per opcode class over the whole kernel and over each loop whose body
// issues HGMMA (a static count of one pass: the instructions of one kv tile of a consumer loop).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attn {

/// The classes counted, in print order: HGMMA, MUFU.EX2, MUFU (other), F2FP, F2F, FFMA, FMUL, FADD, FMNMX,
/// SHFL, BAR (named barriers, BAR.SYNC/ARV), SYNCS (mbarrier arrive / try-wait), WARPGROUP (wgmma arrive and
/// depbar waits), WARPSYNC, LDS, STS, LDSM, LDG, STG, UTMA (TMA), LDL/STL (local memory: spills), BRA, other.
std::vector<std::string> sass_classes();

/// The class of opcode `op` (its full dotted name, "MUFU.EX2", "SYNCS.PHASECHK.TRANS64.TRYWAIT").
std::string sass_class(const std::string& op);

/// One loop of a listing: the instructions between a branch's target and the branch (a branch back).
struct SassLoop {
  std::uint64_t start = 0, end = 0;           ///< byte addresses of its first and last instruction
  std::size_t instructions = 0;
  std::map<std::string, std::size_t> counts;  ///< class -> count
  bool innermost = true;                      ///< it holds no other reported loop
};

/// A listing's instruction mix.
struct SassProfile {
  std::size_t instructions = 0;
  std::map<std::string, std::size_t> counts;  ///< class -> count, whole listing
  std::map<std::string, std::size_t> opcodes; ///< full opcode -> count, whole listing
  std::vector<SassLoop> loops;                ///< the loops with an HGMMA in their body, by start address
};

/// Parses a cuobjdump -sass / nvdisasm listing: instruction lines "/*0a30*/ [@P0] OPCODE ...;", labels
/// ".L_x_12:", branch targets "`(.L_x_12)" or a hex address. Lines of other kinds are skipped. Throws
/// std::invalid_argument when it holds no instruction.
SassProfile parse_sass(const std::string& listing);

/// The profile as text: the whole kernel and each HGMMA loop (innermost ones marked: per kv tile), one row
/// per class; then the 15 most frequent opcodes.
std::string sass_profile_text(const SassProfile& p);

/// The disassembler: cuobjdump (or nvdisasm) in $PATH or /usr/local/cuda/bin; none when neither is there.
std::optional<std::string> find_disassembler();

/// The SASS listing of the cubin at `cubin_path` by `tool`. Throws std::runtime_error with its output when it fails.
std::string disassemble_cubin(const std::string& tool, const std::string& cubin_path);

}  // namespace attn
