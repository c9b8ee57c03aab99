/* Helpers of the shape and data-movement ops (shape.c, constant.c, pad.c,
 * slice.c, expand.c): element sizes, input checks, int lists from tensors and
 * attributes, the gradient accumulation of float and double, and the CPU
 * loops over strided views (attrs.h's amd_view). */
#ifndef AMD_SHAPE_UTIL_H
#define AMD_SHAPE_UTIL_H

#include <string.h>

#include "../core/omp.h"
#include "attrs.h"

/* Element size of t's dtype, failing for dtypes without one. */
static inline int elem_size(const amd_tensor *t, const char *what, size_t *es, amd_status *st) {
  *es = amd_dtype_size(t->dtype);
  if (*es == 0) return amd_fail(st, "%s has unsupported dtype %s", what, amd_dtype_name(t->dtype));
  return 0;
}

/* Requires input k to be present. */
static inline int need_in(const amd_node *n, const amd_tensor *const *in, int k, const char *what,
                          amd_status *st) {
  if (k >= n->n_in || !in[k]) return amd_fail(st, "missing required input %d (%s)", k, what);
  return 0;
}

/* Reads a 1-D (or scalar) integer tensor into out (at most max values);
 * returns the count or -1. */
static inline int read_ints(const amd_tensor *t, int64_t *out, int max, const char *what, amd_status *st) {
  if (t->dtype != AMD_INT64 && t->dtype != AMD_INT32)
    return amd_fail(st, "%s must be int64 (got %s)", what, amd_dtype_name(t->dtype));
  if (t->rank > 1) return amd_fail(st, "%s must be 1-D (got rank %d)", what, t->rank);
  int64_t cnt = amd_tensor_numel(t);
  if (cnt > max) return amd_fail(st, "%s has %lld values (at most %d supported)", what, (long long)cnt, max);
  for (int64_t i = 0; i < cnt; i++) out[i] = amd_tensor_get_i64(t, i);
  return (int)cnt;
}

/* Reads an ints attribute: its count, -1 when absent, -3 (st set) when longer than max. */
static inline int attr_ints(const amd_attr_list *p, const char *name, int64_t *out, int max, amd_status *st) {
  int cnt = amd_attr_ints(p, name, out, max);
  if (cnt == -2) {
    amd_fail(st, "attribute %s has more than %d values", name, max);
    return -3;
  }
  return cnt;
}

static inline void copy_shape(amd_tensor *out, const amd_tensor *in) {
  amd_tensor_set_shape(out, in->dtype, in->rank, in->dims);
}

/* Copies one element of es bytes. */
static inline void copy_elem(char *dst, const char *src, size_t es) {
  switch (es) {
  case 1:
    *dst = *src;
    break;
  case 2:
    memcpy(dst, src, 2);
    break;
  case 4:
    memcpy(dst, src, 4);
    break;
  case 8:
    memcpy(dst, src, 8);
    break;
  default:
    memcpy(dst, src, es);
    break;
  }
}

static inline int grad_dtype_ok(amd_dtype t, amd_status *st) {
  if (t != AMD_FLOAT && t != AMD_DOUBLE)
    return amd_fail(st, "backward supports float and double only (got %s)", amd_dtype_name(t));
  return 0;
}

/* memcpy on every core for a large block (the copies of Reshape, Flatten,
 * Identity, ... are as memory-bound as the arithmetic beside them). */
static inline void par_memcpy(void *dst, const void *src, size_t bytes) {
  enum { PIECE = 1 << 18 };
  const int64_t pieces = (int64_t)((bytes + PIECE - 1) / PIECE);
  AMD_PARALLEL_FOR((int64_t)(bytes / 4))
  for (int64_t q = 0; q < pieces; q++) {
    const size_t off = (size_t)q * PIECE;
    memcpy((char *)dst + off, (const char *)src + off, bytes - off < PIECE ? bytes - off : PIECE);
  }
}

/* dst[i] += src[i] for n elements of dtype t (float or double). */
static inline void grad_add(amd_dtype t, void *dst, const void *src, int64_t n) {
  if (t == AMD_FLOAT) {
    float *d = dst;
    const float *s = src;
    AMD_PARALLEL_FOR(n)
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
  } else {
    double *d = dst;
    const double *s = src;
    AMD_PARALLEL_FOR(n)
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
  }
}

/* float, double, float16, bfloat16 */
static inline int is_float_dtype(amd_dtype t) {
  return t == AMD_FLOAT || t == AMD_DOUBLE || t == AMD_FLOAT16 || t == AMD_BFLOAT16;
}

/* ---- strided views (attrs.h's amd_view: Slice, Split, Expand, Tile) ---- */

/* Row-major strides (in elements) of dims[0..rank). */
static inline void contiguous_strides(int rank, const int64_t *dims, int64_t *str) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    str[i] = s;
    s *= dims[i];
  }
}

/* Number of elements of a view. */
static inline int64_t view_numel(const amd_view *v) {
  int64_t c = 1;
  for (int i = 0; i < v->rank; i++) c *= v->dims[i];
  return c;
}

/* Calls body(off, i) for each element i (row-major over v's dims) with off
 * its offset in the viewed tensor; an odometer, no divisions. */
#define VIEW_FOR_EACH(v, OFF, I, body)                                                                       \
  do {                                                                                                       \
    const amd_view *vw_ = (v);                                                                               \
    int64_t cnt_ = view_numel(vw_);                                                                          \
    int64_t idx_[AMD_VIEW_RANK] = {0};                                                                       \
    int64_t OFF = vw_->base;                                                                                 \
    for (int64_t I = 0; I < cnt_; I++) {                                                                     \
      body;                                                                                                  \
      for (int ax_ = vw_->rank - 1; ax_ >= 0; ax_--) {                                                       \
        OFF += vw_->str[ax_];                                                                                \
        if (++idx_[ax_] < vw_->dims[ax_]) break;                                                             \
        OFF -= vw_->str[ax_] * vw_->dims[ax_];                                                               \
        idx_[ax_] = 0;                                                                                       \
      }                                                                                                      \
    }                                                                                                        \
  } while (0)

/* dst (contiguous, the view's shape) = the view of src; elements of es bytes. */
static inline void view_gather(void *dst, const void *src, size_t es, const amd_view *v) {
  char *d = dst;
  const char *s = src;
  if (v->rank > 0 && v->str[v->rank - 1] == 1) { /* whole rows */
    amd_view outer = *v;
    outer.rank--;
    size_t row = (size_t)v->dims[v->rank - 1] * es;
    if (row) VIEW_FOR_EACH(&outer, off, i, memcpy(d + (size_t)i * row, s + (size_t)off * es, row));
    return;
  }
  if (es == 4) {
    VIEW_FOR_EACH(v, off, i, memcpy(d + i * 4, s + off * 4, 4));
  } else if (es == 8) {
    VIEW_FOR_EACH(v, off, i, memcpy(d + i * 8, s + off * 8, 8));
  } else {
    VIEW_FOR_EACH(v, off, i, copy_elem(d + (size_t)i * es, s + (size_t)off * es, es));
  }
}

/* dx[view offset of i] += dy[i] for float or double (the view's offsets are
 * distinct: Slice, Split). */
static inline void view_scatter_add(amd_dtype t, void *dx, const void *dy, const amd_view *v) {
  if (t == AMD_FLOAT) {
    float *d = dx;
    const float *s = dy;
    VIEW_FOR_EACH(v, off, i, d[off] += s[i]);
  } else {
    double *d = dx;
    const double *s = dy;
    VIEW_FOR_EACH(v, off, i, d[off] += s[i]);
  }
}

#endif
