// The idea queue's state in one run (see daemon/idea_session.hpp).
#include "daemon/idea_session.hpp"

#include <stdexcept>

namespace attn::tuning {

bool ActiveIdea::active(const Config& c) const {
  if (new_values.empty()) return true;
  for (const auto& [p, values] : new_values)
    if (const auto v = c.find(p); v != c.end() && values.count(v->second)) return true;
  return false;
}

ActiveIdea& IdeaSession::begin(ActiveIdea a) {
  if (idea_) throw std::logic_error("IdeaSession::begin: idea " + std::to_string(idea_->rec.id) + " is in progress");
  issued_ = finished_ = 0;
  gpu_ms_ = 0;
  return idea_.emplace(std::move(a));
}

void IdeaSession::end() {
  idea_.reset();
  look_now();
}

void IdeaSession::on_issued(const std::string& tname) {
  if (idea_ && tname == idea_->rec.template_name) ++issued_;
}

void IdeaSession::on_finished(const std::string& tname, double gpu_ms) {
  if (!idea_ || tname != idea_->rec.template_name) return;
  ++finished_;
  gpu_ms_ += gpu_ms;
}

bool IdeaSession::tuned(const MultiSearch& search) const {
  if (!idea_ || idea_->check.valid() || idea_->rec.status != IdeaStatus::tuning) return false;
  if (finished_ < issued_) return false;
  const std::string& t = idea_->rec.template_name;
  return search.retired(t) || search.exhausted(t);
}

bool IdeaSession::look_due(double poll_s) {
  const auto now = std::chrono::steady_clock::now();
  if (idea_ || std::chrono::duration<double>(now - scanned_).count() < poll_s) return false;
  scanned_ = now;
  return true;
}

std::string IdeaSession::set_problem(const std::string& problem) {
  std::string before = std::move(problem_);
  problem_ = problem;
  return before;
}

}  // namespace attn::tuning
