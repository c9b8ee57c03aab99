/* The project's tensor: see tensor.h. */
#include "tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_trace.h"
#include "omp.h"

void *amd_zeroed_alloc(size_t bytes) {
  enum { BIG = 1 << 20, PIECE = 1 << 16 };
  if (bytes < BIG) return calloc(1, bytes ? bytes : 1);
  char *p = malloc(bytes);
  if (!p) return NULL;
  const int64_t pieces = (int64_t)((bytes + PIECE - 1) / PIECE);
  AMD_PARALLEL_FOR((int64_t)(bytes / 4))
  for (int64_t q = 0; q < pieces; q++) {
    const size_t off = (size_t)q * PIECE;
    memset(p + off, 0, bytes - off < PIECE ? bytes - off : PIECE);
  }
  return p;
}

size_t amd_dtype_size(amd_dtype t) {
  switch (t) {
  case AMD_FLOAT: return 4;
  case AMD_UINT8: return 1;
  case AMD_INT8: return 1;
  case AMD_UINT16: return 2;
  case AMD_INT16: return 2;
  case AMD_INT32: return 4;
  case AMD_INT64: return 8;
  case AMD_BOOL: return 1;
  case AMD_FLOAT16: return 2;
  case AMD_DOUBLE: return 8;
  case AMD_UINT32: return 4;
  case AMD_UINT64: return 8;
  case AMD_BFLOAT16: return 2;
  default: return 0;
  }
}

const char *amd_dtype_name(amd_dtype t) {
  static const char *names[] = {"undefined", "float",  "uint8",     "int8",       "uint16", "int16",
                                "int32",     "int64",  "string",    "bool",       "float16", "double",
                                "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  if ((int)t >= 0 && (size_t)t < sizeof names / sizeof names[0]) return names[t];
  static char buf[32];
  snprintf(buf, sizeof buf, "dtype(%d)", (int)t);
  return buf;
}

int64_t amd_tensor_numel(const amd_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->dims[i];
  return n;
}

size_t amd_tensor_nbytes(const amd_tensor *t) {
  return (size_t)amd_tensor_numel(t) * amd_dtype_size(t->dtype);
}

void amd_tensor_set_shape(amd_tensor *t, amd_dtype dtype, int rank, const int64_t *dims) {
  AMD_ASSERT(rank >= 0 && rank <= AMD_MAX_RANK);
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
}

int amd_tensor_alloc(amd_tensor *t, amd_status *st) {
  if (t->rank < 0 || t->rank > AMD_MAX_RANK)
    return amd_fail(st, "tensor of rank %d (at most %d supported)", t->rank, AMD_MAX_RANK);
  size_t esize = amd_dtype_size(t->dtype);
  if (esize == 0) return amd_fail(st, "unsupported dtype %s", amd_dtype_name(t->dtype));
  int64_t bytes = (int64_t)esize;
  for (int i = 0; i < t->rank; i++) {
    if (t->dims[i] < 0) return amd_fail(st, "negative dimension %lld", (long long)t->dims[i]);
    if (t->dims[i] > 0 && bytes > AMD_MAX_TENSOR_BYTES / t->dims[i])
      return amd_fail(st, "tensor too large (over %lld bytes)", (long long)AMD_MAX_TENSOR_BYTES);
    bytes *= t->dims[i];
  }
  if (bytes > AMD_MAX_TENSOR_BYTES)
    return amd_fail(st, "tensor too large (over %lld bytes)", (long long)AMD_MAX_TENSOR_BYTES);
  /* Always allocate at least one byte so that empty tensors have a valid pointer. */
  t->data = amd_zeroed_alloc((size_t)bytes);
  if (!t->data) return amd_fail(st, "out of memory allocating %lld bytes", (long long)bytes);
  t->device = AMD_DEVICE_CPU;
  amd_alloc_trace_alloc(0, (size_t)bytes, t->data);
  return 0;
}

void amd_tensor_free(amd_tensor *t) {
  amd_alloc_trace_free(t->data);
  free(t->data);
  t->data = NULL;
}

int amd_tensor_copy(amd_tensor *dst, const amd_tensor *src, amd_status *st) {
  amd_tensor_set_shape(dst, src->dtype, src->rank, src->dims);
  if (amd_tensor_alloc(dst, st)) return -1;
  memcpy(dst->data, src->data, amd_tensor_nbytes(src));
  return 0;
}

const char *amd_shape_str(const amd_tensor *t, char *buf, size_t n) {
  size_t k = 0;
  k += (size_t)snprintf(buf + k, n - k, "[");
  for (int i = 0; i < t->rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

int amd_same_shape(const amd_tensor *a, const amd_tensor *b) {
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

double amd_tensor_get_f64(const amd_tensor *t, int64_t i) {
  const void *d = t->data;
  switch (t->dtype) {
  case AMD_FLOAT: return ((const float *)d)[i];
  case AMD_DOUBLE: return ((const double *)d)[i];
  case AMD_FLOAT16: return amd_half_to_float(((const uint16_t *)d)[i]);
  case AMD_BFLOAT16: return amd_bf16_to_float(((const uint16_t *)d)[i]);
  case AMD_UINT8: return ((const uint8_t *)d)[i];
  case AMD_INT8: return ((const int8_t *)d)[i];
  case AMD_UINT16: return ((const uint16_t *)d)[i];
  case AMD_INT16: return ((const int16_t *)d)[i];
  case AMD_INT32: return ((const int32_t *)d)[i];
  case AMD_INT64: return (double)((const int64_t *)d)[i];
  case AMD_BOOL: return ((const uint8_t *)d)[i] != 0;
  case AMD_UINT32: return ((const uint32_t *)d)[i];
  case AMD_UINT64: return (double)((const uint64_t *)d)[i];
  default: AMD_ASSERT(!"amd_tensor_get_f64: unsupported dtype"); return 0;
  }
}

int64_t amd_tensor_get_i64(const amd_tensor *t, int64_t i) {
  const void *d = t->data;
  switch (t->dtype) {
  case AMD_INT64: return ((const int64_t *)d)[i];
  case AMD_INT32: return ((const int32_t *)d)[i];
  case AMD_UINT8: return ((const uint8_t *)d)[i];
  case AMD_INT8: return ((const int8_t *)d)[i];
  case AMD_UINT16: return ((const uint16_t *)d)[i];
  case AMD_INT16: return ((const int16_t *)d)[i];
  case AMD_UINT32: return ((const uint32_t *)d)[i];
  case AMD_UINT64: return (int64_t)((const uint64_t *)d)[i];
  case AMD_BOOL: return ((const uint8_t *)d)[i] != 0;
  default: return (int64_t)amd_tensor_get_f64(t, i);
  }
}

void amd_tensor_set_f64(amd_tensor *t, int64_t i, double v) {
  void *d = t->data;
  switch (t->dtype) {
  case AMD_FLOAT: ((float *)d)[i] = (float)v; break;
  case AMD_DOUBLE: ((double *)d)[i] = v; break;
  case AMD_FLOAT16: ((uint16_t *)d)[i] = amd_float_to_half((float)v); break;
  case AMD_BFLOAT16: ((uint16_t *)d)[i] = amd_float_to_bf16((float)v); break;
  case AMD_BOOL: ((uint8_t *)d)[i] = v != 0; break;
  default:
    if (isnan(v)) v = 0;
    amd_tensor_set_i64(t, i, (int64_t)v);
    break;
  }
}

void amd_tensor_set_i64(amd_tensor *t, int64_t i, int64_t v) {
  void *d = t->data;
  switch (t->dtype) {
  case AMD_INT64: ((int64_t *)d)[i] = v; break;
  case AMD_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
  case AMD_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
  case AMD_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
  case AMD_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; break;
  case AMD_INT16: ((int16_t *)d)[i] = (int16_t)v; break;
  case AMD_UINT32: ((uint32_t *)d)[i] = (uint32_t)v; break;
  case AMD_UINT64: ((uint64_t *)d)[i] = (uint64_t)v; break;
  case AMD_BOOL: ((uint8_t *)d)[i] = v != 0; break;
  default: amd_tensor_set_f64(t, i, (double)v); break;
  }
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float amd_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13)); /* Inf / NaN */
  if (exp == 0) {
    /* zero or subnormal: man * 2^-24 */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t amd_float_to_half(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t exp = (u >> 23) & 0xff, man = u & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; /* overflow to Inf */
  if (e <= 0) {
    /* subnormal half (or zero): shift the full significand, round to nearest even */
    if (e < -10) return sign;
    uint32_t sig = man | 0x800000;
    int shift = 14 - e; /* 13 + (1 - e) */
    uint32_t half = sig >> shift, rem = sig & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into the exponent: correct */
  return (uint16_t)(sign | half);
}

float amd_bf16_to_float(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t amd_float_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}
