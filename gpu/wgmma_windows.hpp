// Where in a kernel's PTX a wgmma may be serialised by ptxas, which names no location in its warning (C7510,
// C7514, C7515, C7520: proposer/idea_check.hpp's serialisation_patterns()). A wgmma's window runs from its issue
// (wgmma.mma_async) to the wgmma.wait_group that retires its commit group; inside it, ptxas serialises every wgmma of
// the function when it meets a call (C7510), code that reads (C7514) or defines (C7515) a pending accumulator
// register, or a divergent path that depends on the warpgroup arrive it inserts (C7520). This scan reads NVRTC's PTX
// in text order (not the control-flow graph: a window across a loop's back edge is not followed) and lists the
// instructions of those four kinds inside a window, each with the source line of its `.loc` (NVRTC -lineinfo). A
// conditional branch is only a candidate: ptxas warns when the divergent path touches the pending registers, which
// PTX does not show, so a caller compares an idea's sites with its parent's (proposer/serialisation_sites.hpp).
#pragma once
#include <string>
#include <vector>

namespace attn {

/// One instruction inside a wgmma window.
struct WgmmaWindowSite {
  std::string code;         ///< the ptxas warning it may cause: "C7510" (call), "C7514" (reads a pending
                            ///< accumulator register), "C7515" (writes one, and may read it too: "reads" says),
                            ///< "C7520" (conditional branch)
  bool reads = false;       ///< C7515: it also reads a pending accumulator register (o *= alpha)
  std::string file;         ///< the source file of its `.loc` (as NVRTC names it); "" without line info
  int line = 0;             ///< its source line; 0 without line info
  std::string caller_file;  ///< where that code was inlined (the `.loc`'s inlined_at); "" when not inlined
  int caller_line = 0;
  std::string instruction;  ///< the PTX instruction, trimmed
};

/// The sites of `ptx` (one module's text), in text order. Never throws: text it cannot read is skipped.
std::vector<WgmmaWindowSite> wgmma_window_sites(const std::string& ptx);

}  // namespace attn
