// The rules of a timed sample's inputs and of the rows its check validates (docs/verification.md), one source
// for the device kernels (fill_normal.cu's xor_inputs_bf16, reference_fp32.cu's reference_rows_fp32) and the
// host (gpu/sample_inputs.cpp, gpu/sample_checks.cpp, the unit tests). Plain C++ with no includes, so that
// NVRTC and the host compiler read the same lines.
//
// A case's inputs during its timing are its tuning inputs XOR masks of two kinds, each keyed by a seed the
// worker draws (0: no mask):
// - the magnitude mask of seed m: per element a random sign and a random non-zero value in the low 4 mantissa
//   bits, so that every element changes (its magnitude by up to 15/128, its sign half of the time), none leaves
//   its binade (no inf or NaN appears) and the tensor stays N(0,1) (uniform bits over the whole 7-bit mantissa
//   would raise the second moment to 1.26); independent streams for q, k and v;
// - the sign mask of v, seed s: the sign of each element of v at random (q and k, and so every score, stay).
// Each is its own inverse (XOR), so the masks of any two states compose into one pass from the first to the
// second. Elements are handled in groups of 8 (16 bytes: one uint4 on the device), group g = elements
// 8g..8g+7 of the flat tensor; a group's XOR is 4 words of 2 bf16 each (element 2p in the low half of word p).
#pragma once

#if defined(__CUDACC__)
#define ATTN_SAMPLE_FN __host__ __device__ __forceinline__
#else
#define ATTN_SAMPLE_FN inline
#endif

namespace attn_sample {

/// splitmix64's step (Steele et al. 2014), the generator of every mask here and of fill_normal.cu.
ATTN_SAMPLE_FN unsigned long long splitmix64(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// The step between the hashes of consecutive groups (an odd constant, as fill_normal.cu's per element).
constexpr unsigned long long kGroupStep = 0xD1B54A32D192ED03ull;

/// The stream of tensor `tensor` (0 q, 1 k, 2 v) under magnitude seed `seed`: hash(stream + g * kGroupStep)
/// gives group g's 64 bits, one byte per element.
ATTN_SAMPLE_FN unsigned long long magnitude_stream(unsigned long long seed, unsigned tensor) {
  return splitmix64(seed ^ ((unsigned long long)tensor << 60) ^ 0xC3A5C85C97CB3127ull);
}

/// The stream of v's sign mask under seed `seed`: hash(stream + (g / 8) * kGroupStep) gives 64 bits for 8
/// groups, one bit per element.
ATTN_SAMPLE_FN unsigned long long sign_stream(unsigned long long seed) {
  return splitmix64(seed ^ 0x5851F42D4C957F2Dull);
}

/// The 16-bit XOR of one element from its byte b of the magnitude hash: sign bit 15 from b's bit 7, the low 4
/// mantissa bits from b's low 4 bits (1 where those are 0: never 0, so every element changes).
ATTN_SAMPLE_FN unsigned magnitude_xor(unsigned b) {
  const unsigned mant = (b & 0x0Fu) ? (b & 0x0Fu) : 1u;
  return ((b & 0x80u) << 8) | mant;
}

/// Adds (XOR) group g's magnitude mask of `stream` (magnitude_stream) to `m`.
ATTN_SAMPLE_FN void add_magnitude(unsigned long long stream, unsigned long long g, unsigned m[4]) {
  const unsigned long long h = splitmix64(stream + g * kGroupStep);
  for (int p = 0; p < 4; ++p)
    m[p] ^= magnitude_xor(unsigned(h >> (16 * p)) & 0xFFu) | (magnitude_xor(unsigned(h >> (16 * p + 8)) & 0xFFu) << 16);
}

/// Adds group g's sign mask of `stream` (sign_stream) to `m`: bit e of the group's byte flips element e's sign.
ATTN_SAMPLE_FN void add_signs(unsigned long long stream, unsigned long long g, unsigned m[4]) {
  const unsigned bits = unsigned(splitmix64(stream + (g / 8) * kGroupStep) >> (8 * (g % 8))) & 0xFFu;
  for (int p = 0; p < 4; ++p) m[p] ^= (((bits >> (2 * p)) & 1u) << 15) | (((bits >> (2 * p + 1)) & 1u) << 31);
}

/// Row `i` of the rows a sample check draws with `seed`: uniform over the valid rows of o, (b, h, p) with
/// p < seq_lens[b] (a padding row's value is known: the check scans all of them), as the flat row index
/// (b * heads + h) * t_max + p of o's [batch * heads * t_max] rows. Draws are independent (with
/// replacement), so a kernel that gets a share f of the valid rows wrong passes n draws with probability
/// (1 - f)^n. The modulo's bias is below 2^-40 for any case that fits on a GPU. seq_lens[b] in [1, t_max].
ATTN_SAMPLE_FN unsigned long long sampled_row(unsigned long long seed, unsigned i, const int* seq_lens, int batch,
                                              int heads, int t_max) {
  unsigned long long per_head = 0;
  for (int b = 0; b < batch; ++b) per_head += (unsigned long long)seq_lens[b];
  unsigned long long r =
      splitmix64(splitmix64(seed ^ 0x2545F4914F6CDD1Dull) + (unsigned long long)i * kGroupStep) % (per_head * heads);
  const unsigned long long h = r / per_head;
  r -= h * per_head;
  int b = 0;
  while (b + 1 < batch && r >= (unsigned long long)seq_lens[b]) r -= (unsigned long long)seq_lens[b++];
  return ((unsigned long long)b * heads + h) * (unsigned long long)t_max + r;
}

}  // namespace attn_sample
