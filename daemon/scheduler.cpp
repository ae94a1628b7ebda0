// What runs on which GPU (daemon/scheduler.hpp).
#include "daemon/scheduler.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "daemon/next_job.hpp"

namespace attn::tuning {

Scheduler::Scheduler(SearchBook& search, Compiler& compiler, CompilePool& pool, const StopRequest& stop, RunLimits limits)
    : search_(search), compiler_(compiler), pool_(pool), stop_(stop), limits_(limits) {}

InFlight Scheduler::issue(TemplateProposal p) {
  const CompileRequest req = search_.compile_request(p.template_name, p.proposal.config);
  return {std::move(p), pool_.submit(req).share()};
}

void Scheduler::refill() {
  std::lock_guard lock(mu_);
  refill_locked();
}

void Scheduler::refill_locked() {
  const std::size_t threads = std::max<std::size_t>(2, pool_.threads());
  // An idea being tuned (the preferred template, a few configs) goes ahead of the backlog: its judging waits for them,
  // and the parent's configs compiled meanwhile could move the parent's champion on (docs/ideas.md).
  std::vector<InFlight> idea;
  while (idea.size() < kCompiledBacklogPerThread * threads)
    if (auto p = search_.next(true)) idea.push_back(issue(std::move(*p)));
    else break;
  queue_.insert(queue_.begin(), std::make_move_iterator(idea.begin()), std::make_move_iterator(idea.end()));
  std::size_t compiling = 0, waiting = 0;
  for (const InFlight& f : queue_)
    if (!f.sibling) ++(f.ready() ? waiting : compiling);
  for (std::size_t n = compiles_to_start(compiling, waiting, threads); n > 0; --n) {
    auto p = search_.next(false);
    if (!p) return;
    queue_.push_back(issue(std::move(*p)));
  }
}

Scheduler::Next Scheduler::next(bool spare_due) {
  std::unique_lock lock(mu_);
  refill_locked();
  if (queue_.empty()) {
    if (busy_ == 0) return {};
    cv_.wait(lock);  // another GPU's result may open new proposals
    return {Next::Kind::again, {}};
  }
  // A compiled config waiting for a GPU goes first (in queue order); with none, spare GPU time; else the front.
  std::vector<bool> compiled(queue_.size());
  for (std::size_t i = 0; i < queue_.size(); ++i) compiled[i] = queue_[i].ready();
  const NextJob pick = next_job(compiled, spare_due);
  ++busy_;
  if (pick.kind == NextJob::Kind::spare) return {Next::Kind::spare, {}};
  Next n{Next::Kind::job, std::move(queue_[pick.index])};
  queue_.erase(queue_.begin() + std::ptrdiff_t(pick.index));
  return n;
}

std::optional<InFlight> Scheduler::take_screen_ahead() {
  std::lock_guard lock(mu_);
  if (stop_reason_locked(0)) return std::nullopt;  // it counts busy_: with an iteration limit, this job fits under it
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    InFlight& f = queue_[i];
    if (f.spare_of || !f.ready() || search_.is_idea(f.proposal.template_name)) continue;
    const CompiledVariant& cv = f.compiled.get();
    if (!cv.ok || cv.cubin_path.empty()) continue;  // its iteration records the failure without a GPU
    InFlight job = std::move(f);
    queue_.erase(queue_.begin() + std::ptrdiff_t(i));
    ++busy_;
    return job;
  }
  return std::nullopt;
}

void Scheduler::put_back(InFlight job) {
  {
    std::lock_guard lock(mu_);
    queue_.push_front(std::move(job));
    --busy_;
  }
  cv_.notify_all();
}

std::size_t Scheduler::issue_front(const std::string& t, const std::vector<Config>& configs, const std::string& move) {
  std::lock_guard lock(mu_);
  const std::vector<Config> claimed = search_.claim(t, configs);
  for (const auto& c : claimed) queue_.push_front(issue({t, {c, move}}));
  return claimed.size();
}

void Scheduler::queue_siblings(const TemplateProposal& p, const CompiledVariant& cv) {
  if (!cv.ok || !cv.patchable || search_.is_idea(p.template_name)) return;
  std::vector<InFlight> ready;
  for (const Config& c : search_.unseen_siblings(p.template_name, p.proposal.config)) {
    auto v = compiler_.from_sibling(cv, search_.compile_request(p.template_name, c));  // microseconds and 3 files
    if (!v || search_.claim(p.template_name, {c}).empty()) continue;
    std::string changes;
    for (const auto& [name, value] : c)
      if (p.proposal.config.at(name) != value) changes += fmt::format("{}{}={}", changes.empty() ? "" : ",", name, value);
    std::promise<CompiledVariant> done;
    done.set_value(std::move(*v));
    ready.push_back({TemplateProposal{p.template_name, {c, fmt::format("{} (sibling {}: one compile, patched)",
                                                                       p.proposal.move, changes)}},
                     done.get_future().share(), true});
  }
  std::lock_guard lock(mu_);
  queue_.insert(queue_.begin(), std::make_move_iterator(ready.begin()), std::make_move_iterator(ready.end()));
}

void Scheduler::retire(const std::string& t) {
  std::lock_guard lock(mu_);
  search_.retire(t);
  // Its configs still queued (compiling, or compiled and waiting for a GPU) get no GPU time either; configs whose
  // screen was sent ahead to a GPU already are recorded as they come.
  for (auto i = queue_.begin(); i != queue_.end();)
    if (i->proposal.template_name == t && !i->spare_of) {
      search_.skipped(t, i->proposal.proposal.config, "");
      i = queue_.erase(i);
    } else {
      ++i;
    }
}

std::int64_t Scheduler::end_job(bool counted) {
  std::int64_t n = 0;
  {
    std::lock_guard lock(mu_);
    --busy_;
    if (counted) ++iterations_;
    n = iterations_;
  }
  cv_.notify_all();
  return n;
}

std::optional<std::string> Scheduler::stop_reason(int own_ahead) const {
  std::lock_guard lock(mu_);
  return stop_reason_locked(own_ahead);
}

std::optional<std::string> Scheduler::stop_reason_locked(int own_ahead) const {
  // Another GPU's loop ended the run. A slot holding a job sent ahead checks the conditions itself: that job was
  // counted on a GPU when another slot stopped at the iteration limit, so it still fits under it.
  if (!reason_.empty() && own_ahead == 0) return reason_;
  if (failure_) return std::string("a GPU's loop failed");
  if (stop_.stopping()) return std::string("stopped on request");
  if (limits_.budget_s && seconds_since(started_) >= *limits_.budget_s)
    return fmt::format("budget of {:.0f} s used up", *limits_.budget_s);
  if (limits_.max_iterations && iterations_ + busy_ - own_ahead >= *limits_.max_iterations)
    return fmt::format("iteration limit {} reached", *limits_.max_iterations);
  return std::nullopt;
}

void Scheduler::end(const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (reason_.empty() && !failure_) reason_ = why;
  }
  cv_.notify_all();
}

void Scheduler::fail(std::exception_ptr e) {
  {
    std::lock_guard lock(mu_);
    if (!failure_) failure_ = e;
  }
  cv_.notify_all();
}

std::exception_ptr Scheduler::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

std::string Scheduler::reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

bool Scheduler::end_if_idle(const std::string& why, bool busy_elsewhere) {
  {
    std::lock_guard lock(mu_);
    if (!queue_.empty() || busy_ > 0 || busy_elsewhere) return false;
    if (reason_.empty() && !failure_) reason_ = why;
  }
  cv_.notify_all();
  return true;
}

void Scheduler::wait_for(milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d);
}

std::int64_t Scheduler::iterations() const {
  std::lock_guard lock(mu_);
  return iterations_;
}

std::int64_t Scheduler::count_outside() {
  std::lock_guard lock(mu_);
  return ++iterations_;
}

void Scheduler::drop_queue() {
  std::lock_guard lock(mu_);
  for (auto& f : queue_) search_.cancel(f.proposal.template_name, f.proposal.proposal.config);
  queue_.clear();
}

}  // namespace attn::tuning
