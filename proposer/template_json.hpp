// The text of a template's space JSON in the repository's layout (kernels_templates/*.json): one line per
// parameter, constraint and the default. Installed proposal and idea templates are written this way so that
// a diff written against the repository's file applies to every template descended from it (docs/ideas.md).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace attn {

/// `j` (an object) as kernels_templates/fa3_tma.json lays it out: top-level keys one per line; an object of
/// objects (parameters) or an array of objects (constraints) one element per line; every other value, and
/// each element, on one line with ", " and ": " separators. Ends with a newline.
std::string format_template_json(const nlohmann::ordered_json& j);

}  // namespace attn
