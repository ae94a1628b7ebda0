// Calls of an outside command beside the tuning (docs/proposer.md, docs/ideas.md): the proposer hook's rounds and the
// idea agent's calls, each on a thread of its own with a flag that asks it to stop, and the one list of the daemon's
// own files that such a call may see change without being blamed for it.
#pragma once
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/tuning_loop.hpp"

namespace attn::tuning {

/// Up to `most` calls at a time, each returning a `Result`. Not thread-safe: its owner's lock guards it.
template <class Result>
class BackgroundCalls {
 public:
  /// A call's end: its result, or the exception it threw (`error`, its what()).
  struct Ended {
    std::optional<Result> result;
    std::string error;
  };
  /// A call: it polls `stop` (set by cancel()) and returns when it is set.
  using Call = std::function<Result(const std::atomic<bool>& stop)>;

  explicit BackgroundCalls(std::size_t most = 1) : most_(most < 1 ? 1 : most) {}
  BackgroundCalls(const BackgroundCalls&) = delete;
  BackgroundCalls& operator=(const BackgroundCalls&) = delete;
  ~BackgroundCalls() {
    cancel();
    collect(true);
  }

  std::size_t running() const { return calls_.size(); }
  /// Fewer than `most` calls run.
  bool room() const { return calls_.size() < most_; }
  /// Starts `call` on a thread of its own.
  void start(Call call) {
    auto stop = std::make_shared<std::atomic<bool>>(false);
    calls_.push_back({std::async(std::launch::async, [call = std::move(call), stop] { return call(*stop); }), stop});
  }
  /// The calls that have ended, in the order they started (with `wait`: every call, once it ends).
  std::vector<Ended> collect(bool wait) {
    std::vector<Ended> ended;
    for (auto c = calls_.begin(); c != calls_.end();) {
      if (!wait && c->done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        ++c;
        continue;
      }
      Ended e;
      try {
        e.result = c->done.get();
      } catch (const std::exception& x) {
        e.error = x.what();
      }
      ended.push_back(std::move(e));
      c = calls_.erase(c);
    }
    return ended;
  }
  /// Asks every running call to stop.
  void cancel() {
    for (auto& c : calls_) *c.stop = true;
  }

 private:
  struct Running {
    std::future<Result> done;
    std::shared_ptr<std::atomic<bool>> stop;
  };
  const std::size_t most_;
  std::vector<Running> calls_;
};

/// What the daemon writes while a call runs beside the tuning (the DB and its journal files, iters.tsv, the status,
/// worker, pid and log files, the cubin cache, the idea queue, the idea checks' proposal folders, the idea agents'
/// kits): a call's watcher (proposer/watched_files.hpp) leaves them out. One list for the proposer and the agents.
std::vector<std::string> daemon_files(const RunOptions& o, const std::string& cache_dir);

/// The folders a call's templates come from: `templates_dir`, and the repository's when it is another.
std::vector<std::string> call_template_dirs(const std::string& templates_dir);

}  // namespace attn::tuning
