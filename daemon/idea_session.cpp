// The idea queue's state in one run (see daemon/idea_session.hpp).
#include "daemon/idea_session.hpp"

#include <stdexcept>

namespace attn::tuning {

ActiveIdea& IdeaSession::begin(ActiveIdea a) {
  if (idea_) throw std::logic_error("IdeaSession::begin: idea " + std::to_string(idea_->rec.id) + " is in progress");
  judging_ms_ = 0;
  return idea_.emplace(std::move(a));
}

void IdeaSession::end() {
  idea_.reset();
  look_now();
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
