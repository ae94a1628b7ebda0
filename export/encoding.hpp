// Byte and text encodings the exported submission needs: base64 (cubins in .txt files, which the
// harness's file-type allowlist accepts), CRC-32 (checked by setup() with Python's zlib.crc32), and
// Python literals from JSON values (VARIANT_MANIFEST and the variant table inside submission.py).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attn {

/// RFC 4648 base64 with padding, a newline after every `line_length` characters (0: one line) and at
/// the end. Python's base64.b64decode ignores the newlines.
std::string base64_encode(const std::vector<std::uint8_t>& bytes, std::size_t line_length = 76);
/// Inverse of base64_encode; whitespace is skipped. Throws std::invalid_argument on any other
/// character outside the alphabet or on bad padding.
std::vector<std::uint8_t> base64_decode(const std::string& text);

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320): the value of Python's zlib.crc32.
std::uint32_t crc32(const std::vector<std::uint8_t>& bytes);

/// A Python expression that evaluates to `value`: dicts, lists, str (JSON escapes, all valid in
/// Python), int, float, True/False/None. Containers nest one item per line, indented by `indent`
/// spaces per level, up to `expand_depth` levels deep; deeper ones stay on one line. Throws
/// std::invalid_argument for a non-finite float (not a literal) or a binary value.
std::string python_literal(const nlohmann::json& value, int indent = 4, int expand_depth = 2);
/// The same for an ordered_json (objects keep their insertion order).
std::string python_literal(const nlohmann::ordered_json& value, int indent = 4, int expand_depth = 2);

}  // namespace attn
