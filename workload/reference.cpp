// CPU fp32 block-sparse causal attention forward with the semantics of the harness's reference.py
// (reference_block_sparse_attn_fwd): per valid q_block, an online softmax over the row's kv blocks in
// CSR order. Each (q_block, kv block) step is two 128x128x128 products done by a register-blocked
// kernel on GCC vector types.
#include "workload/reference.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace attn {
namespace {

constexpr int B = kBlockSize;  // rows of a q_block, keys of a kv block
constexpr int D = kHeadDim;
static_assert(B == 128 && D == 128, "the product kernel assumes 128x128 tiles");
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// spec.py SCORE_SCALE = 1 / sqrt(HEAD_DIM), applied to the fp32 product as torch does.
const float kScale = float(1.0 / std::sqrt(double(D)));

// GCC/Clang vector types: v8 (AVX) and v4 (SSE). The unaligned, aliasing variants read and write rows
// of the fp32 buffers in place.
using v4 = float __attribute__((vector_size(16)));
using v8 = float __attribute__((vector_size(32)));
using v4u = float __attribute__((vector_size(16), aligned(4), may_alias));
using v8u = float __attribute__((vector_size(32), aligned(4), may_alias));

/// C[M x 128] (+)= A[M x K] * Bm[K x 128]; all row strides 128 floats; M a multiple of 4. A 4 x (2
/// vectors) register tile: per k, two vector loads of Bm, four broadcasts of A, eight multiply-adds.
template <class V, class VU>
__attribute__((always_inline)) inline void gemm_n128_tiles(const float* A, const float* Bm, float* C, int M, int K,
                                                           bool accumulate) {
  constexpr int L = sizeof(V) / sizeof(float);
#define ld(p) (*reinterpret_cast<const VU*>(p))
#define st(p, x) (*reinterpret_cast<VU*>(p) = (x))
  for (int i0 = 0; i0 < M; i0 += 4) {
    const float* a0 = A + (i0 + 0) * 128;
    const float* a1 = A + (i0 + 1) * 128;
    const float* a2 = A + (i0 + 2) * 128;
    const float* a3 = A + (i0 + 3) * 128;
    for (int j0 = 0; j0 < 128; j0 += 2 * L) {
      float* c0 = C + (i0 + 0) * 128 + j0;
      float* c1 = C + (i0 + 1) * 128 + j0;
      float* c2 = C + (i0 + 2) * 128 + j0;
      float* c3 = C + (i0 + 3) * 128 + j0;
      V c00{}, c01{}, c10{}, c11{}, c20{}, c21{}, c30{}, c31{};
      if (accumulate) {
        c00 = ld(c0), c01 = ld(c0 + L), c10 = ld(c1), c11 = ld(c1 + L);
        c20 = ld(c2), c21 = ld(c2 + L), c30 = ld(c3), c31 = ld(c3 + L);
      }
      for (int k = 0; k < K; ++k) {
        const V b0 = ld(Bm + k * 128 + j0), b1 = ld(Bm + k * 128 + j0 + L);
        c00 += a0[k] * b0, c01 += a0[k] * b1;
        c10 += a1[k] * b0, c11 += a1[k] * b1;
        c20 += a2[k] * b0, c21 += a2[k] * b1;
        c30 += a3[k] * b0, c31 += a3[k] * b1;
      }
      st(c0, c00), st(c0 + L, c01), st(c1, c10), st(c1 + L, c11);
      st(c2, c20), st(c2 + L, c21), st(c3, c30), st(c3 + L, c31);
    }
  }
#undef ld
#undef st
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) void gemm_n128_avx2(const float* A, const float* Bm, float* C, int M, int K,
                                                        bool accumulate) {
  gemm_n128_tiles<v8, v8u>(A, Bm, C, M, K, accumulate);
}
bool has_avx2_fma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}
#endif

void gemm_n128(const float* A, const float* Bm, float* C, int M, int K, bool accumulate) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (has_avx2_fma()) return gemm_n128_avx2(A, Bm, C, M, K, accumulate);
#endif
  gemm_n128_tiles<v4, v4u>(A, Bm, C, M, K, accumulate);
}

/// Per-thread buffers, allocated once and reused for every (batch, head).
struct Scratch {
  std::vector<float> q, kt, v;         // q tile [128][128]; K^T per kv block [blk][d][j]; V [t][d]
  std::vector<float> s, acc;           // scores / probabilities [128][128], running output [128][128]
  std::vector<float> m, l;             // running max and sum per query row
  Scratch() : q(B * D), s(B * B), acc(B * D), m(B), l(B) {}
};

struct Problem {
  const std::vector<bf16_bits>& q;
  const std::vector<bf16_bits>& k;
  const std::vector<bf16_bits>& v;
  const BlockSparseLayout& L;
  int t_max;
  AttnOutput& out;
};

void run_head(const Problem& P, int b, int h, Scratch& S) {
  const BlockSparseLayout& L = P.L;
  const int seq_len = L.seq_lens[b];
  const int valid = std::min((seq_len + B - 1) / B, L.q_blocks);
  if (valid == 0) return;
  const std::size_t head = (std::size_t(b) * L.num_heads + h) * std::size_t(P.t_max);
  const bf16_bits* qh = P.q.data() + head * D;
  const bf16_bits* kh = P.k.data() + head * D;
  const bf16_bits* vh = P.v.data() + head * D;

  // K^T and V of the valid kv blocks in fp32 (keys at or past seq_len are converted but never used).
  S.kt.resize(std::size_t(valid) * B * D);
  S.v.resize(std::size_t(valid) * B * D);
  for (int t = 0; t < valid * B; ++t) {
    float* kt_blk = S.kt.data() + std::size_t(t / B) * B * D;
    for (int d = 0; d < D; ++d) {
      kt_blk[d * B + t % B] = bf16_to_float(kh[std::size_t(t) * D + d]);
      S.v[std::size_t(t) * D + d] = bf16_to_float(vh[std::size_t(t) * D + d]);
    }
  }

  for (int qb = 0; qb < valid; ++qb) {
    const int nq = std::min(B, seq_len - qb * B);  // valid query rows of this q_block
    const int rows = (nq + 3) & ~3;                // rows the product kernel computes
    for (int i = 0; i < rows * D; ++i) S.q[i] = bf16_to_float(qh[std::size_t(qb) * B * D + i]);
    std::fill(S.m.begin(), S.m.end(), kNegInf);
    std::fill(S.l.begin(), S.l.end(), 0.0f);
    std::fill(S.acc.begin(), S.acc.end(), 0.0f);

    const std::int32_t begin = L.row_begin(b, h, qb), end = L.row_end(b, h, qb);
    for (std::int32_t slot = begin; slot < end; ++slot) {
      // reference.py gathers col_idx at min(slot, col_width - 1) and drops entries outside
      // [0, q_block] or past the valid blocks (they add no weight).
      const int c = L.col(b, h, std::min<std::int32_t>(slot, L.col_width - 1));
      if (c < 0 || c > qb || c >= valid) continue;
      const int nk = std::min(B, seq_len - c * B);  // valid keys of this kv block
      const bool diagonal = c == qb;

      gemm_n128(S.q.data(), S.kt.data() + std::size_t(c) * B * D, S.s.data(), rows, D, false);
      for (int i = 0; i < nq; ++i) {
        float* s = S.s.data() + i * B;
        const int kmax = diagonal ? std::min(i + 1, nk) : nk;  // causal inside the diagonal block
        float bmax = kNegInf;
        for (int j = 0; j < kmax; ++j) {
          s[j] *= kScale;
          bmax = std::max(bmax, s[j]);
        }
        if (!(bmax > kNegInf)) {  // no allowed key in this block: the row is unchanged
          std::fill(s, s + nk, 0.0f);
          continue;
        }
        const float m_new = std::max(S.m[i], bmax);
        const float prev = S.m[i] == kNegInf ? 0.0f : std::exp(S.m[i] - m_new);
        float sum = 0;
        for (int j = 0; j < kmax; ++j) {
          s[j] = std::exp(s[j] - m_new);
          sum += s[j];
        }
        std::fill(s + kmax, s + nk, 0.0f);
        S.l[i] = S.l[i] * prev + sum;
        S.m[i] = m_new;
        if (prev != 1.0f) {
          float* a = S.acc.data() + i * D;
          for (int d = 0; d < D; ++d) a[d] *= prev;
        }
      }
      // Only the first nk rows of V: keys at or past seq_len never enter, even with weight 0.
      gemm_n128(S.s.data(), S.v.data() + std::size_t(c) * B * D, S.acc.data(), rows, nk, true);
    }

    for (int i = 0; i < nq; ++i) {
      const std::size_t row = head + std::size_t(qb) * B + i;
      if (!(S.l[i] > 0)) continue;  // no allowed key: o stays 0, lse stays -inf
      const float* a = S.acc.data() + i * D;
      for (int d = 0; d < D; ++d) P.out.o[row * D + d] = float_to_bf16(a[d] / S.l[i]);
      P.out.lse[row] = S.m[i] + std::log(S.l[i]);
    }
  }
}

}  // namespace

AttnOutput reference_forward(const std::vector<bf16_bits>& q, const std::vector<bf16_bits>& k,
                             const std::vector<bf16_bits>& v, const BlockSparseLayout& layout, int t_max,
                             unsigned threads) {
  const BlockSparseLayout& L = layout;
  if (t_max < B || t_max % B != 0)
    throw std::invalid_argument(fmt::format("reference: t_max {} is not a positive multiple of {}", t_max, B));
  if (L.q_blocks != t_max / B)
    throw std::invalid_argument(fmt::format("reference: layout has {} q_blocks, t_max {} needs {}", L.q_blocks,
                                            t_max, t_max / B));
  const std::size_t heads = std::size_t(L.batch_size) * L.num_heads;
  const std::size_t n = heads * std::size_t(t_max) * D;
  const std::pair<const char*, std::size_t> sizes[] = {{"q", q.size()}, {"k", k.size()}, {"v", v.size()}};
  for (const auto& [name, size] : sizes)
    if (size != n)
      throw std::invalid_argument(fmt::format("reference: {} has {} elements, expected {} ({}x{}x{}x{})", name,
                                              size, n, L.batch_size, L.num_heads, t_max, D));
  if (L.seq_lens.size() != std::size_t(L.batch_size) || L.row_ptr.size() != heads * (L.q_blocks + 1) ||
      L.col_width < 1 || L.col_idx.size() != heads * L.col_width)
    throw std::invalid_argument("reference: seq_lens, row_ptr or col_idx size does not match the layout");
  for (int b = 0; b < L.batch_size; ++b) {
    if (L.seq_lens[b] < 0 || L.seq_lens[b] > t_max)
      throw std::invalid_argument(fmt::format("reference: seq_lens[{}] = {} is not in [0, {}]", b, L.seq_lens[b], t_max));
    const int valid = (L.seq_lens[b] + B - 1) / B;
    for (int h = 0; h < L.num_heads; ++h)
      for (int qb = 0; qb < valid; ++qb)
        if (L.row_begin(b, h, qb) < 0 && L.row_end(b, h, qb) > L.row_begin(b, h, qb))
          throw std::invalid_argument(fmt::format("reference: row_ptr[{}, {}, {}] = {} is negative", b, h, qb,
                                                  L.row_begin(b, h, qb)));
  }

  AttnOutput out;
  out.o.assign(n, bf16_bits(0));
  out.lse.assign(heads * std::size_t(t_max), kNegInf);
  const Problem problem{q, k, v, L, t_max, out};

  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = unsigned(std::min<std::size_t>(threads, heads));
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    Scratch scratch;
    for (std::size_t bh = next++; bh < heads; bh = next++)
      run_head(problem, int(bh / L.num_heads), int(bh % L.num_heads), scratch);
  };
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& th : pool) th.join();
  }
  return out;
}

}  // namespace attn
