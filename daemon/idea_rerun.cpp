// Whether a queued idea is judged (daemon/idea_rerun.hpp).
#include "daemon/idea_rerun.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace attn::tuning {

RerunDecision decide_rerun(const std::vector<IdeaRecord>& here, const std::string& hash, const std::string& parent,
                           bool retry, int verdicts, const std::string& file, const std::string& suite) {
  std::vector<const IdeaRecord*> same, other;  // its verdicts on this parent, and on others
  for (const auto& old : here)
    if (old.idea_hash == hash && old.status == IdeaStatus::done) (old.parent_template == parent ? same : other).push_back(&old);
  RerunDecision d;
  const auto skip = [&](const IdeaRecord& old, const std::string& more) {
    d.judge = false;
    d.skip_note = fmt::format("idea {}: already judged {} on {} on {} (idea {}){}", file, to_string(old.verdict),
                              old.parent_template, suite, old.id, more);
    return d;
  };
  const std::size_t wanted = std::size_t(std::max(1, verdicts));
  if (same.size() >= wanted)
    return skip(*same.back(), wanted > 1 ? fmt::format("; {} verdicts there, as its Verdicts: {} asks", same.size(), wanted)
                                         : std::string());
  if (same.empty() && !other.empty() && !retry) return skip(*other.front(), "; add 'Retry: yes' to run it on " + parent);
  if (!same.empty()) d.repeat_of = same.back()->id;
  return d;
}

}  // namespace attn::tuning
