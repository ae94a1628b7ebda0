// Screens and near misses of a run (daemon/screen_book.hpp).
#include "daemon/screen_book.hpp"

#include <filesystem>

#include <fmt/format.h>

namespace attn::tuning {

ScreenBook::ScreenBook(double cutoff, bool spare, double spare_cutoff)
    : cutoff_(cutoff), spare_cutoff_(spare_cutoff), spare_(spare) {}

void ScreenBook::seed(double screen_ms) {
  std::lock_guard lock(mu_);
  if (!best_ || screen_ms < *best_) best_ = screen_ms;
}

ScreenVerdict ScreenBook::judge(double screen_ms) {
  std::lock_guard lock(mu_);
  const ScreenVerdict v = judge_screen(screen_ms, best_, cutoff_);
  if (!best_ || screen_ms < *best_) best_ = screen_ms;
  return v;
}

void ScreenBook::screened_out(double screen_ms, ScreenedNearMiss miss) {
  std::lock_guard lock(mu_);
  if (!spare_ || !spare_candidate(screen_ms, best_, spare_cutoff_)) return;
  miss.cv.cubin.clear();
  miss.cv.cubin.shrink_to_fit();
  near_misses_.emplace(screen_ms, std::move(miss));
}

bool ScreenBook::spare_due() {
  std::lock_guard lock(mu_);
  while (!near_misses_.empty()) {
    const auto best = near_misses_.begin();
    // Sorted by screen score: when the best near miss is out of the cut-off now, so is every other.
    if (!spare_candidate(best->first, best_, spare_cutoff_)) {
      near_misses_.clear();
      return false;
    }
    std::error_code ec;
    if (std::filesystem::exists(best->second.cv.cubin_path, ec)) return true;
    near_misses_.erase(best);  // its cubin left the cache: not worth a compile of GPU time that is spare
  }
  return false;
}

std::optional<InFlight> ScreenBook::take_spare() {
  std::lock_guard lock(mu_);
  if (near_misses_.empty()) return std::nullopt;
  auto node = near_misses_.extract(near_misses_.begin());
  ScreenedNearMiss& miss = node.mapped();
  miss.cv.cache_hit = true;  // compiled for its screen: no NVRTC time again
  std::promise<CompiledVariant> ready;
  ready.set_value(std::move(miss.cv));
  TemplateProposal p = std::move(miss.proposal);
  p.proposal.move = fmt::format("spare GPU time: the whole suite for iter {}, screened {:.4f} ms", miss.iter, node.key());
  InFlight job{std::move(p), ready.get_future().share(), true};
  job.spare_of = miss.iter;
  return job;
}

}  // namespace attn::tuning
