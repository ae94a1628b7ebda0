// The end summary of a run (daemon/run_stats.hpp).
#include "daemon/run_stats.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace attn::tuning {

std::vector<std::string> throughput_lines(const RunCounters& c, double wall_s, std::size_t compile_threads,
                                          unsigned compile_procs, bool spare_on, double spare_cutoff, bool ahead_on,
                                          const std::vector<GpuBusy>& gpus) {
  const double wall = std::max(wall_s, 1e-9), hours = wall / 3600;
  std::vector<std::string> lines;
  lines.push_back(fmt::format("configs: {} screened out ({:.0f}/h), {} evaluated on the whole suite ({:.0f}/h)",
                              c.screened_out, c.screened_out / hours, c.full_evals, c.full_evals / hours));
  lines.push_back(fmt::format(
      "time: case building {:.1f} s, screening {:.1f} s, whole-suite evaluation (validation + timing) {:.1f} s, "
      "champion re-timing {:.1f} s, held-out checks {:.1f} s, NVRTC {:.1f} s over {} compile threads{} (overlapped "
      "with the GPU)",
      c.prepare_ms / 1000, c.screen_ms / 1000, c.eval_ms / 1000, c.retime_ms / 1000, c.holdout_ms / 1000,
      c.compile_ms / 1000, compile_threads,
      compile_procs ? fmt::format(" and {} compile worker processes", compile_procs) : std::string(" in the daemon's process")));
  if (spare_on)
    lines.push_back(fmt::format("spare GPU time: {} whole-suite evaluations of screened-out near misses (within {:g}% of "
                                "the best screen) while no compiled config waited, {:.1f} s of GPU time, {} kept as a new "
                                "champion",
                                c.spare_evals, spare_cutoff * 100, c.spare_ms / 1000, c.spare_kept));
  if (ahead_on)
    lines.push_back(fmt::format("screens sent ahead: {} (written to a GPU's worker while it timed the config before)",
                                c.sent_ahead));
  std::string busy;
  for (const auto& g : gpus)
    busy += fmt::format("{}GPU {} {:.1f} % ({:.1f} s{})", busy.empty() ? "" : ", ", g.index, 100 * g.busy_s / wall,
                        g.busy_s, spare_on ? fmt::format(", spare {:.1f} s", g.spare_s) : "");
  lines.push_back("GPU busy (its worker evaluating, share of the run's wall time): " + busy);
  return lines;
}

}  // namespace attn::tuning
