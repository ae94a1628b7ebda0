// The idea queue's folder (`attn-tuner run --ideas DIR`, docs/ideas.md): the *.idea files in it, read
// whole, oldest first. What the daemon does with them: daemon/idea_bench.cpp.
#pragma once
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tuner/idea_parent.hpp"

namespace attn {

/// The idea queue options of `attn-tuner run`.
struct IdeaOptions {
  std::string dir;            ///< the queue folder; "" = no idea queue
  std::size_t budget = 24;    ///< configs tuned per idea (its parent's best configs first, then the strategy)
  std::size_t top = kIdeaTopConfigs;  ///< the parent's best configs tried first (after its champion)
  double poll_s = 5;          ///< how often the folder is looked at (seconds)
  bool enabled() const { return !dir.empty(); }
};

/// One *.idea file of the queue as read now.
struct QueuedIdea {
  std::string name;                  ///< file name
  std::optional<std::string> bytes;  ///< its content; none when it could not be read (`error` says why)
  std::string error;
};

/// What the loop knows a queued file by in a run: its name and its bytes' XXH3-128 (or its read error). A file
/// edited since it was taken is another file.
std::string idea_queue_key(const QueuedIdea& q);

/// How many of `queued` have not been taken (their idea_queue_key is not in `taken`).
std::size_t untaken_ideas(const std::vector<QueuedIdea>& queued, const std::set<std::string>& taken);

/// The *.idea regular files of `dir` (not its subfolders), oldest modification time first, then by name,
/// each read whole (at most 1 MiB: a larger file is an error, not read). `problem` is set, and nothing
/// returned, when `dir` is missing or not a readable folder; a file removed between the listing and its
/// read is left out (it is no longer queued).
std::vector<QueuedIdea> scan_idea_queue(const std::string& dir, std::string& problem);

}  // namespace attn
