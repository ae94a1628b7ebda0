// One source for a template's defaults: the space's JSON "default". A template source may not keep a second copy
// that disagrees: the repository's templates have none for their parameters (`#error` when one is not given,
// kernels_templates/ABI.md), and a fallback a source keeps for a macro (a measurement switch, an idea's new axis)
// must equal the JSON default wherever that macro is a parameter (tests/tuner/template_defaults_test.cpp checks
// the repository's, the tests' and lab/ideas' templates).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "tuner/space.hpp"

namespace attn {

/// The fallbacks `text` (a template source or header) gives its macros: for each line `#ifndef NAME` whose next
/// line is `#define NAME <integer>` (a comment may follow), NAME -> the integer. Pure; a later fallback of the
/// same name is ignored.
Config source_fallbacks(std::string_view text);

/// The parameters of `space` whose source or one of its local includes (gpu/compiler.hpp local_includes) falls
/// back to another value than the JSON default, one line each: "WARPS: fa2_mma.cu falls back to 8, the default
/// is 4". Empty when they agree. Throws std::invalid_argument when the source cannot be read.
std::vector<std::string> default_disagreements(const TemplateSpace& space);

}  // namespace attn
