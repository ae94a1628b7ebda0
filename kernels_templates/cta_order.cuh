// The order in which CTAs take the work of the ABI's grid (t_max / BLOCK_M, heads, batch): the grid is
// fixed by kernels_templates/ABI.md, the kernel decides which (q tile, head, batch) each launched CTA does.
// The scheduler starts CTAs in linear index order, so the order decides which K/V blocks are live in L2
// together and which work lands in the last wave.
//   0: q tiles fastest (neighbouring q_blocks of one head share sliding-window K/V blocks)
//   1: heads fastest (CTAs in flight cover one q tile of many heads)
//   2: q tiles fastest, last q tile first (rows with the most keys start first)
#pragma once

template <int ORDER>
__device__ __forceinline__ void cta_work(int& q_tile, int& head, int& batch) {
  if constexpr (ORDER == 1) {
    const unsigned lin = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    head = int(lin % gridDim.y);
    const unsigned rest = lin / gridDim.y;
    q_tile = int(rest % gridDim.x);
    batch = int(rest / gridDim.x);
  } else {
    q_tile = ORDER == 2 ? int(gridDim.x - 1 - blockIdx.x) : int(blockIdx.x);
    head = int(blockIdx.y);
    batch = int(blockIdx.z);
  }
}
