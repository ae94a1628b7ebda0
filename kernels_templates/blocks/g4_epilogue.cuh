// Epilogue of generation 4: one consumer warpgroup's 64 rows, normalised, staged in the O buffer with 8
// stmatrix.x4 per thread (the wgmma accumulator fragment is stmatrix's: each x4 is a 16 x 16 block of the
// warp's rows), 1 / l and log2 l from rcp.approx / lg2.approx (about 1 ulp, far inside the harness's o and lse
// tolerances), then the 16-byte stores (EPILOGUE 1) or one thread's two TMA boxes (EPILOGUE 2), as
// blocks/epilogue.cuh. This is the research DB's EPI_LEAN win (lab/ideas/campaign2/agent_f_epi_lean.idea,
// -2.7 % on full and quick), which blocks/epilogue.cuh does not have in this tree. Rows at or past seq_len and
// rows without keys: o = 0, lse = -inf.
#pragma once
#include "blocks/epilogue.cuh"

namespace hopper {

template <class T>
__device__ __forceinline__ void g4_store_tile(const Pipeline<T>& pl, unsigned char* smem, const AttnTmaps& maps,
                                                float (&acc)[64], const float (&row_max)[2],
                                                const float (&row_sum)[2], __nv_bfloat16* o_rows, float* lse_rows,
                                                int q_pos0, int seq_len, int row_out, const WgRows& r) {
  static_assert(T::kEpilogue == 1 || T::kEpilogue == 2, "the lean epilogue stages o in shared memory");
  const int lane = r.tid & 31;
  if constexpr (T::kNoStore) return;
  if constexpr (T::kEpilogue == 2) {
    if (r.tid == 0) bulk_wait_read<0>();  // the previous tile's TMA store has read the buffer
    wg_sync(r.cwg);
  }
  float inv[2];
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float l = row_sum[hr];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
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
  if constexpr (T::kEpilogue == 1) {
    wg_sync(r.cwg);
#pragma unroll
    for (int it = 0; it < (T::kNoOStore ? 0 : 8); ++it) {  // 64 rows x 16 chunks over 128 threads
      const int idx = it * 128 + r.tid, row = r.wg_row0 + (idx >> 4), chunk = idx & 15;
      *reinterpret_cast<uint4*>(o_rows + row * 128 + chunk * 8) =
          *reinterpret_cast<const uint4*>(smem + (pl.o() - pl.base) + swz128(T::kBlockM, row, chunk));
    }
    wg_sync(r.cwg);  // the buffer is free for this warpgroup's next tile
  } else {
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

}  // namespace hopper
