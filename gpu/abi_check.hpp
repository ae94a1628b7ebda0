// Checks a kernel template against the ABI of kernels_templates/ABI.md without a GPU, before any GPU time
// is spent on it (the proposer hook, docs/proposer.md): NVRTC compiles it to PTX and the PTX declarations
// are read. PTX is NVIDIA's documented virtual ISA; its entry and global declarations state the symbol
// names (extern "C" or mangled), every kernel parameter's size and alignment, and the initial bytes of
// attn_launch_info, which is exactly what the host side (gpu/attn_kernel.cpp) relies on.
//
// Limits: PTX types are machine types. A pointer is a 64-bit value whatever it points to, so `float* q`
// instead of `const __nv_bfloat16* q` passes here; validation against the fp32 reference on every case
// catches such a kernel (wrong result). Values of attn_launch_info are checked for the config compiled only.
#pragma once
#include <string>
#include <vector>

#include "gpu/compiler.hpp"

namespace attn {

/// The outcome of an ABI check.
struct KernelAbi {
  bool ok = false;
  std::string problem;          ///< why not, for people; the NVRTC log when the source did not compile
  bool compiled = false;        ///< NVRTC produced PTX (false: `problem` is a compile error)
  int params = 0;               ///< parameters of the entry: 12, or 13 with the tensor maps
  std::vector<int> launch_info; ///< attn_launch_info as initialised (4 or 8 ints); empty when absent
};

/// Reads `ptx` (text of one module) and checks, for entry `kernel`:
/// - `.visible .entry <kernel>(` exists (extern "C": the name is not mangled);
/// - its parameters in ABI.md's order: 8 of 8 bytes (q, k, v, row_ptr, col_idx, seq_lens, o, lse), 4 of
///   4 bytes (batch_size, num_heads, t_max, col_width), optionally a 13th of 512 bytes aligned to at least
///   64 (four 128-byte CUtensorMap: q, k, v, o);
/// - a defined (not .extern) global `attn_launch_info` of 16 or 32 bytes whose initial values pass the
///   host's checks (gpu/attn_kernel.cpp): threads 1..1024, smem >= 0, BLOCK_M >= 1, grid mode 0 or 1,
///   with 8 entries tensor-map rows in 0..256 (q and kv >= 1 when kv > 0) and CTAs per SM >= 1;
/// - the 13th parameter is present exactly when attn_launch_info asks for tensor maps (kv rows > 0).
KernelAbi check_ptx_abi(const std::string& ptx, const std::string& kernel);

/// Compiles `req` (source, kernel, config) with NVRTC for compute_90a, i.e. the front end only (no ptxas),
/// with the options Compiler::nvrtc_options gives otherwise, and runs check_ptx_abi on the PTX. Never
/// throws: an unreadable source or a compile error gives ok = false, compiled = false and the log.
KernelAbi check_kernel_abi(const CompileRequest& req);

}  // namespace attn
