// A kernel idea as queued (docs/ideas.md): a file `<name>.idea` of header lines, a blank line and a unified
// diff against the repository's templates (paths relative to kernels_templates/):
//
//   Description: one line (required)
//   Hypothesis: one line (optional)
//   Template: fa3_tma                  (optional: the repository template it is written against)
//   Space: {"V_LOAD": [0, 1]}          (optional: new parameter axes the diff introduces)
//   Default: {"V_LOAD": 0}             (required with Space: each axis' value that is the parent's behaviour)
//   Retry: yes                         (optional: run it again on a new parent after a verdict on an older one)
//
//   --- a/fa3_tma.cu
//   +++ b/fa3_tma.cu
//   @@ ...
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attn {

/// The limits of an idea file (bad_input beyond them). A header's value counts bytes of UTF-8 after
/// "Key:" and the spaces around it are dropped.
inline constexpr std::size_t kIdeaHeaderMaxBytes = 300;      ///< Description, Hypothesis, Template, Retry, Verdicts
inline constexpr std::size_t kIdeaJsonHeaderMaxBytes = 1200; ///< Space, Default (one line of JSON each)
inline constexpr std::uintmax_t kIdeaFileMaxBytes = 1 << 20; ///< the whole file, as the queue reads it

/// The header keys an idea file may have, in the documented order.
inline constexpr const char* kIdeaHeaderKeys[] = {"Description", "Hypothesis", "Template", "Space",
                                                  "Default",     "Retry",      "Verdicts"};
/// The most verdicts an idea file may ask for on one parent (Verdicts: N).
inline constexpr int kIdeaMaxVerdicts = 9;

/// The most bytes header `key` may hold (kIdeaJsonHeaderMaxBytes for Space and Default).
std::size_t idea_header_max_bytes(const std::string& key);

/// An idea file that cannot be an idea (not UTF-8, binary, unknown header, malformed diff, invalid space):
/// the verdict is broken with kind bad_input and this message.
struct IdeaInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One file of a unified diff: its path (a/, b/ and kernels_templates/ prefixes dropped; "" for /dev/null)
/// and its text from the --- line to the end of its last hunk.
struct DiffFile {
  std::string old_path, new_path;
  std::string text;
};

/// A parsed idea file.
struct IdeaFile {
  std::string name;                                            ///< the file name
  std::string description, hypothesis, template_root, text;    ///< text: the file as read
  nlohmann::ordered_json space = nlohmann::ordered_json::object();     ///< {"NAME": [int values]}
  nlohmann::ordered_json defaults = nlohmann::ordered_json::object();  ///< {"NAME": value}
  bool retry = false;
  /// Verdicts on its parent (and suite) the idea is judged until it has (Verdicts: N; default 1): a second verdict
  /// measures how far the first one reproduces. One judgment a run.
  int verdicts = 1;
  std::string diff;              ///< the diff as written (from the first line after the headers)
  std::vector<DiffFile> files;   ///< the diff, file by file
  std::string hash;              ///< XXH3-128 (hex) of template, space, defaults and diff: the idea's identity
};

/// Parses an idea file's bytes. Throws IdeaInputError naming the problem (and the line) for: bytes that are
/// not UTF-8 or contain NUL, a missing description, a header over idea_header_max_bytes, an unknown or
/// repeated header, Space/Default that are not JSON objects of the right shape (axis names C identifiers in
/// capitals, values distinct integers, a default per axis among its values), a diff that is empty while
/// Space is empty, or a diff whose hunks do not add up (line counts of the @@ headers), or that names a
/// path that is absolute or climbs out with "..".
IdeaFile parse_idea(const std::string& name, const std::string& bytes);
/// The identity of bytes that are not an idea (bad input, a queue problem): "file:" + their XXH3-128, so that
/// it never equals an idea's hash.
std::string non_idea_hash(const std::string& bytes);

/// Splits a unified diff into files, checking every hunk's line counts. Throws IdeaInputError.
std::vector<DiffFile> split_unified_diff(const std::string& diff);

}  // namespace attn
