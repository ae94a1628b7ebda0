// The inputs of a case's timed samples (docs/verification.md). Every timed sample runs on the tuning inputs
// under a magnitude mask of its own (a seed drawn for it: every element's sign and low mantissa bits change,
// kernels_templates/sample_rules.h), so no launch before it saw its magnitudes and nothing an earlier launch
// computed can be reused. After the samples, the sign twin: the last sample's inputs again with v's signs
// drawn anew per element (q, k and every score stay), so that a kernel keyed on anything sign flips of v keep
// (|x|, q_c k_c, q and k themselves, the scores) sees a key it knows while the right o is new. The masks are
// XORs: one pass over q, k and v takes the inputs from any state to any other, and the tuning inputs come back
// bit for bit (SampleInputs: also when a check throws).
#pragma once
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "gpu/case_data.hpp"
#include "workload/bf16.hpp"

namespace attn {

/// The masks a case's inputs are under: the magnitude mask of seed `magnitude` and v's sign mask of seed
/// `v_signs` (0: none of that kind). Both zero: the tuning inputs.
struct InputMask {
  std::uint64_t magnitude = 0;
  std::uint64_t v_signs = 0;
  bool operator==(const InputMask&) const = default;
};

/// The one pass from inputs under `from` to inputs under `to` (xor_inputs_bf16's arguments): each mask of
/// `from` and of `to` once, a mask both hold left out (it cancels).
InputXor mask_transition(const InputMask& from, const InputMask& to);

/// Where the masks' seeds come from: in the worker, std::random_device (never logged or sent, so no launch can
/// learn the next from the last); tests pass a fixed sequence.
using SeedDraw = std::function<std::uint64_t()>;

/// The mask of the next timed sample after `now`: a magnitude seed drawn anew (non-zero and unlike now's), no
/// sign mask.
InputMask fresh_mask(const InputMask& now, const SeedDraw& draw);

/// The sign twin of `now`: its magnitude seed, v's signs by a non-zero seed drawn anew (unlike now's).
InputMask twin_mask(const InputMask& now, const SeedDraw& draw);

/// xor_inputs_bf16's pass on one tensor on the host (tensor 0 q, 1 k, 2 v; x.size() % 8 == 0): the device
/// kernel's formula, for the unit tests and the comparison with the device. Throws std::invalid_argument when
/// the size is not a multiple of 8.
void xor_tensor_host(std::vector<bf16_bits>& x, unsigned tensor, const InputXor& m);

/// A case's inputs during its timing: the masks it put on them, and the tuning inputs back when it ends (the
/// destructor, errors swallowed: a dead context). Needs c.kernels.
class SampleInputs {
 public:
  explicit SampleInputs(const DeviceCase& c);
  ~SampleInputs();
  SampleInputs(const SampleInputs&) = delete;
  SampleInputs& operator=(const SampleInputs&) = delete;

  /// Enqueues the pass to fresh_mask(mask(), draw), which also poisons o and lse (NaN): a timed sample's inputs
  /// and outputs in one pass.
  void fresh(CUstream s, const SeedDraw& draw);
  /// Enqueues the pass to twin_mask(mask(), draw).
  void twin(CUstream s, const SeedDraw& draw);
  /// Enqueues the pass back to the tuning inputs. Throws CudaError.
  void restore(CUstream s);
  const InputMask& mask() const { return now_; }

 private:
  void go_to(const InputMask& to, CUstream s, bool poison = false);
  const DeviceCase& c_;
  InputMask now_;
  CUstream last_stream_ = nullptr;
};

}  // namespace attn
