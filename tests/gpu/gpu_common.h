/* Shared helpers of the GPU tests (tests/gpu): the skip rule, a seeded
 * random source, operand sets that reach every path of the mode kernels, and
 * bit comparisons (any NaN equals any NaN).
 *
 * Skip rule: when cudaGetDeviceCount fails or finds no device, a test prints
 * one line "SKIP: no CUDA device (<error>)" and exits 77, which meson reports
 * as SKIP (the CPU-only CI). */
#ifndef AMD_TEST_GPU_COMMON_H
#define AMD_TEST_GPU_COMMON_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_CHECK(expr)                                                                                      \
  do {                                                                                                       \
    cudaError_t gpu_err_ = (expr);                                                                           \
    if (gpu_err_ != cudaSuccess) {                                                                           \
      printf("FAIL: %s: %s (%s:%d)\n", #expr, cudaGetErrorString(gpu_err_), __FILE__, __LINE__);             \
      exit(1);                                                                                               \
    }                                                                                                        \
  } while (0)

/* Exits 77 (skip) without a usable device. */
static inline void gpu_require_device(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    printf("SKIP: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "no device found");
    exit(77);
  }
}

static uint64_t gpu_rng = 0x2545F4914F6CDD1Dull;
static inline uint32_t gpu_urand(void) {
  gpu_rng ^= gpu_rng << 13;
  gpu_rng ^= gpu_rng >> 7;
  gpu_rng ^= gpu_rng << 17;
  return (uint32_t)(gpu_rng >> 32);
}
static inline float gpu_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline uint32_t gpu_ubits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static inline int gpu_is_nan(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }
static inline int gpu_same(uint32_t want, uint32_t got) {
  return gpu_is_nan(want) ? gpu_is_nan(got) : want == got;
}

/* Operand sets. EDGE and WILD are for K = 1 only (finite sums of huge
 * products could overflow in one summation order and not in another). */
enum {
  SET_NORMAL,  /* uniform in [-1, 1) with zeros, -0 and subnormals mixed in */
  SET_RANGE,   /* exponents 30..140: tiles leave the fast range (exact path), sums stay finite */
  SET_SPECIAL, /* SET_NORMAL with an Inf or NaN now and then */
  SET_EDGE,    /* exponents near the ends of the fast range and past them */
  SET_WILD,    /* random bit patterns: Inf, NaN, huge, tiny */
  SET_COUNT
};
static const char *const gpu_set_names[SET_COUNT] = {"normal", "range", "special", "edge", "wild"};

static inline float gpu_value(int set) {
  uint32_t r = gpu_urand() % 16, s = gpu_urand() & 0x80000000u, f = gpu_urand() & 0x7FFFFFu;
  switch (set) {
  case SET_NORMAL:
    if (r == 0) return 0.0f;
    if (r == 1) return gpu_bits(s | (f & 0x7FFFu)); /* subnormal or -0 */
    return (float)((int32_t)(gpu_urand() >> 8) - (1 << 23)) / (float)(1 << 23);
  case SET_RANGE:
    if (r == 0) return 0.0f;
    return gpu_bits(s | (30u + gpu_urand() % 111u) << 23 | f);
  case SET_SPECIAL:
    if (gpu_urand() % 64 == 0) return gpu_bits(s | 0x7F800000u | ((gpu_urand() & 1) ? (f | 1u) : 0u));
    return gpu_value(SET_NORMAL);
  case SET_EDGE: {
    /* biased exponents 1..70 and 185..254: pair sums reach underflow, the
     * fast range's ends and overflow */
    uint32_t e = (gpu_urand() & 1) ? 1u + gpu_urand() % 70u : 185u + gpu_urand() % 70u;
    if (r == 0) return 0.0f;
    return gpu_bits(s | e << 23 | f);
  }
  default:
    if (r == 0) return gpu_bits(s | 0x7F800000u);            /* Inf */
    if (r == 1) return gpu_bits(s | 0x7F800000u | (f | 1u)); /* NaN */
    if (r == 2) return gpu_bits(s | f);                      /* subnormal */
    return gpu_bits(gpu_urand());
  }
}

#endif
