// MUFU ex2 throughput: fp32 (ex2.approx.ftz.f32, one value an instruction) against f16x2 (ex2.approx.f16x2,
// two values an instruction). Prints values per ns for each; same launch, 8 independent chains a thread.
#include <cstdio>
#include <cuda_fp16.h>
__device__ __forceinline__ float e32(float x) { float y; asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
__device__ __forceinline__ unsigned e16(unsigned x) { unsigned y; asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(x)); return y; }
__global__ void b32(float* out, int n) {
  float a[8];
  for (int j = 0; j < 8; ++j) a[j] = -0.01f * (threadIdx.x % 7 + j);
  for (int i = 0; i < n; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = e32(a[j]) - 1.5f;
  float s = 0; for (int j = 0; j < 8; ++j) s += a[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void b16(float* out, int n) {
  unsigned a[8];
  const __half2 c = __floats2half2_rn(1.5f, 1.5f);
  for (int j = 0; j < 8; ++j) { __half2 h = __floats2half2_rn(-0.01f * (threadIdx.x % 7 + j), -0.02f * j); a[j] = *(unsigned*)&h; }
  for (int i = 0; i < n; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) { unsigned y = e16(a[j]); __half2 h = __hsub2(*(__half2*)&y, c); a[j] = *(unsigned*)&h; }
  float s = 0; for (int j = 0; j < 8; ++j) { __half2 h = *(__half2*)&a[j]; s += __low2float(h) + __high2float(h); }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
int main() {
  float* out; cudaMalloc(&out, 132 * 8 * 1024 * sizeof(float));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const int n = 4096, blocks = 132 * 8, threads = 256;
  for (int rep = 0; rep < 3; ++rep) {
    float ms32, ms16;
    b32<<<blocks, threads>>>(out, n); cudaEventRecord(e0); b32<<<blocks, threads>>>(out, n); cudaEventRecord(e1); cudaEventSynchronize(e1); cudaEventElapsedTime(&ms32, e0, e1);
    b16<<<blocks, threads>>>(out, n); cudaEventRecord(e0); b16<<<blocks, threads>>>(out, n); cudaEventRecord(e1); cudaEventSynchronize(e1); cudaEventElapsedTime(&ms16, e0, e1);
    const double inst = double(blocks) * threads * n * 8;
    printf("f32: %.3f ms, %.1f G instr/s, %.1f G values/s | f16x2: %.3f ms, %.1f G instr/s, %.1f G values/s\n", ms32, inst / ms32 / 1e6, inst / ms32 / 1e6, ms16, inst / ms16 / 1e6, 2 * inst / ms16 / 1e6);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
