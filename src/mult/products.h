/* The scalar product of every multiplier mode, bit for bit
 * (docs/multipliers.md sections 2-5 are the contract).
 *
 * One static inline function per mode (the PROD and BITS columns of
 * mode_list.h), shared by the C11 host code and the CUDA kernels (AMD_HD =
 * __host__ __device__ under nvcc), so that the CPU and GPU products are the
 * same code. Everything is unsigned 32-bit integer
 * arithmetic on fp32 bit patterns, except the IEEE multiplies of acc32, acc16
 * and fp16, which are single correctly rounded fp32 multiplies (under CUDA
 * __fmul_rn, so neither FMA contraction nor flush-to-zero settings matter).
 * No libc calls; bit casts go through amd_f2u / amd_u2f.
 *
 * Naming: amd_prod_<mode>_bits(ua, ub) works on bit patterns,
 * amd_prod_<mode>(a, b) on floats. The approximate modes (MBM, Mitchell,
 * tables) share amd_prod_special (section 2 steps 1-3) and amd_prod_pack
 * (section 2 step 4). */
#ifndef AMD_PRODUCTS_H
#define AMD_PRODUCTS_H

#include <stdint.h>

#if defined(__CUDACC__)
#define AMD_HD __host__ __device__
#else
#define AMD_HD
#endif

#define AMD_PROD_ONE 0x00800000u /* 2^23: 1.0 in 1.23 fixed point */
#define AMD_PROD_FRAC 0x007FFFFFu
#define AMD_PROD_QNAN 0x7FC00000u
#define AMD_PROD_INF 0x7F800000u

/* ---- bit casts ---------------------------------------------------------- */

static inline AMD_HD uint32_t amd_f2u(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  union {
    float f;
    uint32_t u;
  } v;
  v.f = f;
  return v.u;
#endif
}

static inline AMD_HD float amd_u2f(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  union {
    float f;
    uint32_t u;
  } v;
  v.u = u;
  return v.f;
#endif
}

/* One IEEE fp32 multiply, round to nearest even, never fused. */
static inline AMD_HD float amd_fmul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

/* ---- section 2: special cases and packing ------------------------------- */

/* Steps 1-3 of section 2. Returns 1 and sets *out when a special case
 * decides the product, 0 when the mantissa kernel must run. */
static inline AMD_HD int amd_prod_special(uint32_t ua, uint32_t ub, uint32_t *out) {
  uint32_t aa = ua & 0x7FFFFFFFu, ab = ub & 0x7FFFFFFFu;
  uint32_t s = (ua ^ ub) & 0x80000000u;
  uint32_t ea = aa >> 23, eb = ab >> 23;
  if (aa > AMD_PROD_INF || ab > AMD_PROD_INF) { /* 1. NaN */
    *out = AMD_PROD_QNAN;
    return 1;
  }
  if (aa == AMD_PROD_INF || ab == AMD_PROD_INF) { /* 2. Inf */
    if ((aa == AMD_PROD_INF && eb == 0) || (ab == AMD_PROD_INF && ea == 0))
      *out = AMD_PROD_QNAN;
    else
      *out = s | AMD_PROD_INF;
    return 1;
  }
  if (ea == 0 || eb == 0) { /* 3. zero or subnormal (flushed) */
    *out = s;
    return 1;
  }
  return 0;
}

/* Section 2 step 4 for normal a, b: the sign, E' = E(a) + E(b) - 127 + carry
 * (signed), E' <= 0 -> signed zero, E' >= 255 -> signed Inf, else the
 * already-positioned 23-bit fraction M. */
static inline AMD_HD uint32_t amd_prod_pack(uint32_t ua, uint32_t ub, uint32_t carry, uint32_t M) {
  uint32_t s = (ua ^ ub) & 0x80000000u;
  int32_t e = (int32_t)((ua >> 23) & 0xFFu) + (int32_t)((ub >> 23) & 0xFFu) - 127 + (int32_t)carry;
  if (e <= 0) return s;
  if (e >= 255) return s | AMD_PROD_INF;
  return s | ((uint32_t)e << 23) | M;
}

/* Section 2 step 4 from an unnormalised significand P (ONE = 1.0), keeping
 * m fraction bits (truncation, no rounding). */
static inline AMD_HD uint32_t amd_prod_finish(uint32_t ua, uint32_t ub, uint32_t P, int m) {
  uint32_t app = (P >= (1u << 24)) ? 1u : 0u;
  uint32_t M = (P >> app) & AMD_PROD_FRAC;
  if (m < 23) M &= ~((1u << (23 - m)) - 1u);
  return amd_prod_pack(ua, ub, app, M);
}

/* T_m: the top m fraction bits. */
static inline AMD_HD uint32_t amd_prod_topmask(int m) { return ((1u << m) - 1u) << (23 - m); }

/* ---- section 3: mantissa kernels (unnormalised significand, ONE = 1.0) --- */

/* Mitchell, MIT_m. */
static inline AMD_HD uint32_t amd_kernel_mit(uint32_t ua, uint32_t ub, int m) {
  uint32_t T = amd_prod_topmask(m);
  uint32_t S = (ua & T) + (ub & T);
  uint32_t c = (S >= AMD_PROD_ONE) ? 1u : 0u;
  return (AMD_PROD_ONE + (S & (AMD_PROD_ONE - 1u))) << c;
}

/* Minimally biased multiplier, MBM_m (m in {23, 7, 5, 3, 1}). */
static inline AMD_HD uint32_t amd_kernel_mbm(uint32_t ua, uint32_t ub, int m) {
  uint32_t T = amd_prod_topmask(m);
  uint32_t B = (m == 23) ? 0u : (1u << (23 - m));
  uint32_t S = ((ua & T) | B) + ((ub & T) | B);
  uint32_t c = (S >= AMD_PROD_ONE) ? 1u : 0u;
  uint32_t Sc;
  if (m == 23 || m == 7 || m == 5) {
    uint32_t K = 0xA0000u >> c; /* 2^-4 + 2^-6, halved when c = 1 */
    if (m == 5) K &= amd_prod_topmask(5);
    Sc = (S & (AMD_PROD_ONE - 1u)) + K;
    if (c == 1u && Sc >= AMD_PROD_ONE) Sc = S; /* overflow corner: plain Mitchell */
  } else {
    Sc = S; /* m in {3, 1}: no correction */
  }
  return (AMD_PROD_ONE + Sc) << c;
}

/* ---- generic approximate products on bit patterns ----------------------- */

static inline AMD_HD uint32_t amd_prod_mbm_bits(uint32_t ua, uint32_t ub, int m) {
  uint32_t r;
  if (amd_prod_special(ua, ub, &r)) return r;
  return amd_prod_finish(ua, ub, amd_kernel_mbm(ua, ub, m), m);
}

static inline AMD_HD uint32_t amd_prod_mit_bits(uint32_t ua, uint32_t ub, int m) {
  uint32_t r;
  if (amd_prod_special(ua, ub, &r)) return r;
  return amd_prod_finish(ua, ub, amd_kernel_mit(ua, ub, m), m);
}

/* Section 5: a (1,8,m) multiplier given as a table of 4^m bytes, m in 1..7,
 * row = first operand; entry bit 7 = carry, bits m-1..0 = fraction. */
static inline AMD_HD uint32_t amd_prod_lut_bits(uint32_t ua, uint32_t ub, const uint8_t *lut, int m) {
  uint32_t r;
  if (amd_prod_special(ua, ub, &r)) return r;
  uint32_t idx = (((ua & AMD_PROD_FRAC) >> (23 - m)) << m) | ((ub & AMD_PROD_FRAC) >> (23 - m));
  uint32_t e = lut[idx];
  uint32_t M = (e & ((1u << m) - 1u)) << (23 - m);
  return amd_prod_pack(ua, ub, e >> 7, M);
}

/* ---- IEEE-based modes ---------------------------------------------------- */

/* bfloat16 truncation; a NaN stays a (quiet) NaN instead of becoming Inf. */
static inline AMD_HD uint32_t amd_t16_bits(uint32_t u) {
  if ((u & 0x7FFFFFFFu) > AMD_PROD_INF) return (u | 0x00400000u) & 0xFFFF0000u;
  return u & 0xFFFF0000u;
}

/* Rounds an fp32 value to the nearest IEEE binary16 value (ties to even,
 * binary16 subnormals kept, overflow to Inf) and returns it as fp32 bits. */
static inline AMD_HD uint32_t amd_round_half_bits(uint32_t u) {
  uint32_t s = u & 0x80000000u, a = u & 0x7FFFFFFFu;
  if (a > AMD_PROD_INF) return u | 0x00400000u; /* NaN: quiet */
  if (a == AMD_PROD_INF) return u;
  uint32_t E = a >> 23;
  if (E >= 113) { /* |x| >= 2^-14: binary16 normal range, keep 10 fraction bits */
    uint32_t r = (a + 0x0FFFu + ((a >> 13) & 1u)) & ~0x1FFFu;
    if (r > 0x477FE000u) return s | AMD_PROD_INF; /* above 65504 after rounding */
    return s | r;
  }
  /* binary16 subnormal range: round to a multiple of 2^-24 */
  if (E < 101) return s; /* |x| < 2^-26 (< a quarter of 2^-24): rounds to 0 */
  uint32_t sig = (a & AMD_PROD_FRAC) | AMD_PROD_ONE;
  uint32_t shift = 126u - E; /* 14..25 */
  uint32_t q = sig >> shift;
  uint32_t rem = sig & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) q++;
  /* q <= 1024, so the conversion and the scaling are exact */
  return s | amd_f2u(amd_fmul_rn((float)q, 5.9604644775390625e-8f));
}

/* ---- the modes (float in, float out) ------------------------------------- */

/* acc32: IEEE fp32 product, round to nearest even. */
static inline AMD_HD float amd_prod_acc32(float a, float b) { return amd_fmul_rn(a, b); }
static inline AMD_HD uint32_t amd_prod_acc32_bits(uint32_t ua, uint32_t ub) {
  return amd_f2u(amd_prod_acc32(amd_u2f(ua), amd_u2f(ub)));
}

/* acc16: T16(T16(a) * T16(b)), the bfloat16 multiplier. */
static inline AMD_HD uint32_t amd_prod_acc16_bits(uint32_t ua, uint32_t ub) {
  float p = amd_fmul_rn(amd_u2f(amd_t16_bits(ua)), amd_u2f(amd_t16_bits(ub)));
  return amd_t16_bits(amd_f2u(p));
}
static inline AMD_HD float amd_prod_acc16(float a, float b) {
  return amd_u2f(amd_prod_acc16_bits(amd_f2u(a), amd_f2u(b)));
}

/* fp16: float(half(a) * half(b)). The fp32 product of two binary16 values is
 * exact (22 significant bits, exponents well inside fp32), so rounding it once
 * to binary16 is the correctly rounded half-precision product. */
static inline AMD_HD uint32_t amd_prod_fp16_bits(uint32_t ua, uint32_t ub) {
  float p = amd_fmul_rn(amd_u2f(amd_round_half_bits(ua)), amd_u2f(amd_round_half_bits(ub)));
  return amd_round_half_bits(amd_f2u(p));
}
static inline AMD_HD float amd_prod_fp16(float a, float b) {
  return amd_u2f(amd_prod_fp16_bits(amd_f2u(a), amd_f2u(b)));
}

/* am16 = MBM_7, am32 = MBM_23, mbm14 = MBM_5, mbm12 = MBM_3. */
static inline AMD_HD uint32_t amd_prod_am16_bits(uint32_t ua, uint32_t ub) {
  return amd_prod_mbm_bits(ua, ub, 7);
}
static inline AMD_HD uint32_t amd_prod_am32_bits(uint32_t ua, uint32_t ub) {
  return amd_prod_mbm_bits(ua, ub, 23);
}
static inline AMD_HD uint32_t amd_prod_mbm14_bits(uint32_t ua, uint32_t ub) {
  return amd_prod_mbm_bits(ua, ub, 5);
}
static inline AMD_HD uint32_t amd_prod_mbm12_bits(uint32_t ua, uint32_t ub) {
  return amd_prod_mbm_bits(ua, ub, 3);
}
/* mit16 = MIT_7, mit14 = MIT_5, mit32 = MIT_23. */
static inline AMD_HD uint32_t amd_prod_mit16_bits(uint32_t ua, uint32_t ub) {
  return amd_prod_mit_bits(ua, ub, 7);
}
static inline AMD_HD uint32_t amd_prod_mit14_bits(uint32_t ua, uint32_t ub) {
  return amd_prod_mit_bits(ua, ub, 5);
}
static inline AMD_HD uint32_t amd_prod_mit32_bits(uint32_t ua, uint32_t ub) {
  return amd_prod_mit_bits(ua, ub, 23);
}

static inline AMD_HD float amd_prod_am16(float a, float b) {
  return amd_u2f(amd_prod_am16_bits(amd_f2u(a), amd_f2u(b)));
}
static inline AMD_HD float amd_prod_am32(float a, float b) {
  return amd_u2f(amd_prod_am32_bits(amd_f2u(a), amd_f2u(b)));
}
static inline AMD_HD float amd_prod_mbm14(float a, float b) {
  return amd_u2f(amd_prod_mbm14_bits(amd_f2u(a), amd_f2u(b)));
}
static inline AMD_HD float amd_prod_mbm12(float a, float b) {
  return amd_u2f(amd_prod_mbm12_bits(amd_f2u(a), amd_f2u(b)));
}
static inline AMD_HD float amd_prod_mit16(float a, float b) {
  return amd_u2f(amd_prod_mit16_bits(amd_f2u(a), amd_f2u(b)));
}
static inline AMD_HD float amd_prod_mit14(float a, float b) {
  return amd_u2f(amd_prod_mit14_bits(amd_f2u(a), amd_f2u(b)));
}
static inline AMD_HD float amd_prod_mit32(float a, float b) {
  return amd_u2f(amd_prod_mit32_bits(amd_f2u(a), amd_f2u(b)));
}
/* lut:FILE with a table of 4^m bytes. */
static inline AMD_HD float amd_prod_lut(float a, float b, const uint8_t *lut, int m) {
  return amd_u2f(amd_prod_lut_bits(amd_f2u(a), amd_f2u(b), lut, m));
}

#endif
