// Epilogue of the generation-2 and generation-4 templates (fa4_g4: EPI_LEAN 1): one consumer warpgroup's 64 rows
// of a work tile, normalised (o = acc / l, lse = (m + log2 l) ln 2 in the natural log), rows at or past seq_len and
// rows without any key written as o = 0, lse = -inf.
//   EPILOGUE 0  each thread stores its accumulator pairs straight to global memory (4-byte stores)
//   EPILOGUE 1  the warpgroup stages bf16 rows in its part of the O buffer, then 16-byte coalesced stores
//   EPILOGUE 2  as 1, then one thread stores the two 64-column halves with TMA (asynchronous: the
//               warpgroup goes on to its next tile while the copy engine writes)
#pragma once
#include "blocks/pipeline.cuh"

// EPI_LEAN 1 (EPILOGUE 1 and 2): the normalised o goes to the staging buffer with 8 stmatrix.x4 per thread (each
// a 16 x 16 block of the warp's rows: the wgmma accumulator fragment is stmatrix's) instead of 32 4-byte
// STS, and 1 / l and log2 l use the approximate MUFU forms (rcp.approx, lg2.approx: about 1 ulp, far inside
// the harness's o and lse tolerances) instead of the IEEE division and log2f's range reduction.

namespace hopper {

/// The rows of one consumer warpgroup: tile rows wg_row0 .. wg_row0 + 63, this thread's rows
/// my_row0 and my_row0 + 8 (wgmma accumulator layout).
struct WgRows {
  int cwg, wg_row0, my_row0, tid;  // tid: 0..127 inside the warpgroup
};

/// Named barrier of consumer warpgroup cwg alone (ids 1, 2; 0 is __syncthreads, 3 and 4 the ping-pong).
__device__ __forceinline__ void wg_sync(int cwg) { named_sync(1 + cwg, 128); }

/// A row's sum over the four threads of a quad that hold its columns (wgmma accumulator layout), in every one of them.
__device__ __forceinline__ float quad_row_sum(float part) {
  part += __shfl_xor_sync(0xffffffffu, part, 1);
  part += __shfl_xor_sync(0xffffffffu, part, 2);
  return part;
}

/// o = 0, lse = -inf for the 64 rows of this warpgroup (a work tile without any kv block).
__device__ __forceinline__ void store_empty_rows(__nv_bfloat16* o_rows, float* lse_rows, const WgRows& r) {
#pragma unroll
  for (int it = 0; it < 8; ++it) {  // 64 rows x 16 chunks over 128 threads
    const int idx = it * 128 + r.tid;
    *reinterpret_cast<uint4*>(o_rows + (r.wg_row0 + (idx >> 4)) * 128 + (idx & 15) * 8) = make_uint4(0, 0, 0, 0);
  }
  if (r.tid < 64) lse_rows[r.wg_row0 + r.tid] = ATTN_NEG_INF;
}

/// Normalises and stores one warpgroup's rows. o_rows / lse_rows: the tile's first row in global memory;
/// q_pos0: its first query position; row_out: the tile's first row in the flattened tensor (TMA store).
template <class T>
__device__ __forceinline__ void store_tile(const Pipeline<T>& pl, unsigned char* smem, const AttnTmaps& maps,
                                           float (&acc)[64], const float (&row_max)[2], const float (&row_sum)[2],
                                           __nv_bfloat16* o_rows, float* lse_rows, int q_pos0, int seq_len,
                                           int row_out, const WgRows& r) {
  const int lane = r.tid & 31;
  if constexpr (T::kNoStore) return;
  if constexpr (T::kEpilogue == 2) {
    if (r.tid == 0) bulk_wait_read<0>();  // the previous tile's TMA store has read the buffer
    wg_sync(r.cwg);
  }
#if EPI_LEAN
  if constexpr (T::kEpilogue != 0) {
    float inv[2];
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const float l = quad_row_sum(row_sum[hr]);
      const int row = r.my_row0 + hr * 8;
      const bool has_keys = (q_pos0 + row < seq_len) && l > 0.f;
      float rl, lg;
      asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(rl) : "f"(l));
      asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(lg) : "f"(l));
      inv[hr] = has_keys ? rl : 0.f;
      if (!T::kNoLse && (lane & 3) == 0) lse_rows[row] = has_keys ? (row_max[hr] + lg) * kLn2 : ATTN_NEG_INF;
    }
    // stmatrix.x4: lanes 8m..8m+7 address the rows of matrix m = (row half m & 1, 8-column block 2k + (m >> 1)).
    const int mi = lane >> 3;
    const int srow = r.wg_row0 + (r.tid >> 5) * 16 + (mi & 1) * 8 + (lane & 7);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const unsigned addr = pl.o() + swz128(T::kBlockM, srow, 2 * k + (mi >> 1));
      const unsigned m0 = pack_bf162(acc[8 * k + 0] * inv[0], acc[8 * k + 1] * inv[0]);
      const unsigned m1 = pack_bf162(acc[8 * k + 2] * inv[1], acc[8 * k + 3] * inv[1]);
      const unsigned m2 = pack_bf162(acc[8 * k + 4] * inv[0], acc[8 * k + 5] * inv[0]);
      const unsigned m3 = pack_bf162(acc[8 * k + 6] * inv[1], acc[8 * k + 7] * inv[1]);
      asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(m0), "r"(m1),
                   "r"(m2), "r"(m3)
                   : "memory");
    }
  } else
#endif
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const float l = quad_row_sum(row_sum[hr]);
    const int row = r.my_row0 + hr * 8;
    const bool has_keys = (q_pos0 + row < seq_len) && l > 0.f;
    const float inv = has_keys ? 1.f / l : 0.f;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const unsigned packed = pack_bf162(acc[j * 4 + 2 * hr] * inv, acc[j * 4 + 2 * hr + 1] * inv);
      if constexpr (T::kEpilogue == 0 && !T::kNoOStore)
        *reinterpret_cast<unsigned*>(o_rows + row * 128 + j * 8 + (lane & 3) * 2) = packed;
      else if constexpr (T::kEpilogue != 0)
        *reinterpret_cast<unsigned*>(smem + (pl.o() - pl.base) + swz128(T::kBlockM, row, j) + (lane & 3) * 4) = packed;
    }
    if (!T::kNoLse && (lane & 3) == 0) lse_rows[row] = has_keys ? (row_max[hr] + log2f(l)) * kLn2 : ATTN_NEG_INF;
  }
  if constexpr (T::kEpilogue == 1) {
    wg_sync(r.cwg);
#pragma unroll
    for (int it = 0; it < (T::kNoOStore ? 0 : 8); ++it) {  // 64 rows x 16 chunks over 128 threads
      const int idx = it * 128 + r.tid, row = r.wg_row0 + (idx >> 4), chunk = idx & 15;
      *reinterpret_cast<uint4*>(o_rows + row * 128 + chunk * 8) =
          *reinterpret_cast<const uint4*>(smem + (pl.o() - pl.base) + swz128(T::kBlockM, row, chunk));
    }
    wg_sync(r.cwg);  // the buffer is free for this warpgroup's next tile
  } else if constexpr (T::kEpilogue == 2) {
    fence_proxy_async();  // generic-proxy writes, read next by the copy engine
    wg_sync(r.cwg);
    if (r.tid == 0 && !T::kNoOStore) {
      const unsigned src = pl.o() + r.wg_row0 * 128;
      tma_store_2d(&maps.o, src, 0, row_out + r.wg_row0);
      tma_store_2d(&maps.o, src + T::kQHalf, 64, row_out + r.wg_row0);
      bulk_commit();
    }
  }
}

/// Before the warpgroup exits: its TMA stores have finished reading shared memory.
template <class T>
__device__ __forceinline__ void drain_stores(const WgRows& r) {
  if constexpr (T::kEpilogue == 2)
    if (r.tid == 0) bulk_wait<0>();
}

}  // namespace hopper
