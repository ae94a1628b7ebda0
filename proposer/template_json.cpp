// format_template_json: the repository's layout of a space JSON.
#include "proposer/template_json.hpp"

namespace attn {
namespace {

std::string inline_json(const nlohmann::ordered_json& v) {
  if (v.is_object()) {
    std::string s = "{";
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      s += (first ? "" : ", ") + nlohmann::ordered_json(k).dump() + ": " + inline_json(x);
      first = false;
    }
    return s + "}";
  }
  if (v.is_array()) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + inline_json(v[i]);
    return s + "]";
  }
  return v.dump();
}

bool expand(const nlohmann::ordered_json& v) {
  if (!(v.is_object() || v.is_array()) || v.empty()) return false;
  for (const auto& x : v) if (!x.is_object()) return false;
  return true;
}

}  // namespace

std::string format_template_json(const nlohmann::ordered_json& j) {
  if (!j.is_object()) return j.dump(2) + "\n";
  std::string s = "{\n";
  std::size_t n = 0;
  for (const auto& [k, v] : j.items()) {
    s += "  " + nlohmann::ordered_json(k).dump() + ": ";
    if (expand(v)) {
      s += v.is_object() ? "{\n" : "[\n";
      std::size_t m = 0;
      if (v.is_object()) {
        for (const auto& [k2, x] : v.items())
          s += "    " + nlohmann::ordered_json(k2).dump() + ": " + inline_json(x) + (++m < v.size() ? ",\n" : "\n");
      } else {
        for (const auto& x : v) s += "    " + inline_json(x) + (++m < v.size() ? ",\n" : "\n");
      }
      s += v.is_object() ? "  }" : "  ]";
    } else {
      s += inline_json(v);
    }
    s += ++n < j.size() ? ",\n" : "\n";
  }
  return s + "}\n";
}

}  // namespace attn
