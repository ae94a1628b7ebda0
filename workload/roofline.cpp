// Work, bytes and roofline floor of a case; the harness's suite score (evaluator.py).
#include "workload/roofline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {

Ceilings floor_check_ceilings(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("GH200")) return {989e12, 4.9e12};
  if (has("H200")) return has("NVL") ? Ceilings{835e12, 4.8e12} : Ceilings{989e12, 4.8e12};
  if (has("H100")) {
    if (has("PCIe")) return {756e12, 2.0e12};
    if (has("NVL")) return {835e12, 3.9e12};
    return {989e12, 3.35e12};
  }
  return {989e12, 4.9e12};
}

double CaseWork::floor_s(const Ceilings& c) const { return std::max(flops / c.flops_per_s, bytes / c.bytes_per_s); }

bool CaseWork::compute_bound(const Ceilings& c) const { return flops / c.flops_per_s >= bytes / c.bytes_per_s; }

CaseWork case_work(const BlockSparseLayout& L, int t_max) {
  check_layout_invariants(L, t_max);
  constexpr double kRowBytes = kHeadDim * 2.0;  // one bf16 row of q, k, v or o
  CaseWork w;
  std::int64_t pairs = 0;  // allowed (query, key) pairs
  double bytes = 0;
  std::vector<char> kv_used(std::size_t(L.q_blocks));
  for (int b = 0; b < L.batch_size; ++b) {
    const int seq_len = L.seq_lens[b];
    const int valid = (seq_len + kBlockSize - 1) / kBlockSize;
    for (int h = 0; h < L.num_heads; ++h) {
      std::fill(kv_used.begin(), kv_used.end(), 0);
      for (int qb = 0; qb < valid; ++qb) {
        const std::int64_t nq = std::min(kBlockSize, seq_len - qb * kBlockSize);
        for (std::int32_t i = L.row_begin(b, h, qb); i < L.row_end(b, h, qb); ++i) {
          const int c = L.col(b, h, i);
          ++w.kv_block_pairs;
          kv_used[std::size_t(c)] = 1;
          // Below the diagonal every key precedes seq_len; on it, query i sees keys 0..i.
          pairs += c < qb ? nq * kBlockSize : nq * (nq + 1) / 2;
        }
      }
      bytes += double(seq_len) * kRowBytes;  // q rows before seq_len
      for (int c = 0; c < valid; ++c)
        if (kv_used[std::size_t(c)]) bytes += 2.0 * std::min(kBlockSize, seq_len - c * kBlockSize) * kRowBytes;
    }
  }
  const double rows = double(L.batch_size) * L.num_heads * t_max;
  bytes += rows * (kRowBytes + 4.0);  // o (bf16) and lse (fp32) of every row, masked ones included
  bytes += 4.0 * double(L.row_ptr.size() + L.col_idx.size() + L.seq_lens.size());
  w.flops = 4.0 * kHeadDim * double(pairs);
  w.bytes = bytes;
  return w;
}

SuiteScore suite_score(const std::vector<Family>& families, const std::vector<double>& latencies) {
  if (families.size() != latencies.size())
    throw std::invalid_argument(
        fmt::format("suite_score: {} families for {} latencies", families.size(), latencies.size()));
  std::map<Family, std::vector<double>> by_family;
  for (std::size_t i = 0; i < latencies.size(); ++i) {
    if (!(latencies[i] > 0) || !std::isfinite(latencies[i]))
      throw std::invalid_argument(fmt::format("suite_score: latency {} of case {} is not positive", latencies[i], i));
    by_family[families[i]].push_back(latencies[i]);
  }
  SuiteScore s;
  if (by_family.empty()) {
    s.geomean = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  double log_sum = 0;
  for (auto& [family, v] : by_family) {
    // Python statistics.median: the middle value, or the mean of the two middle values.
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    s.family_median[family] = med;
    log_sum += std::log(med);
  }
  s.geomean = std::exp(log_sum / double(by_family.size()));
  return s;
}

}  // namespace attn
