// Every template a run tunes: its search (tuner/multi_search.hpp: a SearchState and a strategy each) and what the run
// knows of it: its kernel, the proposal it came from, whether it is an idea's, and an idea template's progress (configs
// issued to the compile pool and finished, their GPU time), which decides when an idea is judged (docs/ideas.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "db/store.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/multi_search.hpp"
#include "tuner/shard.hpp"

namespace attn::tuning {

/// An idea template's configs: issued to the compile pool, finished (evaluated, skipped as evaluated before, or
/// dropped with a retired template), and their GPU time (ms).
struct TemplateProgress {
  std::size_t issued = 0, finished = 0;
  double gpu_ms = 0;
};

/// Thread-safe: one lock, held for no I/O; it calls no other part of the run.
class SearchBook {
 public:
  /// `shard`: only that shard of every template's configs (RunOptions::shard). `retire_after_crashes`: a proposed
  /// template whose first configs all crashed is a broken kernel (ProposerOptions::retire_after_crashes).
  SearchBook(std::optional<Shard> shard, std::size_t retire_after_crashes);

  /// A template joins the search: the one place, for the run's templates, proposals (of the proposer, of earlier
  /// runs) and ideas. Restricted to the shard; `strategy` proposes its configs; `proposal_id` the proposal it came
  /// from (none: a repository template); `idea`: an idea's template (evaluated in full, never screened out, no patched
  /// siblings: its budget counts distinct compiles of the idea's code). Throws std::invalid_argument on a name the
  /// search has.
  void add(TemplateSpace space, std::unique_ptr<Strategy> strategy, std::optional<std::int64_t> proposal_id, bool idea);
  /// Whether this run tunes template `t`.
  bool has(const std::string& t) const;
  /// Its kernel's entry symbol; none for a template this run does not tune.
  std::optional<std::string> kernel(const std::string& t) const;
  std::optional<std::int64_t> proposal_of(const std::string& t) const;
  bool is_idea(const std::string& t) const;
  std::vector<std::string> names() const;
  /// The NVRTC request of `cfg` of template `t` (compile_request of its space).
  CompileRequest compile_request(const std::string& t, const Config& cfg) const;

  /// The next config to compile: the preferred template's (an idea's) when `preferred`, else the round-robin's; none
  /// when the strategy has none. It is marked pending and counted issued.
  std::optional<TemplateProposal> next(bool preferred);
  /// Those of `candidates` of template `t` that are valid and not seen yet, marked pending and counted issued.
  std::vector<Config> claim(const std::string& t, const std::vector<Config>& candidates);
  /// Configs that differ from `cfg` of template `t` only in patchable parameters and were not seen yet (not claimed).
  std::vector<Config> unseen_siblings(const std::string& t, const Config& cfg) const;
  /// A config issued and never evaluated (the run ended first): no longer pending.
  void cancel(const std::string& t, const Config& cfg);
  /// A finished iteration of `cfg`: its outcome recorded (a whole-suite result faster than the template's best makes
  /// it the template's champion) and an idea template's progress counted. When it shows the template, a proposal, to
  /// be a broken kernel (a verification failure, or its first configs all crashed), why: the caller retires it.
  std::optional<std::string> record(const IterationRecord& it, const Config& cfg);
  /// `cfg` of `t` will not be evaluated (another daemon on this DB did it; its template retired): finished.
  void skipped(const std::string& t, const Config& cfg, const std::string& why);
  /// The template leaves the search (MultiSearch::retire).
  void retire(const std::string& t);
  /// Its configs first while its strategy has any ("": in turn again).
  void prefer(const std::string& t);
  void set_strategy(const std::string& t, std::unique_ptr<Strategy> strategy);
  /// Whether an idea template is tuned: every config issued has finished and the search proposes nothing more of it.
  bool tuned(const std::string& t) const;
  TemplateProgress progress(const std::string& t) const;
  /// Valid configs of every template, and those seen.
  std::pair<std::size_t, std::size_t> space_counts() const;
  /// `f(const MultiSearch&)` with the search to itself (read what a decision needs, copied out).
  template <class F>
  decltype(auto) read(F&& f) const {
    std::lock_guard lock(mu_);
    return std::forward<F>(f)(static_cast<const MultiSearch&>(search_));
  }
  /// `f(MultiSearch&)` with the search to itself (a resume records the history).
  template <class F>
  decltype(auto) write(F&& f) {
    std::lock_guard lock(mu_);
    return std::forward<F>(f)(search_);
  }

 private:
  const std::optional<Shard> shard_;
  const std::size_t retire_after_crashes_;
  mutable std::mutex mu_;
  MultiSearch search_;
  std::map<std::string, std::string> kernels_;
  std::map<std::string, std::int64_t> proposal_of_;
  std::set<std::string> ideas_;
  std::map<std::string, TemplateProgress> progress_;
};

/// Why template `st`, a proposal, is a broken kernel: a verdict that a kernel doing the work cannot get
/// (inconsistent, below_floor: docs/verification.md), or its first `retire_after_crashes` configs all crashed with
/// none valid; none otherwise. `proposal_id` names it.
std::optional<std::string> broken_template(const SearchState& st, std::int64_t proposal_id, std::size_t retire_after_crashes);

}  // namespace attn::tuning
