// The ABI check of kernels_templates/ABI.md from PTX (no GPU needed): the real templates pass through NVRTC,
// kernels that break the ABI in each way are refused with a message naming the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpu/abi_check.hpp"
#include "tests/test_support.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

std::string templates() { return ATTN_TEMPLATES_DIR; }

CompileRequest default_request(const std::string& dir, const std::string& name) {
  const TemplateSpace s = TemplateSpace::load_named(dir, name);
  return compile_request(s, s.default_config());
}

/// A kernel source with the ABI's parameters (`params` replaces them) and launch info (`info` replaces it).
std::string kernel_source(const std::string& params, const std::string& info, const std::string& linkage = "extern \"C\"") {
  return "#include <cuda_bf16.h>\n" + info + "\n" + linkage + " __global__ void block_sparse_attn_fwd(" + params +
         ") {}\n";
}
constexpr const char* kAbiParams =
    "const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, const int* row_ptr, const int* col_idx, "
    "const int* seq_lens, __nv_bfloat16* o, float* lse, int batch_size, int num_heads, int t_max, int col_width";
constexpr const char* kInfo4 = "extern \"C\" __device__ int attn_launch_info[4] = {128, 0, 128, 0};";

KernelAbi check_source(const std::string& text) {
  const std::string dir = test::temp_dir("abi-check");
  std::ofstream(dir + "/k.cu") << text;
  return check_kernel_abi({dir + "/k.cu", "block_sparse_attn_fwd", {}, {}});
}

TEST(AbiCheck, RepositoryTemplatesPass) {
  for (const char* name : {"fa2_mma", "wgmma_fa", "fa3_tma"}) {
    const KernelAbi abi = check_kernel_abi(default_request(templates(), name));
    EXPECT_TRUE(abi.ok) << name << ": " << abi.problem;
    EXPECT_TRUE(abi.compiled) << name;
    EXPECT_GE(abi.launch_info.size(), 4u) << name;
    if (std::string(name) == "fa3_tma") {
      EXPECT_EQ(abi.params, 13);  // tensor maps
      EXPECT_EQ(abi.launch_info.size(), 8u);
    } else {
      EXPECT_EQ(abi.params, 12);
      EXPECT_EQ(abi.launch_info, (std::vector<int>{abi.launch_info[0], abi.launch_info[1], abi.launch_info[2], 0}));
      EXPECT_EQ(abi.launch_info[2], 128) << name;  // BLOCK_M of the default config
    }
  }
  // The daemon tests' template: untyped pointers are the same machine ABI.
  const KernelAbi fake = check_kernel_abi(default_request(test::data_dir() + "/fake_templates", "fake"));
  EXPECT_TRUE(fake.ok) << fake.problem;
  EXPECT_EQ(fake.launch_info, (std::vector<int>{128, 0, 128, 0}));
}

TEST(AbiCheck, EachWayOfBreakingTheAbiIsNamed) {
  const KernelAbi good = check_source(kernel_source(kAbiParams, kInfo4));
  ASSERT_TRUE(good.ok) << good.problem;

  struct Case {
    const char* what;
    std::string source;
    const char* expected;
  };
  const std::string p11 = std::string(kAbiParams).substr(0, std::string(kAbiParams).rfind(','));
  const Case cases[] = {
      {"C++ linkage", kernel_source(kAbiParams, kInfo4, ""), "no kernel entry `block_sparse_attn_fwd` with C linkage"},
      {"a parameter missing", kernel_source(p11, kInfo4), "has 11 parameters"},
      {"t_max as 64-bit", kernel_source(std::string(p11) + ", long long col_width", kInfo4),
       "parameter 12 (col_width) of block_sparse_attn_fwd is 8 bytes"},
      {"a pointer passed as int", kernel_source(std::string("int q") + std::string(kAbiParams).substr(std::string(kAbiParams).find(',')), kInfo4),
       "parameter 1 (q) of block_sparse_attn_fwd is 4 bytes"},
      {"no attn_launch_info", kernel_source(kAbiParams, ""), "no `extern \"C\" __device__ int attn_launch_info[4]`"},
      {"attn_launch_info[3]", kernel_source(kAbiParams, "extern \"C\" __device__ int attn_launch_info[3] = {128, 0, 128};"),
       "attn_launch_info has 12 bytes"},
      {"threads 0", kernel_source(kAbiParams, "extern \"C\" __device__ int attn_launch_info[4] = {0, 0, 128, 0};"),
       "threads 0 not in 1..1024"},
      {"tensor maps without the parameter",
       kernel_source(kAbiParams, "extern \"C\" __device__ int attn_launch_info[8] = {128, 0, 128, 0, 128, 128, 0, 1};"),
       "asks for tensor maps"},
      {"tensor-map parameter without info",
       "struct alignas(64) Maps { char b[512]; };\n" +
           kernel_source(std::string(kAbiParams) + ", const __grid_constant__ Maps maps", kInfo4),
       "does not ask for them"},
  };
  for (const Case& c : cases) {
    const KernelAbi abi = check_source(c.source);
    EXPECT_FALSE(abi.ok) << c.what;
    EXPECT_TRUE(abi.compiled) << c.what << ": " << abi.problem;
    EXPECT_NE(abi.problem.find(c.expected), std::string::npos) << c.what << ": " << abi.problem;
  }
  // With 8 entries and the 13th parameter it is fine.
  const KernelAbi tma = check_source(
      "struct alignas(64) Maps { char b[512]; };\n" +
      kernel_source(std::string(kAbiParams) + ", const __grid_constant__ Maps maps",
                    "extern \"C\" __device__ int attn_launch_info[8] = {384, 100000, 128, 1, 128, 128, 0, 1};"));
  EXPECT_TRUE(tma.ok) << tma.problem;
  EXPECT_EQ(tma.launch_info, (std::vector<int>{384, 100000, 128, 1, 128, 128, 0, 1}));
}

TEST(AbiCheck, ACompileErrorIsReportedAsNotCompiled) {
  const KernelAbi abi = check_source(kernel_source(kAbiParams, kInfo4) + "this is not C++;\n");
  EXPECT_FALSE(abi.ok);
  EXPECT_FALSE(abi.compiled);
  EXPECT_NE(abi.problem.find("NVRTC_ERROR_COMPILATION"), std::string::npos) << abi.problem;
  const KernelAbi missing = check_kernel_abi({"/nonexistent/k.cu", "block_sparse_attn_fwd", {}, {}});
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.problem.find("cannot read"), std::string::npos) << missing.problem;
}

TEST(AbiCheck, ReadsPtxDeclarationsAsWritten) {
  // Qualified pointer parameters (.ptr .global .align) and u32 launch info, as other front ends write them.
  std::string ptx = ".version 8.8\n.target sm_90a\n.address_size 64\n"
                    ".visible .global .align 4 .u32 attn_launch_info[4] = {256, 49152, 64, 0};\n"
                    ".visible .entry block_sparse_attn_fwd(\n";
  for (int i = 0; i < 8; ++i) ptx += "\t.param .u64 .ptr .global .align 2 block_sparse_attn_fwd_param_" + std::to_string(i) + ",\n";
  for (int i = 8; i < 12; ++i)
    ptx += "\t.param .s32 block_sparse_attn_fwd_param_" + std::to_string(i) + (i < 11 ? ",\n" : "\n");
  ptx += ")\n{\n\tret;\n}\n";
  const KernelAbi abi = check_ptx_abi(ptx, "block_sparse_attn_fwd");
  EXPECT_TRUE(abi.ok) << abi.problem;
  EXPECT_EQ(abi.params, 12);
  EXPECT_EQ(abi.launch_info, (std::vector<int>{256, 49152, 64, 0}));

  std::string extern_only = ptx;
  extern_only.replace(extern_only.find(".visible .global .align 4 .u32 attn_launch_info[4] = {256, 49152, 64, 0}"),
                      std::string(".visible .global .align 4 .u32 attn_launch_info[4] = {256, 49152, 64, 0}").size(),
                      ".extern .global .align 4 .u32 attn_launch_info[4]");
  const KernelAbi ext = check_ptx_abi(extern_only, "block_sparse_attn_fwd");
  EXPECT_FALSE(ext.ok);
  EXPECT_NE(ext.problem.find("only declared (extern)"), std::string::npos) << ext.problem;

  const KernelAbi other = check_ptx_abi(ptx, "my_kernel");
  EXPECT_FALSE(other.ok);
  EXPECT_NE(other.problem.find("entries in the PTX: block_sparse_attn_fwd"), std::string::npos) << other.problem;
}

}  // namespace
}  // namespace attn
