// The run's templates and their searches (daemon/search_book.hpp).
#include "daemon/search_book.hpp"

#include <fmt/format.h>

#include "daemon/worker_answers.hpp"

namespace attn::tuning {

SearchBook::SearchBook(std::optional<Shard> shard, std::size_t retire_after_crashes)
    : shard_(shard), retire_after_crashes_(retire_after_crashes) {}

void SearchBook::add(TemplateSpace space, std::unique_ptr<Strategy> strategy, std::optional<std::int64_t> proposal_id,
                     bool idea) {
  if (shard_) space.restrict_to_shard(shard_->index, shard_->count);
  const std::string name = space.name();
  std::lock_guard lock(mu_);
  search_.add(std::move(space), std::move(strategy));
  kernels_[name] = search_.state(name).space().kernel();
  if (proposal_id) proposal_of_[name] = *proposal_id;
  if (idea) ideas_.insert(name);
}

bool SearchBook::has(const std::string& t) const {
  std::lock_guard lock(mu_);
  return kernels_.count(t) > 0;
}

std::optional<std::string> SearchBook::kernel(const std::string& t) const {
  std::lock_guard lock(mu_);
  const auto k = kernels_.find(t);
  return k == kernels_.end() ? std::nullopt : std::optional<std::string>(k->second);
}

std::optional<std::int64_t> SearchBook::proposal_of(const std::string& t) const {
  std::lock_guard lock(mu_);
  const auto p = proposal_of_.find(t);
  return p == proposal_of_.end() ? std::nullopt : std::optional<std::int64_t>(p->second);
}

bool SearchBook::is_idea(const std::string& t) const {
  std::lock_guard lock(mu_);
  return ideas_.count(t) > 0;
}

std::vector<std::string> SearchBook::names() const {
  std::lock_guard lock(mu_);
  return search_.template_names();
}

CompileRequest SearchBook::compile_request(const std::string& t, const Config& cfg) const {
  std::lock_guard lock(mu_);
  return attn::compile_request(search_.state(t).space(), cfg);
}

std::optional<TemplateProposal> SearchBook::next(bool preferred) {
  std::lock_guard lock(mu_);
  auto p = preferred ? search_.next_preferred() : search_.next();
  if (!p) return std::nullopt;
  search_.state(p->template_name).mark_pending(p->proposal.config);
  ++progress_[p->template_name].issued;
  return p;
}

std::vector<Config> SearchBook::claim(const std::string& t, const std::vector<Config>& candidates) {
  std::lock_guard lock(mu_);
  SearchState& st = search_.state(t);
  std::vector<Config> claimed;
  for (const auto& c : candidates) {
    if (st.seen(c) || st.space().check(c)) continue;
    st.mark_pending(c);
    ++progress_[t].issued;
    claimed.push_back(c);
  }
  return claimed;
}

std::vector<Config> SearchBook::unseen_siblings(const std::string& t, const Config& cfg) const {
  std::lock_guard lock(mu_);
  const SearchState& st = search_.state(t);
  std::vector<Config> out;
  for (const Config& c : st.space().patch_siblings(cfg))
    if (!st.seen(c)) out.push_back(c);
  return out;
}

void SearchBook::cancel(const std::string& t, const Config& cfg) {
  std::lock_guard lock(mu_);
  search_.state(t).cancel_pending(cfg);
}

std::optional<std::string> SearchBook::record(const IterationRecord& it, const Config& cfg) {
  std::lock_guard lock(mu_);
  SearchState& st = search_.state(it.template_name);
  st.record(cfg, outcome_of(it));
  if (it.geomean_ms && it.status != IterationStatus::crash) {
    const auto champ = st.champion();
    if (!champ || *it.geomean_ms < champ->score_ms) st.set_champion(cfg);
  }
  auto& p = progress_[it.template_name];
  ++p.finished;
  p.gpu_ms += it.gpu_ms.value_or(0.0);
  const auto proposal = proposal_of_.find(it.template_name);
  if (proposal == proposal_of_.end() || search_.retired(it.template_name)) return std::nullopt;
  return broken_template(st, proposal->second, retire_after_crashes_);
}

void SearchBook::skipped(const std::string& t, const Config& cfg, const std::string& why) {
  std::lock_guard lock(mu_);
  if (!why.empty()) search_.state(t).record(cfg, Outcome::failed(-1, why));
  ++progress_[t].finished;
}

void SearchBook::retire(const std::string& t) {
  std::lock_guard lock(mu_);
  search_.retire(t);
}

void SearchBook::prefer(const std::string& t) {
  std::lock_guard lock(mu_);
  search_.prefer(t);
}

void SearchBook::set_strategy(const std::string& t, std::unique_ptr<Strategy> strategy) {
  std::lock_guard lock(mu_);
  search_.set_strategy(t, std::move(strategy));
}

bool SearchBook::tuned(const std::string& t) const {
  std::lock_guard lock(mu_);
  const auto p = progress_.find(t);
  if (p != progress_.end() && p->second.finished < p->second.issued) return false;
  return search_.retired(t) || search_.exhausted(t);
}

TemplateProgress SearchBook::progress(const std::string& t) const {
  std::lock_guard lock(mu_);
  const auto p = progress_.find(t);
  return p == progress_.end() ? TemplateProgress{} : p->second;
}

std::pair<std::size_t, std::size_t> SearchBook::space_counts() const {
  std::lock_guard lock(mu_);
  std::size_t total = 0, seen = 0;
  for (const auto& n : search_.template_names()) {
    const auto& st = search_.state(n);
    total += st.valid_configs().size();
    seen += st.valid_configs().size() - st.unseen_count();
  }
  return {total, seen};
}

std::optional<std::string> broken_template(const SearchState& st, std::int64_t proposal_id, std::size_t retire_after_crashes) {
  // A verdict that a kernel doing the work cannot get (docs/verification.md) is about the template's code, not one
  // config: the proposal leaves the search at once, whatever its other configs scored.
  for (const auto& [c, outcome] : st.results()) {
    const auto kind = failure_kind_from_string(outcome.failure);
    if (kind == FailureKind::inconsistent || kind == FailureKind::below_floor)
      return fmt::format("template {} (proposal {}) retired from the search: iter {} failed the verification ({}): its "
                         "result or its speed depends on more than its inputs",
                         st.template_name(), proposal_id, outcome.iter, outcome.failure);
  }
  if (!st.ranked().empty()) return std::nullopt;
  std::size_t crashes = 0;
  for (const auto& [c, outcome] : st.results()) crashes += outcome.ok() ? 0 : 1;
  if (crashes < retire_after_crashes) return std::nullopt;
  return fmt::format("template {} (proposal {}) retired from the search: its first {} configs all crashed",
                     st.template_name(), proposal_id, crashes);
}

}  // namespace attn::tuning
