// The idea queue's state in one run (docs/ideas.md): the idea in progress and its counts, the templates of ideas,
// the queue files taken, the folder's last look and last problem. daemon/loop_ideas.cpp does the I/O around it.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "db/store.hpp"
#include "proposer/idea_apply.hpp"
#include "proposer/idea_file.hpp"
#include "tuner/multi_search.hpp"

namespace attn::tuning {

/// The idea being worked on: its row, its file, the check running beside the tuning (valid until collected),
/// when it was taken off the queue, and what it adds to its parent's space.
struct ActiveIdea {
  IdeaRecord rec;
  IdeaFile file;
  std::future<IdeaApplied> check;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  /// Values the idea adds (a new axis' values but its default; values added to an existing axis): a config
  /// runs the idea's code only when it uses one. Empty: every config runs it (a plain code change).
  std::map<std::string, std::set<std::int64_t>> new_values;
  /// Whether `c` runs the idea (see new_values).
  bool active(const Config& c) const;
};

/// The idea queue's state: one idea at a time. The counts that decide when the idea is judged (configs of its
/// template issued to the compile pool and finished) and its GPU time move only through the hooks below. Not
/// thread-safe: the loop's lock guards it.
class IdeaSession {
 public:
  /// The idea in progress; nullptr when none. The pointer is valid until end().
  ActiveIdea* current() { return idea_ ? &*idea_ : nullptr; }
  const ActiveIdea* current() const { return idea_ ? &*idea_ : nullptr; }
  /// Takes `a` as the idea in progress, its counts at 0. Throws std::logic_error while another is in progress.
  ActiveIdea& begin(ActiveIdea a);
  /// Drops the idea in progress (none: nothing) and has the queue looked at on the next poll.
  void end();

  /// Hook of the compile pool's feed: a config of `tname` was issued (counted when it is the idea's template).
  void on_issued(const std::string& tname);
  /// Hook of a finished iteration: a config of `tname` was evaluated (`gpu_ms` its GPU time), or skipped as
  /// evaluated before (0).
  void on_finished(const std::string& tname, double gpu_ms);
  /// The GPU time of the idea's judging (A/B/A, held-out seed), in ms.
  void add_gpu_ms(double ms) { gpu_ms_ += ms; }
  std::size_t issued() const { return issued_; }
  std::size_t finished() const { return finished_; }
  /// Its iterations' GPU time and its judging, in ms.
  double gpu_ms() const { return gpu_ms_; }
  /// Whether the idea in progress is tuned: its template is in the search (status tuning), every config issued has
  /// finished, and the search proposes nothing more of it (retired, or its strategy exhausted).
  bool tuned(const MultiSearch& search) const;

  /// A template of an idea (of this run or an earlier one): evaluated on the whole suite, never screened, no
  /// patched siblings (its budget counts distinct compiles of the idea's code).
  void add_template(const std::string& tname) { templates_.insert(tname); }
  bool is_idea_template(const std::string& tname) const { return templates_.count(tname) > 0; }

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
  std::size_t issued_ = 0, finished_ = 0;
  double gpu_ms_ = 0;
  std::set<std::string> templates_;
  std::set<std::string> taken_;
  std::chrono::steady_clock::time_point scanned_{};
  std::string problem_;
};

}  // namespace attn::tuning
