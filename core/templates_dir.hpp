// Where the kernel templates are read from when no --templates folder is given.
#pragma once
#include <string>

namespace attn {

/// Default templates folder: $ATTN_TUNER_TEMPLATES when set and non-empty, else the source tree's
/// kernels_templates/ (the compile definition ATTN_TEMPLATES_DIR).
std::string default_templates_dir();

}  // namespace attn
