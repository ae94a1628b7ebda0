// The pipeline state the generation-2 blocks share: shared-memory addresses of the Q / O / K / V buffers and
// of the mbarriers, the per-slot tile descriptor the producer publishes, and the kernel arguments.
//
// The producer publishes one stream of slot uses: use i's K lives in ring slot i % STAGES, phase
// (i / STAGES) & 1, its V in slot i % V_STAGES, phase (i / V_STAGES) & 1 (V_STAGES = STAGES unless KV_SPLIT).
// Each use carries meta[slot] = {w, info}: w the work tile number (or kExit), info the kv block, the
// sub-tile, and the flags below. A work tile is a run of uses ending with kLast; a tile without any kv block
// is one use flagged kEmpty (no data). Consumers and converters walk the same stream, so they never read the
// CSR or the schedule themselves. With KV_SPLIT the producer publishes the V half's {w, info} apart
// (vmeta), because it refills the K half of a slot while the converters may still read the V half's.
//   k_full[s]   producer: 1 arrival (+ K bytes by TMA)     -> consumers read K
//   v_full[s]   producer: 1 arrival (+ V bytes by TMA)     -> converters turn V into fp16
//   v_ready[s]  converters: one arrival per converter thread -> consumers read V
//   k_empty[s]  consumers: one arrival per consumer thread  -> producer refills the slot (its K half, with
//               KV_SPLIT: once the use's Q K^T is done; without, after its P V, for K and V together)
//   v_empty[s]  KV_SPLIT only: as k_empty, after the use's P V -> producer refills the slot's V half
//               (without KV_SPLIT v_empty is k_empty)
//   q_full[b]   producer: 1 arrival (+ Q bytes)             -> consumers read Q buffer b
//   q_empty[b]  consumers, after the tile's last Q K^T      -> producer refills Q buffer b
// Q loads (work tiles with data) are counted apart: load j uses buffer j % Q_BUFFERS, phase
// (j / Q_BUFFERS) & 1.
#pragma once
#include "hopper_common.cuh"
#include "blocks/tma.cuh"

namespace hopper {

constexpr int kMetaExit = -1;            // meta.x: no more work
constexpr int kInfoLast = 1 << 20;       // the last use of its work tile
constexpr int kInfoEmpty = 1 << 21;      // a work tile with no kv block: o = 0, lse = -inf, no data
constexpr int kInfoKvMask = 0xFFFF;      // kv block index in bits 0-15, sub-tile in bits 16-19

/// The kv block and the sub-tile (0 .. 128 / BLOCK_N - 1) of a slot's info word (flags stripped).
__device__ __forceinline__ int info_kv(int info) { return info & kInfoKvMask; }
__device__ __forceinline__ int info_sub(int info) { return (info >> 16) & 0xF; }

/// Kernel arguments (ABI.md), gathered once.
struct KernelArgs {
  const int* row_ptr;
  const int* col_idx;
  const int* seq_lens;
  __nv_bfloat16* o;
  float* lse;
  int batch_size, num_heads, t_max, col_width;
};

template <class T>
struct Pipeline {
  // mbarriers: k_full, k_empty [STAGES]; v_full, v_ready [, v_empty with KV_SPLIT] [V_STAGES]; q_full, q_empty.
  static constexpr int kBars = 2 * T::kStages + (T::kKvSplit ? 3 : 2) * T::kVStages + 2 * T::kQBuffers;
  static constexpr int kMetas = T::kStages + (T::kKvSplit ? T::kVStages : 0);
  unsigned base;  // shared-window address of the 1024-aligned dynamic buffer
  unsigned bars;  // shared-window address of the mbarrier array (static shared memory)
  int2* meta;     // kMetas slot descriptors: K slots' (consumers), then with KV_SPLIT V slots' (converters)

  __device__ __forceinline__ int2& vmeta(int vs) const { return meta[T::kKvSplit ? T::kStages + vs : vs]; }
  __device__ __forceinline__ unsigned q(int b) const { return base + T::kOffQ + unsigned(b) * T::kQBytes; }
  __device__ __forceinline__ unsigned o() const { return base + T::kOffO; }
  __device__ __forceinline__ unsigned k(int slot) const { return base + T::kOffK + unsigned(slot) * T::kKvBytes; }
  __device__ __forceinline__ unsigned v(int vs) const { return base + T::kOffV + unsigned(vs) * T::kKvBytes; }
  __device__ __forceinline__ unsigned bar(int index) const { return bars + 8u * unsigned(index); }
  __device__ __forceinline__ unsigned k_full(int s) const { return bar(s); }
  __device__ __forceinline__ unsigned k_empty(int s) const { return bar(T::kStages + s); }
  __device__ __forceinline__ unsigned v_full(int vs) const { return bar(2 * T::kStages + vs); }
  __device__ __forceinline__ unsigned v_ready(int vs) const { return bar(2 * T::kStages + T::kVStages + vs); }
  __device__ __forceinline__ unsigned v_empty(int vs) const {
    return T::kKvSplit ? bar(2 * T::kStages + 2 * T::kVStages + vs) : k_empty(vs);
  }
  __device__ __forceinline__ unsigned q_full(int b) const { return bar(kBars - 2 * T::kQBuffers + b); }
  __device__ __forceinline__ unsigned q_empty(int b) const { return bar(kBars - T::kQBuffers + b); }

  /// One thread initialises every mbarrier with its arrival count (the block syncs afterwards).
  __device__ __forceinline__ void init() const {
    for (int s = 0; s < T::kStages; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(k_empty(s), 128 * T::kConsumers);
    }
    for (int vs = 0; vs < T::kVStages; ++vs) {
      mbar_init(v_full(vs), 1);
      mbar_init(v_ready(vs), T::kConverterThreads);
      if (T::kKvSplit) mbar_init(v_empty(vs), 128 * T::kConsumers);
    }
    for (int b = 0; b < T::kQBuffers; ++b) {
      mbar_init(q_full(b), 1);
      mbar_init(q_empty(b), 128 * T::kConsumers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the copy engine
  }
};

/// Use i of a ring of N buffers: the buffer, and the phase parity its mbarriers are at for that use.
template <int N>
__device__ __forceinline__ int ring_slot(int i) { return i % N; }
template <int N>
__device__ __forceinline__ unsigned ring_parity(int i) { return unsigned(i / N) & 1u; }

/// Q load j: its buffer and parity. Slot use i: its K slot and parity, its V slot and parity (the K
/// slot's unless V_STAGES differs from STAGES).
template <class T> __device__ __forceinline__ int q_buffer_of(int j) { return ring_slot<T::kQBuffers>(j); }
template <class T> __device__ __forceinline__ unsigned q_parity_of(int j) { return ring_parity<T::kQBuffers>(j); }
template <class T> __device__ __forceinline__ int slot_of(int i) { return ring_slot<T::kStages>(i); }
template <class T> __device__ __forceinline__ unsigned parity_of(int i) { return ring_parity<T::kStages>(i); }
template <class T> __device__ __forceinline__ int vslot_of(int i) { return ring_slot<T::kVStages>(i); }
template <class T> __device__ __forceinline__ unsigned vparity_of(int i) { return ring_parity<T::kVStages>(i); }

}  // namespace hopper
