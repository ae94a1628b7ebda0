// What a search strategy sees of one template's tuning so far: the space, the configs already
// evaluated (and those proposed but not yet measured), their results, and the champion.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tuner/space.hpp"

namespace attn {

/// The result of evaluating one config on the suite.
struct Outcome {
  std::int64_t iter = -1;          ///< iteration id that measured it (-1 when unknown)
  std::optional<double> score_ms;  ///< suite score in ms (geomean of family medians); empty = failed
  std::string failure;             ///< why it failed (compile, validation, device limit, crash)

  bool ok() const { return score_ms.has_value(); }
  static Outcome success(std::int64_t iter, double score_ms) { return {iter, score_ms, {}}; }
  static Outcome failed(std::int64_t iter, std::string why) { return {iter, std::nullopt, std::move(why)}; }
};

/// The compile report of a config (gpu/compiler's resource report), as model features.
struct ConfigResources {
  double registers = 0;    ///< per thread
  double smem_bytes = 0;   ///< static shared memory
  double spill_bytes = 0;  ///< spill stores + loads
  bool operator==(const ConfigResources&) const = default;
};

/// The config the daemon currently holds as best for this template (promoted by the champion rule).
struct Champion {
  Config config;
  std::int64_t iter = -1;  ///< iteration of its recorded outcome
  double score_ms = 0;     ///< its recorded score
};

/// The valid configs of a space in enumerate()'s order, held compactly: each as its parameters' value
/// indices packed into 64-bit words (one word for the project's templates: 8 bytes a config, where a Config
/// map costs ~1.3 KB; a 500k-config space held as maps took 0.7 GB). Indexing and iteration build the
/// Config on access (by value), equal to enumerate()'s element.
class ValidConfigs {
 public:
  ValidConfigs() = default;
  /// Walks the space's valid configs once (TemplateSpace::for_each_valid).
  explicit ValidConfigs(const TemplateSpace& space);

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// The i-th valid config; i < size() (unchecked, like std::vector).
  Config operator[](std::size_t i) const;
  /// Bytes of the packed configs (capacity of the storage), for memory checks.
  std::size_t packed_bytes() const { return words_.capacity() * sizeof(std::uint64_t); }

  /// A random-access position whose dereference builds the Config (a value, not a reference).
  class const_iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Config;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Config;
    const_iterator() = default;
    const_iterator(const ValidConfigs* list, std::size_t i) : list_(list), i_(i) {}
    Config operator*() const { return (*list_)[i_]; }
    const_iterator& operator++() { ++i_; return *this; }
    const_iterator operator++(int) { auto old = *this; ++i_; return old; }
    const_iterator& operator--() { --i_; return *this; }
    const_iterator& operator+=(difference_type n) { i_ += n; return *this; }
    const_iterator operator+(difference_type n) const { return {list_, i_ + n}; }
    difference_type operator-(const const_iterator& o) const {
      return static_cast<difference_type>(i_) - static_cast<difference_type>(o.i_);
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }
    bool operator!=(const const_iterator& o) const { return i_ != o.i_; }

   private:
    const ValidConfigs* list_ = nullptr;
    std::size_t i_ = 0;
  };
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

 private:
  struct Field {
    std::size_t word = 0;    // which word of a config holds this parameter's value index
    unsigned shift = 0, bits = 0;
  };
  std::vector<std::string> names_;                 // parameters() order
  std::vector<std::vector<std::int64_t>> values_;  // parameters() order
  std::vector<std::size_t> by_name_;               // parameter positions in the Config's (sorted) key order
  std::vector<Field> fields_;                      // parameters() order
  std::size_t words_per_config_ = 0;
  std::size_t size_ = 0;
  std::vector<std::uint64_t> words_;  // config i: words_[i * words_per_config_ ...]
};

/// The successful outcomes of a SearchState, lowest score first (ties: lower iter first), as pointers into its
/// results() kept in order by every record(): reading it copies no Config (a copy of 50,000 Configs took ~100 ms
/// a proposal on the research DB). Valid until the next record() of its state. Elements are results()'s pairs.
class RankedView {
 public:
  using Entry = std::pair<const Config, Outcome>;
  using Items = std::vector<const Entry*>;
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Entry;
    using difference_type = std::ptrdiff_t;
    using pointer = const Entry*;
    using reference = const Entry&;
    const_iterator() = default;
    explicit const_iterator(Items::const_iterator it) : it_(it) {}
    const Entry& operator*() const { return **it_; }
    const Entry* operator->() const { return *it_; }
    const_iterator& operator++() { ++it_; return *this; }
    const_iterator operator++(int) { auto old = *this; ++it_; return old; }
    bool operator==(const const_iterator& o) const { return it_ == o.it_; }
    bool operator!=(const const_iterator& o) const { return it_ != o.it_; }
   private:
    Items::const_iterator it_;
  };
  const_iterator begin() const { return const_iterator(items_.begin()); }
  const_iterator end() const { return const_iterator(items_.end()); }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const Entry& front() const { return *items_.front(); }
  const Entry& operator[](std::size_t i) const { return *items_[i]; }

 private:
  friend class SearchState;
  Items items_;
};

/// Tuning state of one template. Owned by the daemon (one per template); strategies only read it.
/// Not thread-safe: the daemon's proposal loop updates and reads it from one thread.
class SearchState {
 public:
  /// Enumerates the valid configs once (TemplateSpace::for_each_valid, held as ValidConfigs).
  explicit SearchState(TemplateSpace space);
  // Movable (std::map keeps its nodes, so ranked()'s pointers stay valid), not copyable.
  SearchState(SearchState&&) = default;
  SearchState& operator=(SearchState&&) = default;
  SearchState(const SearchState&) = delete;
  SearchState& operator=(const SearchState&) = delete;

  const TemplateSpace& space() const { return space_; }
  const std::string& template_name() const { return space_.name(); }
  /// Every valid config in odometer order (enumerate()'s, held compactly: see ValidConfigs).
  const ValidConfigs& valid_configs() const { return valid_; }

  /// Stores the outcome of `c` (a later record of the same config replaces the earlier one, e.g. an
  /// A/B/A re-timing) and clears its pending mark. Configs outside the space are accepted (results
  /// loaded from a database written with an older space) and just count as evaluated.
  void record(const Config& c, Outcome outcome);
  /// record() of each of `history` in its order (a config met twice keeps its last outcome), at once: the
  /// configs are sorted once and appended to results() in order, and ranked() is sorted once, where record()
  /// searches and inserts a config at a time (a resume of a night's million configs). Pending marks of the
  /// configs are cleared as record() does.
  void record_all(std::vector<std::pair<Config, Outcome>> history);
  /// Marks `c` as proposed and in flight (compiling or timing), so strategies do not propose it again;
  /// record() or cancel_pending() clears the mark.
  void mark_pending(const Config& c);
  void cancel_pending(const Config& c);

  bool evaluated(const Config& c) const { return results_.count(c) != 0; }
  bool pending(const Config& c) const { return pending_.count(c) != 0; }
  /// Evaluated or pending: a strategy never proposes such a config.
  bool seen(const Config& c) const { return evaluated(c) || pending(c); }
  /// Number of valid configs not yet seen (0: exhausted).
  std::size_t unseen_count() const { return valid_.size() - seen_valid_; }
  const std::map<Config, Outcome>& results() const { return results_; }
  /// Successful outcomes, lowest score first (ties: lower iter first); see RankedView.
  const RankedView& ranked() const { return ranked_; }

  /// The compile report of `c`, once it was compiled (the daemon sets it after each compile, replay
  /// from the DB); null when unknown. Strategies may use it as features (the model strategy does).
  void set_resources(const Config& c, ConfigResources r) { resources_[c] = r; }
  const ConfigResources* resources(const Config& c) const {
    const auto it = resources_.find(c);
    return it == resources_.end() ? nullptr : &it->second;
  }

  /// Makes `c` the champion. Throws std::invalid_argument unless `c` was recorded with a score.
  void set_champion(const Config& c);
  /// The champion with its current recorded outcome, if one was set.
  std::optional<Champion> champion() const;

 private:
  TemplateSpace space_;
  ValidConfigs valid_;
  std::map<Config, Outcome> results_;
  RankedView ranked_;  // the ok() entries of results_, in (score, iter) order
  std::set<Config> pending_;
  std::map<Config, ConfigResources> resources_;
  std::optional<Config> champion_;
  std::size_t seen_valid_ = 0;  // valid configs that are evaluated or pending

  void on_first_seen(const Config& c);
};

}  // namespace attn
