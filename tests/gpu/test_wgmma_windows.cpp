// The PTX scan of wgmma windows (gpu/wgmma_windows.hpp): which instructions fall between a wgmma's issue and the
// wait_group that retires it, on hand-written PTX and on the repository's templates (no GPU needed).
#include <gtest/gtest.h>

#include "gpu/nvrtc_ptx.hpp"
#include "gpu/wgmma_windows.hpp"
#include "tests/test_support.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

// Two commit groups; wait_group 1 retires the first only, wait_group 0 the second.
constexpr const char* kPtx = R"(
.visible .entry k(
)
{
	.loc	1 10 3
	mov.f32 	%f1, 0f00000000;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f1, %f2}, %rd1, %rd2, p, 1, 1, 0, 1;
	wgmma.commit_group.sync.aligned;
	.loc	1 11 3
	wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f3, %f4}, %rd1, %rd2, p, 1, 1, 0, 1;
	wgmma.commit_group.sync.aligned;
	.loc	2 20 5, function_name $L__info_string1, inlined_at 1 77 9
	add.f32 	%f9, %f9, %f1;
	mul.f32 	%f2, %f2, %f9;
	@%p1 bra 	$L__BB0_2;
	st.shared.f32 	[%r1], %f3;
	wgmma.wait_group.sync.aligned 1;
	.loc	2 21 5
	mov.f32 	%f1, 0f00000000;
	mov.f32 	%f3, 0f00000000;
	{ // callseq 0, 0
	call.uni 	(retval0), vprintf, (param0, param1);
	}
	wgmma.wait_group.sync.aligned 0;
	.loc	2 22 5
	mov.f32 	%f3, 0f00000000;
	@%p1 bra 	$L__BB0_3;
	call.uni 	(retval0), vprintf, (param0, param1);
	ret;
}
	.file	1 "/t/kernel.cuh"
	.file	2 "/t/softmax.cuh"
)";

TEST(WgmmaWindows, TheSitesAreBetweenAWgmmasIssueAndItsWaitGroup) {
  const auto sites = wgmma_window_sites(kPtx);
  std::string all;
  for (const auto& site : sites) all += site.code + " " + site.instruction + "\n";
  ASSERT_EQ(sites.size(), 6u) << all;
  EXPECT_EQ(sites[0].code, "C7514");  // reads %f1, the first group's accumulator, pending
  EXPECT_EQ(sites[0].instruction, "add.f32 \t%f9, %f9, %f1");
  EXPECT_EQ(sites[0].file, "/t/softmax.cuh");
  EXPECT_EQ(sites[0].line, 20);
  EXPECT_EQ(sites[0].caller_file, "/t/kernel.cuh");  // inlined at kernel.cuh:77
  EXPECT_EQ(sites[0].caller_line, 77);
  EXPECT_EQ(sites[1].code, "C7515");  // writes %f2 (and reads it)
  EXPECT_TRUE(sites[1].reads);
  EXPECT_EQ(sites[1].instruction, "mul.f32 \t%f2, %f2, %f9");
  EXPECT_EQ(sites[2].code, "C7520");
  EXPECT_EQ(sites[2].instruction, "@%p1 bra \t$L__BB0_2");
  EXPECT_EQ(sites[3].code, "C7514");  // a store reads %f3 of the second group
  // After wait_group 1 only the second group (%f3, %f4) is pending: %f1 is free, %f3 is not.
  EXPECT_EQ(sites[4].code, "C7515");
  EXPECT_FALSE(sites[4].reads);
  EXPECT_EQ(sites[4].instruction, "mov.f32 \t%f3, 0f00000000");
  EXPECT_EQ(sites[4].line, 21);
  EXPECT_EQ(sites[4].caller_line, 0);
  EXPECT_EQ(sites[5].code, "C7510");
  EXPECT_EQ(sites[5].file, "/t/softmax.cuh");
  // After wait_group 0 nothing is pending: the same kinds are no site.
}

// The templates ptxas builds unserialised (Fa4G4Template.EveryStructuralAxisCompilesUnserialisedWithoutSpills, the
// ptxas logs of every campaign) have no call and no accumulator read or write inside a window; their conditional branches
// there (the softmax's masks, with P V pending) are why a branch is only a candidate, compared with the parent's.
TEST(WgmmaWindows, TheRepositorysTemplatesHaveNoCallOrAccumulatorAccessInAWindow) {
  for (const char* name : {"fa3_tma", "fa4_g4"}) {
    const TemplateSpace s = TemplateSpace::load_named(ATTN_TEMPLATES_DIR, name);
    const PtxBuild b = nvrtc_ptx(compile_request(s, s.default_config()), {"-lineinfo"});
    ASSERT_TRUE(b.ok) << name << ": " << b.problem;
    int branches = 0;
    for (const auto& site : wgmma_window_sites(b.ptx)) {
      EXPECT_EQ(site.code, "C7520") << name << ": " << site.file << ":" << site.line << " " << site.instruction;
      EXPECT_NE(site.file.find("kernels_templates/"), std::string::npos) << site.file;
      EXPECT_GT(site.line, 0);
      ++branches;
    }
    EXPECT_GT(branches, 0) << name;
  }
}

}  // namespace
}  // namespace attn
