// A case on the GPU: its layout uploaded, q/k/v filled on the device (kernels_templates/fill_normal.cu,
// the same numbers as workload/inputs.cpp), and the fp32 reference o/lse computed on the device
// (kernels_templates/reference_fp32.cu) and copied to the host once. Built once per worker lifetime.
// The builder also runs the kernels an evaluation's timed samples need on a case (CaseKernels,
// docs/verification.md): the masks that give every sample new inputs in the case's buffers and put the tuning
// inputs back, and the reference of the rows a sample's check draws.
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

/// The arguments of one pass of kernels_templates/fill_normal.cu's xor_inputs_bf16 over q, k and v: the
/// magnitude masks of seeds mag_a and mag_b and v's sign masks of seeds sign_a and sign_b (0: none;
/// kernels_templates/sample_rules.h); `poison`: o and lse filled with NaN in the same pass. All zero: nothing
/// to do.
struct InputXor {
  std::uint64_t mag_a = 0, mag_b = 0;
  std::uint64_t sign_a = 0, sign_b = 0;
  bool poison = false;
  bool operator==(const InputXor&) const = default;
};

/// Where the reference of a sample check's drawn rows goes on the device (kernels_templates/reference_fp32.cu's
/// reference_rows_fp32): rows int32 [count] (flat row indices of o), ref_o bf16 [count x 128], ref_lse fp32
/// [count].
struct RowsBuffer {
  CUdeviceptr rows = 0, ref_o = 0, ref_lse = 0;
  int count = 0;
};

struct DeviceCase;

/// The helper kernels an evaluation runs on a case, enqueued on a stream without waiting (CaseBuilder
/// implements them): how a timed sample's inputs are made in the case's buffers and how its drawn rows'
/// reference is computed (docs/verification.md).
class CaseKernels {
 public:
  virtual ~CaseKernels() = default;
  /// Enqueues xor_inputs_bf16(x) over c's q, k and v (and o, lse with x.poison) on `stream`; nothing when x is
  /// all zero.
  virtual void xor_inputs_async(const DeviceCase& c, const InputXor& x, CUstream stream) = 0;
  /// Enqueues reference_rows_fp32 over c's current inputs: `out.count` rows drawn with `seed`, into `out`.
  virtual void reference_rows_async(const DeviceCase& c, std::uint64_t seed, const RowsBuffer& out,
                                    CUstream stream) = 0;
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
  CaseKernels* kernels = nullptr;          ///< the builder that made it (outlives it); null for a case built by hand
  CaseWork work;                           ///< case_work(layout, t_max): the floor checks' FLOPs and bytes (0 by hand)
  double build_ms = 0;

  std::size_t qkv_elems() const;  ///< B * H * t_max * 128
  std::size_t lse_elems() const;  ///< B * H * t_max
  /// Launch arguments pointing at this case's buffers.
  AttnArgs args() const;
};

/// Compiles a helper kernel's source (no parameters) and loads it. Throws std::runtime_error with the
/// NVRTC log when it does not compile, CudaError when the image does not load.
std::unique_ptr<Module> compile_helper(const Compiler& compiler, const std::string& source, const std::string& kernel);

/// Where the helper kernels come from.
struct CaseBuilderOptions {
  std::string templates_dir;                     ///< empty: $ATTN_TUNER_TEMPLATES, else the source tree's kernels_templates
  std::string fill_source;                       ///< empty: <templates_dir>/fill_normal.cu
  std::string reference_source;                  ///< empty: <templates_dir>/reference_fp32.cu
  std::string reference_kernel = "reference_attn_fwd_fp32";
};

/// Builds cases on the current context and keeps them (keyed by the CaseSpec's JSON) for its lifetime.
/// The helper kernels are compiled on first use with `compiler` (its disk cache applies).
class CaseBuilder : public CaseKernels {
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
  /// A sample's input masks (CaseKernels).
  void xor_inputs_async(const DeviceCase& c, const InputXor& x, CUstream stream) override;
  /// The drawn rows' reference (CaseKernels).
  void reference_rows_async(const DeviceCase& c, std::uint64_t seed, const RowsBuffer& out, CUstream stream) override;

 private:
  const Context& ctx_;
  const Compiler& compiler_;
  CaseBuilderOptions options_;
  std::unique_ptr<Module> fill_module_, reference_module_;
  CUfunction fill_fn_ = nullptr, xor_fn_ = nullptr, rows_fn_ = nullptr;
  AttnKernel reference_;
  std::map<std::string, std::unique_ptr<DeviceCase>> cases_;

  void load_helpers();
  void load_fill();
  /// The grid of one of fill_normal.cu's grid-stride kernels over `n` items: 256 threads a block, at most 16
  /// blocks per SM (the kernels loop over the rest).
  unsigned elementwise_grid(std::uint64_t n) const;
  /// Runs the reference on c's current inputs into c.o / c.lse (poisoned first) and waits.
  void run_reference(DeviceCase& c);
};

}  // namespace attn
