#include "export/shape_rules.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

namespace attn {
namespace {

// Appends `id` to a "+"-joined label unless it is there already.
void add_label(std::string& label, const std::string& id) {
  std::size_t start = 0;
  while (start <= label.size()) {
    const std::size_t end = std::min(label.find('+', start), label.size());
    if (label.compare(start, end - start, id) == 0 && end - start == id.size()) return;
    start = end + 1;
  }
  label += (label.empty() ? "" : "+") + id;
}

}  // namespace

std::int64_t kv_blocks_per_head(const CaseSpec& spec, int valid_blocks) {
  if (valid_blocks < 1 || valid_blocks > spec.q_blocks())
    throw std::invalid_argument(fmt::format("kv_blocks_per_head: valid_blocks {} outside 1..{} of case '{}'",
                                            valid_blocks, spec.q_blocks(), spec.case_id));
  const std::int64_t w = spec.window_blocks;
  std::int64_t extra = 0;
  if (spec.family == Family::sliding_window_global) extra = spec.global_blocks;
  if (spec.family == Family::sliding_window_retrieval) extra = spec.retrieval_blocks;
  std::int64_t total = 0;
  for (std::int64_t q = 0; q < valid_blocks; ++q) {
    total += std::min(q + 1, w);
    total += std::min(extra, std::max<std::int64_t>(0, q - w + 1));
  }
  return total;
}

ColWidthRange col_width_range(const CaseSpec& spec) {
  validate_case_spec(spec);
  const int q_blocks = spec.q_blocks();
  // cases.py: min_len = max(BLOCK_SIZE, int(t_max * seq_len_min_ratio)); all t_max when min_len >= t_max.
  const auto min_len = std::max<std::int64_t>(kBlockSize, static_cast<std::int64_t>(spec.t_max * spec.seq_len_min_ratio));
  const int min_valid = min_len >= spec.t_max ? q_blocks : static_cast<int>((min_len + kBlockSize - 1) / kBlockSize);
  auto width = [&](int valid) { return static_cast<int>(std::max<std::int64_t>(1, kv_blocks_per_head(spec, valid))); };
  return {width(min_valid), width(q_blocks)};
}

std::vector<ShapeRule> build_shape_rules(const std::vector<CaseAssignment>& cases) {
  using Key = std::tuple<int, int, int>;  // batch_size, num_heads, t_max
  std::map<Key, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].variant < 0) throw std::invalid_argument("build_shape_rules: negative variant index");
    const CaseSpec& s = cases[i].spec;
    groups[{s.batch_size, s.num_heads, s.t_max}].push_back(i);
  }
  std::vector<ShapeRule> out;
  for (const auto& [key, members] : groups) {
    std::vector<ColWidthRange> ranges;
    std::set<int> cuts;  // elementary intervals [cut_k, cut_{k+1})
    for (std::size_t i : members) {
      ranges.push_back(col_width_range(cases[i].spec));
      cuts.insert(ranges.back().min);
      cuts.insert(ranges.back().max + 1);
    }
    const std::vector<int> points(cuts.begin(), cuts.end());
    for (std::size_t p = 0; p + 1 < points.size(); ++p) {
      const int lo = points[p], hi = points[p + 1] - 1;
      std::vector<std::size_t> covering;
      for (std::size_t m = 0; m < members.size(); ++m)
        if (ranges[m].min <= lo && hi <= ranges[m].max) covering.push_back(members[m]);
      if (covering.empty()) continue;
      std::set<int> candidates;
      for (std::size_t i : covering) candidates.insert(cases[i].variant);
      int chosen = cases[covering.front()].variant;
      if (candidates.size() > 1) {
        double best = std::numeric_limits<double>::infinity();
        bool all_measured = true;
        for (int v : candidates) {
          double sum = 0;
          for (std::size_t i : covering) {
            const auto& lat = cases[i].latency_ms;
            if (static_cast<std::size_t>(v) >= lat.size() || !lat[static_cast<std::size_t>(v)]) {
              all_measured = false;
              break;
            }
            sum += *lat[static_cast<std::size_t>(v)];
          }
          if (!all_measured) break;
          if (sum < best) best = sum, chosen = v;
        }
        if (!all_measured) chosen = cases[covering.front()].variant;
      }
      const auto [batch_size, num_heads, t_max] = key;
      if (!out.empty()) {
        ShapeRule& last = out.back();
        if (last.variant == chosen && last.min_batch_size == batch_size && last.min_num_heads == num_heads &&
            last.min_t_max == t_max && last.max_col_width + 1 == lo) {
          last.max_col_width = hi;
          for (std::size_t i : covering) add_label(last.label, cases[i].spec.case_id);
          continue;
        }
      }
      ShapeRule r{chosen, batch_size, batch_size, num_heads, num_heads, t_max, t_max, lo, hi, ""};
      for (std::size_t i : covering) add_label(r.label, cases[i].spec.case_id);
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace attn
