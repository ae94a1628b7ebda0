// Where an idea may have made ptxas serialise the wgmma, whose warning names no location: the wgmma-window sites
// (gpu/wgmma_windows.hpp) of the idea's build of a config that its parent's build of the same config has not.
#pragma once
#include <string>
#include <vector>

#include "gpu/nvrtc_ptx.hpp"

namespace attn {

/// The lines `idea check` prints under a new serialisation warning: "where: FILE:LINE (inlined at FILE:LINE): WHAT, N
/// instructions: `PTX` | `SOURCE`", one per place (kind, source line, the call it was inlined at) of `idea`'s PTX
/// (nvrtc_ptx with -lineinfo) with more sites than the same place in `parent`'s, the parent's build of the same
/// config (places match by kind, file names and source texts, so code the patch only moved is not new), at most
/// `max_lines` (and a line saying how many more).
/// `dir_prefix` is cut from the file names (the idea's work folder). A build without PTX gives one line saying so.
/// Never throws.
std::vector<std::string> new_serialisation_sites(const PtxBuild& idea, const PtxBuild& parent,
                                                 const std::string& dir_prefix, std::size_t max_lines = 8);

}  // namespace attn
