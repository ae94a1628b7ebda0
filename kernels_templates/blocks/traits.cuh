// Kernel traits of the generation-2 templates: one struct names every tile, pipeline and scheduling
// parameter and derives the rest (thread counts, register split, shared-memory layout), in the manner of
// FlashAttention's kernel_traits.h. The blocks (producer.cuh, consumer.cuh, softmax.cuh, epilogue.cuh,
// tile_scheduler.cuh, kernel.cuh) read only this struct; generation 4's G4Traits (g4_traits.cuh) derives from it.
// Every static constexpr member is a symbol of the cubin: a member added here changes every cubin of the templates.
//
// Shared memory (dynamic, base aligned to 1024 bytes for the 128-byte swizzle), every tile a [rows x 128]
// bf16 matrix stored as two [rows x 64] halves of 128-byte rows, 16-byte chunk c of row r at c ^ (r % 8)
// (the layout TMA's SWIZZLE_128B writes and wgmma descriptors read; hopper_common.cuh):
//   Q  Q_BUFFERS x [BLOCK_M x 128] work tile k uses buffer k % Q_BUFFERS, refilled once its consumers release it
//   O  [BLOCK_M x 128]             epilogue staging (EPILOGUE >= 1 only)
//   K  STAGES x [BLOCK_N x 128]    ring
//   V  V_STAGES x [BLOCK_N x 128]  ring, converted bf16 -> fp16 in place before P V (DESIGN.md)
#pragma once

namespace hopper {

template <int Consumers, int BlockN, int Stages, int ProducerRegs, int CtasPerSm, int Epilogue, int Schedule,
          int Order, int KvOrder, int Overlap, int Pingpong, int Converters, int QBuffers, int Ablate = 0,
          int KvSplit = 1, int VStages = 0, int Softmax = 0, int VConvert = 0, int L2Prefetch = 0>
struct Fa3Traits {
  static constexpr int kBlock = 128;              // q_block / kv block size and head dim (spec.py)
  static constexpr int kConsumers = Consumers;    // consumer warpgroups, 64 query rows each
  static constexpr int kBlockM = 64 * Consumers;  // query rows per work tile
  static constexpr int kBlockN = BlockN;          // keys per pipeline tile
  static constexpr int kSubTiles = kBlock / BlockN;
  static constexpr int kStages = Stages;
  static constexpr int kCtasPerSm = CtasPerSm;
  static constexpr int kEpilogue = Epilogue;      // 0 registers -> global, 1 via smem, 2 via smem + TMA store
  static constexpr int kSchedule = Schedule;      // 0 one CTA per tile, 1 persistent static, 2 persistent dynamic
  static constexpr int kOrder = Order;            // work order (tile_scheduler.cuh); -1: attn_param_ORDER
  static constexpr int kKvOrder = KvOrder;        // 0 CSR order (diagonal last), 1 reversed (diagonal first); -1: attn_param_KV_ORDER
  static constexpr bool kOverlap = Overlap != 0;  // softmax of tile i overlaps P V of tile i-1
  static constexpr bool kCarry = Overlap == 2;    // ... across work tiles: the last P V goes with the next Q K^T
  static constexpr bool kPingpong = Pingpong != 0 && Consumers == 2;  // consumer warpgroups alternate GEMMs
  // Producer-warpgroup warps converting V: 1..3 are warps 1..Converters; 4 adds lanes 1..31 of warp 0, whose
  // lane 0 is the TMA producer thread (the warp runs the two roles diverged, as independent thread scheduling
  // allows: neither role uses a warp-collective instruction).
  static constexpr int kConverterWarps = Converters;
  static constexpr int kConverterThreads = Converters == 4 ? 127 : 32 * Converters;
  static constexpr int kQBuffers = QBuffers;  // 2: the next work tile's Q loads while this one computes
  static constexpr int kSoftmax = Softmax;    // 0 exact, 1 conditional rescale, 2 stale base (blocks/softmax.cuh)
  static constexpr int kVConvert = VConvert;  // V bf16 -> fp16: 0 cvt through fp32, 1 integer bit arithmetic
  // Measurement switch L2_PREFETCH: a work tile's later K/V tiles prefetched into L2 at its start (producer.cuh).
  static constexpr bool kL2Prefetch = L2Prefetch != 0;
  // 1 (default): a slot's K half is released once its Q K^T is done and its V half after the P V (FA3's
  // separate K and V pipelines), so the producer refills K while the slot's P V is still pending (OVERLAP
  // holds a slot until the next tile's softmax); 0: the whole slot after the P V (measurement switch).
  static constexpr bool kKvSplit = KvSplit != 0;
  // V ring slots. VStages 0 (default) derives them: with KV_SPLIT and OVERLAP, STAGES + 1 where shared
  // memory has room (the V tile of a pending P V holds its slot a tile longer, and the V conversion's
  // latency, ~1,400-2,900 cycles per tile in `attn-tuner trace`, gets a tile more of slack), else STAGES.
  // Measured on full (H100, lab/notebook-gen2.md): OVERLAP 1 -2.4 % / -0.7 %, OVERLAP 0 +3 % (so not there).
  static constexpr int kDynBytes = 16384 * Consumers * (QBuffers + (Epilogue ? 1 : 0)) + 2 * Stages * BlockN * 256;
  static constexpr bool kRoomForV = 1024 + kDynBytes + BlockN * 256 + 512 <= 232448 &&
                                    CtasPerSm * (1024 + kDynBytes + BlockN * 256 + 512 + 1024) <= 233472;
  static constexpr int kVStages = VStages > 0 ? VStages : (KvSplit && Overlap && kRoomForV ? Stages + 1 : Stages);
  // Ablation by removal (measurement only, outputs wrong, `bench --no-validate`): bit set = that work is
  // not done, so the time saved bounds what overlapping or speeding up that work can gain.
  static constexpr int kAblate = Ablate;
  static constexpr bool kNoConvert = Ablate & 1;   // converters skip the bf16 -> fp16 pass (still arrive)
  static constexpr bool kNoSoftmax = Ablate & 2;   // P = fp16(S): no mask, max, exp2, sum, rescale
  static constexpr bool kNoPv = Ablate & 4;        // no P V wgmma
  static constexpr bool kNoQk = Ablate & 8;        // no Q K^T wgmma (S = 0)
  static constexpr bool kSameKv = Ablate & 16;     // every K / V load reads kv block 0 of head 0 (L2-resident)
  static constexpr bool kNoStore = Ablate & 32;    // the epilogue writes nothing
  static constexpr bool kNoOStore = Ablate & 64;   // o is normalised and staged but not written to global
  static constexpr bool kSameO = Ablate & 128;     // every tile's o goes to rows 0.. of head 0 (L2-resident)
  static constexpr bool kNoLse = Ablate & 256;     // lse is not written
  static constexpr bool kNoRowSum = Ablate & 512;  // the softmax keeps no row sum (o is not normalised)

  static constexpr int kThreads = (Consumers + 1) * 128;
  // Registers: the kernel is compiled for kLaunchRegs per thread (__maxnreg__: 65536 per SM over kThreads x
  // CtasPerSm, in steps of 8, at most 232 so that setmaxnreg.inc always raises); setmaxnreg then moves the
  // producer warpgroup's share to the consumers (at most 240: FA3 uses 24 / 240 for one producer and two
  // consumer warpgroups).
  static constexpr int kLaunchRegs0 = (65536 / (kThreads * CtasPerSm)) / 8 * 8;
  static constexpr int kLaunchRegs = kLaunchRegs0 > 232 ? 232 : kLaunchRegs0;
  static constexpr int kProducerRegs = ProducerRegs;
  static constexpr int kConsumerRegs0 = ((kLaunchRegs * (Consumers + 1) - ProducerRegs) / Consumers) / 8 * 8;
  static constexpr int kConsumerRegs = kConsumerRegs0 > 240 ? 240 : kConsumerRegs0;

  static constexpr int kQHalf = kBlockM * 128;     // bytes of one dims-half of the Q (and O) tile
  static constexpr int kQBytes = 2 * kQHalf;
  static constexpr int kKvHalf = BlockN * 128;     // bytes of one dims-half of a K or V tile
  static constexpr int kKvBytes = 2 * kKvHalf;
  static constexpr int kOffQ = 0;
  static constexpr int kOffO = QBuffers * kQBytes;
  static constexpr int kOffK = kOffO + (Epilogue ? kQBytes : 0);
  static constexpr int kOffV = kOffK + Stages * kKvBytes;
  static constexpr int kSmemBytes = 1024 + kOffV + kVStages * kKvBytes;  // 1024: room to align the base

  static_assert(Consumers == 1 || Consumers == 2, "64 or 128 query rows per work tile");
  static_assert(BlockN == 64 || BlockN == 128, "wgmma n64 or n128 for S; a kv block is 128 keys");
  static_assert(Stages >= 2, "the producer runs at least one tile ahead");
  static_assert(kVStages == Stages || (KvSplit && kVStages >= 2), "a V ring of its own needs KV_SPLIT");
  static_assert(kDynBytes == kOffV + Stages * kKvBytes, "kDynBytes: the Q, O, K and V buffers below");
  static_assert(ProducerRegs % 8 == 0 && ProducerRegs >= 24 && ProducerRegs <= kLaunchRegs,
                "setmaxnreg.dec takes a multiple of 8 in 24..the launch registers");
  static_assert(kConsumerRegs > kLaunchRegs, "setmaxnreg.inc must raise the consumers' registers");
  static_assert(Converters >= 1 && Converters <= 4,
                "warps 1..3 of the producer warpgroup (4: and warp 0's lanes 1..31) convert V");
  static_assert(QBuffers == 1 || QBuffers == 2, "one or two Q buffers");
  static_assert(Softmax >= 0 && Softmax <= 2, "SOFTMAX 0 exact, 1 conditional rescale, 2 stale base");
  static_assert(VConvert == 0 || VConvert == 1, "V_CONVERT 0 cvt, 1 integer bit arithmetic");
};

}  // namespace hopper
