// The SASS instruction mix of the idea author's kit (proposer/sass_profile.hpp): opcode classes over a listing and
// over each loop that issues HGMMA, from cuobjdump's text (labels or hex branch targets).
#include <gtest/gtest.h>

#include "proposer/sass_profile.hpp"

namespace attn {
namespace {

// The shape of `cuobjdump -sass` on an sm_90a cubin: an outer (tile) loop around an inner (kv) loop.
const std::string kListing = R"(
	code for sm_90a
		Function : block_sparse_attn_fwd
	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                      /* 0x00000a00ff017b82 */
                                                                               /* 0x000fe20000000800 */
        /*0010*/                   S2R R0, SR_TID.X ;                          /* 0x0000000000007919 */
.L_x_0:
        /*0020*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x10], R2 ;
        /*0030*/                   WARPGROUP.ARRIVE ;
.L_x_1:
        /*0040*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT ;
        /*0050*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0060*/                   FMNMX R3, R24, R25, !PT ;
        /*0070*/                   MUFU.EX2 R4, R3 ;
        /*0080*/                   MUFU.EX2 R5, R3 ;
        /*0090*/                   F2FP.F16.F32.PACK_AB R6, R5, R4 ;
        /*00a0*/               @P1 BRA `(.L_x_1) ;
        /*00b0*/                   BAR.SYNC.DEFER_BLOCKING 0x1, 0x100 ;
        /*00c0*/                   STL [R1], R6 ;
        /*00d0*/              @!P2 BRA `(.L_x_0) ;
        /*00e0*/                   MUFU.RCP R7, R8 ;
        /*00f0*/                   BRA `(.L_x_2) ;
.L_x_2:
        /*0100*/                   EXIT ;
)";

TEST(SassProfile, CountsClassesOverTheKernelAndPerHgmmaLoop) {
  const SassProfile p = parse_sass(kListing);
  EXPECT_EQ(p.instructions, 17u);
  EXPECT_EQ(p.counts.at("HGMMA"), 1u);
  EXPECT_EQ(p.counts.at("MUFU.EX2"), 2u);
  EXPECT_EQ(p.counts.at("MUFU"), 1u);  // the reciprocal
  EXPECT_EQ(p.counts.at("F2FP"), 1u);
  EXPECT_EQ(p.counts.at("SYNCS"), 1u);
  EXPECT_EQ(p.counts.at("WARPGROUP"), 2u);
  EXPECT_EQ(p.counts.at("BAR"), 1u);
  EXPECT_EQ(p.counts.at("LDL/STL"), 1u);
  EXPECT_EQ(p.counts.at("BRA"), 3u);
  EXPECT_EQ(p.opcodes.at("MUFU.EX2"), 2u);
  // Two loops issue HGMMA: the tile loop 0x20-0xd0 and the kv loop 0x40-0xa0 in it; the forward branch to
  // .L_x_2 is no loop.
  ASSERT_EQ(p.loops.size(), 2u);
  EXPECT_EQ(p.loops[0].start, 0x20u);
  EXPECT_EQ(p.loops[0].end, 0xd0u);
  EXPECT_FALSE(p.loops[0].innermost);
  EXPECT_EQ(p.loops[1].start, 0x40u);
  EXPECT_EQ(p.loops[1].end, 0xa0u);
  EXPECT_TRUE(p.loops[1].innermost);
  EXPECT_EQ(p.loops[1].instructions, 7u);
  EXPECT_EQ(p.loops[1].counts.at("MUFU.EX2"), 2u);
  EXPECT_FALSE(p.loops[1].counts.count("BAR"));
  const std::string text = sass_profile_text(p);
  EXPECT_NE(text.find("loop 0040-00a0 (innermost: per kv tile)"), std::string::npos) << text;
  EXPECT_NE(text.find("MUFU.EX2\t2\t2\t2\n"), std::string::npos) << text;
}

TEST(SassProfile, HexBranchTargetsAndEmptyListings) {
  const SassProfile p = parse_sass("        /*0000*/  HGMMA.64x64x16.F32 R0, gdesc[UR4], R0 ;\n"
                                   "        /*0010*/  @P0 BRA 0x0 ;\n");
  ASSERT_EQ(p.loops.size(), 1u);
  EXPECT_EQ(p.loops[0].instructions, 2u);
  EXPECT_THROW(parse_sass("no code here\n"), std::invalid_argument);
  EXPECT_EQ(sass_class("SYNCS.ARRIVE.TRANS64.RED.A1T0"), "SYNCS");
  EXPECT_EQ(sass_class("UTMALDG.2D"), "UTMA");
  EXPECT_EQ(sass_class("IMAD.MOV.U32"), "other");
}

}  // namespace
}  // namespace attn
