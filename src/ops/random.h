/* The random numbers of the ops that draw (random.c: RandomUniform,
 * RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli; shape.c:
 * Dropout), shared by the C11 host code and the CUDA kernels (AMD_HD =
 * __host__ __device__ under nvcc; cuda/ops/ops_internal.h includes this
 * file), so that the CPU and the GPU draw the same values, bit for bit.
 *
 * The stream: splitmix64 on the trainer's state ctx->rng (op.h). A node that
 * draws k numbers uses draws 0 .. k-1 of the stream at ctx->rng and then
 * advances ctx->rng past them, as k sequential amd_splitmix_next calls would.
 * splitmix64 is counter based: draw i of the stream at state s0 is
 * mix(s0 + (i + 1) * gamma) (amd_splitmix_at), so a GPU thread computes its
 * own draws without running the stream.
 *
 * The values (every formula uses only IEEE-rounded + - * / and sqrt in
 * double, which the host (built with -ffp-contract=off) and the device (nvcc
 * -fmad=false) round alike; no libm transcendental, whose last bit differs
 * between glibc and CUDA):
 *  - uniform in [0, 1): the top 53 bits of a draw times 2^-53;
 *  - uniform in [low, high): low + (high - low) * u, in double, rounded to
 *    the output type; a value that rounds up to high is replaced by the
 *    largest one below it (the interval stays half-open);
 *  - normal: Box-Muller with TWO draws per element (draws 2i and 2i + 1 for
 *    element i; only the cosine branch is used), so that every element is a
 *    function of its index alone and a tensor of n elements uses 2n draws:
 *    z = sqrt(-2 ln u1) cos(2 pi u2), u1 in (0, 1] (top 53 bits plus one,
 *    times 2^-53: ln never sees 0), u2 in [0, 1); mean + scale * z in double;
 *    ln and cos are the short series below (about 1e-16 relative);
 *  - Bernoulli: 1 where u < p (one draw per element), else 0. */
#ifndef AMD_OPS_RANDOM_H
#define AMD_OPS_RANDOM_H

#include <math.h>
#include <stdint.h>

#include "../core/tensor.h"

#ifndef AMD_HD
#if defined(__CUDACC__)
#define AMD_HD __host__ __device__
#else
#define AMD_HD
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the parsed attributes of the random ops (node->attrs) ---- */
enum { AMD_RAND_UNIFORM = 1, AMD_RAND_NORMAL = 2, AMD_RAND_BERNOULLI = 3 };

typedef struct amd_random_attrs {
  int dist;    /* AMD_RAND_* */
  int dtype;   /* the output dtype; 0: the input's (the *Like ops and Bernoulli without dtype) */
  double a, b; /* uniform: low, high; normal: mean, scale */
  int rank;    /* RandomUniform / RandomNormal: the shape attribute; -1 for the others */
  int64_t dims[AMD_MAX_RANK];
} amd_random_attrs;

/* ---- splitmix64 ---- */
#define AMD_SPLITMIX_GAMMA 0x9e3779b97f4a7c15ULL

static inline AMD_HD uint64_t amd_splitmix_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* the next draw of the stream *s (advances it by one) */
static inline AMD_HD uint64_t amd_splitmix_next(uint64_t *s) {
  return amd_splitmix_mix(*s += AMD_SPLITMIX_GAMMA);
}

/* draw i (0-based) of the stream at state s0, without running it */
static inline AMD_HD uint64_t amd_splitmix_at(uint64_t s0, int64_t i) {
  return amd_splitmix_mix(s0 + (uint64_t)(i + 1) * AMD_SPLITMIX_GAMMA);
}

/* the state of the stream s0 after k draws */
static inline AMD_HD uint64_t amd_splitmix_skip(uint64_t s0, int64_t k) {
  return s0 + (uint64_t)k * AMD_SPLITMIX_GAMMA;
}

/* uniform in [0, 1) from one draw: its top 53 bits */
static inline AMD_HD double amd_rng_u01(uint64_t z) { return (double)(z >> 11) * 0x1.0p-53; }

/* ---- portable ln and cos ---- */

/* ln x for finite x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), and
 * ln m = 2 atanh(s) = 2 s (1 + s^2/3 + s^4/5 + ...), s = (m - 1) / (m + 1),
 * |s| <= 0.172: 13 terms reach double precision. */
static inline AMD_HD double amd_rng_log(double x) {
  int e;
  double m = frexp(x, &e); /* [0.5, 1), exact */
  if (m < 0.70710678118654752) {
    m = m * 2;
    e = e - 1;
  }
  double s = (m - 1) / (m + 1), z = s * s, p = 0;
  for (int k = 12; k >= 0; k--) p = p * z + 1.0 / (double)(2 * k + 1);
  return 2 * s * p + (double)e * 0.69314718055994531;
}

/* cos(2 pi t) for t in [0, 1): the quadrant from 4t (exact), then the
 * cosine or sine of an angle in [0, pi/4] by its Taylor series, nested:
 * cos a = 1 - a^2/(1*2) (1 - a^2/(3*4) (1 - ...)), sin a = a (1 - a^2/(2*3) (...)). */
static inline AMD_HD double amd_rng_cos2pi(double t) {
  double q4 = 4 * t;
  int q = (int)q4;
  double f = q4 - (double)q; /* [0, 1): the angle (pi/2) f within the quadrant */
  int swap = f > 0.5;        /* cos((pi/2) f) = sin((pi/2)(1 - f)) */
  double a = (swap ? 1 - f : f) * 1.57079632679489662, a2 = a * a, c = 1, s = 1;
  for (int k = 10; k >= 1; k--) c = 1 - c * a2 / (double)((2 * k - 1) * (2 * k));
  for (int k = 10; k >= 1; k--) s = 1 - s * a2 / (double)((2 * k) * (2 * k + 1));
  s = s * a;
  double cf = swap ? s : c, sf = swap ? c : s; /* cos and sin of (pi/2) f */
  switch (q & 3) {
  case 0:
    return cf;
  case 1:
    return -sf;
  case 2:
    return -cf;
  default:
    return sf;
  }
}

/* ---- element i of a random op's output ---- */

/* draws an op uses for n elements */
static inline AMD_HD int64_t amd_random_draws(int dist, int64_t n) {
  return dist == AMD_RAND_NORMAL ? 2 * n : n;
}

/* element i as a double (before rounding to the output type); p: Bernoulli's
 * probability of element i (unused otherwise) */
static inline AMD_HD double amd_random_value(int dist, double a, double b, uint64_t s0, int64_t i, double p) {
  if (dist == AMD_RAND_NORMAL) {
    double u1 = (double)((amd_splitmix_at(s0, 2 * i) >> 11) + 1) * 0x1.0p-53;
    double u2 = amd_rng_u01(amd_splitmix_at(s0, 2 * i + 1));
    double z = sqrt(-2 * amd_rng_log(u1)) * amd_rng_cos2pi(u2);
    return a + b * z;
  }
  double u = amd_rng_u01(amd_splitmix_at(s0, i));
  if (dist == AMD_RAND_BERNOULLI) return u < p ? 1.0 : 0.0;
  return a + (b - a) * u;
}

/* element i as a float (uniform values kept below high) */
static inline AMD_HD float amd_random_f32(int dist, double a, double b, uint64_t s0, int64_t i, double p) {
  float v = (float)amd_random_value(dist, a, b, s0, i, p);
  if (dist == AMD_RAND_UNIFORM && b > a && v >= (float)b) v = nextafterf((float)b, (float)a);
  return v;
}

/* element i as a double (uniform values kept below high) */
static inline AMD_HD double amd_random_f64(int dist, double a, double b, uint64_t s0, int64_t i, double p) {
  double v = amd_random_value(dist, a, b, s0, i, p);
  if (dist == AMD_RAND_UNIFORM && b > a && v >= b) v = nextafter(b, a);
  return v;
}

#ifdef __cplusplus
}
#endif

#endif
