// Generation 1's unit of work (fa2_mma, wgmma_fa): one CTA of the ABI grid (t_max / BLOCK_M, heads, batch)
// owns BLOCK_M query rows of one q_block of one (batch, head), taken in CTA_ORDER (cta_order.cuh), and walks
// that q tile's CSR row in CSR order, filtered by reference.py's rule (the rule of generation 2's KvWalk,
// producer.cuh; written apart because ptxas spills 32 bytes more in the generation-1 champion, wgmma_fa
// i293, when its walk goes through KvWalk's packed info: 3.7 % slower on full, 2026-11-25).
#pragma once
#include <cuda_bf16.h>

#include "cta_order.cuh"

// The kernel's parameters in the order of ABI.md (generation 1; generation 2 adds its tensor maps), for
// `block_sparse_attn_fwd(ATTN_ABI_PARAMS)`.
#define ATTN_ABI_PARAMS                                                                                       \
  const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k, const __nv_bfloat16 *__restrict__ v, \
      const int *__restrict__ row_ptr, const int *__restrict__ col_idx, const int *__restrict__ seq_lens,       \
      __nv_bfloat16 *__restrict__ o, float *__restrict__ lse, int batch_size, int num_heads, int t_max, int col_width

namespace hopper {

/// This CTA's q tile (kernel arguments as in ABI.md): its rows, its (batch, head) and its kv tiles.
template <int CtaOrder, int BlockM, int BlockN>
struct CtaTile {
  static constexpr int kBlock = 128;  // q_block / kv block size and head dim (spec.py)
  int q_block, row0;                  // the q_block, and the tile's first row in it (0 or 64 for BLOCK_M 64)
  int q_pos0;                         // token of the tile's first row
  int seq_len;                        // keys and queries at or past it are masked
  size_t bh;                          // batch * heads + head: the lse row block
  size_t head_base;                   // element offset of (batch, head) in q / k / v / o [B, H, t_max, 128]
  static constexpr int kSubTiles = kBlock / BlockN;  // pipeline tiles per kv block
  const int* cols;                    // this head's col_idx row
  int begin, col_width, valid_blocks;  // its first CSR entry, col_idx's row length, blocks under seq_len
  int n;                              // pipeline tiles: the CSR entries x kSubTiles (0 past seq_len)

  __device__ __forceinline__ CtaTile(const int* row_ptr, const int* col_idx, const int* seq_lens, int num_heads,
                                     int t_max, int col_width) {
    int q_tile, h, b;
    cta_work<CtaOrder>(q_tile, h, b);
    q_block = q_tile / (kBlock / BlockM);
    row0 = (q_tile % (kBlock / BlockM)) * BlockM;
    q_pos0 = q_block * kBlock + row0;
    seq_len = __ldg(seq_lens + b);
    bh = size_t(b) * num_heads + h;
    head_base = bh * size_t(t_max) * kBlock;
    const int q_blocks = t_max / kBlock;
    cols = col_idx + bh * size_t(col_width);
    this->col_width = col_width;
    valid_blocks = (seq_len + kBlock - 1) / kBlock;
    begin = __ldg(row_ptr + bh * (q_blocks + 1) + q_block);
    n = q_block < valid_blocks ? (__ldg(row_ptr + bh * (q_blocks + 1) + q_block + 1) - begin) * kSubTiles : 0;
  }
  /// kv block of pipeline tile t (CSR entry t / (128 / BLOCK_N), keys from (t % (128 / BLOCK_N)) * BLOCK_N),
  /// or -1 when it contributes nothing to this CTA: an entry reference.py drops, keys all at or past
  /// seq_len, or keys all above this CTA's rows on the diagonal.
  __device__ __forceinline__ int kv(int t) const {
    const int kv = __ldg(cols + min(begin + t / kSubTiles, col_width - 1));  // reference.py clamps the gather
    const int key0 = (t % kSubTiles) * BlockN;  // first key of the tile inside its kv block
    if (kv < 0 || kv > q_block || kv >= valid_blocks) return -1;
    if (kv * kBlock + key0 >= seq_len) return -1;
    return kv == q_block && key0 > row0 + BlockM - 1 ? -1 : kv;
  }
};

}  // namespace hopper
