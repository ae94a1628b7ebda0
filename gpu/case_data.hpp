// A case on the GPU: its layout uploaded, q/k/v filled on the device (kernels_templates/fill_normal.cu,
// the same numbers as workload/inputs.cpp), and the fp32 reference o/lse computed on the device
// (kernels_templates/reference_fp32.cu) and copied to the host once. Built once per worker lifetime.
// Each case also has a hidden check set (docs/verification.md): its tuning inputs under an XOR mask keyed by
// a seed drawn when the builder is made (every element changes), with its own reference, so that an
// evaluation can run a variant once on fresh data in the same buffers and put the tuning inputs back by
// applying the mask again.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/attn_kernel.hpp"
#include "gpu/compiler.hpp"
#include "gpu/driver.hpp"
#include "workload/bf16.hpp"
#include "workload/case_spec.hpp"
#include "workload/layout.hpp"
#include "workload/roofline.hpp"

namespace attn {

/// A 128-bit mask over the head_dim columns (bit c of lo for c < 64, of hi for c >= 64): the columns whose
/// signs a timed sample's fresh inputs flip (kernels_templates/fill_normal.cu's flip_columns_bf16,
/// gpu/sample_checks.hpp). XOR composes: applying a ^ b to inputs flipped by a leaves them flipped by b.
struct ColumnFlip {
  std::uint64_t lo = 0, hi = 0;
  ColumnFlip operator^(const ColumnFlip& o) const { return {lo ^ o.lo, hi ^ o.hi}; }
  bool operator==(const ColumnFlip&) const = default;
  /// Whether column c (0..127) is flipped.
  bool flips(unsigned c) const { return ((c < 64 ? lo : hi) >> (c % 64)) & 1u; }
};

/// Applies a check mask to a case's inputs in place, enqueued on a stream without waiting (CaseBuilder
/// implements it with kernels_templates/fill_normal.cu's mask_check_bf16): how an evaluation switches a case's
/// q/k/v between its tuning inputs and its check set. The mask is an XOR, so applying it twice is the identity.
class InputMasker {
 public:
  virtual ~InputMasker() = default;
  /// Enqueues mask_check_bf16(seed, tensor) over the `n` bf16 values at `x` on `stream`.
  virtual void mask_async(CUdeviceptr x, std::uint64_t seed, unsigned tensor, std::uint64_t n, CUstream stream) = 0;
  /// Enqueues flip_columns_bf16(flip) over the `n` bf16 values ([rows, 128]) at `x` on `stream`.
  virtual void flip_async(CUdeviceptr x, ColumnFlip flip, std::uint64_t n, CUstream stream) = 0;
};

/// Device tensors of one case (ABI.md layouts) and its reference outputs on the host.
struct DeviceCase {
  CaseSpec spec;
  BlockSparseLayout layout;
  DeviceBuffer q, k, v;                    ///< bf16 [B, H, t_max, 128]
  DeviceBuffer row_ptr, col_idx, seq_lens; ///< int32, as layout
  DeviceBuffer o, lse;                     ///< outputs: bf16 [B, H, t_max, 128], fp32 [B, H, t_max]
  std::vector<bf16_bits> ref_o;            ///< reference_fp32's o (bf16 bits)
  std::vector<float> ref_lse;              ///< reference_fp32's lse (natural log)
  DeviceBuffer ref_o_dev, ref_lse_dev;     ///< the same reference, on the device (gpu/device_validation.hpp)
  /// The check set: the tuning q/k/v XORed with the mask of check_seed (every element changes: a random sign
  /// and a random non-zero mantissa, same binade) give check_ref_o / check_ref_lse. Empty (and `masker` null)
  /// for a case built by hand: has_check_set() is false and no evaluation uses it.
  std::uint64_t check_seed = 0;
  std::vector<bf16_bits> check_ref_o;
  std::vector<float> check_ref_lse;
  DeviceBuffer check_ref_o_dev, check_ref_lse_dev;
  InputMasker* masker = nullptr;           ///< the builder that made it (outlives it)
  CaseWork work;                           ///< case_work(layout, t_max): the floor checks' FLOPs and bytes (0 by hand)
  double build_ms = 0;

  std::size_t qkv_elems() const;  ///< B * H * t_max * 128
  std::size_t lse_elems() const;  ///< B * H * t_max
  /// Launch arguments pointing at this case's buffers.
  AttnArgs args() const;
  bool has_check_set() const { return masker != nullptr && check_ref_o_dev.bytes() > 0; }
  /// Enqueues the mask of `seed` over q, k and v on `stream` (needs a masker): with check_seed, the tuning
  /// inputs become the check set, and the check set the tuning inputs again.
  void mask_inputs(std::uint64_t seed, CUstream stream) const;
  /// Enqueues the column flips `qk` over q and k (the scores do not change) and `v` over v (o's flipped
  /// columns change sign, lse does not) on `stream` (needs a masker). Flips compose by XOR.
  void flip_inputs(ColumnFlip qk, ColumnFlip v, CUstream stream) const;
};

/// The check seed of a case: a mix of the builder's `check_root` and the case (its JSON), never equal to the
/// case's own seed (the mask it keys is independent of the tuning inputs either way).
std::uint64_t check_seed_for(std::uint64_t check_root, const CaseSpec& spec);

/// Compiles a helper kernel's source (no parameters) and loads it. Throws std::runtime_error with the
/// NVRTC log when it does not compile, CudaError when the image does not load.
std::unique_ptr<Module> compile_helper(const Compiler& compiler, const std::string& source, const std::string& kernel);

/// Where the helper kernels come from.
struct CaseBuilderOptions {
  std::string templates_dir;                     ///< empty: $ATTN_TUNER_TEMPLATES, else the source tree's kernels_templates
  std::string fill_source;                       ///< empty: <templates_dir>/fill_normal.cu
  std::string reference_source;                  ///< empty: <templates_dir>/reference_fp32.cu
  std::string reference_kernel = "reference_attn_fwd_fp32";
  /// Root of the cases' check seeds (check_seed_for); empty: drawn from std::random_device when the builder
  /// is made, so no two workers, and no kernel, can know it. Tests set it.
  std::optional<std::uint64_t> check_root;
  /// Build the check set of every case (a second reference per case; docs/verification.md).
  bool check_sets = true;
};

/// Builds cases on the current context and keeps them (keyed by the CaseSpec's JSON) for its lifetime.
/// The helper kernels are compiled on first use with `compiler` (its disk cache applies).
class CaseBuilder : public InputMasker {
 public:
  CaseBuilder(const Context& ctx, const Compiler& compiler, CaseBuilderOptions options = {});
  ~CaseBuilder();

  /// The case, built on first request. Throws std::runtime_error when a helper kernel does not compile
  /// (with the NVRTC log), std::invalid_argument for an invalid spec, CudaError on a device error.
  const DeviceCase& get(const CaseSpec& spec);
  bool contains(const CaseSpec& spec) const;
  std::size_t size() const { return cases_.size(); }
  /// The helper kernels' folder (options.templates_dir, or its default when empty).
  const std::string& templates_dir() const { return options_.templates_dir; }
  /// Frees every cached case that is not in `keep` (device memory of earlier seeds); returns how many.
  std::size_t retain(const std::vector<CaseSpec>& keep);

  /// Fills `n` bf16 values at `out` with fill_normal_bf16(seed, tensor) and waits for it.
  void fill_normal(CUdeviceptr out, std::uint64_t seed, unsigned tensor, std::uint64_t n);
  /// The check mask (InputMasker).
  void mask_async(CUdeviceptr x, std::uint64_t seed, unsigned tensor, std::uint64_t n, CUstream stream) override;
  /// The fresh samples' column flips (InputMasker).
  void flip_async(CUdeviceptr x, ColumnFlip flip, std::uint64_t n, CUstream stream) override;
  /// The root of the check seeds (CaseBuilderOptions::check_root, or the one drawn).
  std::uint64_t check_root() const { return check_root_; }

 private:
  const Context& ctx_;
  const Compiler& compiler_;
  CaseBuilderOptions options_;
  std::unique_ptr<Module> fill_module_, reference_module_;
  CUfunction fill_fn_ = nullptr, mask_fn_ = nullptr, flip_fn_ = nullptr;
  AttnKernel reference_;
  std::map<std::string, std::unique_ptr<DeviceCase>> cases_;
  std::uint64_t check_root_ = 0;

  void load_helpers();
  void load_fill();
  /// Launches one of fill_normal.cu's element-wise kernels, fn(x, seed, tensor, n), on `stream`: 256 threads a
  /// block, `per_thread` elements a thread, at most 16 blocks per SM (the kernels loop over the rest).
  /// Throws CudaError naming `what`.
  void launch_elementwise(CUfunction fn, const char* what, CUdeviceptr x, std::uint64_t seed, unsigned tensor,
                          std::uint64_t n, unsigned per_thread, CUstream stream);
  /// Runs the reference on c's current inputs into c.o / c.lse (poisoned first) and waits.
  void run_reference(DeviceCase& c);
};

}  // namespace attn
