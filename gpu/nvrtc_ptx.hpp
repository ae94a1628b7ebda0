// NVRTC's front end alone: a kernel template's PTX for one config, with the options every compile uses
// (Compiler::nvrtc_options) and no ptxas. For the checks that read PTX without a GPU (gpu/abi_check.hpp,
// gpu/wgmma_windows.hpp).
#pragma once
#include <string>
#include <vector>

#include "gpu/compiler.hpp"

namespace attn {

/// The PTX of one build, or why there is none.
struct PtxBuild {
  bool ok = false;
  std::string ptx;      ///< the module's text when ok
  std::string log;      ///< NVRTC's program log
  std::string problem;  ///< why not ok, for people: an unreadable source, a bad define, or the compile error and log
};

/// The registers per thread a warp-specialised kernel's roles get after they split, from its PTX's `setmaxnreg`
/// (Hopper: `setmaxnreg.dec` by the producer's warpgroup, `.inc` by the consumers', blocks/kernel.cuh): -1 where the
/// PTX has none (the launch's register count then holds for every warp).
struct RegisterSplit {
  int producer = -1;   ///< setmaxnreg.dec's value
  int consumers = -1;  ///< setmaxnreg.inc's value
};
RegisterSplit register_split(const std::string& ptx);

/// Compiles `req` for compute_90a to PTX, adding `extra_options` (e.g. "-lineinfo") to Compiler::nvrtc_options'.
/// Never throws.
PtxBuild nvrtc_ptx(const CompileRequest& req, const std::vector<std::string>& extra_options = {});

}  // namespace attn
