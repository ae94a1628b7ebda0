// Whole text files in and out, for every folder that reads or writes one (templates, idea files, kits, proposals).
#pragma once
#include <string>

namespace attn {

/// The whole file at `path`. Throws std::runtime_error naming the path when it cannot be read.
std::string read_text_file(const std::string& path);
/// Replaces the file at `path` with `text`, creating its folders. Throws std::runtime_error naming the path.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace attn
