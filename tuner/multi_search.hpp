// Tuning several templates at once: one SearchState and one Strategy per template, asked in turn.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tuner/strategy.hpp"

namespace attn {

/// A proposal together with the template it belongs to.
struct TemplateProposal {
  std::string template_name;
  Proposal proposal;
};

/// Round-robin over templates: next() asks the template after the one that proposed last, skipping
/// templates whose strategy has nothing left. Not thread-safe (like SearchState).
class MultiSearch {
 public:
  /// Adds a template with its own strategy. Throws std::invalid_argument on a repeated template name
  /// or a null strategy.
  void add(TemplateSpace space, std::unique_ptr<Strategy> strategy);
  /// The next proposal, or nullopt when every template's strategy is exhausted.
  std::optional<TemplateProposal> next();
  /// The preferred template's next proposal (prefer), none when no template is preferred or its strategy has none.
  std::optional<TemplateProposal> next_preferred();
  /// The state of one template (record results and champions here). Throws std::invalid_argument
  /// naming the unknown template and the known ones.
  SearchState& state(const std::string& template_name);
  const SearchState& state(const std::string& template_name) const;
  /// Template names in the order they were added.
  std::vector<std::string> template_names() const;
  /// next() proposes nothing more for this template (its state stays readable). Throws
  /// std::invalid_argument for an unknown template.
  void retire(const std::string& template_name);
  bool retired(const std::string& template_name) const;
  /// next() asks this template first while its strategy has proposals (an idea being tuned: docs/ideas.md);
  /// "" asks in turn again. Throws std::invalid_argument for an unknown template.
  void prefer(const std::string& template_name);
  /// Replaces the template's strategy (an idea that won goes on with the run's strategy, unbounded). Throws
  /// std::invalid_argument for an unknown template or a null strategy.
  void set_strategy(const std::string& template_name, std::unique_ptr<Strategy> strategy);
  /// Whether the template's strategy answered nothing the last time it was asked.
  bool exhausted(const std::string& template_name) const;

 private:
  struct Entry {
    SearchState state;
    std::unique_ptr<Strategy> strategy;
    bool retired = false;
    bool exhausted = false;
  };
  std::string preferred_;
  std::vector<Entry> entries_;
  std::size_t turn_ = 0;  // index of the template asked first by the next call
  std::size_t find(const std::string& template_name) const;
};

}  // namespace attn
