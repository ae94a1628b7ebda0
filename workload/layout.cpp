// seq_lens and CSR generation with the distribution of the harness's cases.py, and layout invariants.
#include "workload/layout.hpp"

#include <algorithm>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {
namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

/// The draws cases.py makes from numpy's Generator, on std::mt19937_64 (fully specified by the
/// standard, so the realizations are the same with every standard library). Same distributions as
/// numpy's integers / random / choice, other streams.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}
  /// Uniform integer in [lo, hi] (unbiased: Lemire's multiply-and-reject).
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi) {
    const std::uint64_t range = std::uint64_t(hi - lo) + 1;
    if (range == 0) return std::int64_t(gen_());  // the full 64-bit range
    unsigned __int128 m = (unsigned __int128)gen_() * range;
    if (std::uint64_t(m) < range) {
      const std::uint64_t threshold = (0 - range) % range;
      while (std::uint64_t(m) < threshold) m = (unsigned __int128)gen_() * range;
    }
    return lo + std::int64_t(m >> 64);
  }
  /// Uniform double in [0, 1) with 53 random bits (as numpy's random()).
  double uniform01() { return double(gen_() >> 11) * 0x1p-53; }

 private:
  std::mt19937_64 gen_;
};

int ceil_div(int a, int b) { return (a + b - 1) / b; }

/// cases.py _retrieval_blocks: up to `count` distinct blocks outside the window; each pick comes from
/// the local range [q - 4w, q - w] with probability `bias` while both pools are non-empty, else from
/// whichever pool is left.
void retrieval_blocks(int q, int count, int w, double bias, Rng& rng, std::vector<int>& out) {
  if (count <= 0 || q <= 0) return;
  const int window_start = std::max(0, q - w + 1);
  const int local_start = std::max(0, q - 4 * w);
  std::vector<int> local, far;
  for (int b = local_start; b < q; ++b)
    if (b < window_start) local.push_back(b);
  for (int b = 0; b < local_start; ++b)
    if (b < window_start) far.push_back(b);
  const std::size_t total = local.size() + far.size();
  std::size_t selected = 0;
  while (selected < std::size_t(count) && selected < total) {
    // Same short-circuit as the harness: a uniform is drawn only when both pools are non-empty.
    const bool use_local = !local.empty() && (far.empty() || rng.uniform01() < bias);
    std::vector<int>& pool = use_local ? local : far;
    const auto i = std::size_t(rng.uniform_int(0, std::int64_t(pool.size()) - 1));
    out.push_back(pool[i]);
    pool.erase(pool.begin() + std::ptrdiff_t(i));
    ++selected;
  }
}

/// cases.py _allowed_blocks_for_row: sorted, unique, within [0, q] and below valid_blocks.
void allowed_blocks_for_row(const CaseSpec& spec, int q, int valid_blocks, Rng& rng, std::vector<int>& row) {
  row.clear();
  for (int b = std::max(0, q - spec.window_blocks + 1); b <= q; ++b) row.push_back(b);
  if (spec.family == Family::sliding_window_global) {
    for (int b = 0; b < std::min(spec.global_blocks, valid_blocks); ++b) row.push_back(b);
  } else if (spec.family == Family::sliding_window_retrieval) {
    retrieval_blocks(q, spec.retrieval_blocks, spec.window_blocks, spec.retrieval_local_bias, rng, row);
  }
  std::sort(row.begin(), row.end());
  row.erase(std::unique(row.begin(), row.end()), row.end());
  std::erase_if(row, [&](int b) { return b < 0 || b > q || b >= valid_blocks; });
}

}  // namespace

std::int64_t BlockSparseLayout::allowed_pairs() const {
  std::int64_t pairs = 0;
  for (int b = 0; b < batch_size; ++b) {
    const int valid = ceil_div(seq_lens[b], kBlockSize);
    for (int h = 0; h < num_heads; ++h)
      for (int q = 0; q < std::min(valid, q_blocks); ++q)
        for (std::int32_t i = row_begin(b, h, q); i < row_end(b, h, q); ++i) {
          // reference.py clamps the gather index to the last column.
          const int c = col(b, h, std::min<std::int32_t>(i, col_width - 1));
          if (c >= 0 && c <= q && c < valid) ++pairs;
        }
  }
  return pairs;
}

std::vector<std::int32_t> sample_seq_lens(const CaseSpec& spec) {
  validate_case_spec(spec);
  const auto min_len = std::max<std::int64_t>(kBlockSize, std::int64_t(double(spec.t_max) * spec.seq_len_min_ratio));
  std::vector<std::int32_t> out(std::size_t(spec.batch_size), spec.t_max);
  if (min_len >= spec.t_max) return out;
  Rng rng(std::uint64_t(spec.seed) ^ 0xABCDEFull);
  for (auto& s : out) s = std::int32_t(rng.uniform_int(min_len, spec.t_max));
  return out;
}

BlockSparseLayout build_layout(const CaseSpec& spec) { return build_layout(spec, sample_seq_lens(spec)); }

BlockSparseLayout build_layout(const CaseSpec& spec, const std::vector<std::int32_t>& seq_lens) {
  validate_case_spec(spec);
  if (seq_lens.size() != std::size_t(spec.batch_size))
    fail(fmt::format("case '{}': {} seq_lens for batch_size {}", spec.case_id, seq_lens.size(), spec.batch_size));
  for (std::size_t b = 0; b < seq_lens.size(); ++b)
    if (seq_lens[b] < 1 || seq_lens[b] > spec.t_max)
      fail(fmt::format("case '{}': seq_lens[{}] = {} is not in [1, t_max {}]", spec.case_id, b, seq_lens[b],
                       spec.t_max));

  BlockSparseLayout L;
  L.batch_size = spec.batch_size;
  L.num_heads = spec.num_heads;
  L.q_blocks = spec.q_blocks();
  L.seq_lens = seq_lens;
  const std::size_t heads = std::size_t(L.batch_size) * L.num_heads;
  L.row_ptr.assign(heads * (L.q_blocks + 1), 0);
  std::vector<std::vector<std::int32_t>> cols(heads);
  double density_sum = 0;

  Rng root(std::uint64_t(spec.seed));
  std::vector<int> row;
  for (int b = 0; b < L.batch_size; ++b) {
    const int valid = ceil_div(seq_lens[b], kBlockSize);
    for (int h = 0; h < L.num_heads; ++h) {
      const std::size_t bh = std::size_t(b) * L.num_heads + h;
      Rng head_rng(std::uint64_t(root.uniform_int(0, 2147483646)));  // numpy integers(0, 2**31 - 1)
      std::int32_t* ptr = &L.row_ptr[bh * (L.q_blocks + 1)];
      for (int q = 0; q < L.q_blocks; ++q) {
        if (q < valid) {
          allowed_blocks_for_row(spec, q, valid, head_rng, row);
          cols[bh].insert(cols[bh].end(), row.begin(), row.end());
        }
        ptr[q + 1] = std::int32_t(cols[bh].size());
      }
      density_sum += double(cols[bh].size()) / double(std::max(valid * valid, 1));
      L.col_width = std::max(L.col_width, int(cols[bh].size()));
    }
  }
  L.col_width = std::max(L.col_width, 1);
  L.col_idx.assign(heads * L.col_width, 0);
  for (std::size_t bh = 0; bh < heads; ++bh)
    std::copy(cols[bh].begin(), cols[bh].end(), L.col_idx.begin() + std::ptrdiff_t(bh * L.col_width));
  L.density = heads ? density_sum / double(heads) : 0.0;
  return L;
}

void check_layout_invariants(const BlockSparseLayout& L, int t_max) {
  if (t_max < kBlockSize || t_max % kBlockSize != 0)
    fail(fmt::format("layout: t_max {} is not a positive multiple of {}", t_max, kBlockSize));
  if (L.batch_size < 1 || L.num_heads < 1) fail("layout: batch_size and num_heads must be >= 1");
  if (L.q_blocks != t_max / kBlockSize)
    fail(fmt::format("layout: q_blocks {} != t_max / {} = {}", L.q_blocks, kBlockSize, t_max / kBlockSize));
  if (L.col_width < 1) fail(fmt::format("layout: col_width {} must be >= 1", L.col_width));
  const std::size_t heads = std::size_t(L.batch_size) * L.num_heads;
  if (L.seq_lens.size() != std::size_t(L.batch_size))
    fail(fmt::format("layout: {} seq_lens for batch_size {}", L.seq_lens.size(), L.batch_size));
  if (L.row_ptr.size() != heads * (L.q_blocks + 1))
    fail(fmt::format("layout: row_ptr has {} entries, expected {}", L.row_ptr.size(), heads * (L.q_blocks + 1)));
  if (L.col_idx.size() != heads * L.col_width)
    fail(fmt::format("layout: col_idx has {} entries, expected {}", L.col_idx.size(), heads * L.col_width));
  for (int b = 0; b < L.batch_size; ++b) {
    const int s = L.seq_lens[b];
    if (s < 1 || s > t_max) fail(fmt::format("layout: seq_lens[{}] = {} is not in [1, {}]", b, s, t_max));
    const int valid = ceil_div(s, kBlockSize);
    for (int h = 0; h < L.num_heads; ++h) {
      if (L.row_begin(b, h, 0) != 0)
        fail(fmt::format("layout: row_ptr[{}, {}, 0] = {} (must be 0)", b, h, L.row_begin(b, h, 0)));
      const std::int32_t last = L.row_begin(b, h, L.q_blocks);
      if (last > L.col_width)
        fail(fmt::format("layout: batch {} head {} has nnz {} > col_width {}", b, h, last, L.col_width));
      for (int q = 0; q < L.q_blocks; ++q) {
        const std::int32_t begin = L.row_begin(b, h, q), end = L.row_end(b, h, q);
        const std::string at = fmt::format("batch {} head {} q_block {}", b, h, q);
        if (end < begin) fail(fmt::format("layout: {}: row_ptr decreases ({} -> {})", at, begin, end));
        if (q >= valid) {
          if (end != begin)
            fail(fmt::format("layout: {}: row past the valid blocks ({} for seq_len {}) is not empty", at, valid, s));
          continue;
        }
        for (std::int32_t i = begin; i < end; ++i) {
          const int c = L.col(b, h, i);
          if (c < 0 || c > q) fail(fmt::format("layout: {}: kv block {} is outside [0, {}]", at, c, q));
          if (i > begin && c <= L.col(b, h, i - 1))
            fail(fmt::format("layout: {}: kv blocks not sorted and unique ({} after {})", at, c, L.col(b, h, i - 1)));
        }
        if (end == begin || L.col(b, h, end - 1) != q)
          fail(fmt::format("layout: {}: the diagonal kv block is missing", at));
      }
    }
  }
}

}  // namespace attn
