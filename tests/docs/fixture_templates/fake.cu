// A template for the daemon's CPU tests (tests/daemon): it compiles with NVRTC like a real one, and its
// cubin carries its config in a symbol name (fake_cfg_A<A>_B<B>_F<F>) that tests/daemon/fake_worker.py
// reads to play a GPU: score from A and B, and the fault F asks for (see fake.json). F == 5 does not compile.
#ifndef A
#define A 1
#endif
#ifndef B
#define B 1
#endif
#ifndef F
#define F 0
#endif
#if F == 5
#error "deliberate compile error (F = 5)"
#endif
#define FAKE_MARK_(a, b, f) fake_cfg_A##a##_B##b##_F##f
#define FAKE_MARK(a, b, f) FAKE_MARK_(a, b, f)

extern "C" __device__ int FAKE_MARK(A, B, F) = 1;
extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};

extern "C" __global__ void block_sparse_attn_fwd(const void* q, const void* k, const void* v, const int* row_ptr,
                                                 const int* col_idx, const int* seq_lens, void* o, float* lse,
                                                 int batch_size, int num_heads, int t_max, int col_width) {}
