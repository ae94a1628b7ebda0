// Helpers shared by the export tests: run a shell command, read/write files, and a hand-built
// ExportPlan (real template source, fake or real cubin bytes) for tests that need no DB.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "export/plan.hpp"

namespace attn::test {

struct CommandResult {
  int status = -1;     ///< exit status (-1: could not run)
  std::string output;  ///< stdout and stderr together
};
/// Runs `command` with /bin/sh, stderr merged into stdout.
CommandResult run_command(const std::string& command);
/// True when `python3` runs (CI has it).
bool python3_available();
/// True when python3 can import torch and sees a CUDA device.
bool python3_torch_cuda_available();
/// Single-quoted for /bin/sh.
std::string shell_quote(const std::string& s);

/// The exported dispatch's picks: attn_tuner_dispatch.pick_variant(batch, heads, t_max, col_width) of the
/// submission folder `submission_dir` for each shape of `shapes` (a JSON array of 4-element arrays), run
/// through python3. The JSON array of variant indices it printed; throws std::runtime_error with python's
/// output when it fails.
std::string dispatch_picks(const std::string& submission_dir, const std::string& shapes_json);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text);

/// A cubin of kernels_templates/fa2_mma.cu at `config` (ABI kernel block_sparse_attn_fwd), compiled once
/// per config with NVRTC (no GPU needed). Throws std::runtime_error with the NVRTC log on failure.
std::vector<std::uint8_t> fa2_mma_cubin(const Config& config);
/// fa2_mma's default config from its JSON.
Config fa2_mma_default_config();

/// A plan with two variants of fa2_mma ("fa2_mma_i7" = default/overall and window champion, "fa2_mma_i9"
/// = global champion), rules for two shapes, and fake cubin bytes (every byte value 0..255 so that base64
/// padding and high bytes are exercised; lengths 1000 and 1001).
ExportPlan hand_made_plan();

}  // namespace attn::test
