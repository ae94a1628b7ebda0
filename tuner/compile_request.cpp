#include "tuner/compile_request.hpp"

#include <utility>

namespace attn {

CompileRequest compile_request(const TemplateSpace& space, const Config& config, std::vector<std::string> extra) {
  return {space.source_path(), space.kernel(), space.complete(config), std::move(extra), space.patchable_names()};
}

}  // namespace attn
