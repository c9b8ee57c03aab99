/* The mode GEMM family on the GPU (see mode_gemm.h for the contract).
 *
 * acc32 (mult NULL or AMD_MODE_ACC32): cuBLAS SGEMM, TF32 off (default math),
 * row-major through the operand swap: C^T = op(B)^T op(A)^T in column-major.
 *
 * Every other mode: one SIMT kernel template per mode and operand layout
 * (mode_kernel<MODE, MI, LAYOUT>), whose arithmetic follows the mode's KIND
 * and M in src/mult/mode_list.h (ModeTraits; the launch switch instantiates
 * it for every mode of the list). LAYOUT (layout_of) says which operands are
 * stored with k contiguous, so that the loads and stores of a tile are
 * straight-line code (a runtime choice left both forms in the loop,
 * predicated).
 * - Block tile BM x 128 (BM = 128 or 64: MI = BM / 64), K step BK (16 for
 *   the MIT kinds, 8 for the others: ModeTraits::bk), 256 threads, each a
 *   (4 MI) x 8 register tile (rows ty*4+i and 64+ty*4+i, columns tx*4+j and
 *   64+tx*4+j, so operands are read as 128-bit words).
 * - Shared memory (dynamic): the mode's table, then two stages of
 *   [A enc | A mask | B enc | B mask], each plane BK rows of 132 uint32 (k-major,
 *   padded so that the transposing stores do not conflict), then per-warp
 *   exponent ranges for the fast-path check, then the threads' slots for
 *   their shares of the next tile pair.
 * - A thread's share of an operand tile is BM BK / 256 (A) or 128 BK / 256
 *   (B) floats, in pieces of up to 4 consecutive in memory (TileShare). The
 *   next tile pair travels into the slots by cp.async while the current one
 *   is computed (one 8- or 16-byte copy a piece where the operand is
 *   aligned, else float by float; a tile at the matrix's edge is read
 *   element by element after the products), so no register holds it during
 *   the inner loop; each thread then reads its own slots back and decodes
 *   its share once (the encodings below) into the other stage. Per K tile
 *   the block reduces the exponent range and the presence of Inf/NaN of its
 *   A and B tiles; when every product of the tile pair stays
 *   in the normal range (E(a) + E(b) in [128, 380], no Inf/NaN) the tile is
 *   stored encoded and runs the fast inner loop, otherwise it is stored raw
 *   and every product is the exact function of src/mult/products.h.
 * - Split-K for small grids: slice s of S writes its raw sums to a workspace
 *   [S][batch][M][N]; split_reduce adds the slices in order 0..S-1 (no
 *   atomics: bit-reproducible) and applies alpha and beta.
 * - Accumulation: __fadd_rn in k order, then C = alpha * sum (+ beta * C).
 * - Shapes that the large tile would mostly pad (fewer than 30% useful
 *   outputs: LeNet's convolutions, ResNet's first weight gradient) go to small_kernel, one output
 *   per thread in 8 x 32 tiles, the same fast and exact paths, split-K up to
 *   512.
 *
 * Fast encodings (notation of docs/multipliers.md; s sign, E biased
 * exponent, F fraction; mask = all ones for a normal operand, 0 for a zero or
 * subnormal one, so that its product adds +0; the sum starts at +0, so a -0
 * product would add nothing either):
 * - MIT (mit16, mit32, mit14, mbm12 = Mitchell on the forced-bit fractions):
 *   enc(a) = (s|E|F') - 127<<23, enc(b) = s|E|F'; product = enc(a) + enc(b).
 *   The large kernel's loop (compute_mit) spends two instructions a product,
 *   the integer add and an fp32 FMA that multiplies the product by a 1.0f /
 *   0.0f mask of the one side whose tile holds zeros (a zero's encoding keeps
 *   the sum finite), instead of masking the bits and adding: the same sums
 *   bit for bit, 1.3 to 1.4 times faster on the H100.
 * - MBM1 (am16, mbm14): the product depends on the fractions only through
 *   the sum of their kept bits above the forced one, h (6 or 4 bits).
 *   enc(a) = (s|E<<23) - 127<<23 + h<<7, enc(b) = s|E<<23 + h<<7; in
 *   x = enc(a) + enc(b) bits 7..13 hold idx = h(a) + h(b), so the low 16 bits
 *   of x (the sum of the operands' low 16 bits, formed once per operand and
 *   K step, plus the lane) are the byte offset of tab[idx] in a table
 *   replicated once per warp lane (no bank conflicts); tab[idx] =
 *   (carry<<23 | M) - idx<<7, product = x + tab[idx]. That is the small
 *   kernel's; the large kernel keeps only h<<7 and each operand's scale
 *   s|E<<23 (+-0 for a zero or subnormal), looks up the product of the
 *   significands 1.M * 2^carry at h(a) + h(b) and multiplies it by the
 *   product of the scales, fused into the fp32 add (exact in the fast range):
 *   four instructions a product, one of them an integer add.
 * - LUT (lut:FILE, m bits): enc(a) = (s|E<<23) - 127<<23 + i<<(m+2),
 *   enc(b) = s|E<<23 + j<<2 (i, j = the top m fraction bits); the low 16 bits
 *   of x are the byte offset of tab[idx] = (carry<<23 | M) - idx<<2 (one copy
 *   of 4^m words; lookups may conflict).
 * - MBM23 (am32), large tile: the significand V, already scaled by b's sign
 *   and exponent, from one fp32 FMA rounded toward zero and one integer
 *   add-and-max (VIADDMNMX), then the FMA that scales it by a's and adds it:
 *   three instructions a product, two more where the corner is possible (see
 *   compute_fast_am32); three A planes (alpha, gamma, scale) and four B planes
 *   (scale, beta * scale, beta's bits + the scale's exponent offset, the
 *   corner's bound) instead of (enc, mask). Small tile: the MIT encoding with
 *   F, plus the correction d = clamp((K + ONE - S) >> 1, K/2, K), or 0 in the
 *   corner S >= 2 ONE - K/2 (K = 0xA0000, S = F(a) + F(b)).
 * - acc16: enc = T16(x) as a float; product = T16(a * b) (one IEEE multiply,
 *   a NaN stays a NaN). No range check (IEEE arithmetic).
 * - fp16: enc = half(x) as a float; the products are packed half multiplies
 *   (correctly rounded binary16, subnormals and overflow included), converted
 *   back to fp32. No range check.
 *
 * The fast tier of am16 and mbm14 (amd_cuda_gemm_set_tier, the default; the
 * identity is in docs/multipliers.md section 8), on the large tile:
 * tier_extend writes each operand's correction operands in bf16 (J = 3
 * blocks of K for am16, 1 for mbm14) and the range words; cuBLAS sums the
 * correction terms on tensor cores into a workspace; then mode_kernel runs as
 * a pseudo mode (TIER_AM16, TIER_MBM14: MIT on the forced-bit fractions) and
 * adds the correction to its sums, or, when the range words say that a pair
 * leaves the fast range (or an operand is Inf/NaN), takes the exact path for
 * every tile and ignores it. */
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "mode_gemm.h"

extern "C" {
#include "../src/mult/products.h"
}

extern "C" int amd_cuda_debug_sync = 0;

namespace {

/* The K tile's depth BK is the mode's (ModeTraits::bk); a plane holds BK
 * rows of LDS words */
constexpr int BN = 128, NT = 256, LDS = 132; /* LDS: padded row of a plane */
constexpr int MAX_SPLIT = 128;
constexpr uint32_t MBM23_K0 = 0xA0000u, MBM23_K1 = 0x50000u;
constexpr int MBM1_TAB_WORDS = 128 * 32; /* one MBM1 table, replicated per lane */

/* Everything a launch needs (by value). */
struct Params {
  int M, N, K; /* K: whole depth */
  int kslice;  /* depth of one split-K slice (multiple of the mode's BK) */
  int splits;  /* S */
  int batch;
  int trans_a, trans_b;
  float alpha, beta;
  const float *A, *B;
  int64_t lda, ldb, sa, sb;
  float *C;
  int64_t ldc, sc;
  float *ws;                 /* split-K partial sums, [S][batch][M][N], or NULL */
  const uint32_t *tab;       /* the mode's table for this kernel (device), or NULL */
  const uint32_t *tab_small; /* MBM1: the small kernel's table (the large one's is scaled) */
  int tab_words;             /* words of tab to copy into shared memory */
  const uint8_t *lut;        /* lut: the raw byte table (exact path) */
  int lut_bits;              /* m of lut: */
  const float *corr;         /* fast tier: the correction sums, [batch][M][N], or NULL */
  const uint32_t *range;     /* fast tier: the operands' range words (see range_ok) */
  int vec_a, vec_b;          /* large tile: the operand allows its tile share's wide loads (see load_tile) */
};

/* ---- per-mode arithmetic ------------------------------------------------ */

/* The kind and fraction width of every mode (src/mult/mode_list.h), by enum
 * value (the list's order is the enum's). */
struct ModeRow {
  amd_mode_kind kind;
  int m;
};
#define AMD_MODE_ROW(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY) {KIND, M},
constexpr ModeRow mode_rows[AMD_MODE_COUNT] = {AMD_MODE_LIST(AMD_MODE_ROW)};
#undef AMD_MODE_ROW

/* The fast tier's Mitchell kernels (see the file comment): pseudo modes after
 * the list, MIT on the forced-bit fractions of am16 (MBM_7) and mbm14
 * (MBM_5), whose exact path (a GEMM outside the fast range) is the real
 * mode's. */
constexpr int TIER_AM16 = AMD_MODE_COUNT, TIER_MBM14 = AMD_MODE_COUNT + 1;
constexpr ModeRow row_of(int mode) {
  return mode == TIER_AM16    ? ModeRow{AMD_KIND_MIT_FORCED, 7}
         : mode == TIER_MBM14 ? ModeRow{AMD_KIND_MIT_FORCED, 5}
                              : mode_rows[mode];
}
constexpr int exact_mode_of(int mode) {
  return mode == TIER_AM16 ? AMD_MODE_AM16 : mode == TIER_MBM14 ? AMD_MODE_MBM14 : mode;
}

template <int MODE> struct ModeTraits {
  static constexpr amd_mode_kind kind = row_of(MODE).kind;
  static constexpr int m = row_of(MODE).m; /* kept fraction bits (lut: 0, the table's m at run time) */
  /* a fast tier's Mitchell part: adds the correction sums of Params::corr */
  static constexpr bool tier = MODE >= AMD_MODE_COUNT;
  static constexpr bool check = kind != AMD_KIND_ACC16 && kind != AMD_KIND_FP16;
  static constexpr bool masks = check;
  static constexpr bool mbm1 = kind == AMD_KIND_MBM;
  static constexpr bool lut = kind == AMD_KIND_LUT;
  /* MIT kinds: the fast path masks zeros in the fp32 FMA (see compute_mit) */
  static constexpr bool mit = kind == AMD_KIND_MIT || kind == AMD_KIND_MIT_FORCED;
  static constexpr bool table = mbm1 || lut;
  /* MBM_23 (am32) in the large kernel: the product as a scaled significand
   * (see the file comment), three A planes and four B planes per stage */
  static constexpr bool scaled = kind == AMD_KIND_MBM23;
  static constexpr int a_planes = scaled ? 3 : 2;
  static constexpr int b_planes = scaled ? 4 : 2;
  static constexpr int planes = a_planes + b_planes; /* per stage */
  /* MIT_FORCED: the forced bit of MBM_m without correction */
  static constexpr uint32_t forced = kind == AMD_KIND_MIT_FORCED ? 1u << (23 - m) : 0u;
  /* the K tile's depth: 16 halves the per-tile work (barrier, decision, loop)
   * a product, which pays for the MIT kinds; acc16, fp16, am32 and the table
   * kinds measured slower at 16 (docs/gpu.md, "The tile depth per mode") */
  static constexpr int bk = mit ? 16 : 8;
  /* blocks of the 64-row kernel an SM must be able to hold (__launch_bounds__):
   * 3 (at most 85 registers a thread, 6 warps a scheduler) measured faster for
   * am32 (+3 to +12%) and fp16 (+7 to +14%), slower for acc16 (docs/gpu.md,
   * "Three blocks an SM"); the others keep 2 */
  static constexpr int blocks64 = scaled || kind == AMD_KIND_FP16 ? 3 : 2;
};

/* The kept fraction F' of the Mitchell-style kinds (MIT: F & T_m; MIT_FORCED
 * with the forced bit; MBM23: F). */
template <int MODE> __device__ __forceinline__ uint32_t mit_frac(uint32_t u) {
  return (u & amd_prod_topmask(ModeTraits<MODE>::m)) | ModeTraits<MODE>::forced;
}

/* MBM1's h (see the file comment). */
template <int MODE> __device__ __forceinline__ uint32_t mbm1_h(uint32_t u) {
  /* the m - 1 kept bits above the forced one */
  constexpr int m = ModeTraits<MODE>::m;
  return (u >> (24 - m)) & ((1u << (m - 1)) - 1u);
}

/* Fast encoding of an A (first) or B (second) operand. */
template <int MODE, bool IS_A> __device__ __forceinline__ uint32_t encode(uint32_t u, int m) {
  const uint32_t se = u & 0xFF800000u, off = IS_A ? (127u << 23) : 0u;
  if constexpr (ModeTraits<MODE>::kind == AMD_KIND_ACC16) return amd_t16_bits(u);
  if constexpr (ModeTraits<MODE>::kind == AMD_KIND_FP16) return amd_round_half_bits(u);
  if constexpr (ModeTraits<MODE>::mbm1) return se - off + (mbm1_h<MODE>(u) << 7);
  if constexpr (ModeTraits<MODE>::lut) {
    const uint32_t f = (u & AMD_PROD_FRAC) >> (23 - m);
    return se - off + (f << (IS_A ? m + 2 : 2));
  }
  return (se | mit_frac<MODE>(u)) - off; /* MIT kinds, MBM23 */
}

/* The exact product (the shared scalar code), on bit patterns. */
#define AMD_MODE_EXACT(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY)                                 \
  case ID:                                                                                                   \
    return AMD_MODE_CALL_##ARGS(BITS, a, b, lut, m);
template <int MODE>
__device__ __forceinline__ uint32_t exact_prod(uint32_t a, uint32_t b, const uint8_t *lut, int m) {
  switch (exact_mode_of(MODE)) { AMD_MODE_LIST(AMD_MODE_EXACT) }
  return 0;
}
#undef AMD_MODE_EXACT

__device__ __forceinline__ float fadd(float a, float b) { return __fadd_rn(a, b); }

/* The share of an R x BK operand tile that one thread loads and stores: N =
 * R BK / 256 elements in P pieces of PW = min(N, 4) elements consecutive in
 * memory, so that a tile inside the matrix is read with one 8- or 16-byte
 * load a piece. Piece p of thread t is number L = p 256 + t of the tile.
 * - Not kc (X[k*ld + r]): depth k = L / (R / PW), rows r .. r + PW - 1 with
 *   r = L % (R / PW) PW; stored with one PW-wide store a plane.
 * - kc (the tile stored with k contiguous, X[r*ld + k]), depths k .. k + PW -
 *   1 of one row r. At BK = 8 (one piece): per_k = BK / PW threads a row,
 *   r = t / per_k, k = t % per_k PW. At BK = 16 a warp takes 32 rows at one
 *   depth (WARP_ROWS: the 32 lanes' scalar stores fall on 32 banks, where two
 *   threads of one row 8 depths apart would share one): warp piece w = L /
 *   32 of the R / 32 row groups and BK / PW depth groups, r = w % (R / 32) 32
 *   + lane, k = w / (R / 32) PW.
 * The slots of the next tile's pieces (cp_share) are interleaved by piece:
 * piece p of thread t at word (p 256 + t) PW, so that a warp's copies and
 * reads of a piece are consecutive. At BK = 8 a share is one piece of
 * R / 32 floats, with the mapping and slots the kernels had before the depth
 * became the mode's. */
template <int R, int BK> struct TileShare {
  static constexpr int N = R * BK / NT;
  static constexpr int PW = N < 4 ? N : 4;
  static constexpr int P = N / PW;
  static_assert(PW == 2 || PW == 4, "pieces of 2 or 4 floats");
  static constexpr bool WARP_ROWS = BK > 8;
  static constexpr int per_k = BK / PW; /* kc, BK = 8: threads per row */
};
/* (unsigned arithmetic: divisions by powers of two are shifts) */
template <int R, int BK, bool KC> __device__ __forceinline__ int tile_k(int piece) {
  using S = TileShare<R, BK>;
  const unsigned L = (unsigned)piece * NT + threadIdx.x;
  if constexpr (!KC) return (int)(L / (R / S::PW));
  if constexpr (S::WARP_ROWS) return (int)((L / 32) / (R / 32) * S::PW);
  return (int)(threadIdx.x % S::per_k) * S::PW;
}
template <int R, int BK, bool KC> __device__ __forceinline__ int tile_r(int piece) {
  using S = TileShare<R, BK>;
  const unsigned L = (unsigned)piece * NT + threadIdx.x;
  if constexpr (!KC) return (int)(L % (R / S::PW) * S::PW);
  if constexpr (S::WARP_ROWS) return (int)((L / 32) % (R / 32) * 32 + L % 32);
  return (int)(threadIdx.x / S::per_k);
}

/* The first element of piece p of this thread's share of the R x BK operand
 * tile at rows r0.., depths k0.. (see TileShare). */
template <int R, int BK, bool KC>
__device__ __forceinline__ const float *tile_src(const float *X, int64_t ld, int r0, int k0, int piece) {
  const int k = tile_k<R, BK, KC>(piece), r = tile_r<R, BK, KC>(piece);
  return KC ? X + (int64_t)(r0 + r) * ld + (k0 + k) : X + (int64_t)(k0 + k) * ld + (r0 + r);
}

/* Whether a tile lies inside the matrix. */
template <int R, int BK> __device__ __forceinline__ bool tile_inside(int rows, int r0, int k0, int kend) {
  return r0 + R <= rows && k0 + BK <= kend;
}

/* Starts the copy of one piece of this thread's share of a tile inside the
 * matrix into its slot of shared memory (cp.async: the data travels while
 * the kernel computes, with no register held; only this thread reads the
 * slot, after cp_wait). vec: in one access (the operand allows it: aligned
 * pointer, leading dimension and batch stride), else float by float. */
template <int W> __device__ __forceinline__ void cp_share(uint32_t *slot, const float *src, bool vec) {
  const unsigned dst = (unsigned)__cvta_generic_to_shared(slot);
  if (!vec) {
#pragma unroll
    for (int q = 0; q < W; q++)
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst + 4 * q), "l"(src + q));
  } else if constexpr (W == 4) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src));
  }
}
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

/* Starts the copies of every piece of this thread's share (slot: its first
 * piece's; see TileShare for the interleaving). */
template <int R, int BK, bool KC>
__device__ __forceinline__ void cp_tile(uint32_t *slot, const float *X, int64_t ld, int r0, int k0, bool vec) {
  using S = TileShare<R, BK>;
#pragma unroll
  for (int p = 0; p < S::P; p++) cp_share<S::PW>(slot + p * NT * S::PW, tile_src<R, BK, KC>(X, ld, r0, k0, p), vec);
}

/* Reads piece `piece` of a share (PW consecutive words: from its slot, or
 * from the operand) in one access into v; p is aligned to 4 PW bytes. */
template <int PW, int N>
__device__ __forceinline__ void read_share(const void *p, uint32_t (&v)[N], int piece) {
  if constexpr (PW == 4) {
    const uint4 w = *reinterpret_cast<const uint4 *>(p);
    v[piece * 4] = w.x, v[piece * 4 + 1] = w.y, v[piece * 4 + 2] = w.z, v[piece * 4 + 3] = w.w;
  } else {
    const uint2 w = *reinterpret_cast<const uint2 *>(p);
    v[piece * 2] = w.x, v[piece * 2 + 1] = w.y;
  }
}

/* Reads this thread's share back from its slots (after cp_wait). */
template <int R, int BK> __device__ __forceinline__ void read_slots(const uint32_t *slot, uint32_t (&v)[R * BK / NT]) {
  using S = TileShare<R, BK>;
#pragma unroll
  for (int p = 0; p < S::P; p++) read_share<S::PW>(slot + p * NT * S::PW, v, p);
}

/* Loads this thread's share of a tile element by element (a tile at the
 * matrix's edge, or an operand without wide copies): zeros past K (they are
 * summed); a row beyond the matrix: 0, or with ONE (the MIT kinds) 1.0,
 * which only the outputs that are not written read (so that it does not
 * count as a zero for compute_mit). */
template <int R, int BK, bool ONE, bool KC>
__device__ __forceinline__ void load_share(const float *X, int64_t ld, int rows, int r0, int k0, int kend,
                                           uint32_t (&v)[R * BK / NT]) {
  using S = TileShare<R, BK>;
#pragma unroll
  for (int p = 0; p < S::P; p++) {
    const int k = tile_k<R, BK, KC>(p), r = tile_r<R, BK, KC>(p);
    const float *src = tile_src<R, BK, KC>(X, ld, r0, k0, p);
#pragma unroll
    for (int q = 0; q < S::PW; q++) {
      const int gr = r0 + r + (KC ? 0 : q), gk = k0 + k + (KC ? q : 0);
      float x = ONE && gk < kend ? 1.0f : 0.0f;
      if (gr < rows && gk < kend) x = src[q];
      v[p * S::PW + q] = __float_as_uint(x);
    }
  }
}

/* Loads this thread's share of a tile now (the first tile of a slice). */
template <int R, int BK, bool ONE, bool KC>
__device__ __forceinline__ void load_tile(const float *X, int64_t ld, bool vec, int rows, int r0, int k0,
                                          int kend, uint32_t (&v)[R * BK / NT]) {
  using S = TileShare<R, BK>;
  if (vec && tile_inside<R, BK>(rows, r0, k0, kend)) {
#pragma unroll
    for (int p = 0; p < S::P; p++) read_share<S::PW>(tile_src<R, BK, KC>(X, ld, r0, k0, p), v, p);
  } else {
    load_share<R, BK, ONE, KC>(X, ld, rows, r0, k0, kend, v);
  }
}

/* The exponent statistics of a tile that decide its path, over the bits e =
 * u & 0x7F800000 of its values: hi = max e (0x7F800000: an Inf or NaN),
 * lo = min (e - 2^23) as unsigned (the smallest normal exponent less one;
 * zeros and subnormals wrap to 0xFF800000 and never win), zmin = min e (0: a
 * zero or subnormal is present). Identities: lo, zmin = ~0u, hi = 0. */
constexpr uint32_t EXP_BITS = 0x7F800000u, EXP_ONE = 0x00800000u, NO_NORMAL = 0xFF800000u;
template <int NV>
__device__ __forceinline__ void tile_stats(const uint32_t (&v)[NV], uint32_t &lo, uint32_t &hi,
                                           uint32_t &zmin) {
#pragma unroll
  for (int q = 0; q < NV; q++) {
    const uint32_t e = v[q] & EXP_BITS;
    hi = max(hi, e);
    zmin = min(zmin, e);
    lo = min(lo, e - EXP_ONE);
  }
}

/* 1 when one of v is a zero or a subnormal (the MIT kinds' fast path needs
 * to know which side holds zeros). */
template <int NV> __device__ __forceinline__ uint32_t any_zero(const uint32_t (&v)[NV]) {
  uint32_t z = ~0u;
#pragma unroll
  for (int q = 0; q < NV; q++) z = min(z, v[q] & EXP_BITS);
  return z == 0u;
}

/* The fast encodings (or, !FAST, the raw bits) of one operand value, one
 * word for each of the mode's planes of that operand (see store_share). */
template <int MODE, bool IS_A> struct PlaneWords {
  static constexpr int n = IS_A ? ModeTraits<MODE>::a_planes : ModeTraits<MODE>::b_planes;
};
template <int MODE, bool IS_A, bool FAST>
__device__ __forceinline__ void plane_words(uint32_t u, int m, uint32_t (&w)[PlaneWords<MODE, IS_A>::n]) {
  if constexpr (ModeTraits<MODE>::scaled) {
    /* A: alpha, gamma, scale; B: scale, beta * scale, beta's bits + the
     * scale's sign and exponent offset, the corner's bound ONE<<1 - f (see
     * compute_fast_am32; the raw bits in the first plane on the exact path) */
    const uint32_t f = u & AMD_PROD_FRAC, scale = u & 0xFF800000u; /* +-0 for a zero or subnormal */
    if constexpr (!FAST) {
      w[0] = u;
#pragma unroll
      for (int q = 1; q < PlaneWords<MODE, IS_A>::n; q++) w[q] = 0u;
    } else if constexpr (IS_A) {
      w[0] = __float_as_uint(__fmul_rn(__uint2float_rn(MBM23_K0 + f), 0x1p-23f)); /* exact */
      w[1] = MBM23_K1 + f;
      w[2] = scale;
    } else if ((u & EXP_BITS) == 0u) {
      /* a zero or subnormal b: t1 = +0 (+0 * alpha + +0), t2 < 0 as an int for
       * every gamma, so V = +0; no corner */
      w[0] = 0u;
      w[1] = 0u;
      w[2] = 0x80000000u;
      w[3] = 0x7FFFFFFFu;
    } else {
      const uint32_t beta = 0x3F800000u | f;
      w[0] = scale;
      w[1] = __float_as_uint(__fmul_rn(__uint_as_float(beta), __uint_as_float(scale))); /* exact */
      w[2] = beta + scale - (127u << 23);
      w[3] = (AMD_PROD_ONE << 1) - f;
    }
  } else if constexpr (ModeTraits<MODE>::mbm1) {
    /* the table offset of h, and the scale s|E<<23 (+-0 for a zero or subnormal) */
    w[0] = FAST ? mbm1_h<MODE>(u) << 7 : u;
    w[1] = u & 0xFF800000u;
  } else if constexpr (ModeTraits<MODE>::mit) {
    /* a zero or subnormal operand: an encoding whose sum with the other
     * operand's stays finite (A: 0, so the sum is b'; B: 1.0's bits, so it
     * is a'), and the mask 0.0f that compute_mit multiplies it by */
    const bool zero = (u & EXP_BITS) == 0u;
    w[0] = !FAST ? u : zero ? (IS_A ? 0u : 0x3F800000u) : encode<MODE, IS_A>(u, m);
    w[1] = zero ? 0u : 0x3F800000u;
  } else {
    if constexpr (ModeTraits<MODE>::kind == AMD_KIND_FP16 && IS_A && FAST) {
      /* fp16's A on the fast path: the rounded half twice, as the half2 that
       * compute_fast multiplies by B's pairs (converted here once a tile, not
       * once a k step; the half of the rounded value is exact) */
      const uint16_t h = __half_as_ushort(__float2half_rn(__uint_as_float(encode<MODE, IS_A>(u, m))));
      w[0] = (uint32_t)h * 0x10001u;
    } else {
      w[0] = FAST ? encode<MODE, IS_A>(u, m) : u;
    }
    w[1] = (u & EXP_BITS) ? 0xFFFFFFFFu : 0u; /* read only by the kinds with masks */
  }
}

/* Decodes (fast: encodes, else keeps the raw bits) this thread's share of
 * one operand tile into its planes (BK LDS words apart from planes[0]). */
template <int MODE, bool IS_A, int R, bool KC, bool FAST>
__device__ __forceinline__ void store_share(uint32_t *planes, const uint32_t (&v)[R * ModeTraits<MODE>::bk / NT],
                                            int m) {
  constexpr int BK = ModeTraits<MODE>::bk, PLANE = BK * LDS;
  using S = TileShare<R, BK>;
  constexpr int PW = S::PW, NP = PlaneWords<MODE, IS_A>::n;
  constexpr int stored = ModeTraits<MODE>::masks ? NP : 1; /* planes that the kernel reads */
#pragma unroll
  for (int p = 0; p < S::P; p++) {
    uint32_t w[PW][NP];
#pragma unroll
    for (int q = 0; q < PW; q++) plane_words<MODE, IS_A, FAST>(v[p * PW + q], m, w[q]);
    uint32_t *dst = planes + tile_k<R, BK, KC>(p) * LDS + tile_r<R, BK, KC>(p);
#pragma unroll
    for (int j = 0; j < stored; j++) {
      if constexpr (KC) {
#pragma unroll
        for (int q = 0; q < PW; q++) dst[j * PLANE + q * LDS] = w[q][j];
      } else if constexpr (PW == 4) {
        *reinterpret_cast<uint4 *>(dst + j * PLANE) = make_uint4(w[0][j], w[1][j], w[2][j], w[3][j]);
      } else {
        *reinterpret_cast<uint2 *>(dst + j * PLANE) = make_uint2(w[0][j], w[1][j]);
      }
    }
  }
}

/* Stores this thread's shares of a tile pair into a stage (see store_share),
 * encoded on the fast path, raw on the exact one. */
template <int MODE, int BM, bool KCA, bool KCB>
__device__ __forceinline__ void store_tiles(uint32_t *stage, const uint32_t (&va)[BM * ModeTraits<MODE>::bk / NT],
                                            const uint32_t (&vb)[BN * ModeTraits<MODE>::bk / NT], bool fast,
                                            int m) {
  constexpr int BOFF = ModeTraits<MODE>::a_planes * ModeTraits<MODE>::bk * LDS;
  if (fast) {
    store_share<MODE, true, BM, KCA, true>(stage, va, m);
    store_share<MODE, false, BN, KCB, true>(stage + BOFF, vb, m);
  } else {
    store_share<MODE, true, BM, KCA, false>(stage, va, m);
    store_share<MODE, false, BN, KCB, false>(stage + BOFF, vb, m);
  }
}

/* Reads 4 consecutive uint32 of shared memory. */
__device__ __forceinline__ void lds4(const uint32_t *p, uint32_t *out) {
  const uint4 w = *reinterpret_cast<const uint4 *>(p);
  out[0] = w.x;
  out[1] = w.y;
  out[2] = w.z;
  out[3] = w.w;
}

/* One stage's BK steps, fast path. B is taken in two halves of 4 columns
 * (columns tx*4+j, then 64+tx*4+j) to keep fewer operands live. */
template <int MODE, int MI>
__device__ __forceinline__ void compute_fast(const uint32_t *st, const uint32_t *tabs,
                                             float (&acc)[4 * MI][8], uint32_t lane4) {
  constexpr int BK = ModeTraits<MODE>::bk, PLANE = BK * LDS;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const uint32_t *Ae = st, *Am = st + PLANE, *Be = st + 2 * PLANE, *Bm = st + 3 * PLANE;
  const char *tb = reinterpret_cast<const char *>(tabs);
#pragma unroll
  for (int k = 0; k < BK; k++) {
    uint32_t ea[4 * MI], ma[4 * MI];
#pragma unroll
    for (int h = 0; h < MI; h++) lds4(Ae + k * LDS + h * 64 + ty * 4, ea + 4 * h);
    if (ModeTraits<MODE>::masks)
#pragma unroll
      for (int h = 0; h < MI; h++) lds4(Am + k * LDS + h * 64 + ty * 4, ma + 4 * h);
    /* table kinds: the byte offsets of the lookups split into an A part (with
     * this lane's column of the replicated MBM1 table) and a B part, so that a
     * product is offset = ia + ib, lookup, r = ea + eb + t (three-input add) */
    uint32_t ia[4 * MI];
    if (ModeTraits<MODE>::table)
#pragma unroll
      for (int i = 0; i < 4 * MI; i++) ia[i] = (ea[i] & 0xFFFFu) | (ModeTraits<MODE>::mbm1 ? lane4 : 0u);
#pragma unroll
    for (int jh = 0; jh < 2; jh++) {
      uint32_t eb[4], mb[4];
      lds4(Be + k * LDS + jh * 64 + tx * 4, eb);
      if (ModeTraits<MODE>::masks) lds4(Bm + k * LDS + jh * 64 + tx * 4, mb);
      float(*ac)[8] = acc;
      const int j0 = jh * 4;
      if (ModeTraits<MODE>::kind == AMD_KIND_FP16) {
        const __half2 b01 = __floats2half2_rn(__uint_as_float(eb[0]), __uint_as_float(eb[1]));
        const __half2 b23 = __floats2half2_rn(__uint_as_float(eb[2]), __uint_as_float(eb[3]));
#pragma unroll
        for (int i = 0; i < 4 * MI; i++) {
          const __half2 a2 = *reinterpret_cast<const __half2 *>(&ea[i]); /* a's half twice: plane_words */
          const float2 p0 = __half22float2(__hmul2(a2, b01)), p1 = __half22float2(__hmul2(a2, b23));
          ac[i][j0 + 0] = fadd(ac[i][j0 + 0], p0.x);
          ac[i][j0 + 1] = fadd(ac[i][j0 + 1], p0.y);
          ac[i][j0 + 2] = fadd(ac[i][j0 + 2], p1.x);
          ac[i][j0 + 3] = fadd(ac[i][j0 + 3], p1.y);
        }
      } else if (ModeTraits<MODE>::kind == AMD_KIND_ACC16) {
#pragma unroll
        for (int i = 0; i < 4 * MI; i++)
#pragma unroll
          for (int j = 0; j < 4; j++) {
            const float p = __fmul_rn(__uint_as_float(ea[i]), __uint_as_float(eb[j]));
            ac[i][j0 + j] = fadd(ac[i][j0 + j], __uint_as_float(__float_as_uint(p) & 0xFFFF0000u));
          }
      } else if (ModeTraits<MODE>::table) {
        uint32_t ib[4];
#pragma unroll
        for (int j = 0; j < 4; j++) ib[j] = eb[j] & 0xFFFFu;
#pragma unroll
        for (int i = 0; i < 4 * MI; i++)
#pragma unroll
          for (int j = 0; j < 4; j++) {
            const uint32_t t = *reinterpret_cast<const uint32_t *>(tb + (ia[i] + ib[j]));
            if (ModeTraits<MODE>::mbm1) {
              /* t = the product of the significands, 1.M * 2^carry; times the
               * scales, exactly (fast range), fused into the fp32 add */
              const float sab = __fmul_rn(__uint_as_float(ma[i]), __uint_as_float(mb[j]));
              ac[i][j0 + j] = __fmaf_rn(__uint_as_float(t), sab, ac[i][j0 + j]);
            } else {
              const uint32_t r = ea[i] + eb[j] + t;
              ac[i][j0 + j] = fadd(ac[i][j0 + j], __uint_as_float(r & ma[i] & mb[j]));
            }
          }
      } else { /* MIT kinds */
#pragma unroll
        for (int i = 0; i < 4 * MI; i++)
#pragma unroll
          for (int j = 0; j < 4; j++)
            ac[i][j0 + j] = fadd(ac[i][j0 + j], __uint_as_float((ea[i] + eb[j]) & ma[i] & mb[j]));
      }
    }
  }
}

/* One stage's BK steps of a MIT kind, fast path: two instructions a
 * product, the integer add of the encodings and an fp32 FMA that multiplies
 * the sum by the mask of the side that may hold zeros (1.0f, or 0.0f for a
 * zero or subnormal operand, whose encoding keeps the sum finite: see
 * store_tile), so that a zero product adds +-0 and every other one adds
 * itself: the same fp32 sums as fadd(acc, (ea + eb) & masks), bit for bit.
 * ZSIDE: 1 only B's tile holds zeros (or neither), 2 only A's, 3 both (then
 * the product is first multiplied by A's mask: three instructions). */
template <int MI, int BK, int ZSIDE>
__device__ __forceinline__ void compute_mit(const uint32_t *st, float (&acc)[4 * MI][8]) {
  constexpr int PLANE = BK * LDS;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const uint32_t *Ae = st, *Am = st + PLANE, *Be = st + 2 * PLANE, *Bm = st + 3 * PLANE;
#pragma unroll
  for (int k = 0; k < BK; k++) {
    uint32_t ea[4 * MI], ma[4 * MI];
#pragma unroll
    for (int h = 0; h < MI; h++) lds4(Ae + k * LDS + h * 64 + ty * 4, ea + 4 * h);
    if (ZSIDE & 2)
#pragma unroll
      for (int h = 0; h < MI; h++) lds4(Am + k * LDS + h * 64 + ty * 4, ma + 4 * h);
#pragma unroll
    for (int jh = 0; jh < 2; jh++) {
      uint32_t eb[4], mb[4];
      lds4(Be + k * LDS + jh * 64 + tx * 4, eb);
      if (ZSIDE & 1) lds4(Bm + k * LDS + jh * 64 + tx * 4, mb);
#pragma unroll
      for (int i = 0; i < 4 * MI; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const float x = __uint_as_float(ea[i] + eb[j]);
          float &a = acc[i][jh * 4 + j];
          if (ZSIDE == 1) a = __fmaf_rn(x, __uint_as_float(mb[j]), a);
          if (ZSIDE == 2) a = __fmaf_rn(x, __uint_as_float(ma[i]), a);
          if (ZSIDE == 3) a = __fmaf_rn(__fmul_rn(x, __uint_as_float(ma[i])), __uint_as_float(mb[j]), a);
        }
    }
  }
}

/* The am32 products of one k step against 4 B columns, accumulated (see
 * compute_fast_am32). CORNER: some pair may reach the corner of section 3. */
template <int MI, bool CORNER>
__device__ __forceinline__ void am32_step(const uint32_t (&al)[4 * MI], const uint32_t (&ga)[4 * MI],
                                          const uint32_t (&sa)[4 * MI], const uint32_t (&sb)[4],
                                          const uint32_t (&bs)[4], const uint32_t (&b2)[4],
                                          const uint32_t (&cb)[4], float (&acc)[4 * MI][8], int j0) {
#pragma unroll
  for (int i = 0; i < 4 * MI; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const float t1 = __fmaf_rz(__uint_as_float(al[i]), __uint_as_float(sb[j]), __uint_as_float(bs[j]));
      int32_t v = __viaddmax_s32((int32_t)ga[i], (int32_t)b2[j], __float_as_int(t1));
      if (CORNER && (int32_t)ga[i] >= (int32_t)cb[j]) v -= (int32_t)MBM23_K1;
      acc[i][j0 + j] = __fmaf_rn(__int_as_float(v), __uint_as_float(sa[i]), acc[i][j0 + j]);
    }
}

/* One stage's BK steps of am32, fast path. In units of 1/ONE the product's
 * significand (1.M, doubled by the carry) is V = max(t1, t2) outside the
 * corner, with t1 = alpha + beta rounded toward zero (alpha = (K + F(a)) /
 * ONE, beta = 1 + F(b) / ONE) and t2 the bits gamma + beta (gamma = K/2 +
 * F(a)): the float 2S + K where S + K/2 >= ONE, a float below t1 otherwise;
 * in the corner (t2 >= 4.0f) V = 2S, the bits t2 - K/2 (the CPU's
 * KIND_MBM23X, src/gemm/gemm.c). The product is V * scale(b) * scale(a),
 * scale = s|E<<23 as a float. Here both t1 and t2 come out already
 * multiplied by scale(b), which is exact inside the fast range (E(b) <= 253:
 * tile_fast) and keeps their order as signed integers (both carry b's sign,
 * and the bits of a negative float grow with its magnitude as an int32):
 * t1 as one FMA rounding toward zero, alpha * scale(b) + beta * scale(b),
 * and t2 as gamma + (beta's bits + b's sign and exponent offset), an integer
 * add fused with the max (VIADDMNMX). The corner is gamma >= 2 ONE - F(b)
 * (the fourth B plane), where t2 > t1 always, so V is the max less K/2.
 * Then V * scale(a) is fused into the accumulation (exact inside the fast
 * range): the sum is the fp32 add of the exact product, the same bits as
 * the two-scale form. A zero or subnormal b has the planes +0, +0, INT_MIN
 * and INT_MAX (V = +0, no corner); a zero or subnormal a has scale +-0, and
 * V * +-0 adds nothing to a sum that is never -0. The corner compare runs
 * only at the k where this warp's largest gamma can reach one of its B
 * columns' bounds. */
template <int MI, int BK>
__device__ __forceinline__ void compute_fast_am32(const uint32_t *st, float (&acc)[4 * MI][8]) {
  constexpr int PLANE = BK * LDS;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const uint32_t *Aal = st, *Aga = st + PLANE, *Asc = st + 2 * PLANE, *Bsc = st + 3 * PLANE,
                 *Bbs = st + 4 * PLANE, *Bb2 = st + 5 * PLANE, *Bcb = st + 6 * PLANE;
#pragma unroll
  for (int k = 0; k < BK; k++) {
    uint32_t al[4 * MI], ga[4 * MI], sa[4 * MI];
#pragma unroll
    for (int h = 0; h < MI; h++) {
      lds4(Aal + k * LDS + h * 64 + ty * 4, al + 4 * h);
      lds4(Aga + k * LDS + h * 64 + ty * 4, ga + 4 * h);
      lds4(Asc + k * LDS + h * 64 + ty * 4, sa + 4 * h);
    }
    int32_t gmax = (int32_t)ga[0];
#pragma unroll
    for (int i = 1; i < 4 * MI; i++) gmax = max(gmax, (int32_t)ga[i]);
#pragma unroll
    for (int jh = 0; jh < 2; jh++) {
      uint32_t sb[4], bs[4], b2[4], cb[4];
      const int off = k * LDS + jh * 64 + tx * 4;
      lds4(Bsc + off, sb);
      lds4(Bbs + off, bs);
      lds4(Bb2 + off, b2);
      lds4(Bcb + off, cb);
      const int32_t cmin = min(min((int32_t)cb[0], (int32_t)cb[1]), min((int32_t)cb[2], (int32_t)cb[3]));
      if (__any_sync(0xFFFFFFFFu, gmax >= cmin))
        am32_step<MI, true>(al, ga, sa, sb, bs, b2, cb, acc, jh * 4);
      else
        am32_step<MI, false>(al, ga, sa, sb, bs, b2, cb, acc, jh * 4);
    }
  }
}

/* One stage's BK steps, exact path (raw bits in the enc planes). */
template <int MODE, int MI>
__device__ __forceinline__ void compute_exact(const uint32_t *st, float (&acc)[4 * MI][8], const uint8_t *lut,
                                              int m) {
  constexpr int BK = ModeTraits<MODE>::bk, PLANE = BK * LDS;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const uint32_t *Ae = st, *Be = st + ModeTraits<MODE>::a_planes * PLANE;
#pragma unroll 1
  for (int k = 0; k < BK; k++) {
    uint32_t a[4 * MI], b[8];
#pragma unroll
    for (int h = 0; h < MI; h++) lds4(Ae + k * LDS + h * 64 + ty * 4, a + 4 * h);
    lds4(Be + k * LDS + tx * 4, b);
    lds4(Be + k * LDS + 64 + tx * 4, b + 4);
#pragma unroll
    for (int i = 0; i < 4 * MI; i++)
#pragma unroll
      for (int j = 0; j < 8; j++)
        acc[i][j] = fadd(acc[i][j], __uint_as_float(exact_prod<MODE>(a[i], b[j], lut, m)));
  }
}

/* ---- the fast tier (am16, mbm14) ---------------------------------------- */

/* The range words that tier_extend fills for a GEMM (zeroed before it):
 * [0] max of 255 - E(a) over A's normal operands (0: none), [1] max E(a),
 * [2], [3] the same for B, [4] 1 when an operand is Inf or NaN. The fast tier
 * holds when every product of normal operands stays normal: E(a) + E(b) in
 * [128, 380] for the extremes, and nothing is Inf or NaN. */
constexpr int RANGE_WORDS = 5;
__device__ __forceinline__ bool range_ok(const uint32_t *w) {
  const uint32_t a_lo = w[0], a_hi = w[1], b_lo = w[2], b_hi = w[3];
  if (w[4]) return false;
  if (a_lo == 0u || b_lo == 0u) return true; /* a side of zeros and subnormals: every product is zero */
  return (255u - a_lo) + (255u - b_lo) >= 128u && a_hi + b_hi <= 380u;
}

/* The correction GEMM's operands of one matrix of A (IS_A) or B, and its
 * share of the range words. An MBM_m product of normal a, b in the fast range
 * is MIT(a', b') + c p(a) p(b), p(x) = s(x) 2^(E(x)-127), c = 0.078125 (am16)
 * or 0.0625 (mbm14), except, for am16, on the kept-fraction pairs (in units of
 * 2^-7, forced bit included) (125, 127), (127, 125) and (127, 127), where the
 * spec keeps plain Mitchell. So the correction sum is sum_k c (p(a) p(b) -
 * p(a)[a=125] p(b)[b=127] - p(a)[a=127] p(b)[b in {125, 127}]): a GEMM over
 * J K terms (J = 3 for am16, 1 for mbm14) of signed powers of two and zeros,
 * exact in bf16, every product exact in fp32. Block j of the J is the k range
 * [j K, (j+1) K) of the extended operand, which keeps the input's layout:
 * rows x cols stored with leading dimension ld becomes (k along the columns)
 * rows x J cols, or (k along the rows) J rows x cols, compact. p(x) is 0 for
 * a zero, subnormal, Inf or NaN (the range words send the last two to the
 * exact path). grid: x over the columns, y over nb * rows. */
/* The J values of one operand u (see tier_extend), as bf16 bits, and its
 * share of the range statistics. */
template <int J, bool IS_A>
__device__ __forceinline__ void tier_values(uint32_t u, uint16_t (&v)[J], uint32_t &lo, uint32_t &hi,
                                            uint32_t &sp) {
  const uint32_t e = (u >> 23) & 0xFFu;
  const bool normal = e != 0u && e != 255u;
  if (e == 255u) sp = 1u;
  if (normal) {
    lo = max(lo, 255u - e);
    hi = max(hi, e);
  }
  const uint16_t pw = normal ? (uint16_t)(u >> 16 & 0xFF80u) : (uint16_t)0u; /* p(x) in bf16 */
  const uint32_t f7 = (u >> 16 & 0x7Fu) | 1u;                                /* kept fraction, am16 */
  v[0] = pw;
  if constexpr (J == 3) {
    if (IS_A) {
      v[1] = f7 == 125u ? (uint16_t)(pw ^ 0x8000u) : (uint16_t)0u;
      v[2] = f7 == 127u ? (uint16_t)(pw ^ 0x8000u) : (uint16_t)0u;
    } else {
      v[1] = f7 == 127u ? pw : (uint16_t)0u;
      v[2] = f7 >= 125u ? pw : (uint16_t)0u; /* odd: 125 or 127 */
    }
  }
}

/* grid: x over the columns, y over nb * rows (looped). VEC4: 4 columns a
 * thread (cols, ld and the pointers multiples of 4 floats). The range
 * words take one atomic per block, and only when it raises them. */
template <int J, bool IS_A, bool VEC4>
__global__ void tier_extend(const float *X, int64_t ld, int64_t stride, int rows, int cols, int nb,
                            bool kcols, uint16_t *out, uint32_t *range) {
  __shared__ uint32_t red[3][NT / 32];
  uint32_t lo = 0u, hi = 0u, sp = 0u;
  const int64_t nrows = (int64_t)nb * rows;
  constexpr int W = VEC4 ? 4 : 1;
  for (int64_t rr = blockIdx.y; rr < nrows; rr += gridDim.y) {
    const int64_t b = rr / rows, r = rr % rows;
    const float *x = X + b * stride + r * ld;
    uint16_t *o = out + b * J * (int64_t)rows * cols;
    for (int c = (blockIdx.x * blockDim.x + threadIdx.x) * W; c < cols; c += gridDim.x * blockDim.x * W) {
      uint16_t v[W][J];
      if constexpr (VEC4) {
        const uint4 q = *reinterpret_cast<const uint4 *>(x + c);
        tier_values<J, IS_A>(q.x, v[0], lo, hi, sp);
        tier_values<J, IS_A>(q.y, v[1], lo, hi, sp);
        tier_values<J, IS_A>(q.z, v[2], lo, hi, sp);
        tier_values<J, IS_A>(q.w, v[3], lo, hi, sp);
      } else {
        tier_values<J, IS_A>(__float_as_uint(x[c]), v[0], lo, hi, sp);
      }
#pragma unroll
      for (int j = 0; j < J; j++) {
        uint16_t *dst =
            kcols ? o + r * J * cols + (int64_t)j * cols + c : o + ((int64_t)j * rows + r) * cols + c;
        if constexpr (VEC4)
          *reinterpret_cast<uint2 *>(dst) = make_uint2((uint32_t)v[0][j] | (uint32_t)v[1][j] << 16,
                                                       (uint32_t)v[2][j] | (uint32_t)v[3][j] << 16);
        else
          *dst = v[0][j];
      }
    }
  }
  const unsigned full = 0xFFFFFFFFu;
  lo = __reduce_max_sync(full, lo);
  hi = __reduce_max_sync(full, hi);
  sp = __reduce_or_sync(full, sp);
  const int warp = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) {
    red[0][warp] = lo;
    red[1][warp] = hi;
    red[2][warp] = sp;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < NT / 32; w++) {
      lo = max(lo, red[0][w]);
      hi = max(hi, red[1][w]);
      sp |= red[2][w];
    }
    const int w = IS_A ? 0 : 2;
    if (lo > *(volatile uint32_t *)(range + w)) atomicMax(range + w, lo);
    if (hi > *(volatile uint32_t *)(range + w + 1)) atomicMax(range + w + 1, hi);
    if (sp && !*(volatile uint32_t *)(range + 4)) atomicOr(range + 4, 1u);
  }
}

/* The fast tier's per-tile question, zeros in the A tile (bit 0) or the B
 * tile (bit 1): two barrier ORs instead of tile_fast's range reduction (the
 * range was settled for the whole GEMM). */
template <int NA, int NB>
__device__ __forceinline__ uint32_t tier_zeros(const uint32_t (&va)[NA], const uint32_t (&vb)[NB]) {
  const uint32_t za = __syncthreads_or((int)any_zero(va)) ? 1u : 0u;
  const uint32_t zb = __syncthreads_or((int)any_zero(vb)) ? 2u : 0u;
  return za | zb;
}

/* Block-wide decision for a tile pair from the tile_stats of this thread's
 * shares of the A tile (alo, ahi, az) and the B tile (blo, bhi, bz), reduced
 * over the warps through red (this stage's 8 x 4 words; contains a
 * barrier). Fast when no value is Inf or NaN and every product of normal
 * values stays normal: E(a) + E(b) in [128, 380] at the extremes (a side
 * without normal values: every product is zero). scaled: am32's V * scale(b)
 * (V < 4) must also stay finite, E(b) <= 253. zout: zeros in A's tile (bit
 * 0), in B's (bit 1). */
__device__ __forceinline__ bool tile_fast(uint32_t alo, uint32_t ahi, uint32_t az, uint32_t blo, uint32_t bhi,
                                          uint32_t bz, uint32_t *red, bool scaled = false,
                                          uint32_t *zout = nullptr) {
  const unsigned full = 0xFFFFFFFFu;
  const uint32_t z = (az == 0u ? 1u : 0u) | (bz == 0u ? 2u : 0u);
  alo = __reduce_min_sync(full, alo);
  ahi = __reduce_max_sync(full, ahi);
  blo = __reduce_min_sync(full, blo);
  /* the exponent bits leave bits 0 and 1 of bhi's word free for z */
  bhi = __reduce_max_sync(full, bhi) | __reduce_or_sync(full, z);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) *reinterpret_cast<uint4 *>(red + 4 * warp) = make_uint4(alo, ahi, blo, bhi);
  __syncthreads();
  /* every warp reduces the warps' words again, lane w taking warp w's */
  uint4 v = make_uint4(~0u, 0u, ~0u, 0u);
  if (lane < NT / 32) v = *reinterpret_cast<const uint4 *>(red + 4 * lane);
  alo = __reduce_min_sync(full, v.x);
  ahi = __reduce_max_sync(full, v.y);
  blo = __reduce_min_sync(full, v.z);
  bhi = __reduce_max_sync(full, v.w) & EXP_BITS;
  const uint32_t zz = __reduce_or_sync(full, v.w);
  if (zout) *zout = zz & 3u;
  if (ahi == EXP_BITS || bhi == EXP_BITS) return false; /* an Inf or NaN */
  const bool a_normal = alo < NO_NORMAL, b_normal = blo < NO_NORMAL;
  if (scaled && b_normal && (bhi >> 23) > 253u) return false;
  if (!a_normal || !b_normal) return true; /* only zeros on a side */
  /* lo holds the smallest normal exponent less one */
  return (alo >> 23) + (blo >> 23) + 2u >= 128u && (ahi >> 23) + (bhi >> 23) <= 380u;
}

/* The path of a tile pair (see tile_fast; the fast tier's was settled for
 * the whole GEMM, and only asks where the zeros are) and, for the MIT
 * kinds, zab: zeros in A's tile (bit 0), in B's (bit 1). */
template <int MODE, int NA, int NB>
__device__ __forceinline__ void decide_tile(const uint32_t (&va)[NA], const uint32_t (&vb)[NB], uint32_t *red,
                                            bool tier_ok, bool &fast, uint32_t &zab) {
  if constexpr (ModeTraits<MODE>::tier) {
    fast = tier_ok;
    zab = tier_zeros(va, vb);
  } else if constexpr (ModeTraits<MODE>::check) {
    uint32_t alo = ~0u, ahi = 0u, az = ~0u, blo = ~0u, bhi = 0u, bz = ~0u;
    tile_stats(va, alo, ahi, az);
    tile_stats(vb, blo, bhi, bz);
    fast = tile_fast(alo, ahi, az, blo, bhi, bz, red, ModeTraits<MODE>::scaled, &zab);
  }
}

/* The threads' slots for the next tile's raw shares (see TileShare): A's
 * (BM BK words in all), then B's (BN BK). */
template <int MI, int BK> constexpr int slot_words() { return (64 * MI + BN) * BK; }

template <int MODE, int MI> constexpr int smem_bytes(int tab_words) {
  constexpr int BK = ModeTraits<MODE>::bk;
  return tab_words * 4 + 2 * ModeTraits<MODE>::planes * BK * LDS * 4 + 2 * (NT / 32) * 4 * 4 +
         slot_words<MI, BK>() * 4;
}

/* The mode GEMM kernel. grid: x = N tiles, y = M tiles, z = batch * splits
 * (looped when larger than the grid). */
template <int MODE, int MI, int LAYOUT>
__global__ void __launch_bounds__(NT, MI == 1 ? ModeTraits<MODE>::blocks64 : 2) mode_kernel(const Params p) {
  constexpr int BM = 64 * MI, BK = ModeTraits<MODE>::bk;
  using SA = TileShare<BM, BK>;
  using SB = TileShare<BN, BK>;
  extern __shared__ __align__(16) uint32_t smem[];
  uint32_t *tabs = smem;
  uint32_t *stages = smem + p.tab_words;
  constexpr int SP = ModeTraits<MODE>::planes * BK * LDS;
  uint32_t *red = stages + 2 * SP;
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  /* this thread's first piece's slot (see TileShare) */
  uint32_t *slot_a = red + 2 * (NT / 32) * 4 + tid * SA::PW,
           *slot_b = red + 2 * (NT / 32) * 4 + BM * BK + tid * SB::PW;
  const uint32_t lane4 = (uint32_t)(tid & 31) << 2;
  const int m = p.lut_bits;

  if (ModeTraits<MODE>::table)
    for (int i = tid; i < p.tab_words; i += NT) tabs[i] = p.tab[i];

  const int r0 = blockIdx.y * BM, c0 = blockIdx.x * BN;
  constexpr bool KCA = LAYOUT & 1, KCB = LAYOUT & 2; /* k contiguous in memory (see layout_of) */
  /* fast tier: every tile takes the Mitchell path when the whole GEMM is in
   * the fast range (the correction sums assume it), else the exact one */
  bool tier_ok = true;
  if constexpr (ModeTraits<MODE>::tier) tier_ok = range_ok(p.range);

  for (int z = blockIdx.z; z < p.batch * p.splits; z += gridDim.z) {
    const int b = z / p.splits, s = z % p.splits;
    const float *A = p.A + (int64_t)b * p.sa, *B = p.B + (int64_t)b * p.sb;
    const int kbeg = s * p.kslice, kend = min(p.K, kbeg + p.kslice);
    const int ntiles = kend > kbeg ? (kend - kbeg + BK - 1) / BK : 0;

    float acc[4 * MI][8];
#pragma unroll
    for (int i = 0; i < 4 * MI; i++)
#pragma unroll
      for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;

    uint32_t va[SA::N], vb[SB::N];
    bool fast = true;
    uint32_t zab = 0u; /* MIT kinds: zeros in this tile pair's A (bit 0), B (bit 1) */
    if (ntiles > 0) {
      load_tile<BM, BK, ModeTraits<MODE>::mit, KCA>(A, p.lda, p.vec_a, p.M, r0, kbeg, kend, va);
      load_tile<BN, BK, ModeTraits<MODE>::mit, KCB>(B, p.ldb, p.vec_b, p.N, c0, kbeg, kend, vb);
      decide_tile<MODE>(va, vb, red, tier_ok, fast, zab);
      store_tiles<MODE, BM, KCA, KCB>(stages, va, vb, fast, m);
    }
    __syncthreads();

    for (int t = 0; t < ntiles; t++) {
      const uint32_t *cur = stages + (t & 1) * SP;
      uint32_t *nxt = stages + ((t + 1) & 1) * SP;
      const bool more = t + 1 < ntiles;
      const int k1 = kbeg + (t + 1) * BK; /* the next tile's depth */
      /* the next tile's shares travel during this one's products */
      const bool copy_a = more && tile_inside<BM, BK>(p.M, r0, k1, kend);
      const bool copy_b = more && tile_inside<BN, BK>(p.N, c0, k1, kend);
      if (copy_a) cp_tile<BM, BK, KCA>(slot_a, A, p.lda, r0, k1, p.vec_a);
      if (copy_b) cp_tile<BN, BK, KCB>(slot_b, B, p.ldb, c0, k1, p.vec_b);
      if (!fast)
        compute_exact<MODE, MI>(cur, acc, p.lut, m);
      else if constexpr (ModeTraits<MODE>::scaled)
        compute_fast_am32<MI, BK>(cur, acc);
      else if constexpr (ModeTraits<MODE>::mit) {
        if (!(zab & 1u))
          compute_mit<MI, BK, 1>(cur, acc);
        else if (!(zab & 2u))
          compute_mit<MI, BK, 2>(cur, acc);
        else
          compute_mit<MI, BK, 3>(cur, acc);
      } else
        compute_fast<MODE, MI>(cur, tabs, acc, lane4);
      if (more) {
        if (copy_a || copy_b) cp_wait();
        if (copy_a)
          read_slots<BM, BK>(slot_a, va);
        else
          load_share<BM, BK, ModeTraits<MODE>::mit, KCA>(A, p.lda, p.M, r0, k1, kend, va);
        if (copy_b)
          read_slots<BN, BK>(slot_b, vb);
        else
          load_share<BN, BK, ModeTraits<MODE>::mit, KCB>(B, p.ldb, p.N, c0, k1, kend, vb);
        decide_tile<MODE>(va, vb, red + ((t + 1) & 1) * (NT / 32) * 4, tier_ok, fast, zab);
        store_tiles<MODE, BM, KCA, KCB>(nxt, va, vb, fast, m);
      }
      __syncthreads();
    }

    /* epilogue: raw sums to the workspace, or alpha/beta into C */
    float *C = p.ws ? p.ws + (int64_t)(s * p.batch + b) * p.M * p.N : p.C + (int64_t)b * p.sc;
    const int64_t ldc = p.ws ? p.N : p.ldc;
#pragma unroll
    for (int i = 0; i < 4 * MI; i++) {
      const int r = r0 + (i >> 2) * 64 + ty * 4 + (i & 3);
      if (r >= p.M) continue;
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const int c = c0 + (j >> 2) * 64 + tx * 4 + (j & 3);
        if (c >= p.N) continue;
        float *out = C + (int64_t)r * ldc + c;
        float sum = acc[i][j];
        if constexpr (ModeTraits<MODE>::tier)
          if (tier_ok && !p.ws) sum = fadd(sum, p.corr[((int64_t)b * p.M + r) * p.N + c]);
        if (p.ws)
          *out = sum;
        else if (p.beta == 0.0f)
          *out = __fmul_rn(p.alpha, sum);
        else
          *out = fadd(__fmul_rn(p.alpha, sum), __fmul_rn(p.beta, *out));
      }
    }
  }
}

/* One product of the fast path from two encoded operands (ea, eb) and their
 * masks (compute_fast's arithmetic for one pair; tb: the table's bytes,
 * lane4: this lane's column of the replicated MBM1 table). */
template <int MODE>
__device__ __forceinline__ float fast_prod(uint32_t ea, uint32_t ma, uint32_t eb, uint32_t mb, const char *tb,
                                           uint32_t lane4) {
  if (ModeTraits<MODE>::kind == AMD_KIND_FP16)
    return __half2float(__hmul(__float2half_rn(__uint_as_float(ea)), __float2half_rn(__uint_as_float(eb))));
  if (ModeTraits<MODE>::kind == AMD_KIND_ACC16)
    return __uint_as_float(__float_as_uint(__fmul_rn(__uint_as_float(ea), __uint_as_float(eb))) &
                           0xFFFF0000u);
  uint32_t r;
  if (ModeTraits<MODE>::scaled) { /* MBM23, the small kernel's form */
    const int32_t u =
        (int32_t)(MBM23_K0 + AMD_PROD_ONE - (ea & AMD_PROD_FRAC)) - (int32_t)(eb & AMD_PROD_FRAC);
    const int32_t lim = (int32_t)(MBM23_K0 + MBM23_K1) - (int32_t)AMD_PROD_ONE;
    int32_t d = min(max(u >> 1, (int32_t)MBM23_K1), (int32_t)MBM23_K0);
    d = u > lim ? d : 0;
    r = ea + eb + (uint32_t)d;
  } else if (ModeTraits<MODE>::mbm1) {
    r = ea + eb + *reinterpret_cast<const uint32_t *>(tb + (((ea & 0xFFFFu) | lane4) + (eb & 0xFFFFu)));
  } else { /* MIT kinds */
    r = ea + eb;
  }
  return __uint_as_float(r & ma & mb);
}

/* The small-tile kernel, for GEMMs that the 64/128 x 128 tile would mostly
 * pad (LeNet's convolutions: M = 6 output channels, or the weight gradient
 * M x N = 6 x 25 over K = 100352). A block computes SR x SC outputs, one per
 * thread, over its split-K slice, SBK deep at a time: the tile pair is
 * checked for the fast range as in mode_kernel and staged in shared memory
 * as (encoding, mask) pairs, or raw for the exact path (always for lut:,
 * whose table would not fit beside the tiles). Sums in k order, then the same
 * epilogue and split-K reduction as mode_kernel. */
constexpr int SR = 8, SC = 32, SBK = 32, SMALL_MAX_SPLIT = 512;
static_assert(SR * SC == NT && SBK == 32, "one output per thread, one warp-wide K step");

constexpr int small_smem_words(int tab_words) {
  return tab_words + 2 * (SBK * (SR + 1) + SBK * (SC + 1)) + 4 * NT / 32;
}
static_assert(small_smem_words(128 * 32) * 4 <= 48 * 1024,
              "the am16 table and the tiles fit the default 48 KiB");

template <int MODE> __global__ void __launch_bounds__(NT) small_kernel(const Params p) {
  constexpr bool use_fast = !ModeTraits<MODE>::lut;
  extern __shared__ __align__(16) uint32_t smem[];
  uint32_t *tabs = smem;
  uint2(*As)[SR + 1] = reinterpret_cast<uint2(*)[SR + 1]>(smem + p.tab_words); /* [k][row] */
  uint2(*Bs)[SC + 1] = reinterpret_cast<uint2(*)[SC + 1]>(As + SBK);           /* [k][col] */
  uint32_t *red = reinterpret_cast<uint32_t *>(Bs + SBK);
  const int tid = threadIdx.x, tx = tid & 31, ty = tid >> 5;
  const uint32_t lane4 = (uint32_t)tx << 2;
  const char *tb = reinterpret_cast<const char *>(tabs);
  const int r0 = blockIdx.y * SR, c0 = blockIdx.x * SC;
  const bool kca = !p.trans_a, kcb = p.trans_b; /* k contiguous in memory */
  if (ModeTraits<MODE>::mbm1)
    for (int i = tid; i < p.tab_words; i += NT) tabs[i] = p.tab[i];
  for (int z = blockIdx.z; z < p.batch * p.splits; z += gridDim.z) {
    const int b = z / p.splits, s = z % p.splits;
    const float *A = p.A + (int64_t)b * p.sa, *B = p.B + (int64_t)b * p.sb;
    const int kbeg = s * p.kslice, kend = min(p.K, kbeg + p.kslice);
    float acc = 0.0f;
    for (int k0 = kbeg; k0 < kend; k0 += SBK) {
      /* A: SR x SBK, one element per thread; B: SBK x SC, four per thread */
      const int ar = kca ? tid >> 5 : tid & 7, ak = kca ? tid & 31 : tid >> 3;
      uint32_t va[1], vb[SBK * SC / NT];
      {
        const int gr = r0 + ar, gk = k0 + ak;
        float x = 0.0f;
        if (gr < p.M && gk < kend) x = kca ? A[(int64_t)gr * p.lda + gk] : A[(int64_t)gk * p.lda + gr];
        va[0] = __float_as_uint(x);
      }
#pragma unroll
      for (int q = 0; q < SBK * SC / NT; q++) {
        const int c = kcb ? (tid >> 5) + 8 * q : tid & 31, k = kcb ? tid & 31 : (tid >> 5) + 8 * q;
        const int gc = c0 + c, gk = k0 + k;
        float x = 0.0f;
        if (gc < p.N && gk < kend) x = kcb ? B[(int64_t)gc * p.ldb + gk] : B[(int64_t)gk * p.ldb + gc];
        vb[q] = __float_as_uint(x);
      }
      bool fast = use_fast;
      if (use_fast && ModeTraits<MODE>::check) {
        uint32_t alo = ~0u, ahi = 0u, az = ~0u, blo = ~0u, bhi = 0u, bz = ~0u;
        tile_stats(va, alo, ahi, az);
        tile_stats(vb, blo, bhi, bz);
        fast = tile_fast(alo, ahi, az, blo, bhi, bz, red);
      }
      const auto stage = [&](uint32_t u, bool is_a) {
        uint32_t e = u;
        if (fast) e = is_a ? encode<MODE, true>(u, 0) : encode<MODE, false>(u, 0);
        return make_uint2(e, (u & 0x7F800000u) ? 0xFFFFFFFFu : 0u);
      };
      As[ak][ar] = stage(va[0], true);
#pragma unroll
      for (int q = 0; q < SBK * SC / NT; q++) {
        const int c = kcb ? (tid >> 5) + 8 * q : tid & 31, k = kcb ? tid & 31 : (tid >> 5) + 8 * q;
        Bs[k][c] = stage(vb[q], false);
      }
      __syncthreads();
      const int kn = min(SBK, kend - k0);
      if (fast) {
#pragma unroll 8
        for (int k = 0; k < kn; k++) {
          const uint2 a = As[k][ty], bb = Bs[k][tx];
          acc = fadd(acc, fast_prod<MODE>(a.x, a.y, bb.x, bb.y, tb, lane4));
        }
      } else {
#pragma unroll 4
        for (int k = 0; k < kn; k++)
          acc = fadd(acc, __uint_as_float(exact_prod<MODE>(As[k][ty].x, Bs[k][tx].x, p.lut, p.lut_bits)));
      }
      __syncthreads();
    }
    const int r = r0 + ty, c = c0 + tx;
    if (r < p.M && c < p.N) {
      if (p.ws) {
        p.ws[(int64_t)(s * p.batch + b) * p.M * p.N + (int64_t)r * p.N + c] = acc;
      } else {
        float *out = p.C + (int64_t)b * p.sc + (int64_t)r * p.ldc + c;
        if (p.beta == 0.0f)
          *out = __fmul_rn(p.alpha, acc);
        else
          *out = fadd(__fmul_rn(p.alpha, acc), __fmul_rn(p.beta, *out));
      }
    }
  }
}

/* Sums the split-K slices in order and applies alpha/beta; with splits == 0
 * (K == 0) it writes C = beta * C (0 when beta == 0), like the CPU GEMM. */
__global__ void split_reduce(const Params p) {
  const int64_t mn = (int64_t)p.M * p.N, total = mn * p.batch;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = e / mn, rc = e % mn, r = rc / p.N, c = rc % p.N;
    float *out = p.C + b * p.sc + r * p.ldc + c;
    if (p.splits == 0) {
      *out = p.beta == 0.0f ? 0.0f : __fmul_rn(p.beta, *out);
      continue;
    }
    float sum = p.ws[b * mn + rc];
    for (int s = 1; s < p.splits; s++) sum = fadd(sum, p.ws[((int64_t)s * p.batch + b) * mn + rc]);
    if (p.corr && range_ok(p.range)) sum = fadd(sum, p.corr[b * mn + rc]); /* fast tier */
    if (p.beta == 0.0f)
      *out = __fmul_rn(p.alpha, sum);
    else
      *out = fadd(__fmul_rn(p.alpha, sum), __fmul_rn(p.beta, *out));
  }
}

} /* namespace */

/* ---- host side ---------------------------------------------------------- */

/* A device copy of a mode's table. */
typedef struct table_entry {
  amd_mode mode;
  const uint8_t *lut; /* the amd_mult's table pointer (lut:) */
  int lut_bits;
  uint8_t *lut_copy; /* host copy of the lut: bytes (to detect a reused pointer) */
  uint32_t *host;    /* the words uploaded (kept alive for the async copy) */
  uint32_t *dev;     /* words, then (lut:) the raw bytes */
  int words;
} table_entry;

/* A cuBLASLt GEMM of amd_cuda_gemm_add_relu for one shape (key): its
 * descriptors and the algorithm the heuristic chose, or ok = 0 where it had
 * none (the caller then takes its other path every time). */
enum { LT_KEY = 20 };
struct lt_plan {
  int64_t key[LT_KEY];
  int ok;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc, ld;
  cublasLtMatmulAlgo_t algo;
};

struct amd_cuda_gemm_ctx {
  cudaStream_t stream;
  cublasHandle_t cublas;
  cublasLtHandle_t lt; /* amd_cuda_gemm_add_relu: made on first use */
  lt_plan *plans;
  int nplans, cap_plans;
  int device, sms;
  table_entry *tabs;
  int ntabs, captabs;
  float *ws;
  size_t ws_bytes;
  amd_gemm_tile tile;
  amd_gemm_tier tier;
  void *cublas_ws; /* cuBLAS's workspace, ours: a CUDA graph of a step holds its address */
  char *tier_ws;   /* fast tier: range words, extended operands, correction sums */
  size_t tier_ws_bytes;
  /* workspaces outgrown: kept until destroy, since a captured CUDA graph of an
   * earlier step may still point at them */
  void *retired[64];
  int nretired;
};

static const size_t cublas_ws_bytes = (size_t)32 << 20;

static void lt_plan_free(lt_plan *p) {
  if (p->op) cublasLtMatmulDescDestroy(p->op);
  if (p->la) cublasLtMatrixLayoutDestroy(p->la);
  if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
  if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
  if (p->ld) cublasLtMatrixLayoutDestroy(p->ld);
  memset(p, 0, sizeof *p);
}

extern "C" int amd_cuda_gemm_create(amd_cuda_gemm_ctx **out, cudaStream_t stream, amd_status *st) {
  *out = NULL;
  amd_cuda_gemm_ctx *ctx = (amd_cuda_gemm_ctx *)calloc(1, sizeof *ctx);
  if (!ctx) return amd_fail(st, "out of memory creating the CUDA GEMM context");
  ctx->stream = stream;
  int rc = 0;
  do {
    cudaError_t e = cudaGetDevice(&ctx->device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&ctx->sms, cudaDevAttrMultiProcessorCount, ctx->device);
    if (e != cudaSuccess) {
      rc = amd_fail(st, "CUDA GEMM context: %s", cudaGetErrorString(e));
      break;
    }
    cublasStatus_t cs = cublasCreate(&ctx->cublas);
    if (cs == CUBLAS_STATUS_SUCCESS) cs = cublasSetStream(ctx->cublas, stream);
    /* never TF32: default math keeps SGEMM in IEEE fp32 */
    if (cs == CUBLAS_STATUS_SUCCESS) cs = cublasSetMathMode(ctx->cublas, CUBLAS_DEFAULT_MATH);
    if (cs == CUBLAS_STATUS_SUCCESS) {
      e = cudaMalloc(&ctx->cublas_ws, cublas_ws_bytes);
      if (e != cudaSuccess) {
        rc = amd_fail(st, "CUDA GEMM context: %s allocating cuBLAS's workspace", cudaGetErrorString(e));
        break;
      }
      cs = cublasSetWorkspace(ctx->cublas, ctx->cublas_ws, cublas_ws_bytes);
    }
    if (cs != CUBLAS_STATUS_SUCCESS) {
      rc = amd_fail(st, "CUDA GEMM context: cuBLAS: %s", cublasGetStatusName(cs));
      break;
    }
  } while (0);
  if (rc) {
    amd_cuda_gemm_destroy(ctx);
    return rc;
  }
  *out = ctx;
  return 0;
}

extern "C" void amd_cuda_gemm_set_tile(amd_cuda_gemm_ctx *ctx, amd_gemm_tile tile) { ctx->tile = tile; }

extern "C" void amd_cuda_gemm_set_tier(amd_cuda_gemm_ctx *ctx, amd_gemm_tier tier) { ctx->tier = tier; }

extern "C" void amd_cuda_gemm_destroy(amd_cuda_gemm_ctx *ctx) {
  if (!ctx) return;
  if (ctx->stream || ctx->ntabs || ctx->ws) cudaStreamSynchronize(ctx->stream);
  for (int i = 0; i < ctx->ntabs; i++) {
    cudaFree(ctx->tabs[i].dev);
    free(ctx->tabs[i].host);
    free(ctx->tabs[i].lut_copy);
  }
  free(ctx->tabs);
  cudaFree(ctx->ws);
  cudaFree(ctx->tier_ws);
  for (int i = 0; i < ctx->nretired; i++) cudaFree(ctx->retired[i]);
  for (int i = 0; i < ctx->nplans; i++) lt_plan_free(&ctx->plans[i]);
  free(ctx->plans);
  if (ctx->lt) cublasLtDestroy(ctx->lt);
  if (ctx->cublas) cublasDestroy(ctx->cublas);
  cudaFree(ctx->cublas_ws);
  free(ctx);
}

/* The kind of a valid mode (mode_list.h). */
static amd_mode_kind kind_of(amd_mode mode) { return mode_rows[mode].kind; }

/* The bit-level product of a mode (its BITS in mode_list.h), on the host. */
static uint32_t host_bits(const amd_mult *mult, uint32_t a, uint32_t b) {
#define AMD_MODE_HOST_BITS(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY)                             \
  case ID:                                                                                                   \
    return AMD_MODE_CALL_##ARGS(BITS, a, b, mult->lut, mult->lut_bits);
  switch (mult->mode) {
    AMD_MODE_LIST(AMD_MODE_HOST_BITS)
  default:
    break;
  }
#undef AMD_MODE_HOST_BITS
  return 0;
}

/* Builds the words of a mode's fast table (see the file comment); MBM1
 * kinds: the small kernel's 128 x 32 words, then as many for the large
 * kernel, whose entries are the products of the significands themselves. */
static int build_table(const amd_mult *mult, uint32_t **words, int *nwords, amd_status *st) {
  const amd_mode_kind kind = kind_of(mult->mode);
  int n = 0;
  if (kind == AMD_KIND_MBM)
    n = 2 * MBM1_TAB_WORDS;
  else if (kind == AMD_KIND_LUT)
    n = 1 << (2 * mult->lut_bits);
  uint32_t *w = (uint32_t *)calloc((size_t)n, sizeof *w);
  if (!w) return amd_fail(st, "out of memory building the table of mode '%s'", mult->name);
  if (kind == AMD_KIND_LUT) {
    const int m = mult->lut_bits;
    for (uint32_t idx = 0; idx < (uint32_t)n; idx++) {
      const uint32_t e = mult->lut[idx];
      const uint32_t g = ((e >> 7) << 23) | ((e & ((1u << m) - 1u)) << (23 - m));
      w[idx] = g - (idx << 2);
    }
  } else {
    const int m = mode_rows[mult->mode].m, hbits = m - 1, shift = 24 - m;
    const uint32_t hmax = (1u << hbits) - 1u;
    for (uint32_t idx = 0; idx <= 2 * hmax; idx++) {
      const uint32_t ha = idx < hmax ? idx : hmax, hb = idx - ha;
      const uint32_t a = 0x3F800000u | (ha << shift), b = 0x3F800000u | (hb << shift);
      const uint32_t prod = host_bits(mult, a, b);
      const uint32_t g = prod - 0x3F800000u; /* carry<<23 | M */
      for (int l = 0; l < 32; l++) {
        w[idx * 32 + l] = g - (idx << 7);
        w[MBM1_TAB_WORDS + idx * 32 + l] = prod; /* 1.M * 2^carry */
      }
    }
  }
  *words = w;
  *nwords = n;
  return 0;
}

/* The device table of a mode, made on first use and cached in ctx. */
static int get_table(amd_cuda_gemm_ctx *ctx, const amd_mult *mult, const table_entry **out, amd_status *st) {
  const bool is_lut = kind_of(mult->mode) == AMD_KIND_LUT;
  const int lutsz = is_lut ? 1 << (2 * mult->lut_bits) : 0;
  for (int i = 0; i < ctx->ntabs; i++) {
    table_entry *t = &ctx->tabs[i];
    if (t->mode != mult->mode) continue;
    if (is_lut && (t->lut != mult->lut || t->lut_bits != mult->lut_bits ||
                   memcmp(t->lut_copy, mult->lut, (size_t)lutsz)))
      continue;
    *out = t;
    return 0;
  }
  if (is_lut && (!mult->lut || mult->lut_bits < 1 || mult->lut_bits > 7))
    return amd_fail(st, "mode '%s' has no valid table", mult->name);
  if (ctx->ntabs == ctx->captabs) {
    const int cap = ctx->captabs ? 2 * ctx->captabs : 8;
    table_entry *p = (table_entry *)realloc(ctx->tabs, (size_t)cap * sizeof *p);
    if (!p) return amd_fail(st, "out of memory caching a mode table");
    ctx->tabs = p;
    ctx->captabs = cap;
  }
  table_entry t;
  memset(&t, 0, sizeof t);
  t.mode = mult->mode;
  t.lut = mult->lut;
  t.lut_bits = mult->lut_bits;
  if (build_table(mult, &t.host, &t.words, st)) return -1;
  const size_t bytes = (size_t)t.words * 4 + (size_t)lutsz;
  if (lutsz) {
    t.lut_copy = (uint8_t *)malloc((size_t)lutsz);
    if (!t.lut_copy) {
      free(t.host);
      return amd_fail(st, "out of memory caching a mode table");
    }
    memcpy(t.lut_copy, mult->lut, (size_t)lutsz);
  }
  cudaError_t e = cudaMalloc((void **)&t.dev, bytes);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(t.dev, t.host, (size_t)t.words * 4, cudaMemcpyHostToDevice, ctx->stream);
  if (e == cudaSuccess && lutsz)
    e = cudaMemcpyAsync(t.dev + t.words, t.lut_copy, (size_t)lutsz, cudaMemcpyHostToDevice, ctx->stream);
  if (e != cudaSuccess) {
    cudaFree(t.dev);
    free(t.host);
    free(t.lut_copy);
    return amd_fail(st, "uploading the table of mode '%s': %s", mult->name, cudaGetErrorString(e));
  }
  ctx->tabs[ctx->ntabs] = t;
  *out = &ctx->tabs[ctx->ntabs++];
  return 0;
}

/* Grows a workspace to at least bytes (by 1.5 at a time). The old one is
 * retired, not freed: a CUDA graph captured earlier may still use it (the
 * last few are kept; older ones are freed). */
static int grow_ws(amd_cuda_gemm_ctx *ctx, void **buf, size_t *cap, size_t bytes, const char *what,
                   amd_status *st) {
  if (bytes <= *cap) return 0;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(ctx->stream, &capturing) == cudaSuccess &&
      capturing != cudaStreamCaptureStatusNone)
    return amd_fail(st, "the %s would grow in a captured step", what);
  if (*buf) {
    if (ctx->nretired == (int)(sizeof ctx->retired / sizeof ctx->retired[0])) {
      AMD_CUDA_CHECK(cudaFreeAsync(ctx->retired[0], ctx->stream), st);
      memmove(ctx->retired, ctx->retired + 1, (size_t)(ctx->nretired - 1) * sizeof ctx->retired[0]);
      ctx->nretired--;
    }
    ctx->retired[ctx->nretired++] = *buf;
  }
  const size_t want = bytes + (*cap ? bytes / 2 : 0); /* the first size as asked: often the only one */
  *buf = NULL;
  *cap = 0;
  AMD_CUDA_CHECK(cudaMallocAsync(buf, want, ctx->stream), st);
  *cap = want;
  return 0;
}

static int ensure_ws(amd_cuda_gemm_ctx *ctx, size_t bytes, amd_status *st) {
  void *b = ctx->ws;
  const int rc = grow_ws(ctx, &b, &ctx->ws_bytes, bytes, "split-K workspace", st);
  ctx->ws = (float *)b;
  return rc;
}

/* Sets p's split-K slices (splits slices of kslice, a multiple of bk) and
 * the workspace they write to. */
static int set_splits(amd_cuda_gemm_ctx *ctx, Params &p, int64_t ksteps, int64_t splits, int bk,
                      amd_status *st) {
  const int64_t per = (ksteps + splits - 1) / splits; /* K steps per slice */
  p.kslice = (int)(per * bk);
  p.splits = p.K == 0 ? 0 : (int)((ksteps + per - 1) / per); /* no empty last slice */
  p.ws = NULL;
  if (p.splits > 1) {
    if (ensure_ws(ctx, (size_t)p.splits * p.batch * p.M * p.N * sizeof(float), st)) return -1;
    p.ws = ctx->ws;
  }
  return 0;
}

/* After the kernel: adds the slices (or, K == 0, scales C by beta). */
static int reduce_splits(amd_cuda_gemm_ctx *ctx, const Params &p, amd_status *st) {
  if (p.splits == 1) return 0;
  const int64_t total = (int64_t)p.M * p.N * p.batch;
  const int64_t blocks = (total + 255) / 256;
  split_reduce<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256, 0, ctx->stream>>>(p);
  AMD_CUDA_CHECK_LAUNCH("split_reduce", st);
  return 0;
}

static unsigned grid_z(const Params &p) {
  const int64_t z = (int64_t)p.batch * p.splits;
  return (unsigned)(z < 65535 ? z : 65535);
}

/* Whether every matrix of an operand allows loads of w floats at the
 * offsets that load_tile uses (multiples of w from the start of a row). */
static int wide_loads_ok(const float *X, int64_t ld, int64_t stride, int batch, int w) {
  return (uintptr_t)X % (4u * (unsigned)w) == 0 && ld % w == 0 && (batch == 1 || stride % w == 0);
}

/* The operands' layout, mode_kernel's LAYOUT: bit 0 when A is stored with k
 * contiguous (not transposed), bit 1 when B is (transposed). A convolution's
 * forward GEMM is 1, its weight gradient 3, its data gradient 0. */
static int layout_of(const Params &p) { return (p.trans_a ? 0 : 1) | (p.trans_b ? 2 : 0); }

typedef void (*mode_kernel_fn)(const Params);
template <int MODE, int MI> static mode_kernel_fn mode_kernel_for(int layout) {
  switch (layout) {
  case 0:
    return mode_kernel<MODE, MI, 0>;
  case 1:
    return mode_kernel<MODE, MI, 1>;
  case 2:
    return mode_kernel<MODE, MI, 2>;
  default:
    return mode_kernel<MODE, MI, 3>;
  }
}

/* Launches one instantiation of the large-tile kernel: picks the split from
 * an occupancy model. */
template <int MODE, int MI> static int launch_mode(amd_cuda_gemm_ctx *ctx, Params p, amd_status *st) {
  constexpr int BM = 64 * MI, BK = ModeTraits<MODE>::bk;
  p.vec_a = wide_loads_ok(p.A, p.lda, p.sa, p.batch, TileShare<BM, BK>::PW);
  p.vec_b = wide_loads_ok(p.B, p.ldb, p.sb, p.batch, TileShare<BN, BK>::PW);
  const int layout = layout_of(p);
  const mode_kernel_fn kernel = mode_kernel_for<MODE, MI>(layout);
  const int smem = smem_bytes<MODE, MI>(p.tab_words);
  static int attr_done[4] = {0, 0, 0, 0}; /* per layout: the largest dynamic shared memory already allowed */
  if (smem > attr_done[layout]) {
    AMD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), st);
    attr_done[layout] = smem;
  }
  int per_sm = 0;
  AMD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, NT, smem), st);
  if (per_sm < 1) return amd_fail(st, "mode GEMM kernel does not fit on the device (%d B shared)", smem);
  const int64_t tm = (p.M + BM - 1) / BM, tn = (p.N + BN - 1) / BN;
  if (tm > 65535) return amd_fail(st, "amd_cuda_gemm: M = %d needs more than 65535 row tiles", p.M);
  const int64_t tiles = tm * tn * p.batch, slots = (int64_t)per_sm * ctx->sms;
  const int64_t ksteps = (p.K + BK - 1) / BK;
  /* cost in 8-deep K steps of one block (the unit its constants were fitted
   * in): waves * steps per block + a fixed overhead per block (prologue,
   * epilogue) + the reduction's traffic */
  int best = 1;
  double best_cost = 0;
  for (int s = 1; s <= MAX_SPLIT && s <= ksteps; s++) {
    const int64_t steps = (ksteps + s - 1) / s;
    if (s > 1 && (int64_t)(s - 1) * steps >= ksteps) continue; /* the last slice would be empty */
    const int64_t waves = (tiles * s + slots - 1) / slots;
    double cost = (double)waves * (double)(steps * (BK / 8) + 6);
    if (s > 1) cost += (double)s * (double)p.M * p.N * p.batch * 8.0 / ((double)slots * BM * BN) * 0.25 + 4.0;
    if (s == 1 || cost < best_cost * 0.97) {
      best = s;
      best_cost = cost;
    }
    if (tiles * s >= 8 * slots) break;
  }
  if (set_splits(ctx, p, ksteps, best, BK, st)) return -1;
  if (p.splits >= 1) {
    dim3 grid((unsigned)tn, (unsigned)tm, grid_z(p));
    kernel<<<grid, NT, smem, ctx->stream>>>(p);
    AMD_CUDA_CHECK_LAUNCH("mode_kernel", st);
  }
  return reduce_splits(ctx, p, st);
}

static int ensure_tier_ws(amd_cuda_gemm_ctx *ctx, size_t bytes, amd_status *st) {
  void *b = ctx->tier_ws;
  const int rc = grow_ws(ctx, &b, &ctx->tier_ws_bytes, bytes, "fast GEMM tier's workspace", st);
  ctx->tier_ws = (char *)b;
  return rc;
}

static size_t align256(size_t n) { return (n + 255) / 256 * 256; }

/* Queues tier_extend for one operand stored rows x cols (ld, batch stride;
 * stride 0: one matrix for every batch entry). */
template <int J, bool IS_A>
static int launch_extend(amd_cuda_gemm_ctx *ctx, const float *X, int64_t ld, int64_t stride, int batch,
                         int rows, int cols, bool kcols, uint16_t *out, uint32_t *range, amd_status *st) {
  const int nb = stride ? batch : 1;
  const bool vec4 = cols % 4 == 0 && ld % 4 == 0 && (stride % 4 == 0 || nb == 1) && ((uintptr_t)X & 15u) == 0;
  const int64_t per_block = (int64_t)NT * (vec4 ? 4 : 1);
  const int64_t gx = (cols + per_block - 1) / per_block, ny = (int64_t)nb * rows;
  /* about 16 blocks per SM in all: rows are looped over */
  const int64_t gy_max = (16 * (int64_t)ctx->sms + gx - 1) / gx;
  const dim3 grid((unsigned)gx, (unsigned)(ny < gy_max ? ny : gy_max));
  if (vec4)
    tier_extend<J, IS_A, true>
        <<<grid, NT, 0, ctx->stream>>>(X, ld, stride, rows, cols, nb, kcols, out, range);
  else
    tier_extend<J, IS_A, false>
        <<<grid, NT, 0, ctx->stream>>>(X, ld, stride, rows, cols, nb, kcols, out, range);
  AMD_CUDA_CHECK_LAUNCH("tier_extend", st);
  return 0;
}

/* The fast tier of am16 and mbm14 (see the file comment and tier_extend):
 * the correction GEMM on bf16 tensor cores (cuBLAS, fp32 sums, alpha = c)
 * into the workspace, then the Mitchell kernel, which adds it to its sums
 * when the range words allow, else computes every product exactly. */
template <int MODE, int TIER_MODE, int MI>
static int launch_tier(amd_cuda_gemm_ctx *ctx, Params p, amd_status *st) {
  constexpr int J = MODE == AMD_MODE_AM16 ? 3 : 1;
  const float c = MODE == AMD_MODE_AM16 ? 0.078125f : 0.0625f, zero = 0.0f;
  const int64_t M = p.M, N = p.N, K = p.K, JK = J * K;
  const int64_t nba = p.sa ? p.batch : 1, nbb = p.sb ? p.batch : 1;
  const size_t range_bytes = align256(RANGE_WORDS * sizeof(uint32_t));
  const size_t a_bytes = align256((size_t)(nba * M * JK) * 2), b_bytes = align256((size_t)(nbb * JK * N) * 2);
  const size_t t_bytes = (size_t)p.batch * M * N * sizeof(float);
  if (ensure_tier_ws(ctx, range_bytes + a_bytes + b_bytes + t_bytes, st)) return -1;
  uint32_t *range = (uint32_t *)ctx->tier_ws;
  uint16_t *a_ext = (uint16_t *)(ctx->tier_ws + range_bytes);
  uint16_t *b_ext = (uint16_t *)(ctx->tier_ws + range_bytes + a_bytes);
  float *corr = (float *)(ctx->tier_ws + range_bytes + a_bytes + b_bytes);
  AMD_CUDA_CHECK(cudaMemsetAsync(range, 0, RANGE_WORDS * sizeof(uint32_t), ctx->stream), st);
  /* A: M x K (k along the columns), or stored K x M; B: K x N, or stored N x K */
  if (launch_extend<J, true>(ctx, p.A, p.lda, p.sa, p.batch, p.trans_a ? p.K : p.M, p.trans_a ? p.M : p.K,
                             !p.trans_a, a_ext, range, st) ||
      launch_extend<J, false>(ctx, p.B, p.ldb, p.sb, p.batch, p.trans_b ? p.N : p.K, p.trans_b ? p.K : p.N,
                              p.trans_b, b_ext, range, st))
    return -1;
  /* column-major view as in run_acc32: corr^T (N x M) = op(B_ext)^T op(A_ext)^T */
  const cublasOperation_t ob = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                          oa = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t lda = p.trans_a ? M : JK, ldb = p.trans_b ? JK : N;
  AMD_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(ctx->cublas, ob, oa, N, M, JK, &c, b_ext, CUDA_R_16BF, ldb,
                                                 nbb > 1 ? JK * N : 0, a_ext, CUDA_R_16BF, lda,
                                                 nba > 1 ? M * JK : 0, &zero, corr, CUDA_R_32F, N, M * N,
                                                 p.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   st);
  p.corr = corr;
  p.range = range;
  p.tab = NULL;
  p.tab_words = 0;
  return launch_mode<TIER_MODE, MI>(ctx, p, st);
}

/* Launches the small-tile kernel: enough slices to give every SM two
 * rounds of blocks, each slice at least 4 K steps deep. */
template <int MODE> static int launch_small(amd_cuda_gemm_ctx *ctx, Params p, amd_status *st) {
  if (!ModeTraits<MODE>::mbm1) p.tab_words = 0; /* lut: runs exact here */
  p.tab = p.tab_small;
  const int smem = small_smem_words(p.tab_words) * 4; /* under 48 KiB: no opt-in needed */
  int per_sm = 0;
  AMD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, small_kernel<MODE>, NT, smem), st);
  if (per_sm < 1)
    return amd_fail(st, "small mode GEMM kernel does not fit on the device (%d B shared)", smem);
  const int64_t tm = (p.M + SR - 1) / SR, tn = (p.N + SC - 1) / SC;
  if (tm > 65535) return amd_fail(st, "amd_cuda_gemm: M = %d needs more than 65535 row tiles", p.M);
  /* enough slices for two rounds of blocks on every SM, each at least 4 K
   * steps deep (8 where a block first copies the table) */
  const int64_t tiles = tm * tn * p.batch, want = 2 * (int64_t)per_sm * ctx->sms;
  const int64_t ksteps = (p.K + SBK - 1) / SBK, min_steps = p.tab_words ? 8 : 4;
  int64_t s = tiles < want ? (want + tiles - 1) / tiles : 1;
  s = s < ksteps / min_steps ? s : ksteps / min_steps;
  s = s < SMALL_MAX_SPLIT ? s : SMALL_MAX_SPLIT;
  s = s < INT_MAX / p.batch ? s : INT_MAX / p.batch;
  if (set_splits(ctx, p, ksteps, s > 1 ? s : 1, SBK, st)) return -1;
  if (p.splits >= 1) {
    dim3 grid((unsigned)tn, (unsigned)tm, grid_z(p));
    small_kernel<MODE><<<grid, NT, smem, ctx->stream>>>(p);
    AMD_CUDA_CHECK_LAUNCH("small_kernel", st);
  }
  return reduce_splits(ctx, p, st);
}

/* The large tile's rows: 64 where a 128-row tile would be mostly padding. */
static int large_tile_rows(const Params &p) {
  return p.M <= 64 || (p.M % 128 != 0 && p.M % 128 <= 64) ? 64 : 128;
}

/* The large tile's share of useful outputs. */
static double large_tile_use(const Params &p) {
  const int bm = large_tile_rows(p);
  const double padded = (double)((p.M + bm - 1) / bm * bm) * (double)((p.N + BN - 1) / BN * BN);
  return (double)p.M * p.N / padded;
}

template <int MODE> static int launch_bm(amd_cuda_gemm_ctx *ctx, const Params &p, amd_status *st) {
  /* the small tile where the large one would be more than 70% padding (the
   * small tile reuses each operand less: up to 2 times slower per product) */
  const int small =
      ctx->tile == AMD_GEMM_TILE_SMALL || (ctx->tile == AMD_GEMM_TILE_AUTO && large_tile_use(p) < 0.3);
  if (small) return launch_small<MODE>(ctx, p, st);
  if constexpr (MODE == AMD_MODE_AM16 || MODE == AMD_MODE_MBM14) {
    if (ctx->tier == AMD_GEMM_TIER_FAST && p.K > 0) {
      constexpr int TM = MODE == AMD_MODE_AM16 ? TIER_AM16 : TIER_MBM14;
      if (large_tile_rows(p) == 64) return launch_tier<MODE, TM, 1>(ctx, p, st);
      return launch_tier<MODE, TM, 2>(ctx, p, st);
    }
  }
  /* am32's 128-row tile runs out of registers (its planes' operands beside
   * 64 sums): 64 rows, 1.3 to 1.4 times faster on the 128-row shapes (with
   * five planes, 2026-11-24) */
  if constexpr (ModeTraits<MODE>::scaled) return launch_mode<MODE, 1>(ctx, p, st);
  if (large_tile_rows(p) == 64) return launch_mode<MODE, 1>(ctx, p, st);
  return launch_mode<MODE, 2>(ctx, p, st);
}

/* launch_bm for the emulated modes; acc32 (cuBLAS) has no mode kernel. */
template <int MODE> static int launch_mode_of(amd_cuda_gemm_ctx *ctx, const Params &p, amd_status *st) {
  if constexpr (mode_rows[MODE].kind == AMD_KIND_ACC32)
    return amd_fail(st, "amd_cuda_gemm: invalid multiplier mode %d", MODE);
  else
    return launch_bm<MODE>(ctx, p, st);
}

static int run_acc32(amd_cuda_gemm_ctx *ctx, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                     float alpha, const float *A, int64_t lda, int64_t stride_a, const float *B, int64_t ldb,
                     int64_t stride_b, float beta, float *C, int64_t ldc, int64_t stride_c, int64_t batch,
                     amd_status *st) {
  /* column-major view: C^T (N x M, ld ldc) = op(B)^T (N x K) * op(A)^T (K x M) */
  const cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  AMD_CUBLAS_CHECK(cublasSgemmStridedBatched_64(ctx->cublas, ob, oa, N, M, K, &alpha, B, ldb, stride_b, A,
                                                lda, stride_a, &beta, C, ldc, stride_c, batch),
                   st);
  return 0;
}

extern "C" int amd_cuda_gemm(amd_cuda_gemm_ctx *ctx, const amd_mult *mult, int trans_a, int trans_b,
                             int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                             int64_t stride_a, const float *B, int64_t ldb, int64_t stride_b, float beta,
                             float *C, int64_t ldc, int64_t stride_c, int64_t batch, amd_status *st) {
  if (!ctx) return amd_fail(st, "amd_cuda_gemm: no context");
  if (M < 0 || N < 0 || K < 0 || batch < 0)
    return amd_fail(st, "amd_cuda_gemm: negative size (M %lld, N %lld, K %lld, batch %lld)", (long long)M,
                    (long long)N, (long long)K, (long long)batch);
  if (M == 0 || N == 0 || batch == 0) return 0;
  const int64_t acols = trans_a ? M : K, bcols = trans_b ? K : N;
  if (lda < (acols > 1 ? acols : 1) || ldb < (bcols > 1 ? bcols : 1) || ldc < N)
    return amd_fail(st,
                    "amd_cuda_gemm: leading dimension too small (lda %lld, ldb %lld, ldc %lld for M %lld, N "
                    "%lld, K %lld)",
                    (long long)lda, (long long)ldb, (long long)ldc, (long long)M, (long long)N, (long long)K);
  if (stride_a < 0 || stride_b < 0 || stride_c < 0)
    return amd_fail(st, "amd_cuda_gemm: negative batch stride");
  if (!C || (K > 0 && (!A || !B))) return amd_fail(st, "amd_cuda_gemm: NULL matrix");
  if (!mult || mult->mode == AMD_MODE_ACC32)
    return run_acc32(ctx, trans_a, trans_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc,
                     stride_c, batch, st);
  if (M > INT_MAX / 2 || N > INT_MAX / 2 || K > INT_MAX / 2 || batch > INT_MAX / MAX_SPLIT)
    return amd_fail(st,
                    "amd_cuda_gemm: size too large for the mode kernels (M %lld, N %lld, K %lld, batch %lld)",
                    (long long)M, (long long)N, (long long)K, (long long)batch);
  if ((int)mult->mode <= AMD_MODE_ACC32 || mult->mode >= AMD_MODE_COUNT)
    return amd_fail(st, "amd_cuda_gemm: invalid multiplier mode %d", (int)mult->mode);

  Params p;
  memset(&p, 0, sizeof p);
  p.M = (int)M;
  p.N = (int)N;
  p.K = (int)K;
  p.batch = (int)batch;
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  p.alpha = alpha;
  p.beta = beta;
  p.A = A;
  p.B = B;
  p.lda = lda;
  p.ldb = ldb;
  p.sa = stride_a;
  p.sb = stride_b;
  p.C = C;
  p.ldc = ldc;
  p.sc = stride_c;
  const amd_mode_kind kind = kind_of(mult->mode);
  if (kind == AMD_KIND_MBM || kind == AMD_KIND_LUT) {
    const table_entry *t;
    if (get_table(ctx, mult, &t, st)) return -1;
    p.tab = t->dev;
    p.tab_words = t->words;
    if (kind == AMD_KIND_MBM) { /* MBM1 */
      p.tab_small = t->dev;
      p.tab = t->dev + MBM1_TAB_WORDS;
      p.tab_words = MBM1_TAB_WORDS;
    }
    if (kind == AMD_KIND_LUT) {
      p.lut = (const uint8_t *)(t->dev + t->words);
      p.lut_bits = t->lut_bits;
    }
  }
  switch (mult->mode) {
#define AMD_MODE_LAUNCH(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY)                                \
  case ID:                                                                                                   \
    return launch_mode_of<ID>(ctx, p, st);
    AMD_MODE_LIST(AMD_MODE_LAUNCH)
#undef AMD_MODE_LAUNCH
  default:
    return amd_fail(st, "amd_cuda_gemm: invalid multiplier mode %d", (int)mult->mode);
  }
}

/* ================================================================ acc32 adding a matrix, with a Relu (cuBLASLt) */

/* The alignment in bytes (a power of two, at most 256) that every batch
 * entry of a matrix at p keeps: cuBLASLt's heuristic otherwise assumes 256. */
static int64_t lt_align(const void *p, int64_t stride, int64_t batch) {
  uint64_t bits = (uint64_t)(uintptr_t)p | (batch > 1 ? (uint64_t)stride * 4u : 0u) | 256u;
  return (int64_t)(bits & (~bits + 1u));
}

static cublasStatus_t lt_layout(cublasLtMatrixLayout_t *l, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                int64_t stride) {
  cublasStatus_t cs = cublasLtMatrixLayoutCreate(l, CUDA_R_32F, (uint64_t)rows, (uint64_t)cols, ld);
  const int32_t count = (int32_t)batch;
  const int64_t offset = stride;
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset, sizeof offset);
  return cs;
}

/* The plan of key k (made, and its algorithm looked up, on first use). In
 * the column-major view of run_acc32, C^T = op(B)^T op(A)^T + D^T: cuBLASLt's
 * A is our B and its B our A; its bias vector would run along our columns,
 * so the caller's addend is a matrix (C in cuBLASLt's terms). */
static int lt_plan_get(amd_cuda_gemm_ctx *ctx, const int64_t *k, lt_plan **out, amd_status *st) {
  for (int i = 0; i < ctx->nplans; i++)
    if (!memcmp(ctx->plans[i].key, k, sizeof ctx->plans[i].key)) return *out = &ctx->plans[i], 0;
  if (!ctx->lt) AMD_CUBLAS_CHECK(cublasLtCreate(&ctx->lt), st);
  if (ctx->nplans == ctx->cap_plans) {
    const int nc = ctx->cap_plans ? 2 * ctx->cap_plans : 32;
    lt_plan *np = (lt_plan *)realloc(ctx->plans, (size_t)nc * sizeof *np);
    if (!np) return amd_fail(st, "out of memory");
    ctx->plans = np, ctx->cap_plans = nc;
  }
  lt_plan *p = &ctx->plans[ctx->nplans];
  memset(p, 0, sizeof *p);
  memcpy(p->key, k, sizeof p->key);
  const int ta = (int)k[0], tb = (int)k[1];
  const int64_t M = k[2], N = k[3], K = k[4], lda = k[5], ldb = k[6], ldd = k[7], ldc = k[8], sa = k[9],
                sb = k[10], sd = k[11], sc = k[12], batch = k[13], relu = k[14];
  const cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasLtEpilogue_t epi = relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
  cublasStatus_t cs = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F); /* no TF32 */
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  if (cs == CUBLAS_STATUS_SUCCESS) cs = lt_layout(&p->la, tb ? K : N, tb ? N : K, ldb, batch, sb);
  if (cs == CUBLAS_STATUS_SUCCESS) cs = lt_layout(&p->lb, ta ? M : K, ta ? K : M, lda, batch, sa);
  if (cs == CUBLAS_STATUS_SUCCESS) cs = lt_layout(&p->lc, N, M, ldd, batch, sd);
  if (cs == CUBLAS_STATUS_SUCCESS) cs = lt_layout(&p->ld, N, M, ldc, batch, sc);
  cublasLtMatmulPreference_t pref = NULL;
  if (cs == CUBLAS_STATUS_SUCCESS) cs = cublasLtMatmulPreferenceCreate(&pref);
  const uint64_t ws = cublas_ws_bytes;
  const uint32_t align[4] = {(uint32_t)k[16], (uint32_t)k[15], (uint32_t)k[17], (uint32_t)k[18]}; /* its A B C D */
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  for (int i = 0; i < 4 && cs == CUBLAS_STATUS_SUCCESS; i++)
    cs = cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align[i], sizeof align[i]);
  cublasLtMatmulHeuristicResult_t found;
  int n_found = 0;
  if (cs == CUBLAS_STATUS_SUCCESS) {
    /* NOT_SUPPORTED (no algorithm for this shape) is an answer, not an error */
    const cublasStatus_t hs =
        cublasLtMatmulAlgoGetHeuristic(ctx->lt, p->op, p->la, p->lb, p->lc, p->ld, pref, 1, &found, &n_found);
    if (hs != CUBLAS_STATUS_SUCCESS && hs != CUBLAS_STATUS_NOT_SUPPORTED) cs = hs;
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (cs != CUBLAS_STATUS_SUCCESS) {
    lt_plan_free(p);
    return amd_fail(st, "cuBLASLt: %s setting up a GEMM", cublasGetStatusName(cs));
  }
  p->ok = n_found > 0;
  if (p->ok) p->algo = found.algo;
  ctx->nplans++;
  *out = p;
  return 0;
}

extern "C" int amd_cuda_gemm_add_relu(amd_cuda_gemm_ctx *ctx, const amd_mult *mult, int trans_a, int trans_b,
                                      int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                                      int64_t stride_a, const float *B, int64_t ldb, int64_t stride_b,
                                      const float *D, int64_t ldd, int64_t stride_d, int relu, float *C,
                                      int64_t ldc, int64_t stride_c, int64_t batch, amd_status *st) {
  if (!ctx) return amd_fail(st, "amd_cuda_gemm_add_relu: no context");
  if (mult && mult->mode != AMD_MODE_ACC32) return 1;
  if (M < 0 || N < 0 || K < 0 || batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0 || stride_d < 0)
    return amd_fail(st, "amd_cuda_gemm_add_relu: negative size or stride");
  if (M == 0 || N == 0 || batch == 0) return 0;
  if (K == 0 || batch > INT_MAX) return 1;
  if (lda < (trans_a ? M : K) || ldb < (trans_b ? K : N) || ldc < N || (D && ldd < N))
    return amd_fail(st, "amd_cuda_gemm_add_relu: leading dimension too small");
  if (!A || !B || !C) return amd_fail(st, "amd_cuda_gemm_add_relu: NULL matrix");
  /* no addend: C is cuBLASLt's C as well as its D (beta 0: not read) */
  const float *addend = D ? D : C;
  const int64_t key[LT_KEY] = {trans_a, trans_b, M, N, K, lda, ldb, D ? ldd : ldc, ldc, stride_a, stride_b,
                               D ? stride_d : stride_c, stride_c, batch, relu ? 1 : 0,
                               lt_align(A, stride_a, batch), lt_align(B, stride_b, batch),
                               lt_align(addend, D ? stride_d : stride_c, batch), lt_align(C, stride_c, batch), 0};
  lt_plan *p = NULL;
  if (lt_plan_get(ctx, key, &p, st)) return -1;
  if (!p->ok) return 1;
  const float beta = D ? 1.0f : 0.0f;
  AMD_CUBLAS_CHECK(cublasLtMatmul(ctx->lt, p->op, &alpha, B, p->la, A, p->lb, &beta, addend, p->lc, C, p->ld,
                                  &p->algo, ctx->cublas_ws, cublas_ws_bytes, ctx->stream),
                   st);
  return 0;
}
