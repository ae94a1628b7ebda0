// The idea queue's state in one run (docs/ideas.md): the idea in progress, the queue files taken, the folder's last
// look and last problem. daemon/idea_bench.cpp does the work around it; an idea template's configs and their GPU time
// are the search book's (daemon/search_book.hpp, TemplateProgress).
#pragma once
#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <set>
#include <string>

#include "daemon/idea_picks.hpp"
#include "db/store.hpp"
#include "proposer/idea_apply.hpp"
#include "proposer/idea_file.hpp"

namespace attn::tuning {

/// The idea being worked on: its row, its file, the check running beside the tuning (valid until collected),
/// when it was taken off the queue, what it adds to its parent's space, and the verdict it repeats (a judgment asked
/// again on the same parent: the file's Verdicts header).
struct ActiveIdea {
  IdeaRecord rec;
  IdeaFile file;
  std::future<IdeaApplied> check;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  NewValues new_values;
  std::optional<std::int64_t> repeat_of;
  /// Whether `c` runs the idea (idea_active of new_values).
  bool active(const Config& c) const { return idea_active(new_values, c); }
};

/// The idea queue's state: one idea at a time. Not thread-safe: the idea bench's lock guards it.
class IdeaSession {
 public:
  /// The idea in progress; nullptr when none. The pointer is valid until end().
  ActiveIdea* current() { return idea_ ? &*idea_ : nullptr; }
  const ActiveIdea* current() const { return idea_ ? &*idea_ : nullptr; }
  /// Takes `a` as the idea in progress, its judging time at 0. Throws std::logic_error while another is in progress.
  ActiveIdea& begin(ActiveIdea a);
  /// Drops the idea in progress (none: nothing) and has the queue looked at on the next poll.
  void end();
  /// The GPU time of the idea's judging (A/B/A, held-out seed), in ms.
  void add_judging_ms(double ms) { judging_ms_ += ms; }
  double judging_ms() const { return judging_ms_; }

  /// Whether the folder is due a look: no idea in progress and `poll_s` seconds since the last look (then this
  /// counts as the look).
  bool look_due(double poll_s);
  /// The folder is looked at on the next poll.
  void look_now() { scanned_ = {}; }
  /// Whether the queue file `key` (its name and content hash) was taken in this run; take() records it.
  bool taken(const std::string& key) const { return taken_.count(key) > 0; }
  void take(const std::string& key) { taken_.insert(key); }
  /// The queue keys taken so far (idea_queue_key).
  const std::set<std::string>& taken_keys() const { return taken_; }
  /// Sets the folder's problem ("" for none); returns the one before (a problem is reported once, and its end).
  std::string set_problem(const std::string& problem);

 private:
  std::optional<ActiveIdea> idea_;
  double judging_ms_ = 0;
  std::set<std::string> taken_;
  std::chrono::steady_clock::time_point scanned_{};
  std::string problem_;
};

}  // namespace attn::tuning
