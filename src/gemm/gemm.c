/* The CPU GEMM that every Conv / Gemm / MatMul goes through (see gemm.h).
 *
 * Structure (GotoBLAS-style blocking): the output is cut into tiles of at
 * most MC x NC that the threads share (OpenMP, dynamic schedule, so that a thread
 * the OS descheduled does not hold back the others; NC shrinks
 * when there are too few tiles for the threads). For each tile, K is walked
 * in blocks of KC: the tile's rows of op(A) are packed into MR-row panels and
 * its columns of op(B) into NR-column panels (zero padded to whole panels) in
 * the thread's own buffers, then a register-tiled MR x NR micro-kernel runs
 * over every panel pair. Tiles are independent: no barrier but the final one,
 * and results do not depend on the thread count.
 *
 * Two kinds of micro-kernel share that blocking:
 * - acc32 (mult NULL or AMD_MODE_ACC32): plain C loops over a float
 *   accumulator tile that GCC -O3 vectorises. The x86-64 baseline build only
 *   has SSE2, so the kernel is compiled three times (default, AVX2, AVX-512F,
 *   with tile shapes that fit each register file) and picked once at run time.
 *   Products and sums are separate IEEE fp32 operations (the build uses
 *   -ffp-contract=off, and the AVX2 / AVX-512 clones do not enable FMA).
 * - every other mode (see "Mode kernels" below): the same blocking,
 *   threading and per-ISA compilation, but the operands are pre-decoded once
 *   while packing (uint32 encodings, zero masks, per-panel exponent ranges) so
 *   that the micro-kernel's inner loop is a few integer adds, a table lookup
 *   or a min/max, and one fp32 add; each product stays bit-identical to
 *   amd_mult_product. A panel pair whose operands could give a special case
 *   the fast kernel does not handle (Inf/NaN operands, exponent underflow or
 *   overflow of some product) runs the exact per-product path instead.
 *
 * On the acc32 path, products with at most SMALL_M rows skip the packing
 * (see small_m).
 *
 * Accumulation: each K block's products are summed in fp32 in k order, then
 * C = alpha * sum + beta * C for the first K block (C is not read when
 * beta == 0) and C += alpha * sum for the following ones. */
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "../core/omp.h"
#include "../core/status.h"
#include "../mult/mult.h"
#include "../mult/products.h"

enum {
  KC = 256,       /* K block: one packed A panel row-set and B panel stay in L1/L2 */
  MC_PANELS = 16, /* MC = MC_PANELS * MR rows per tile */
  NC_PANELS = 16, /* NC = NC_PANELS * NR columns per tile (at most) */
  MAX_MR = 12,    /* largest tile of the kernels below */
  MAX_NR = 16,
};

/* What packing learnt about one packed panel of a mode (see "Mode kernels"). */
typedef struct panel_info {
  int emin, emax; /* range of the biased exponents of the normal operands (emin > emax: none) */
  int special;    /* an operand the fast kernel cannot take (Inf or NaN) */
} panel_info;

/* The constants of an MBM_m kernel (m in {23, 7, 5}): the correction K for
 * c = 0 and c = 1, and the mask that truncates G2 to m fraction bits. */
typedef struct mbm_consts {
  uint32_t k0, k1, trunc;
} mbm_consts;

/* The arguments one tile of the macro-kernel needs. */
typedef struct tile_args {
  int64_t mc, nc, kc; /* tile size (rows, columns, depth) */
  const float *pa;    /* packed A: ceil(mc/MR) panels of kc x MR */
  const float *pb;    /* packed B: ceil(nc/NR) panels of kc x NR */
  float *c;           /* C at the tile's top-left */
  int64_t ldc;
  float alpha, beta;    /* beta < 0 sentinel not used: see first */
  int first;            /* first K block: apply beta (or ignore C when beta == 0) */
  const amd_mult *mult; /* generic kernel only */
  /* mode kernels only (see "Mode kernels") */
  int kind;                     /* mode_kind */
  int64_t pstride_a, pstride_b; /* uint32 elements between the packed planes */
  const struct panel_info *ia;  /* per A panel */
  const struct panel_info *ib;  /* per B panel */
  const uint32_t *tab;          /* lookup table (MBM 1-D, lut 2-D) */
  uint32_t tabmask;             /* index mask of the 2-D table */
  mbm_consts mbm;               /* KIND_MBM */
  int mbits;                    /* the mode's fraction width m */
  /* where the tile's operands live in the caller's matrices (exact fallback) */
  const float *A, *B;
  int64_t lda, ldb, r0, c0, p0;
  int trans_a, trans_b;
} tile_args;

/* Writes an mr x nr accumulator tile (row stride nr_full) into C. */
static inline __attribute__((always_inline)) void
store_tile(const tile_args *t, float *c, int64_t ldc, const float *acc, int nr_full, int64_t mr, int64_t nr) {
  float alpha = t->alpha, beta = t->beta;
  if (!t->first) {
    for (int64_t i = 0; i < mr; i++)
      for (int64_t j = 0; j < nr; j++) c[i * ldc + j] += alpha * acc[i * nr_full + j];
  } else if (beta == 0) {
    for (int64_t i = 0; i < mr; i++)
      for (int64_t j = 0; j < nr; j++) c[i * ldc + j] = alpha * acc[i * nr_full + j];
  } else {
    for (int64_t i = 0; i < mr; i++)
      for (int64_t j = 0; j < nr; j++) c[i * ldc + j] = alpha * acc[i * nr_full + j] + beta * c[i * ldc + j];
  }
}

/* The acc32 macro-kernel for one tile, with the tile shape as compile-time
 * constants after inlining. The accumulator tile is a local array indexed by
 * constants once the loops are unrolled, so it lives in vector registers. */
static inline __attribute__((always_inline)) void tile_acc32(const tile_args *t, const int MR, const int NR) {
  for (int64_t jr = 0; jr < t->nc; jr += NR) {
    const float *pb = t->pb + (jr / NR) * t->kc * NR;
    int64_t nr = t->nc - jr < NR ? t->nc - jr : NR;
    for (int64_t ir = 0; ir < t->mc; ir += MR) {
      const float *pa = t->pa + (ir / MR) * t->kc * MR;
      int64_t mr = t->mc - ir < MR ? t->mc - ir : MR;
      float acc[MAX_MR * MAX_NR] __attribute__((aligned(64)));
      for (int i = 0; i < MR * NR; i++) acc[i] = 0;
      const float *a = pa, *b = pb;
      for (int64_t p = 0; p < t->kc; p++, a += MR, b += NR) {
        for (int i = 0; i < MR; i++) {
          float av = a[i];
          AMD_PRAGMA(omp simd)
          for (int j = 0; j < NR; j++) acc[i * NR + j] += av * b[j];
        }
      }
      float *c = t->c + ir * t->ldc + jr;
      if (mr == MR && nr == NR)
        store_tile(t, c, t->ldc, acc, NR, MR, NR);
      else
        store_tile(t, c, t->ldc, acc, NR, mr, nr);
    }
  }
}

/* Per-ISA instances. Tile shapes are chosen so that the accumulators plus one
 * packed B row and one broadcast A value fit the register file (SSE2 and AVX2:
 * 12 of 16 registers; AVX-512: 12 of 32, one register per row so that a K
 * block of A and B panels (12 + 16) * KC floats stays in a 32 KiB L1). */
#define SSE_MR 6
#define SSE_NR 8
#define AVX2_MR 6
#define AVX2_NR 16
#define AVX512_MR 12
#define AVX512_NR 16

static void tile_acc32_default(const tile_args *t) { tile_acc32(t, SSE_MR, SSE_NR); }

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define AMD_GEMM_X86 1
__attribute__((target("avx2"))) static void tile_acc32_avx2(const tile_args *t) {
  tile_acc32(t, AVX2_MR, AVX2_NR);
}
__attribute__((target("avx512f"))) static void tile_acc32_avx512(const tile_args *t) {
  tile_acc32(t, AVX512_MR, AVX512_NR);
}
#endif

#ifdef AMD_GEMM_X86
#define AMD_ISA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define AMD_ISA_CLONES
#endif

/* The generic kernel: each product through the mode. */
static void tile_generic(const tile_args *t, int MR, int NR) {
  for (int64_t jr = 0; jr < t->nc; jr += NR) {
    const float *pb = t->pb + (jr / NR) * t->kc * NR;
    int64_t nr = t->nc - jr < NR ? t->nc - jr : NR;
    for (int64_t ir = 0; ir < t->mc; ir += MR) {
      const float *pa = t->pa + (ir / MR) * t->kc * MR;
      int64_t mr = t->mc - ir < MR ? t->mc - ir : MR;
      float acc[MAX_MR * MAX_NR];
      for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) {
          float s = 0;
          for (int64_t p = 0; p < t->kc; p++) s += amd_mult_product(t->mult, pa[p * MR + i], pb[p * NR + j]);
          acc[i * NR + j] = s;
        }
      store_tile(t, t->c + ir * t->ldc + jr, t->ldc, acc, NR, mr, nr);
    }
  }
}

/* ---- Mode kernels --------------------------------------------------------
 *
 * Each mode falls in one kind of micro-kernel (mode_kind: its KIND and M in
 * src/mult/mode_list.h, AMD_KIND_MIT_FORCED running as KIND_MIT with the
 * forced bit, AMD_KIND_MBM as KIND_MBM, AMD_KIND_LUT as KIND_LUT, and so on;
 * the kinds below name examples of their modes); packing turns every operand
 * into up to three uint32 planes (enc, mask, frac) once, so the inner loop
 * over a packed B row is integer adds plus at most a table lookup or a few
 * min/max, then one fp32 add (never FMA: -ffp-contract=off and no FMA
 * target). Notation of docs/multipliers.md: s sign, E biased
 * exponent, F fraction, ONE = 2^23.
 *
 * KIND_ACC16: enc = T16(x) as float; product = T16(a * b) by masking the
 *   fp32 product (the product of two bfloat16 values; x86 and the spec both
 *   make every NaN product quiet, which T16 keeps a NaN).
 * KIND_FP16: enc = half(x) as float; product = the fp32 product (exact:
 *   22 significant bits, in range) rounded to half: vcvtps2ph/vcvtph2ps (round
 *   to nearest even) on AVX-512F and AVX2+F16C, else half_round (integer ops
 *   in the normal range, the x + 0.5 - 0.5 trick for half subnormals, overflow
 *   to Inf). Panels with an Inf or NaN half operand use the exact path.
 * KIND_MIT (mit16, mit32, and mbm12: MBM_3 has no correction, so it is
 *   Mitchell on fractions with the forced bit): enc(a) = (s|E|F&T_m) -
 *   127<<23, enc(b) = s|E|F&T_m; their 32-bit sum is the product itself: the
 *   carry of the fraction sum increments the exponent, the signs add to
 *   s(a)^s(b), and the kept fraction bits need no further truncation.
 * KIND_MBM (am16, mbm14: MBM_7, MBM_5) as KIND_MBM23 below, with the forced
 *   bit in f, K & T_m for both corrections and G2 - S truncated to m bits
 *   (S is a multiple of 2^(23-m), so truncating G2 - S truncates G2).
 * KIND_MBM1 (am16, mbm14 where the CPU has AVX-512 VBMI): the product depends
 *   on the fractions only through their sum. With h = (F & T_m) >> (24 - m)
 *   (the kept bits without the forced one), enc(a) = s|(E-127)<<23 + h<<16 and
 *   enc(b) = s|E<<23 + h<<16; in x = enc(a)+enc(b) bits 16..22 hold
 *   idx = h(a)+h(b) < 2^m <= 128 and bits 23..31 s and E(a)+E(b)-127, so the
 *   product is x + tab[idx]<<16 with tab[idx] = (carry<<23 | M)>>16 - idx, a
 *   byte table of 128 entries (12..133) built from the scalar product, looked
 *   up 64 lanes at a time by one two-register byte permute (vpermi2b).
 * KIND_LUT (lut:FILE, 2-D table of 4^m bytes): enc(a) = s|(E-127)<<23 | i<<m,
 *   enc(b) = s|E<<23 | j (i, j = the top m fraction bits); the low 2m bits of
 *   the sum are the table index, product = x + tab[idx], tab[idx] =
 *   (carry<<23 | M) - idx (a gather: slower, allowed).
 * KIND_LUT1 (lut:FILE where the CPU has AVX-512 VBMI): for a fixed first
 *   operand the table row (2^m <= 128 bytes, padded to 128) fits two vector
 *   registers, so the lookup is one byte permute per 16 products. The A side
 *   goes into the fp32 accumulation instead of the integer sum (see "scale"
 *   below): A planes = i*128 (the row's byte offset) and the scale, B planes
 *   = s|E<<23, the zero mask and j<<16; the table byte is carry<<7 |
 *   M<<(7-m), so r = enc(b) + byte<<16 = s(b)|(E(b)+carry)<<23|M, and the
 *   product is r * scale(a). The kernel runs two B panels per A row (12 x 32)
 *   so that each loaded table row serves 32 products.
 * KIND_MBM23X (am32 with the 12 x 16 AVX-512 tile): section 3 in fp32
 *   arithmetic. In units of 1/ONE, the significand of the product
 *   (carry<<23 | M, read as 1.M * 2^carry) is V = ONE + K + S truncated to 24
 *   bits when S < ONE (S + K < ONE: exact; the c = 0 overflow: (S+K+ONE)>>1
 *   at carry 1 is the truncation), 2S + K when ONE <= S < 2 ONE - K/2, and
 *   2S in the corner. As 2S + K <= ONE + K + S exactly when S <= ONE (and
 *   truncation keeps it so: 2S + K is even), V = max(t1, t2) outside the
 *   corner with t1 = alpha + beta rounded toward zero, alpha = (K + f(a)) /
 *   ONE, beta = 1 + f(b) / ONE (exact floats), and t2 the float 2S + K,
 *   whose bits are 0x3F800000 + K/2 + S once S + K/2 >= ONE (exponent 1,
 *   an even significand) and a float below t1 otherwise: t2 = gamma + f(b)
 *   with gamma = 0x3F800000 + K/2 + f(a), an integer add; both are positive
 *   floats, so one signed integer max picks V. In the corner (S + K/2 >=
 *   2 ONE, i.e. t2 >= 4.0f) V = 2S, bits t2 - K/2. r = V + (s(b)|E(b)<<23) -
 *   127<<23 (an integer add: b's sign and exponent) and the product is
 *   r * scale(a). The corner is only possible at a k where max f(a) of the
 *   A row + max f(b) of the B row >= 2 ONE - K/2: packing records both
 *   maxima per k, and the kernel runs the corner compare only at those k.
 *   A planes: alpha, scale, gamma, per-k max f(a); B planes: the packed
 *   values (eb), per-k max f(b); beta, f(b), the exponent offset and the
 *   zero mask are derived from eb once per k.
 * Scale (KIND_LUT1, KIND_MBM23X): scale(a) = s(a)|E(a)<<23 as a float
 *   (+-2^(E(a)-127), exact), 0 for a zero or subnormal a; the accumulation is
 *   one fused multiply-add c + r * scale, which is exactly the fp32 add
 *   c + product since r * scale is exact (a power-of-two scaling of a normal
 *   value into the normal range) and c + r * 0 = c (c is never -0: it starts
 *   at +0). B zeros are a write mask on the FMA (KIND_LUT1) or on the add
 *   that forms r (KIND_MBM23X: r = +0, and c + 0 * scale = c). r itself must stay finite
 *   (E(b) + carry <= 254, so B panels with E = 254 take the exact path);
 *   for a zero a, f(a) = 0.
 * KIND_MBM23 (am32): with f = F, S = f(a) + f(b), K = 0xA0000: section 3
 *   gives the significand part G = carry<<23 | M as G1 = S+K (S < ONE-K),
 *   G2 = (S+K+ONE)>>1 (the c = 0 overflow), G3 = S+K/2 (c = 1) and S (the
 *   corner S >= 2 ONE - K/2 that drops the correction). enc is the Mitchell
 *   encoding of KIND_MIT, whose sum is Xoff + S (Xoff = s|E(a)+E(b)-127), so
 *   product = enc(a) + enc(b) + D with D = G - S = clamp(G2 - S, K/2, K), or 0
 *   in the corner; G2 - S = (K + ONE - S) >> 1 (arithmetic), and the frac
 *   planes hold K + ONE - f(a) (A) and f(b) (B) so that u = K + ONE - S is one
 *   subtraction; the corner is u <= K + K/2 - ONE.
 * The AVX-512 builds run these kinds through intrinsic micro-kernels that
 * keep the 12 x 16 accumulator tile in registers (micro_avx512, and the VBMI,
 * am32 and fp16 ones); the plain-C micro_mode is the portable version (SSE2,
 * AVX2) of the same arithmetic. AMD_GEMM_ISA=avx512-novbmi (like sse, avx2)
 * forces a narrower choice (no KIND_MBM1, KIND_LUT1, KIND_MBM23X), for tests
 * and benchmarks.
 * For every kind but ACC16 and FP16 the mask plane is 0 for a zero or subnormal
 * operand (the product is then a signed zero, which adds nothing to an fp32
 * sum that starts at +0) and all ones otherwise. Those encodings are right
 * while 1 <= E(a) + E(b) - 127 <= 253 (no product can underflow or overflow,
 * carry included), so each panel records the range of its exponents and
 * whether it has an Inf or NaN; a panel pair outside that range runs the exact
 * per-product path (amd_mult_product on the caller's matrices). */
/* KIND_MBM1 and KIND_LUT1 exist only with the AVX-512 VBMI kernels, KIND_MBM23X
 * only with the AVX-512 12 x 16 tile. */
enum mode_kind {
  KIND_ACC16,
  KIND_FP16,
  KIND_MIT,
  KIND_MBM,
  KIND_LUT,
  KIND_MBM23,
  KIND_MBM1,
  KIND_LUT1,
  KIND_MBM23X,
  KIND_NONE
};

static inline __attribute__((always_inline)) float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline __attribute__((always_inline)) uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Rounds the exact fp32 product of two finite binary16 values to binary16
 * (as fp32 bits): round to nearest even, half subnormals, overflow to Inf.
 * Branch-free so that it vectorises; the same results as
 * amd_round_half_bits for every non-NaN input. */
static inline __attribute__((always_inline)) uint32_t half_round(uint32_t u) {
  uint32_t s = u & 0x80000000u, a = u & 0x7FFFFFFFu;
  uint32_t rn = (a + 0x0FFFu + ((a >> 13) & 1u)) & ~0x1FFFu;
  rn = rn > 0x477FE000u ? 0x7F800000u : rn;
  /* below 2^-14: round to a multiple of 2^-24, the ulp of [0.5, 1) */
  uint32_t sub = f2u((u2f(a) + 0.5f) - 0.5f);
  return s | (a < 0x38800000u ? sub : rn);
}

/* One MR x NR panel pair of a mode, accumulated into acc (MR x NR floats,
 * zeroed here). a0/a1/a2: enc, mask and frac planes of the A panel (kc x MR),
 * b0/b1/b2 of the B panel (kc x NR). */
static inline __attribute__((always_inline)) void
micro_mode(const int kind, const int MR, const int NR, int64_t kc, const uint32_t *a0, const uint32_t *a1,
           const uint32_t *a2, const uint32_t *b0, const uint32_t *b1, const uint32_t *b2,
           const uint32_t *tab, uint32_t tabmask, const mbm_consts mc, float *acc) {
  for (int i = 0; i < MR * NR; i++) acc[i] = 0;
  for (int64_t p = 0; p < kc; p++, a0 += MR, a1 += MR, a2 += MR, b0 += NR, b1 += NR, b2 += NR) {
    for (int i = 0; i < MR; i++) {
      const uint32_t ea = a0[i];
      float *ac = acc + i * NR;
      if (kind == KIND_ACC16) {
        const float fa = u2f(ea);
        AMD_PRAGMA(omp simd)
        for (int j = 0; j < NR; j++) ac[j] += u2f(f2u(fa * u2f(b0[j])) & 0xFFFF0000u);
      } else if (kind == KIND_FP16) {
        const float fa = u2f(ea);
        AMD_PRAGMA(omp simd)
        for (int j = 0; j < NR; j++) ac[j] += u2f(half_round(f2u(fa * u2f(b0[j]))));
      } else {
        const uint32_t ma = a1[i];
        if (kind == KIND_MIT) {
          AMD_PRAGMA(omp simd)
          for (int j = 0; j < NR; j++) ac[j] += u2f((ea + b0[j]) & ma & b1[j]);
        } else if (kind == KIND_LUT) {
          AMD_PRAGMA(omp simd)
          for (int j = 0; j < NR; j++) {
            uint32_t x = ea + b0[j];
            ac[j] += u2f((x + tab[x & tabmask]) & ma & b1[j]);
          }
        } else {                             /* KIND_MBM23, KIND_MBM: product = Mitchell sum + D */
          const int32_t ua = (int32_t)a2[i]; /* K + ONE - f(a): see encode_panel */
          const int32_t k0 = (int32_t)(kind == KIND_MBM23 ? 0xA0000u : mc.k0);
          const int32_t k1 = (int32_t)(kind == KIND_MBM23 ? 0x50000u : mc.k1);
          const int32_t lim = k0 + k1 - (int32_t)AMD_PROD_ONE, tr = (int32_t)mc.trunc;
          AMD_PRAGMA(omp simd)
          for (int j = 0; j < NR; j++) {
            const int32_t u = ua - (int32_t)b2[j]; /* K + ONE - S */
            int32_t d = u >> 1;                    /* G2 - S (arithmetic shift: floor) */
            if (kind == KIND_MBM) d &= tr;
            d = d > k1 ? d : k1;
            d = d < k0 ? d : k0;
            d = u > lim ? d : 0; /* S >= 2 ONE - K/2: the correction is dropped */
            ac[j] += u2f((ea + b0[j] + (uint32_t)d) & ma & b1[j]);
          }
        }
      }
    }
  }
}

#ifdef AMD_GEMM_X86
/* fp16 with the hardware conversions (vcvtps2ph with round to nearest even,
 * then back): the same rounding as half_round, subnormals and overflow
 * included. AVX-512F: 12 x 16 tile; AVX2 + F16C: 6 x 16 (two ymm a row). */
__attribute__((target("avx512f"))) static void micro_fp16_avx512(int64_t kc, const uint32_t *a0,
                                                                 const uint32_t *b0, float *acc) {
  __m512 c[12];
  for (int i = 0; i < 12; i++) c[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; p++, a0 += 12, b0 += 16) {
    const __m512 b = _mm512_loadu_ps((const float *)b0);
    for (int i = 0; i < 12; i++) {
      __m512 prod = _mm512_mul_ps(_mm512_set1_ps(u2f(a0[i])), b);
      __m256i h = _mm512_cvtps_ph(prod, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      c[i] = _mm512_add_ps(c[i], _mm512_cvtph_ps(h));
    }
  }
  for (int i = 0; i < 12; i++) _mm512_storeu_ps(acc + i * 16, c[i]);
}

__attribute__((target("avx2,f16c"))) static void micro_fp16_avx2(int64_t kc, const uint32_t *a0,
                                                                 const uint32_t *b0, float *acc) {
  __m256 c[12];
  for (int i = 0; i < 12; i++) c[i] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; p++, a0 += 6, b0 += 16) {
    const __m256 b_lo = _mm256_loadu_ps((const float *)b0), b_hi = _mm256_loadu_ps((const float *)b0 + 8);
    for (int i = 0; i < 6; i++) {
      const __m256 a = _mm256_set1_ps(u2f(a0[i]));
      __m128i h0 = _mm256_cvtps_ph(_mm256_mul_ps(a, b_lo), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m128i h1 = _mm256_cvtps_ph(_mm256_mul_ps(a, b_hi), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      c[2 * i] = _mm256_add_ps(c[2 * i], _mm256_cvtph_ps(h0));
      c[2 * i + 1] = _mm256_add_ps(c[2 * i + 1], _mm256_cvtph_ps(h1));
    }
  }
  for (int i = 0; i < 6; i++) {
    _mm256_storeu_ps(acc + i * 16, c[2 * i]);
    _mm256_storeu_ps(acc + i * 16 + 8, c[2 * i + 1]);
  }
}
#endif

#ifdef AMD_GEMM_X86
/* KIND_MBM1 on AVX-512 VBMI, 12 x 16 tile: per product an add, a byte
 * permute (zero-masked to byte 2 of each lane), an add, the zero masks (one
 * ternary-logic op) and the fp32 add. */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void
micro_mbm1_vbmi(int64_t kc, const uint32_t *a0, const uint32_t *a1, const uint32_t *b0, const uint32_t *b1,
                const uint8_t *tb, float *acc) {
  const __m512i t0 = _mm512_loadu_si512((const void *)tb), t1 = _mm512_loadu_si512((const void *)(tb + 64));
  const __mmask64 byte2 = 0x4444444444444444ull;
  __m512 c[12];
  for (int i = 0; i < 12; i++) c[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; p++, a0 += 12, a1 += 12, b0 += 16, b1 += 16) {
    const __m512i eb = _mm512_loadu_si512((const void *)b0), mb = _mm512_loadu_si512((const void *)b1);
    for (int i = 0; i < 12; i++) {
      __m512i x = _mm512_add_epi32(_mm512_set1_epi32((int)a0[i]), eb);
      __m512i t = _mm512_maskz_permutex2var_epi8(byte2, t0, x, t1);
      __m512i r = _mm512_add_epi32(x, t);
      r = _mm512_ternarylogic_epi32(r, _mm512_set1_epi32((int)a1[i]), mb, 0x80); /* r & ma & mb */
      c[i] = _mm512_add_ps(c[i], _mm512_castsi512_ps(r));
    }
  }
  for (int i = 0; i < 12; i++) _mm512_storeu_ps(acc + i * 16, c[i]);
}
#endif

#ifdef AMD_GEMM_X86
/* KIND_LUT1 on AVX-512 VBMI (see above): 12 rows x nb B panels of 16 (nb 1
 * or 2: each table row loaded serves nb * 16 products). Per product a byte
 * permute (zero-masked to byte 2 of each lane), an add and the fused
 * multiply-add by the A scale, write-masked by the B zeros. */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static inline __attribute__((always_inline)) void
micro_lut1_k(const int nb, int64_t kc, const uint32_t *a0, const uint32_t *a1, const uint32_t *b0,
             const uint32_t *b1, const uint32_t *b2, const uint32_t *d0, const uint32_t *d1,
             const uint32_t *d2, const uint8_t *tb, float *acc, float *acc2) {
  const __mmask64 byte2 = 0x4444444444444444ull;
  __m512 c[12], e[12];
  for (int i = 0; i < 12; i++) c[i] = e[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; p++) {
    const __m512i eb = _mm512_loadu_si512((const void *)(b0 + p * 16));
    const __m512i jb = _mm512_loadu_si512((const void *)(b2 + p * 16));
    const __m512i mb = _mm512_loadu_si512((const void *)(b1 + p * 16));
    const __mmask16 kb = _mm512_test_epi32_mask(mb, mb);
    __m512i ed = eb, jd = jb;
    __mmask16 kd = 0;
    if (nb == 2) {
      ed = _mm512_loadu_si512((const void *)(d0 + p * 16));
      jd = _mm512_loadu_si512((const void *)(d2 + p * 16));
      const __m512i md = _mm512_loadu_si512((const void *)(d1 + p * 16));
      kd = _mm512_test_epi32_mask(md, md);
    }
    for (int i = 0; i < 12; i++) {
      const uint8_t *row = tb + a0[p * 12 + i];
      const __m512i r0 = _mm512_loadu_si512((const void *)row),
                    r1 = _mm512_loadu_si512((const void *)(row + 64));
      const __m512 sa = _mm512_set1_ps(u2f(a1[p * 12 + i]));
      __m512i r = _mm512_add_epi32(eb, _mm512_maskz_permutex2var_epi8(byte2, r0, jb, r1));
      c[i] = _mm512_mask3_fmadd_ps(_mm512_castsi512_ps(r), sa, c[i], kb);
      if (nb == 2) {
        __m512i q = _mm512_add_epi32(ed, _mm512_maskz_permutex2var_epi8(byte2, r0, jd, r1));
        e[i] = _mm512_mask3_fmadd_ps(_mm512_castsi512_ps(q), sa, e[i], kd);
      }
    }
  }
  for (int i = 0; i < 12; i++) _mm512_storeu_ps(acc + i * 16, c[i]);
  if (nb == 2)
    for (int i = 0; i < 12; i++) _mm512_storeu_ps(acc2 + i * 16, e[i]);
}

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void
micro_lut1_vbmi(int64_t kc, const uint32_t *a0, const uint32_t *a1, const uint32_t *b0, const uint32_t *b1,
                const uint32_t *b2, const uint8_t *tb, float *acc) {
  micro_lut1_k(1, kc, a0, a1, b0, b1, b2, b0, b1, b2, tb, acc, acc);
}

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void
micro_lut1_vbmi_pair(int64_t kc, const uint32_t *a0, const uint32_t *a1, const uint32_t *b0, const uint32_t *b1,
                  const uint32_t *b2, const uint32_t *d0, const uint32_t *d1, const uint32_t *d2,
                  const uint8_t *tb, float *acc, float *acc2) {
  micro_lut1_k(2, kc, a0, a1, b0, b1, b2, d0, d1, d2, tb, acc, acc2);
}

/* KIND_MBM23X on AVX-512F, 12 x 16 tile (see above): per product an fp32
 * add rounding toward zero (t1), two integer adds (t2 and the exponent of
 * b), an integer max and the fused multiply-add by the A scale,
 * write-masked by the B zeros; the B row's lane terms are derived once per
 * k from eb. At the k where the corner is possible (ma[p] + mb[p] >= 2 ONE -
 * K/2) a compare and a merge-masked subtraction give 2S where S + K/2 >=
 * 2 ONE. a0..a2, ma: the A planes (alpha, scale, gamma, per-k max f); b0, b1,
 * mb: the B planes (beta, eb, per-k max f). */
__attribute__((target("avx512f"))) static void micro_mbm23_avx512(int64_t kc, const uint32_t *a0,
                                                                  const uint32_t *a1, const uint32_t *a2,
                                                                  const uint32_t *ma, const uint32_t *b0,
                                                                  const uint32_t *mb, float *acc) {
  const __m512i expo = _mm512_set1_epi32(0x7F800000), frac = _mm512_set1_epi32(AMD_PROD_FRAC);
  const __m512i one = _mm512_set1_epi32(0x3F800000);
  const __m512i hk = _mm512_set1_epi32(0x50000), four = _mm512_set1_epi32(0x40800000); /* 4.0f */
  const uint32_t nolim = 2 * AMD_PROD_ONE - 0x50000u; /* S below this: no corner */
  __m512 c[12];
  for (int i = 0; i < 12; i++) c[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc;) {
    /* a run of k without the corner, then one k with it */
    for (; p < kc && ma[p] + mb[p] < nolim; p++) {
      const uint32_t *al = a0 + p * 12, *sc = a1 + p * 12, *ga = a2 + p * 12;
      const __m512i eb = _mm512_loadu_si512((const void *)(b0 + p * 16)), fb = _mm512_and_si512(eb, frac);
      const __m512i bi = _mm512_ternarylogic_epi32(eb, frac, one, 0xEA); /* beta: (eb & frac) | one */
      const __m512 be = _mm512_castsi512_ps(bi);
      const __m512i eoff = _mm512_sub_epi32(eb, bi); /* s|E<<23 - 127<<23 */
      const __mmask16 kb = _mm512_test_epi32_mask(eb, expo);
      for (int i = 0; i < 12; i++) {
        const __m512 t1 =
            _mm512_add_round_ps(_mm512_set1_ps(u2f(al[i])), be, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        const __m512i t2 = _mm512_add_epi32(fb, _mm512_set1_epi32((int)ga[i]));
        const __m512i v = _mm512_max_epi32(_mm512_castps_si512(t1), t2);
        const __m512 r = _mm512_castsi512_ps(_mm512_maskz_add_epi32(kb, v, eoff));
        c[i] = _mm512_fmadd_ps(r, _mm512_set1_ps(u2f(sc[i])), c[i]);
      }
    }
    if (p == kc) break;
    const uint32_t *al = a0 + p * 12, *sc = a1 + p * 12, *ga = a2 + p * 12;
    const __m512i eb = _mm512_loadu_si512((const void *)(b0 + p * 16)), fb = _mm512_and_si512(eb, frac);
    const __m512i bi = _mm512_ternarylogic_epi32(eb, frac, one, 0xEA); /* beta: (eb & frac) | one */
    const __m512 be = _mm512_castsi512_ps(bi);
    const __m512i eoff = _mm512_sub_epi32(eb, bi); /* s|E<<23 - 127<<23 */
    const __mmask16 kb = _mm512_test_epi32_mask(eb, expo);
    for (int i = 0; i < 12; i++) {
      const __m512 t1 =
          _mm512_add_round_ps(_mm512_set1_ps(u2f(al[i])), be, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __m512i t2 = _mm512_add_epi32(fb, _mm512_set1_epi32((int)ga[i]));
      __m512i v = _mm512_max_epi32(_mm512_castps_si512(t1), t2);
      /* the corner (t2 >= 4.0f): V = 2S, t2 - K/2 */
      v = _mm512_mask_sub_epi32(v, _mm512_cmpge_epi32_mask(t2, four), t2, hk);
      const __m512 r = _mm512_castsi512_ps(_mm512_maskz_add_epi32(kb, v, eoff));
      c[i] = _mm512_fmadd_ps(r, _mm512_set1_ps(u2f(sc[i])), c[i]);
    }
    p++;
  }
  for (int i = 0; i < 12; i++) _mm512_storeu_ps(acc + i * 16, c[i]);
}

/* The integer and acc16 kinds on AVX-512F with the 12 x 16 tile and the
 * accumulators held in registers (GCC spills the plain-C tile of these kinds
 * to memory). The same arithmetic as micro_mode, lane for lane. */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) void
micro_avx512_k(const int kind, int64_t kc, const uint32_t *a0, const uint32_t *a1, const uint32_t *a2,
               const uint32_t *b0, const uint32_t *b1, const uint32_t *b2, const uint32_t *tab,
               uint32_t tabmask, const mbm_consts mc, float *acc) {
  __m512 c[12];
  for (int i = 0; i < 12; i++) c[i] = _mm512_setzero_ps();
  const __m512i k0 = _mm512_set1_epi32((int)(kind == KIND_MBM23 ? 0xA0000u : mc.k0));
  const __m512i k1 = _mm512_set1_epi32((int)(kind == KIND_MBM23 ? 0x50000u : mc.k1));
  const __m512i lim =
      _mm512_set1_epi32((int)((kind == KIND_MBM23 ? 0xF0000u : mc.k0 + mc.k1) - AMD_PROD_ONE));
  const __m512i trunc = _mm512_set1_epi32((int)mc.trunc), tm = _mm512_set1_epi32((int)tabmask);
  const __m512i hi16 = _mm512_set1_epi32((int)0xFFFF0000u);
  for (int64_t p = 0; p < kc; p++, a0 += 12, a1 += 12, a2 += 12, b0 += 16, b1 += 16, b2 += 16) {
    const __m512i eb = _mm512_loadu_si512((const void *)b0);
    if (kind == KIND_ACC16) {
      const __m512 fb = _mm512_castsi512_ps(eb);
      for (int i = 0; i < 12; i++) {
        __m512 prod = _mm512_mul_ps(_mm512_set1_ps(u2f(a0[i])), fb);
        c[i] = _mm512_add_ps(c[i], _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(prod), hi16)));
      }
      continue;
    }
    const __m512i mb = _mm512_loadu_si512((const void *)b1);
    if (kind == KIND_MIT) {
      for (int i = 0; i < 12; i++) {
        __m512i r = _mm512_add_epi32(_mm512_set1_epi32((int)a0[i]), eb);
        r = _mm512_ternarylogic_epi32(r, _mm512_set1_epi32((int)a1[i]), mb, 0x80);
        c[i] = _mm512_add_ps(c[i], _mm512_castsi512_ps(r));
      }
    } else if (kind == KIND_LUT) {
      for (int i = 0; i < 12; i++) {
        __m512i x = _mm512_add_epi32(_mm512_set1_epi32((int)a0[i]), eb);
        __m512i t = _mm512_i32gather_epi32(_mm512_and_si512(x, tm), (const void *)tab, 4);
        __m512i r =
            _mm512_ternarylogic_epi32(_mm512_add_epi32(x, t), _mm512_set1_epi32((int)a1[i]), mb, 0x80);
        c[i] = _mm512_add_ps(c[i], _mm512_castsi512_ps(r));
      }
    } else { /* KIND_MBM23, KIND_MBM */
      const __m512i fb = _mm512_loadu_si512((const void *)b2);
      for (int i = 0; i < 12; i++) {
        __m512i u = _mm512_sub_epi32(_mm512_set1_epi32((int)a2[i]), fb); /* K + ONE - S */
        __m512i d = _mm512_srai_epi32(u, 1);                             /* G2 - S */
        if (kind == KIND_MBM) d = _mm512_and_si512(d, trunc);
        d = _mm512_max_epi32(d, k1);
        d = _mm512_maskz_min_epi32(_mm512_cmpgt_epi32_mask(u, lim), d, k0); /* 0 where dropped */
        __m512i r = _mm512_add_epi32(_mm512_add_epi32(_mm512_set1_epi32((int)a0[i]), eb), d);
        r = _mm512_ternarylogic_epi32(r, _mm512_set1_epi32((int)a1[i]), mb, 0x80);
        c[i] = _mm512_add_ps(c[i], _mm512_castsi512_ps(r));
      }
    }
  }
  for (int i = 0; i < 12; i++) _mm512_storeu_ps(acc + i * 16, c[i]);
}

__attribute__((target("avx512f"))) static void
micro_avx512(const int kind, int64_t kc, const uint32_t *a0, const uint32_t *a1, const uint32_t *a2,
             const uint32_t *b0, const uint32_t *b1, const uint32_t *b2, const uint32_t *tab,
             uint32_t tabmask, const mbm_consts mc, float *acc) {
  switch (kind) {
  case KIND_ACC16:
    micro_avx512_k(KIND_ACC16, kc, a0, a1, a2, b0, b1, b2, tab, tabmask, mc, acc);
    break;
  case KIND_MIT:
    micro_avx512_k(KIND_MIT, kc, a0, a1, a2, b0, b1, b2, tab, tabmask, mc, acc);
    break;
  case KIND_LUT:
    micro_avx512_k(KIND_LUT, kc, a0, a1, a2, b0, b1, b2, tab, tabmask, mc, acc);
    break;
  case KIND_MBM:
    micro_avx512_k(KIND_MBM, kc, a0, a1, a2, b0, b1, b2, tab, tabmask, mc, acc);
    break;
  default:
    micro_avx512_k(KIND_MBM23, kc, a0, a1, a2, b0, b1, b2, tab, tabmask, mc, acc);
    break;
  }
}
#endif

/* The exact path for one panel pair: products from the caller's matrices. */
static void micro_exact(const tile_args *t, int64_t ir, int64_t jr, int64_t mr, int64_t nr, int NR,
                        float *acc) {
  for (int64_t i = 0; i < mr; i++)
    for (int64_t j = 0; j < nr; j++) {
      const int64_t gi = t->r0 + ir + i, gj = t->c0 + jr + j;
      float s = 0;
      for (int64_t p = 0; p < t->kc; p++) {
        const int64_t gp = t->p0 + p;
        const float a = t->trans_a ? t->A[gp * t->lda + gi] : t->A[gi * t->lda + gp];
        const float b = t->trans_b ? t->B[gj * t->ldb + gp] : t->B[gp * t->ldb + gj];
        s += amd_mult_product(t->mult, a, b);
      }
      acc[i * NR + j] = s;
    }
}

/* Whether every product of two panels stays inside the fast kernel's range. */
static inline int panels_fast(const panel_info *a, const panel_info *b, int kind) {
  if (a->special || b->special) return 0;
  /* the scaled kinds: r = s(b)|(E(b)+carry)<<23|M must stay finite */
  if ((kind == KIND_LUT1 || kind == KIND_MBM23X) && b->emax > 253) return 0;
  if (a->emin > a->emax || b->emin > b->emax) return 1; /* only zeros on a side */
  return a->emin + b->emin >= 128 && a->emax + b->emax <= 380;
}

/* The macro-kernel of a mode for one tile (MR, NR constant after inlining). */
static inline __attribute__((always_inline)) void tile_mode_k(const tile_args *t, const int kind,
                                                              const int MR, const int NR, const int isa) {
  const int64_t sa = t->pstride_a, sb = t->pstride_b;
  const uint32_t *pa = (const uint32_t *)t->pa, *pb = (const uint32_t *)t->pb;
  const int check = kind != KIND_ACC16;
  for (int64_t jr = 0; jr < t->nc;) {
    const int64_t qb = jr / NR;
    const uint32_t *b = pb + qb * t->kc * NR;
    int64_t nr = t->nc - jr < NR ? t->nc - jr : NR;
    /* KIND_LUT1: two B panels per A panel where there are two */
    const int pair = kind == KIND_LUT1 && MR == 12 && NR == 16 && jr + NR < t->nc;
    (void)pair;
    for (int64_t ir = 0; ir < t->mc; ir += MR) {
      const int64_t qa = ir / MR;
      const uint32_t *a = pa + qa * t->kc * MR;
      int64_t mr = t->mc - ir < MR ? t->mc - ir : MR;
      float acc[MAX_MR * MAX_NR] __attribute__((aligned(64)));
#ifdef AMD_GEMM_X86
      if (pair) {
        float acc2[MAX_MR * MAX_NR] __attribute__((aligned(64)));
        const uint32_t *d = b + t->kc * NR;
        const int64_t nr2 = t->nc - jr - NR < NR ? t->nc - jr - NR : NR;
        const int f1 = panels_fast(&t->ia[qa], &t->ib[qb], kind),
                  f2 = panels_fast(&t->ia[qa], &t->ib[qb + 1], kind);
        const uint8_t *tb = (const uint8_t *)t->tab;
        if (f1 && f2) {
          micro_lut1_vbmi_pair(t->kc, a, a + sa, b, b + sb, b + 2 * sb, d, d + sb, d + 2 * sb, tb, acc, acc2);
        } else {
          if (f1)
            micro_lut1_vbmi(t->kc, a, a + sa, b, b + sb, b + 2 * sb, tb, acc);
          else
            micro_exact(t, ir, jr, mr, nr, NR, acc);
          if (f2)
            micro_lut1_vbmi(t->kc, a, a + sa, d, d + sb, d + 2 * sb, tb, acc2);
          else
            micro_exact(t, ir, jr + NR, mr, nr2, NR, acc2);
        }
        float *c = t->c + ir * t->ldc + jr;
        if (mr == MR)
          store_tile(t, c, t->ldc, acc, NR, MR, NR);
        else
          store_tile(t, c, t->ldc, acc, NR, mr, NR);
        if (mr == MR && nr2 == NR)
          store_tile(t, c + NR, t->ldc, acc2, NR, MR, NR);
        else
          store_tile(t, c + NR, t->ldc, acc2, NR, mr, nr2);
        continue;
      }
#endif
      if (check && !panels_fast(&t->ia[qa], &t->ib[qb], kind)) micro_exact(t, ir, jr, mr, nr, NR, acc);
#ifdef AMD_GEMM_X86
      else if (kind == KIND_MBM23X && MR == 12 && NR == 16) {
        micro_mbm23_avx512(t->kc, a, a + sa, a + 2 * sa, a + 3 * sa, b, b + sb, acc);
      } else if (kind == KIND_FP16 && isa == 512 && MR == 12 && NR == 16)
        micro_fp16_avx512(t->kc, a, b, acc);
      else if (kind == KIND_FP16 && isa == 2 && MR == 6 && NR == 16)
        micro_fp16_avx2(t->kc, a, b, acc);
      else if (kind == KIND_MBM1 && MR == 12 && NR == 16)
        micro_mbm1_vbmi(t->kc, a, a + sa, b, b + sb, (const uint8_t *)t->tab, acc);
      else if (kind == KIND_LUT1 && MR == 12 && NR == 16)
        micro_lut1_vbmi(t->kc, a, a + sa, b, b + sb, b + 2 * sb, (const uint8_t *)t->tab, acc);
      else if (isa == 512 && MR == 12 && NR == 16)
        micro_avx512(kind, t->kc, a, a + sa, a + 2 * sa, b, b + sb, b + 2 * sb, t->tab, t->tabmask, t->mbm,
                     acc);
#endif
      else
        micro_mode(kind, MR, NR, t->kc, a, a + sa, a + 2 * sa, b, b + sb, b + 2 * sb, t->tab, t->tabmask,
                   t->mbm, acc);
      float *c = t->c + ir * t->ldc + jr;
      if (mr == MR && nr == NR)
        store_tile(t, c, t->ldc, acc, NR, MR, NR);
      else
        store_tile(t, c, t->ldc, acc, NR, mr, nr);
    }
    jr += pair ? 2 * NR : NR;
  }
}

#define AMD_TILE_MODE_SWITCH(t, MR, NR, ISA)                                                                 \
  switch ((t)->kind) {                                                                                       \
  case KIND_ACC16:                                                                                           \
    tile_mode_k(t, KIND_ACC16, MR, NR, ISA);                                                                 \
    break;                                                                                                   \
  case KIND_FP16:                                                                                            \
    tile_mode_k(t, KIND_FP16, MR, NR, ISA);                                                                  \
    break;                                                                                                   \
  case KIND_MIT:                                                                                             \
    tile_mode_k(t, KIND_MIT, MR, NR, ISA);                                                                   \
    break;                                                                                                   \
  case KIND_MBM:                                                                                             \
    tile_mode_k(t, KIND_MBM, MR, NR, ISA);                                                                   \
    break;                                                                                                   \
  case KIND_LUT:                                                                                             \
    tile_mode_k(t, KIND_LUT, MR, NR, ISA);                                                                   \
    break;                                                                                                   \
  case KIND_MBM1:                                                                                            \
    tile_mode_k(t, KIND_MBM1, MR, NR, ISA);                                                                  \
    break;                                                                                                   \
  case KIND_LUT1:                                                                                            \
    tile_mode_k(t, KIND_LUT1, MR, NR, ISA);                                                                  \
    break;                                                                                                   \
  case KIND_MBM23X:                                                                                          \
    tile_mode_k(t, KIND_MBM23X, MR, NR, ISA);                                                                \
    break;                                                                                                   \
  default:                                                                                                   \
    tile_mode_k(t, KIND_MBM23, MR, NR, ISA);                                                                 \
    break;                                                                                                   \
  }

static void tile_mode_default(const tile_args *t) { AMD_TILE_MODE_SWITCH(t, SSE_MR, SSE_NR, 0) }
#ifdef AMD_GEMM_X86
__attribute__((target("avx2,f16c"))) static void tile_mode_avx2(const tile_args *t) {
  AMD_TILE_MODE_SWITCH(t, AVX2_MR, AVX2_NR, 2)
}
__attribute__((target("avx512f"))) static void tile_mode_avx512(const tile_args *t) {
  AMD_TILE_MODE_SWITCH(t, AVX512_MR, AVX512_NR, 512)
}
#endif

/* The kind and fraction width of every mode (mode_list.h). */
#define MODE_ROW(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY) [ID] = {KIND, M},
static const struct {
  amd_mode_kind kind;
  int m;
} mode_rows[AMD_MODE_COUNT] = {AMD_MODE_LIST(MODE_ROW)};
#undef MODE_ROW

/* The kind of micro-kernel of a mode, its fraction width m, and the forced
 * bit that KIND_MIT ors into the kept fraction (MBM_m without correction). */
static int mode_kind(const amd_mult *mult, int *m, uint32_t *forced) {
  *forced = 0;
  if ((int)mult->mode < 0 || mult->mode >= AMD_MODE_COUNT) {
    *m = 23;
    return KIND_NONE;
  }
  *m = mode_rows[mult->mode].m;
  switch (mode_rows[mult->mode].kind) {
  case AMD_KIND_ACC16:
    return KIND_ACC16;
  case AMD_KIND_FP16:
    return KIND_FP16;
  case AMD_KIND_MIT:
    return KIND_MIT;
  case AMD_KIND_MIT_FORCED: /* no correction: Mitchell with the forced bit */
    *forced = 1u << (23 - *m);
    return KIND_MIT;
  case AMD_KIND_MBM:
    return KIND_MBM;
  case AMD_KIND_MBM23:
    return KIND_MBM23;
  case AMD_KIND_LUT:
    *m = mult->lut_bits;
    return mult->lut && mult->lut_bits >= 1 && mult->lut_bits <= 7 ? KIND_LUT : KIND_NONE;
  case AMD_KIND_ACC32:
    break;
  }
  *m = 23;
  return KIND_NONE;
}

/* Builds the table of KIND_LUT (4^m entries). */
static void build_table(const amd_mult *mult, int m, uint32_t *tab) {
  const uint32_t n = 1u << (2 * m), fm = (1u << m) - 1u;
  for (uint32_t idx = 0; idx < n; idx++) {
    uint32_t e = mult->lut[idx];
    tab[idx] = (((e >> 7) << 23) | ((e & fm) << (23 - m))) - idx;
  }
}

/* Builds the byte table of KIND_MBM1 (128 entries, see above). */
static void build_table1(const amd_mult *mult, int m, uint8_t *tab) {
  const uint32_t hmax = (1u << (m - 1)) - 1u;
  for (uint32_t idx = 0; idx < 128; idx++) {
    uint32_t ha = idx < hmax ? idx : hmax, hb = idx - ha;
    tab[idx] = 0;
    if (hb > hmax) continue; /* no pair of operands gives this index */
    uint32_t ua = 0x3F800000u | (((ha << 1) | 1u) << (23 - m));
    uint32_t ub = 0x3F800000u | (((hb << 1) | 1u) << (23 - m));
    uint32_t g = f2u(amd_mult_product(mult, u2f(ua), u2f(ub))) - (127u << 23); /* carry<<23 | M */
    AMD_ASSERT((g & 0xFFFFu) == 0 && (g >> 16) >= idx && (g >> 16) - idx < 256);
    tab[idx] = (uint8_t)((g >> 16) - idx);
  }
}

#ifdef AMD_GEMM_X86
/* One vector (the lanes in `lanes`) of encode_mbm23x at x: updates the
 * exponent range, writes the A planes (first) and returns f. */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) __m512i
encode_mbm23x_vec(uint32_t *x, int64_t stride, __mmask16 lanes, int first, __m512i *lo, __m512i *hi,
                  __mmask16 *sp) {
  const __m512i ff = _mm512_set1_epi32(0xFF);
  const __m512i u = _mm512_maskz_loadu_epi32(lanes, (const void *)x);
  const __m512i E = _mm512_and_si512(_mm512_srli_epi32(u, 23), ff);
  const __mmask16 nz = _mm512_mask_test_epi32_mask(lanes, u, _mm512_set1_epi32(0x7F800000));
  const __mmask16 normal = /* 1 <= E <= 254 */
      _mm512_mask_cmplt_epu32_mask(lanes, _mm512_sub_epi32(E, _mm512_set1_epi32(1)), _mm512_set1_epi32(254));
  *lo = _mm512_mask_min_epu32(*lo, normal, *lo, E);
  *hi = _mm512_mask_max_epu32(*hi, normal, *hi, E);
  *sp |= _mm512_mask_cmpeq_epi32_mask(lanes, E, ff);
  const __m512i f = _mm512_maskz_and_epi32(nz, u, _mm512_set1_epi32(AMD_PROD_FRAC));
  if (first) { /* alpha (exact), scale, gamma */
    const __m512 al = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(f, _mm512_set1_epi32(0xA0000))),
                                    _mm512_set1_ps(0x1p-23f));
    _mm512_mask_storeu_epi32((void *)x, lanes, _mm512_castps_si512(al));
    _mm512_mask_storeu_epi32((void *)(x + stride), lanes,
                             _mm512_maskz_and_epi32(nz, u, _mm512_set1_epi32((int)0xFF800000u)));
    _mm512_mask_storeu_epi32((void *)(x + 2 * stride), lanes,
                             _mm512_add_epi32(f, _mm512_set1_epi32(0x3F800000 + 0x50000)));
  }
  return f;
}

/* KIND_MBM23X's planes of a packed panel of n floats (n / W rows of W, W = 12
 * for A, 16 for B), in place, and *info (as encode_panel). A (first):
 * alpha, scale, gamma and the per-k maxima of f (f = 0 for a zero or
 * subnormal); B: the packed values stay (eb), plane 1 gets the per-k maxima
 * of f. A goes four rows (three whole vectors) at a time: partial vectors
 * that overlap the previous row's masked store would stall its loads. */
__attribute__((target("avx512f"))) static void encode_mbm23x(uint32_t *p, int64_t n, int64_t stride,
                                                             int first, panel_info *info) {
  __m512i lo = _mm512_set1_epi32(0xFF), hi = _mm512_setzero_si512();
  __mmask16 sp = 0;
  int64_t r = 0;
  if (!first) {
    for (; r * AVX512_NR < n; r++)
      p[stride + r] =
          _mm512_reduce_max_epu32(encode_mbm23x_vec(p + r * 16, stride, 0xFFFF, 0, &lo, &hi, &sp));
  } else {
    uint32_t *mx = p + 3 * stride;
    for (; (r + 4) * AVX512_MR <= n; r += 4) {
      uint32_t *x = p + r * 12;
      const __m512i f0 = encode_mbm23x_vec(x, stride, 0xFFFF, 1, &lo, &hi, &sp);
      const __m512i f1 = encode_mbm23x_vec(x + 16, stride, 0xFFFF, 1, &lo, &hi, &sp);
      const __m512i f2 = encode_mbm23x_vec(x + 32, stride, 0xFFFF, 1, &lo, &hi, &sp);
      mx[r] = _mm512_mask_reduce_max_epu32(0x0FFF, f0);
      mx[r + 1] = _mm512_mask_reduce_max_epu32(0x0FFF, _mm512_alignr_epi32(f1, f0, 12));
      mx[r + 2] = _mm512_mask_reduce_max_epu32(0x0FFF, _mm512_alignr_epi32(f2, f1, 8));
      mx[r + 3] = _mm512_mask_reduce_max_epu32(0xFFF0, f2);
    }
    for (; r * AVX512_MR < n; r++)
      mx[r] = _mm512_reduce_max_epu32(encode_mbm23x_vec(p + r * 12, stride, 0x0FFF, 1, &lo, &hi, &sp));
  }
  info->emin = (int)_mm512_reduce_min_epu32(lo);
  info->emax = (int)_mm512_reduce_max_epu32(hi);
  info->special = sp != 0;
}
#endif

/* Turns a packed panel of n floats (in place) into the planes of its kind:
 * plane 0 at p, mask at p + stride, frac at p + 2 * stride. `first` selects
 * the A side (which carries the -127 bias). Fills *info. Branch-free loops
 * (one per kind) that the compiler vectorises; compiled per ISA. */
AMD_ISA_CLONES static void encode_panel(uint32_t *p, int64_t n, int64_t stride, int kind, int m,
                                        uint32_t forced, int first, panel_info *info) {
  int emin = 255, emax = 0, special = 0;
  const uint32_t bias = first ? 127u << 23 : 0u;
  const uint32_t T = amd_prod_topmask(m > 23 ? 23 : m);
  uint32_t *restrict p0 = p, *restrict p1 = p + stride, *restrict p2 = p + 2 * stride;
  if (kind == KIND_ACC16) {
    AMD_PRAGMA(omp simd)
    for (int64_t e = 0; e < n; e++) {
      const uint32_t u = p0[e];
      p0[e] = ((u & 0x7FFFFFFFu) > AMD_PROD_INF ? u | 0x00400000u : u) & 0xFFFF0000u; /* amd_t16_bits */
    }
  } else if (kind == KIND_FP16) {
    AMD_PRAGMA(omp simd reduction(| : special))
    for (int64_t e = 0; e < n; e++) {
      const uint32_t u = p0[e];
      /* amd_round_half_bits: half_round is exact for every non-NaN input */
      const uint32_t h = (u & 0x7FFFFFFFu) > AMD_PROD_INF ? u | 0x00400000u : half_round(u);
      special |= (h & 0x7F800000u) == 0x7F800000u;
      p0[e] = h;
    }
  } else {
    uint32_t lo = 255, hi = 0, sp = 0;
    AMD_PRAGMA(omp simd reduction(min : lo) reduction(max : hi) reduction(| : sp))
    for (int64_t e = 0; e < n; e++) {
      const uint32_t E = (p0[e] >> 23) & 0xFFu;
      const uint32_t normal = E - 1u < 254u; /* 1 <= E <= 254 */
      sp |= E == 255u;
      lo = lo < (normal ? E : 255u) ? lo : (normal ? E : 255u);
      hi = hi > (normal ? E : 0u) ? hi : (normal ? E : 0u);
      p1[e] = E == 0 ? 0u : 0xFFFFFFFFu;
    }
    emin = (int)lo;
    emax = (int)hi;
    special = (int)sp;
    if (kind == KIND_MBM1) {
      AMD_PRAGMA(omp simd)
      for (int64_t e = 0; e < n; e++) {
        const uint32_t u = p0[e];
        p0[e] = ((u & 0xFF800000u) - bias) + (((u & T) >> (24 - m)) << 16);
      }
    } else if (kind == KIND_MIT) { /* forced: MBM_m without correction (mbm12: MBM_3) */
      AMD_PRAGMA(omp simd)
      for (int64_t e = 0; e < n; e++) p0[e] = ((p0[e] & (0xFF800000u | T)) | forced) - bias;
    } else if (kind == KIND_LUT1 && first) { /* row offset, scale */
      AMD_PRAGMA(omp simd)
      for (int64_t e = 0; e < n; e++) {
        const uint32_t u = p0[e];
        p1[e] &= u & 0xFF800000u;
        p0[e] = ((u & AMD_PROD_FRAC) >> (23 - m)) * 128u;
      }
    } else if (kind == KIND_LUT1) { /* s|E<<23, zero mask, j<<16 */
      AMD_PRAGMA(omp simd)
      for (int64_t e = 0; e < n; e++) {
        const uint32_t u = p0[e];
        p2[e] = ((u & AMD_PROD_FRAC) >> (23 - m)) << 16;
        p0[e] = u & 0xFF800000u;
      }
    } else if (kind == KIND_LUT) {
      const int sh = first ? m : 0;
      AMD_PRAGMA(omp simd)
      for (int64_t e = 0; e < n; e++) {
        const uint32_t u = p0[e];
        p0[e] = ((u & 0xFF800000u) - bias) + (((u & AMD_PROD_FRAC) >> (23 - m)) << sh);
      }
    } else { /* KIND_MBM23, KIND_MBM: f = F & T_m with the forced bit; enc as
              * KIND_MIT (Mitchell sum), frac plane K + ONE - f (A), f (B) */
      const uint32_t forced = m == 23 ? 0u : 1u << (23 - m);
      const uint32_t k = (0xA0000u & T) + AMD_PROD_ONE;
      AMD_PRAGMA(omp simd)
      for (int64_t e = 0; e < n; e++) {
        const uint32_t u = p0[e], f = (u & T) | forced;
        p2[e] = first ? k - f : f;
        p0[e] = ((u & 0xFF800000u) | f) - bias;
      }
    }
  }
  info->emin = emin;
  info->emax = emax;
  info->special = special;
}

/* encode_panel, or encode_mbm23x for KIND_MBM23X (12 x 16 AVX-512 tile only). */
static void encode_any(uint32_t *p, int64_t n, int64_t stride, int kind, int m, uint32_t forced, int first,
                       panel_info *info) {
#ifdef AMD_GEMM_X86
  if (kind == KIND_MBM23X) {
    encode_mbm23x(p, n, stride, first, info);
    return;
  }
#endif
  encode_panel(p, n, stride, kind, m, forced, first, info);
}

typedef struct kernel_choice {
  int mr, nr;
  void (*acc32)(const tile_args *t);
  void (*mode)(const tile_args *t);
  int vbmi; /* KIND_MBM1 available (AVX-512 VBMI with the 12 x 16 tile) */
  int x23;  /* KIND_MBM23X available (the AVX-512 12 x 16 tile, not avx512-novbmi) */
} kernel_choice;

/* amd_gemm_force_isa's choice (NULL: the best the CPU has) */
static const char *forced_isa;

void amd_gemm_force_isa(const char *isa) { forced_isa = isa; }

static kernel_choice choose_kernel(void) {
  kernel_choice k = {SSE_MR, SSE_NR, tile_acc32_default, tile_mode_default, 0, 0};
#ifdef AMD_GEMM_X86
  const char *force = forced_isa; /* "sse", "avx2", "avx512", "avx512-novbmi": for benchmarks */
  __builtin_cpu_init();
  int has512 = __builtin_cpu_supports("avx512f"), has2 = __builtin_cpu_supports("avx2");
  if (force && strcmp(force, "sse") == 0) has512 = has2 = 0;
  if (force && strcmp(force, "avx2") == 0) has512 = 0;
  const int novbmi = force && strcmp(force, "avx512-novbmi") == 0;
  if (has512) {
    k = (kernel_choice){AVX512_MR,
                        AVX512_NR,
                        tile_acc32_avx512,
                        tile_mode_avx512,
                        !novbmi && __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw"),
                        !novbmi};
  } else if (has2) {
    k = (kernel_choice){AVX2_MR, AVX2_NR, tile_acc32_avx2, tile_mode_avx2, 0, 0};
  }
#endif
  return k;
}

static kernel_choice kernel(void) {
  /* Benign race: every thread computes the same value. */
  static volatile int ready;
  static kernel_choice k;
  if (!ready) {
    k = choose_kernel();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    ready = 1;
  }
  return k;
}

/* Packs rows [i0, i0+mr) x depth [p0, p0+kc) of op(A) into MR-row panels:
 * panel q holds element (i, p) at [q*kc*MR + p*MR + i], zero padded. */
static void pack_a_panel(const float *A, int64_t lda, int trans_a, int64_t i0, int64_t mr, int64_t p0,
                         int64_t kc, int MR, float *dst) {
  if (!trans_a) {
    for (int64_t i = 0; i < mr; i++) {
      const float *src = A + (i0 + i) * lda + p0;
      for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = src[p];
    }
  } else {
    for (int64_t p = 0; p < kc; p++) {
      const float *src = A + (p0 + p) * lda + i0;
      for (int64_t i = 0; i < mr; i++) dst[p * MR + i] = src[i];
    }
  }
  for (int64_t i = mr; i < MR; i++)
    for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = 0;
}

/* Packs columns [j0, j0+nr) x depth [p0, p0+kc) of op(B) into one NR-column
 * panel: element (p, j) at [p*NR + j], zero padded. */
static void pack_b_panel(const float *B, int64_t ldb, int trans_b, int64_t j0, int64_t nr, int64_t p0,
                         int64_t kc, int NR, float *dst) {
  if (!trans_b && nr == 16 && NR == 16) { /* whole panels: a fixed-size copy, no memmove call per row */
    for (int64_t p = 0; p < kc; p++) {
      const float *restrict src = B + (p0 + p) * ldb + j0;
      float *restrict d = dst + p * 16;
      for (int j = 0; j < 16; j++) d[j] = src[j];
    }
  } else if (!trans_b) {
    for (int64_t p = 0; p < kc; p++) {
      const float *src = B + (p0 + p) * ldb + j0;
      float *d = dst + p * NR;
      int64_t j = 0;
      for (; j < nr; j++) d[j] = src[j];
      for (; j < NR; j++) d[j] = 0;
    }
  } else {
    for (int64_t j = 0; j < nr; j++) {
      const float *src = B + (j0 + j) * ldb + p0;
      for (int64_t p = 0; p < kc; p++) dst[p * NR + j] = src[p];
    }
    for (int64_t j = nr; j < NR; j++)
      for (int64_t p = 0; p < kc; p++) dst[p * NR + j] = 0;
  }
}

/* Few rows (M <= SMALL_M) on the acc32 path: matrix-vector-like products
 * (a classifier at batch 1, depthwise convolution) would waste most of an
 * MR-row tile and pay for packing B, so they run unpacked, one chunk of at
 * most SMALL_NC columns at a time. Compiled per ISA with target_clones. */
enum { SMALL_M = 4, SMALL_NC = 512 };

AMD_ISA_CLONES static void small_m_chunk(int trans_a, int trans_b, int64_t M, int64_t j0, int64_t nc,
                                         int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                                         int64_t ldb, float beta, float *C, int64_t ldc) {
  float acc[SMALL_M][SMALL_NC];
  const int64_t sa_i = trans_a ? 1 : lda, sa_k = trans_a ? lda : 1; /* op(A)(i,k) strides */
  if (!trans_b) {
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < nc; j++) acc[i][j] = 0;
    for (int64_t k = 0; k < K; k++) {
      const float *row = B + k * ldb + j0;
      for (int64_t i = 0; i < M; i++) {
        const float a = A[i * sa_i + k * sa_k];
        float *ac = acc[i];
        for (int64_t j = 0; j < nc; j++) ac[j] += a * row[j];
      }
    }
  } else {
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < nc; j++) {
        const float *brow = B + (j0 + j) * ldb, *arow = A + i * sa_i;
        float s = 0;
        AMD_PRAGMA(omp simd reduction(+ : s))
        for (int64_t k = 0; k < K; k++) s += arow[k * sa_k] * brow[k];
        acc[i][j] = s;
      }
  }
  for (int64_t i = 0; i < M; i++) {
    float *c = C + i * ldc + j0;
    if (beta == 0)
      for (int64_t j = 0; j < nc; j++) c[j] = alpha * acc[i][j];
    else
      for (int64_t j = 0; j < nc; j++) c[j] = alpha * acc[i][j] + beta * c[j];
  }
}

static void small_m(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
  int64_t nc = SMALL_NC;
  const int par = (double)M * (double)N * (double)K >= 1048576.0;
  (void)par; /* unused without OpenMP */
#ifdef _OPENMP
  if (par) { /* enough chunks for every thread */
    int64_t per = (N + 2 * omp_get_max_threads() - 1) / (2 * omp_get_max_threads());
    per = (per + 15) / 16 * 16;
    if (per < nc) nc = per < 64 ? 64 : per;
  }
#endif
  const int64_t nchunks = (N + nc - 1) / nc;
  AMD_PRAGMA(omp parallel for schedule(dynamic, 1) if (par))
  for (int64_t q = 0; q < nchunks; q++) {
    const int64_t j0 = q * nc, w = N - j0 < nc ? N - j0 : nc;
    small_m_chunk(trans_a, trans_b, M, j0, w, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

/* C = beta * C (K == 0: no products). */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc) {
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0 ? 0 : beta * C[i * ldc + j];
}

/* The tables a mode kernel reads (NULL: none; the caller frees it): the
 * lut: table of 4^m words (KIND_LUT, *tabmask its index mask), its 128 x 128
 * byte form (KIND_LUT1: carry<<7 | M<<(7-m)), the MBM_1 table (KIND_MBM1);
 * and the MBM correction constants for m_bits kept bits (*mbm). */
static uint32_t *mode_tables(const amd_mult *mult, int kind, int m_bits, uint32_t *tabmask, mbm_consts *mbm) {
  uint32_t *tab = NULL;
  *tabmask = 0;
  *mbm = (mbm_consts){0xA0000u, 0x50000u, 0xFFFFFFFFu};
  if (kind == KIND_LUT) {
    size_t n = (size_t)1 << (2 * m_bits);
    tab = malloc(n * sizeof *tab);
    AMD_ASSERT(tab);
    build_table(mult, m_bits, tab);
    *tabmask = (uint32_t)(n - 1);
  }
  if (kind == KIND_MBM) {
    const uint32_t T = amd_prod_topmask(m_bits);
    *mbm = (mbm_consts){0xA0000u & T, 0x50000u & T, ~((1u << (23 - m_bits)) - 1u)};
  }
  if (kind == KIND_LUT1) { /* 128 rows of 128 bytes: carry<<7 | M<<(7-m) */
    uint8_t *t8 = malloc(128 * 128);
    AMD_ASSERT(t8);
    memset(t8, 0, 128 * 128);
    const uint32_t fm = (1u << m_bits) - 1u;
    for (uint32_t i = 0; i <= fm; i++)
      for (uint32_t j = 0; j <= fm; j++) {
        uint32_t e = mult->lut[(i << m_bits) | j];
        t8[i * 128 + j] = (uint8_t)((e & 0x80u) | ((e & fm) << (7 - m_bits)));
      }
    tab = (uint32_t *)(void *)t8;
  }
  if (kind == KIND_MBM1) {
    tab = malloc(128);
    AMD_ASSERT(tab);
    build_table1(mult, m_bits, (uint8_t *)tab);
  }
  return tab;
}

/* The column tile width of a threaded GEMM: narrower than nc_t until every
 * thread has a few tiles (each tile repacks its A rows, so at least 4 panels
 * of NR). Without OpenMP, nc_t. */
static int64_t column_tile_width(int64_t N, int64_t tiles_m, int64_t nc_t, int NR) {
#ifdef _OPENMP
  int64_t tiles_n = (N + nc_t - 1) / nc_t;
  const int64_t want = 4 * (int64_t)omp_get_max_threads();
  while (nc_t > 4 * NR && tiles_m * tiles_n < want) {
    nc_t = (nc_t / 2 + NR - 1) / NR * NR;
    tiles_n = (N + nc_t - 1) / nc_t;
  }
#else
  (void)N, (void)tiles_m, (void)NR;
#endif
  return nc_t;
}

void amd_gemm(const struct amd_mult *mult, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
              float alpha, const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
              int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    scale_c(M, N, beta, C, ldc);
    return;
  }
  const int fast = !mult || mult->mode == AMD_MODE_ACC32;
  if (fast && M <= SMALL_M) {
    small_m(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  const double work = (double)M * (double)N * (double)K;
  int m_bits = 23;
  uint32_t forced = 0;
  int kind = fast ? KIND_NONE : mode_kind(mult, &m_bits, &forced);
  /* A lut: table of 4^m entries costs more to build than a tiny product. */
  if (kind == KIND_LUT && work < 65536.0) kind = KIND_NONE;
  const kernel_choice kern = kernel();
  const int MR = kern.mr, NR = kern.nr;
  if (kind == KIND_MBM && kern.vbmi) kind = KIND_MBM1;
  if (kind == KIND_LUT && kern.vbmi) kind = KIND_LUT1;
  if (kind == KIND_MBM23 && kern.x23) kind = KIND_MBM23X;
  uint32_t tabmask = 0;
  mbm_consts mbm;
  uint32_t *tab = mode_tables(mult, kind, m_bits, &tabmask, &mbm);
  const int64_t MC = (int64_t)MC_PANELS * MR;
  int64_t nc_t = (int64_t)NC_PANELS * NR;

  /* Threads only when the work pays for waking them (about 1M products for
   * the fast kernels; the per-product path is much slower per product). */
  const int par = work >= (fast || kind != KIND_NONE ? 1048576.0 : 32768.0);
  (void)par; /* unused without OpenMP */
  const int64_t tiles_m = (M + MC - 1) / MC;
  if (par) nc_t = column_tile_width(N, tiles_m, nc_t, NR);
  const int64_t tiles_n = (N + nc_t - 1) / nc_t;
  const int64_t ntiles = tiles_m * tiles_n;
  const int64_t kcmax = K < KC ? K : KC;
  /* Mode kernels use three uint32 planes per packed element (four for A of
   * KIND_MBM23X). */
  const int planes = kind == KIND_NONE ? 1 : 3, planes_a = kind == KIND_MBM23X ? 4 : planes;
  const size_t abytes = (size_t)(planes_a * MC * kcmax * 4 + 63) / 64 * 64;
  const size_t bbytes = (size_t)(planes * nc_t * kcmax * 4 + 63) / 64 * 64;
  const int64_t npa = (MC + MR - 1) / MR, npb = (nc_t + NR - 1) / NR;

  /* Each tile packs its own A rows and B columns per K block: no barrier
   * inside the loop (robust when the machine is oversubscribed), and the
   * result does not depend on the number of threads. */
  AMD_PRAGMA(omp parallel if (par)) {
    /* one block for both (abytes is a multiple of 64): fewer large chunks
     * for malloc to hand back to the OS and fault in again on the next call */
    float *pa = aligned_alloc(64, abytes + bbytes), *pb = pa + abytes / sizeof *pa;
    panel_info *ia = malloc(sizeof *ia * (size_t)npa), *ib = malloc(sizeof *ib * (size_t)npb);
    AMD_ASSERT(pa && pb && ia && ib);
    AMD_PRAGMA(omp for schedule(dynamic, 1))
    for (int64_t t = 0; t < ntiles; t++) {
      const int64_t r0 = (t / tiles_n) * MC, c0 = (t % tiles_n) * nc_t;
      const int64_t mc = M - r0 < MC ? M - r0 : MC, nc = N - c0 < nc_t ? N - c0 : nc_t;
      for (int64_t p0 = 0; p0 < K; p0 += KC) {
        const int64_t kc = K - p0 < KC ? K - p0 : KC;
        /* plane strides: whole packed blocks, so panel q's planes sit at
         * q*kc*MR + plane*stride */
        const int64_t sa = ((mc + MR - 1) / MR) * MR * kc, sb = ((nc + NR - 1) / NR) * NR * kc;
        for (int64_t q = 0; q * MR < mc; q++) {
          int64_t mr = mc - q * MR < MR ? mc - q * MR : MR;
          float *dst = pa + q * kc * MR;
          pack_a_panel(A, lda, trans_a, r0 + q * MR, mr, p0, kc, MR, dst);
          if (kind != KIND_NONE) encode_any((uint32_t *)dst, kc * MR, sa, kind, m_bits, forced, 1, &ia[q]);
        }
        for (int64_t q = 0; q * NR < nc; q++) {
          int64_t nr = nc - q * NR < NR ? nc - q * NR : NR;
          float *dst = pb + q * kc * NR;
          pack_b_panel(B, ldb, trans_b, c0 + q * NR, nr, p0, kc, NR, dst);
          if (kind != KIND_NONE) encode_any((uint32_t *)dst, kc * NR, sb, kind, m_bits, forced, 0, &ib[q]);
        }
        /* clang-format off */
        tile_args ta = {.mc = mc, .nc = nc, .kc = kc, .pa = pa, .pb = pb, .c = C + r0 * ldc + c0, .ldc = ldc,
                        .alpha = alpha, .beta = beta, .first = p0 == 0, .mult = mult, .kind = kind,
                        .pstride_a = sa, .pstride_b = sb, .ia = ia, .ib = ib, .tab = tab, .tabmask = tabmask,
                        .mbm = mbm, .mbits = m_bits, .A = A, .B = B, .lda = lda, .ldb = ldb, .r0 = r0, .c0 = c0,
                        .p0 = p0, .trans_a = trans_a, .trans_b = trans_b};
        /* clang-format on */
        if (fast)
          kern.acc32(&ta);
        else if (kind != KIND_NONE)
          kern.mode(&ta);
        else
          tile_generic(&ta, MR, NR);
      }
    }
    free(ia);
    free(ib);
    free(pa);
  }
  free(tab);
}
