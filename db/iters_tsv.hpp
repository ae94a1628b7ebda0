// iters.tsv: the human-readable log of finished iterations (one line each, seed format of
// karpathy/autoresearch's results.tsv), rebuilt from the DB at any time. Columns, tab-separated:
//   iter geomean_ms delta_ms window_ms global_ms retrieval_ms status params description
// `-` for a missing value, milliseconds with 4 decimals ("0.0791"), delta signed ("-0.0021",
// "+0.0008"), tabs and line breaks in text replaced by spaces.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/records.hpp"

namespace attn {

/// The header line, without the newline.
inline constexpr std::string_view kItersTsvHeader =
    "iter\tgeomean_ms\tdelta_ms\twindow_ms\tglobal_ms\tretrieval_ms\tstatus\tparams\tdescription";

/// "0.0791" (fixed, 4 decimals); "-" for none.
std::string format_ms(std::optional<double> ms);
/// "+0.0008" / "-0.0021" (always signed; a value that rounds to zero is "+0.0000"); "-" for none.
std::string format_delta_ms(std::optional<double> ms);
/// Text as one TSV field: tab, CR and LF become spaces; "" becomes "-".
std::string tsv_text(std::string_view text);

/// One line for a finished iteration (keep, discard, crash, interrupted), without the newline.
/// Throws std::invalid_argument for a running iteration.
std::string render_row(const IterationRecord& it);
/// Header and one line per finished row in the given order (running rows are skipped), each ending
/// in '\n'.
std::string render_all(const std::vector<IterationRecord>& rows);
/// Appends render_row(it) + '\n' of every row, in the given order, to `path` in one write, first writing the header
/// when the file is missing or empty. Throws std::runtime_error naming the file when it cannot be written or does not
/// start with the header.
void append_rows(const std::string& path, const std::vector<IterationRecord>& rows);
/// Replaces `path` with render_all(rows) atomically: writes `path`.tmp-<pid>, fsyncs, renames.
void write_all(const std::string& path, const std::vector<IterationRecord>& rows);
/// Whether the file at `path` looks like the rendering of a DB with `finished` finished iterations whose last
/// one renders as `last_line` (no newline; ignored when `finished` is 0): it starts with the header line, has
/// 1 + `finished` lines, each ending in '\n', and its last line is `last_line`. Reads the file once (a night's
/// 440 MB in a fraction of a second); a missing or unreadable file does not match. A line changed in place in
/// the middle is not seen: appends and the daemon's own rewrites are what the check follows.
bool tsv_matches(const std::string& path, std::size_t finished, const std::string& last_line);

}  // namespace attn
