#include "export/encoding.hpp"

#include <array>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+') return 62;
  if (ch == '/') return 63;
  return -1;
}

template <class Json>
void emit(const Json& v, int indent, int expand_depth, int level, std::string& out) {
  using T = nlohmann::json::value_t;
  const bool expand = level < expand_depth;
  const std::string pad(static_cast<std::size_t>(indent * (level + 1)), ' ');
  const std::string close_pad(static_cast<std::size_t>(indent * level), ' ');
  switch (v.type()) {
    case T::null: out += "None"; return;
    case T::boolean: out += v.template get<bool>() ? "True" : "False"; return;
    case T::number_integer:
    case T::number_unsigned: out += v.dump(); return;
    case T::number_float: {
      const double d = v.template get<double>();
      if (!std::isfinite(d)) throw std::invalid_argument(fmt::format("python_literal: {} is not a literal", d));
      std::string s = v.dump();
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";  // keep it a float in Python
      out += s;
      return;
    }
    case T::string: out += v.dump(); return;  // JSON escapes (\" \\ \n \uXXXX ...) are Python escapes
    case T::array:
    case T::object: {
      const bool is_object = v.is_object();
      out += is_object ? '{' : '[';
      if (v.empty()) {
        out += is_object ? '}' : ']';
        return;
      }
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += expand ? "," : ", ";
        if (expand) out += "\n" + pad;
        first = false;
        if (is_object) {
          out += Json(it.key()).dump();
          out += ": ";
        }
        emit(*it, indent, expand_depth, level + 1, out);
      }
      if (expand) out += ",\n" + close_pad;
      out += is_object ? '}' : ']';
      return;
    }
    case T::binary:
    case T::discarded: break;
  }
  throw std::invalid_argument("python_literal: binary or discarded JSON value has no Python literal");
}

}  // namespace

std::string base64_encode(const std::vector<std::uint8_t>& bytes, std::size_t line_length) {
  std::string out;
  out.reserve(bytes.size() * 4 / 3 + bytes.size() / 57 + 8);
  std::size_t column = 0;
  auto put = [&](char ch) {
    out += ch;
    if (line_length && ++column == line_length) {
      out += '\n';
      column = 0;
    }
  };
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = (std::uint32_t(bytes[i]) << 16) | (std::uint32_t(bytes[i + 1]) << 8) | bytes[i + 2];
    put(kAlphabet[(n >> 18) & 63]);
    put(kAlphabet[(n >> 12) & 63]);
    put(kAlphabet[(n >> 6) & 63]);
    put(kAlphabet[n & 63]);
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t n = std::uint32_t(bytes[i]) << 16;
    if (rest == 2) n |= std::uint32_t(bytes[i + 1]) << 8;
    put(kAlphabet[(n >> 18) & 63]);
    put(kAlphabet[(n >> 12) & 63]);
    put(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    put('=');
  }
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

std::vector<std::uint8_t> base64_decode(const std::string& text) {
  std::vector<std::uint8_t> out;
  std::uint32_t acc = 0;
  int bits = 0, padding = 0;
  std::size_t position = 0;
  for (char ch : text) {
    ++position;
    if (ch == '\n' || ch == '\r' || ch == ' ' || ch == '\t') continue;
    if (ch == '=') {
      ++padding;
      continue;
    }
    const int value = base64_value(ch);
    if (value < 0 || padding > 0)
      throw std::invalid_argument(fmt::format("base64: unexpected character '{}' at position {}", ch, position));
    acc = (acc << 6) | static_cast<std::uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>((acc >> bits) & 0xff));
    }
  }
  if (padding > 2 || bits >= 6 || (bits > 0 && (acc & ((1u << bits) - 1)) != 0) ||
      padding != bits / 2)
    throw std::invalid_argument("base64: bad length or padding");
  return out;
}

std::uint32_t crc32(const std::vector<std::uint8_t>& bytes) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::uint8_t b : bytes) c = table[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string python_literal(const nlohmann::json& value, int indent, int expand_depth) {
  std::string out;
  emit(value, indent, expand_depth, 0, out);
  return out;
}

std::string python_literal(const nlohmann::ordered_json& value, int indent, int expand_depth) {
  std::string out;
  emit(value, indent, expand_depth, 0, out);
  return out;
}

}  // namespace attn
