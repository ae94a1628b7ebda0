// Python source of the GPU check of an exported submission (needs torch and a CUDA GPU; see
// gpu_check_py.cpp). Run as `python3 check.py SUBMISSION_DIR [--quick]`; with ATTN_TUNER_FORCE_NVRTC=1
// in the environment it checks the NVRTC fallback instead of the cubins. Prints one JSON line; exit 1
// when a check fails.
#pragma once

namespace attn::test {
const char* gpu_checker_py();
}
