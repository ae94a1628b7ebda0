#include "core/templates_dir.hpp"

#include <cstdlib>

namespace attn {

std::string default_templates_dir() {
  if (const char* env = std::getenv("ATTN_TUNER_TEMPLATES"); env && *env) return env;
#ifdef ATTN_TEMPLATES_DIR
  return ATTN_TEMPLATES_DIR;
#else
  return "kernels_templates";
#endif
}

}  // namespace attn
