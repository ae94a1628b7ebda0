// Whether a queued idea is judged (docs/ideas.md, "No re-run"): an idea is its hash; one judged on this suite's
// lineage is not judged again on the same parent unless its file asks for more verdicts there (Verdicts: N, a second
// look that measures how far a verdict reproduces), nor on a newer parent unless it asks (Retry: yes).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/store.hpp"

namespace attn::tuning {

/// The decision on one queued idea.
struct RerunDecision {
  bool judge = true;
  /// The latest verdict on this parent that this judgment repeats (a row of `ideas`); none for a first judgment here.
  std::optional<std::int64_t> repeat_of;
  /// Why it is skipped: the line for the log ("already judged no_gain on fa3_tma_p59 on full (idea 60)...").
  std::string skip_note;
};

/// The idea `hash` of file `file`, whose parent on this suite would be `parent`, with the file's `retry` (Retry: yes)
/// and `verdicts` (Verdicts: N, at least 1): `here` holds the ideas judged on suite `suite`, oldest first (rows of other
/// hashes and rows without a verdict are passed over). Judged again on `parent` while it has fewer than `verdicts`
/// verdicts there; judged on `parent` for the first time unless it has a verdict on another parent and no `retry`.
RerunDecision decide_rerun(const std::vector<IdeaRecord>& here, const std::string& hash, const std::string& parent,
                           bool retry, int verdicts, const std::string& file, const std::string& suite);

}  // namespace attn::tuning
