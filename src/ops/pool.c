/* Pooling on the CPU: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool.
 *
 * Layout: X is (N, C, D1, ..., Dk) with k = 1, 2 or 3 spatial dims (any k up
 * to AMD_MAX_RANK - 2 works), contiguous NCHW; each (n, c) plane is pooled
 * independently.
 *
 * Window geometry follows the ONNX spec (opsets 1..19):
 * - explicit pads (auto_pad NOTSET): out = floor_or_ceil((in + pad_begin +
 *   pad_end - ((kernel - 1) * dilation + 1)) / stride) + 1; with ceil_mode the
 *   last window must start inside the input or its begin padding, otherwise it
 *   is dropped (the rule PyTorch and the ONNX reference use).
 * - VALID: no padding, out = floor((in - effective_kernel) / stride) + 1.
 * - SAME_UPPER / SAME_LOWER: out = ceil(in / stride); the total padding
 *   (out - 1) * stride + effective_kernel - in is split with the odd element
 *   at the end (UPPER) or the beginning (LOWER).
 * Padded positions never win a max. AveragePool divides by the number of real
 * elements (count_include_pad=0) or by the number of window positions inside
 * the padded input (count_include_pad=1; positions that ceil_mode pushes past
 * the end padding are not counted).
 * MaxPool's optional Indices output (int64) holds, per output element, the
 * flat index of the chosen input element in the whole X tensor:
 * plane * (D1*...*Dk) + the spatial offset, the spatial offset in row-major
 * order (storage_order=0) or column-major order (storage_order=1).
 *
 * Backward (float and double): gradients ACCUMULATE (+=) into dX, which the
 * autograd engine zeroed. MaxPool recomputes each window's argmax from X with
 * the forward's rule (first in-bounds tap seeds, ties keep the first) and adds
 * dY there; the Indices output gets no gradient. AveragePool spreads dY / count
 * over the window's in-bounds taps, with the forward's count. GlobalMaxPool
 * sends dY to the plane's first maximum (a NaN wins, as in forward);
 * GlobalAveragePool spreads dY / plane size. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attrs.h"

enum { POOL_MAX = AMD_POOL_MAX, POOL_AVG = AMD_POOL_AVG };

#define POOL_MAX_SPATIAL AMD_SP

/* ---- attributes ---- */

static int read_ints(const amd_attr_list *p, const char *name, int64_t *dst, int want, int64_t def,
                     int64_t minv, amd_status *st) {
  int64_t tmp[2 * POOL_MAX_SPATIAL];
  int cnt = amd_attr_ints(p, name, tmp, 2 * POOL_MAX_SPATIAL);
  if (cnt == -1) {
    for (int i = 0; i < want; i++) dst[i] = def;
    return 0;
  }
  if (cnt != want)
    return amd_fail(st, "attribute %s has %d values, expected %d", name, cnt < 0 ? -1 : cnt, want);
  for (int i = 0; i < want; i++) {
    if (tmp[i] < minv)
      return amd_fail(st, "attribute %s[%d] = %lld must be >= %lld", name, i, (long long)tmp[i],
                      (long long)minv);
    dst[i] = tmp[i];
  }
  return 0;
}

static int pool_parse_common(amd_node *n, const amd_attr_list *p, int kind, amd_status *st) {
  amd_pool_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->kind = kind;
  int cnt = amd_attr_ints(p, "kernel_shape", a->kernel, POOL_MAX_SPATIAL);
  if (cnt == -1) return amd_fail(st, "attribute kernel_shape is required");
  if (cnt < 1) return amd_fail(st, "kernel_shape must have 1..%d values", POOL_MAX_SPATIAL);
  a->nk = cnt;
  for (int i = 0; i < cnt; i++)
    if (a->kernel[i] < 1)
      return amd_fail(st, "kernel_shape[%d] = %lld must be >= 1", i, (long long)a->kernel[i]);
  if (read_ints(p, "strides", a->strides, cnt, 1, 1, st)) return -1;
  if (read_ints(p, "dilations", a->dilations, cnt, 1, 1, st)) return -1;
  if (read_ints(p, "pads", a->pads, 2 * cnt, 0, 0, st)) return -1;
  /* as ONNX Runtime requires: a window that lies wholly in the padding has
   * nothing to pool, and pads of millions made outputs of millions of such
   * windows (a fuzzer's model ran for 25 s) */
  for (int i = 0; i < 2 * cnt; i++)
    if (a->pads[i] >= a->kernel[i % cnt])
      return amd_fail(st, "pads[%d] = %lld: a pad must be smaller than the kernel (kernel_shape[%d] = %lld)", i,
                      (long long)a->pads[i], i % cnt, (long long)a->kernel[i % cnt]);
  if (amd_attr_auto_pad(p, &a->auto_pad, st)) return -1;
  a->ceil_mode = (int)amd_attr_int(p, "ceil_mode", 0);
  a->count_include_pad = (int)amd_attr_int(p, "count_include_pad", 0);
  a->storage_order = (int)amd_attr_int(p, "storage_order", 0);
  if (a->ceil_mode != 0 && a->ceil_mode != 1) return amd_fail(st, "ceil_mode must be 0 or 1");
  if (a->storage_order != 0 && a->storage_order != 1)
    return amd_fail(st, "storage_order must be 0 or 1");
  return 0;
}

static int maxpool_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  return pool_parse_common(n, p, POOL_MAX, st);
}

static int avgpool_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  return pool_parse_common(n, p, POOL_AVG, st);
}

/* ---- geometry ---- */

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

int amd_pool_geometry(const amd_pool_attrs *a, const amd_tensor *x, amd_pool_geom *g, amd_status *st) {
  if (x->rank != a->nk + 2) {
    char s[128];
    return amd_fail(st, "X has shape %s; kernel_shape has %d dims, so X needs rank %d (N, C, ...)",
                    amd_shape_str(x, s, sizeof s), a->nk, a->nk + 2);
  }
  g->nk = a->nk;
  g->planes = x->dims[0] * x->dims[1];
  g->in_plane = 1;
  g->out_plane = 1;
  for (int i = 0; i < a->nk; i++) {
    int64_t in = x->dims[2 + i], k = a->kernel[i], s = a->strides[i], d = a->dilations[i];
    int64_t ek = (k - 1) * d + 1, o, pb, pe;
    switch (a->auto_pad) {
    case AMD_PAD_SAME_UPPER:
    case AMD_PAD_SAME_LOWER: {
      o = (in + s - 1) / s;
      int64_t total = (o - 1) * s + ek - in;
      if (total < 0) total = 0;
      pb = a->auto_pad == AMD_PAD_SAME_UPPER ? total / 2 : total - total / 2;
      pe = total - pb;
      break;
    }
    case AMD_PAD_VALID:
      pb = pe = 0;
      if (in < ek)
        return amd_fail(st, "spatial dim %d: input %lld is smaller than the kernel extent %lld", i,
                        (long long)in, (long long)ek);
      o = (in - ek) / s + 1;
      break;
    default: {
      pb = a->pads[i];
      pe = a->pads[a->nk + i];
      int64_t span = in + pb + pe - ek; /* may be negative: ceil_mode can still fit a window */
      o = (a->ceil_mode ? ceil_div(span, s) : floor_div(span, s)) + 1;
      if (a->ceil_mode && (o - 1) * s >= in + pb) o--;
      if (o < 1)
        return amd_fail(st,
                        "spatial dim %d: padded input %lld is smaller than the kernel extent %lld",
                        i, (long long)(in + pb + pe), (long long)ek);
      break;
    }
    }
    g->in[i] = in;
    g->out[i] = o;
    g->k[i] = k;
    g->s[i] = s;
    g->d[i] = d;
    g->pb[i] = pb;
    g->pe[i] = pe;
    g->in_plane *= in;
    g->out_plane *= o;
  }
  return 0;
}

static int pool_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const amd_pool_attrs *a = n->attrs;
  if (n->n_in < 1 || !in[0]) return amd_fail(st, "input X is required");
  const amd_tensor *x = in[0];
  if (a->kind == POOL_MAX) {
    if (x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE && x->dtype != AMD_INT8 &&
        x->dtype != AMD_UINT8)
      return amd_fail(st, "X has dtype %s (MaxPool supports float, double, int8, uint8)",
                      amd_dtype_name(x->dtype));
    if (n->n_out > 2) return amd_fail(st, "MaxPool has at most 2 outputs, got %d", n->n_out);
  } else {
    if (x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE)
      return amd_fail(st, "X has dtype %s (AveragePool supports float, double)",
                      amd_dtype_name(x->dtype));
    if (n->n_out > 1) return amd_fail(st, "AveragePool has 1 output, got %d", n->n_out);
  }
  amd_pool_geom g;
  if (amd_pool_geometry(a, x, &g, st)) return -1;
  int64_t dims[AMD_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  for (int i = 0; i < g.nk; i++) dims[2 + i] = g.out[i];
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, dims);
  if (n->n_out > 1) amd_tensor_set_shape(&out[1], AMD_INT64, x->rank, dims);
  return 0;
}

/* Window of output coordinate o along spatial dim i: first input coordinate
 * and the range [lo, hi) of kernel taps that land inside the input. */
static inline void win_range(const amd_pool_geom *g, int i, int64_t o, int64_t *start, int64_t *lo,
                             int64_t *hi) {
  int64_t s0 = o * g->s[i] - g->pb[i], d = g->d[i];
  int64_t l = s0 < 0 ? (-s0 + d - 1) / d : 0;
  int64_t h = g->in[i] - s0 <= 0 ? 0 : (g->in[i] - s0 + d - 1) / d;
  if (h > g->k[i]) h = g->k[i];
  *start = s0;
  *lo = l;
  *hi = h < l ? l : h;
}

/* Number of taps of the window inside the padded input (count_include_pad). */
static inline int64_t win_padded_count(const amd_pool_geom *g, int i, int64_t start) {
  int64_t lim = g->in[i] + g->pe[i] - start, d = g->d[i];
  int64_t c = lim <= 0 ? 0 : (lim + d - 1) / d;
  return c > g->k[i] ? g->k[i] : c;
}

/* Flat row-major spatial offset -> column-major spatial offset. */
static int64_t to_col_major(const amd_pool_geom *g, int64_t off) {
  int64_t coord[POOL_MAX_SPATIAL];
  for (int i = g->nk - 1; i >= 0; i--) {
    coord[i] = off % g->in[i];
    off /= g->in[i];
  }
  int64_t r = 0;
  for (int i = g->nk - 1; i >= 0; i--) r = r * g->in[i] + coord[i];
  return r;
}

/* Iterates over every output position of every plane; for each, sets up
 * start/lo/hi/kk and runs BODY_INIT, then BODY_TAP(off) for each in-bounds tap
 * (off = row-major spatial offset in the plane), then BODY_DONE. */
#define POOL_LOOP(g, BODY_INIT, BODY_TAP, BODY_DONE)                                         \
  for (int64_t p = 0; p < (g)->planes; p++) {                                                \
    int64_t oi[POOL_MAX_SPATIAL] = {0};                                                      \
    for (int64_t o = 0; o < (g)->out_plane; o++) {                                           \
      int64_t st0[POOL_MAX_SPATIAL], lo[POOL_MAX_SPATIAL], hi[POOL_MAX_SPATIAL],             \
          kk[POOL_MAX_SPATIAL];                                                              \
      int empty = 0;                                                                         \
      for (int i = 0; i < (g)->nk; i++) {                                                    \
        win_range((g), i, oi[i], &st0[i], &lo[i], &hi[i]);                                   \
        if (lo[i] >= hi[i]) empty = 1;                                                       \
        kk[i] = lo[i];                                                                       \
      }                                                                                      \
      BODY_INIT;                                                                             \
      if (!empty)                                                                            \
        for (;;) {                                                                           \
          int64_t off = 0;                                                                   \
          for (int i = 0; i < (g)->nk; i++) off = off * (g)->in[i] + st0[i] + kk[i] * (g)->d[i]; \
          BODY_TAP;                                                                          \
          int i = (g)->nk - 1;                                                               \
          while (i >= 0 && ++kk[i] >= hi[i]) {                                               \
            kk[i] = lo[i];                                                                   \
            i--;                                                                             \
          }                                                                                  \
          if (i < 0) break;                                                                  \
        }                                                                                    \
      BODY_DONE;                                                                             \
      for (int i = (g)->nk - 1; i >= 0; i--) {                                               \
        if (++oi[i] < (g)->out[i]) break;                                                    \
        oi[i] = 0;                                                                           \
      }                                                                                      \
    }                                                                                        \
  }

#define DEFINE_MAXPOOL(NAME, T, LOWEST)                                                      \
  static void NAME(const amd_pool_geom *g, const T *x, T *y, int64_t *ind, int col_major) {      \
    T best = LOWEST;                                                                         \
    int64_t bidx = -1;                                                                       \
    POOL_LOOP(                                                                               \
        g, (best = LOWEST, bidx = -1),                                                       \
        {                                                                                    \
          T v = x[p * g->in_plane + off];                                                    \
          if (bidx < 0 || v > best) {                                                        \
            best = v;                                                                        \
            bidx = off;                                                                      \
          }                                                                                  \
        },                                                                                   \
        {                                                                                    \
          y[p * g->out_plane + o] = best;                                                    \
          if (ind) {                                                                         \
            int64_t so = bidx < 0 ? 0 : (col_major ? to_col_major(g, bidx) : bidx);         \
            ind[p * g->out_plane + o] = p * g->in_plane + so;                                \
          }                                                                                  \
        })                                                                                   \
  }

DEFINE_MAXPOOL(maxpool_f32, float, -INFINITY)
DEFINE_MAXPOOL(maxpool_f64, double, -INFINITY)
DEFINE_MAXPOOL(maxpool_i8, int8_t, INT8_MIN)
DEFINE_MAXPOOL(maxpool_u8, uint8_t, 0)

#define DEFINE_AVGPOOL(NAME, T)                                                              \
  static void NAME(const amd_pool_geom *g, const T *x, T *y, int include_pad) {                  \
    double sum = 0;                                                                          \
    int64_t cnt = 0;                                                                         \
    POOL_LOOP(                                                                               \
        g, (sum = 0, cnt = 0), { sum += x[p * g->in_plane + off]; cnt++; },                  \
        {                                                                                    \
          if (include_pad) {                                                                 \
            cnt = 1;                                                                         \
            for (int i = 0; i < g->nk; i++) cnt *= win_padded_count(g, i, st0[i]);           \
          }                                                                                  \
          y[p * g->out_plane + o] = cnt > 0 ? (T)(sum / (double)cnt) : (T)0;                 \
        })                                                                                   \
  }

DEFINE_AVGPOOL(avgpool_f32, float)
DEFINE_AVGPOOL(avgpool_f64, double)

/* 2-D fast paths (the common CNN case): window ranges are precomputed per
 * output row / column, the taps read straight from the rows. Same results as
 * the generic loops (the first in-bounds tap seeds the max; ties keep the
 * first). */
typedef struct win1d {
  int64_t start, lo, hi, padded; /* padded: taps inside the padded input */
} win1d;

static win1d *win_table(const amd_pool_geom *g, int i) {
  win1d *w = malloc(sizeof *w * (size_t)(g->out[i] > 0 ? g->out[i] : 1));
  if (!w) return NULL;
  for (int64_t o = 0; o < g->out[i]; o++) {
    win_range(g, i, o, &w[o].start, &w[o].lo, &w[o].hi);
    w[o].padded = win_padded_count(g, i, w[o].start);
  }
  return w;
}

#define DEFINE_MAXPOOL2D(NAME, T, LOWEST)                                                    \
  static void NAME(const amd_pool_geom *g, const win1d *wh, const win1d *ww, const T *x, T *y) { \
    const int64_t W = g->in[1], OH = g->out[0], OW = g->out[1], dh = g->d[0], dw = g->d[1];  \
    for (int64_t p = 0; p < g->planes; p++) {                                                \
      const T *xp = x + p * g->in_plane;                                                     \
      T *yp = y + p * g->out_plane;                                                          \
      for (int64_t oh = 0; oh < OH; oh++) {                                                  \
        const win1d h = wh[oh];                                                              \
        for (int64_t ow = 0; ow < OW; ow++) {                                                \
          const win1d w = ww[ow];                                                            \
          T best = LOWEST;                                                                   \
          int any = 0;                                                                       \
          for (int64_t kh = h.lo; kh < h.hi; kh++) {                                         \
            const T *row = xp + (h.start + kh * dh) * W + w.start;                           \
            for (int64_t kw = w.lo; kw < w.hi; kw++) {                                       \
              T v = row[kw * dw];                                                            \
              if (!any || v > best) {                                                        \
                best = v;                                                                    \
                any = 1;                                                                     \
              }                                                                              \
            }                                                                                \
          }                                                                                  \
          yp[oh * OW + ow] = best;                                                           \
        }                                                                                    \
      }                                                                                      \
    }                                                                                        \
  }

DEFINE_MAXPOOL2D(maxpool2d_f32, float, -INFINITY)
DEFINE_MAXPOOL2D(maxpool2d_f64, double, -INFINITY)
DEFINE_MAXPOOL2D(maxpool2d_i8, int8_t, INT8_MIN)
DEFINE_MAXPOOL2D(maxpool2d_u8, uint8_t, 0)

#define DEFINE_AVGPOOL2D(NAME, T)                                                            \
  static void NAME(const amd_pool_geom *g, const win1d *wh, const win1d *ww, const T *x, T *y,   \
                   int include_pad) {                                                        \
    const int64_t W = g->in[1], OH = g->out[0], OW = g->out[1], dh = g->d[0], dw = g->d[1];  \
    for (int64_t p = 0; p < g->planes; p++) {                                                \
      const T *xp = x + p * g->in_plane;                                                     \
      T *yp = y + p * g->out_plane;                                                          \
      for (int64_t oh = 0; oh < OH; oh++) {                                                  \
        const win1d h = wh[oh];                                                              \
        for (int64_t ow = 0; ow < OW; ow++) {                                                \
          const win1d w = ww[ow];                                                            \
          double sum = 0;                                                                    \
          for (int64_t kh = h.lo; kh < h.hi; kh++) {                                         \
            const T *row = xp + (h.start + kh * dh) * W + w.start;                           \
            for (int64_t kw = w.lo; kw < w.hi; kw++) sum += row[kw * dw];                    \
          }                                                                                  \
          int64_t cnt = include_pad ? h.padded * w.padded : (h.hi - h.lo) * (w.hi - w.lo);   \
          yp[oh * OW + ow] = cnt > 0 ? (T)(sum / (double)cnt) : (T)0;                        \
        }                                                                                    \
      }                                                                                      \
    }                                                                                        \
  }

DEFINE_AVGPOOL2D(avgpool2d_f32, float)
DEFINE_AVGPOOL2D(avgpool2d_f64, double)

/* Runs the 2-D fast path; 1 when it does not apply (not 2-D, Indices wanted,
 * dtype), -1 on allocation failure. */
static int pool2d_fast(const amd_pool_attrs *a, const amd_pool_geom *g, const amd_tensor *x, amd_tensor *y,
                       int want_indices, amd_status *st) {
  if (g->nk != 2 || want_indices) return 1;
  if (a->kind == POOL_AVG && x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE) return 1;
  win1d *wh = win_table(g, 0), *ww = win_table(g, 1);
  if (!wh || !ww) {
    free(wh);
    free(ww);
    return amd_fail(st, "out of memory");
  }
  int r = 0;
  if (a->kind == POOL_AVG) {
    if (x->dtype == AMD_FLOAT)
      avgpool2d_f32(g, wh, ww, x->data, y->data, a->count_include_pad);
    else
      avgpool2d_f64(g, wh, ww, x->data, y->data, a->count_include_pad);
  } else {
    switch (x->dtype) {
    case AMD_FLOAT: maxpool2d_f32(g, wh, ww, x->data, y->data); break;
    case AMD_DOUBLE: maxpool2d_f64(g, wh, ww, x->data, y->data); break;
    case AMD_INT8: maxpool2d_i8(g, wh, ww, x->data, y->data); break;
    case AMD_UINT8: maxpool2d_u8(g, wh, ww, x->data, y->data); break;
    default: r = 1; break;
    }
  }
  free(wh);
  free(ww);
  return r;
}

static int pool_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  (void)ctx;
  const amd_pool_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  amd_pool_geom g;
  if (amd_pool_geometry(a, x, &g, st)) return -1;
  /* an empty output: nothing to compute (its other axes may still be long, and
   * the fast path's per-axis tables would be sized by them) */
  if (amd_tensor_numel(&out[0]) == 0) return 0;
  int64_t *ind = a->kind == POOL_MAX && n->n_out > 1 && n->out[1] >= 0 ? out[1].data : NULL;
  int fast = pool2d_fast(a, &g, x, &out[0], ind != NULL, st);
  if (fast <= 0) return fast;
  if (a->kind == POOL_AVG) {
    if (x->dtype == AMD_FLOAT)
      avgpool_f32(&g, x->data, out[0].data, a->count_include_pad);
    else if (x->dtype == AMD_DOUBLE)
      avgpool_f64(&g, x->data, out[0].data, a->count_include_pad);
    else
      return amd_fail(st, "AveragePool: unsupported dtype %s", amd_dtype_name(x->dtype));
    return 0;
  }
  int cm = a->storage_order == 1;
  switch (x->dtype) {
  case AMD_FLOAT: maxpool_f32(&g, x->data, out[0].data, ind, cm); break;
  case AMD_DOUBLE: maxpool_f64(&g, x->data, out[0].data, ind, cm); break;
  case AMD_INT8: maxpool_i8(&g, x->data, out[0].data, ind, cm); break;
  case AMD_UINT8: maxpool_u8(&g, x->data, out[0].data, ind, cm); break;
  default: return amd_fail(st, "MaxPool: unsupported dtype %s", amd_dtype_name(x->dtype));
  }
  return 0;
}

/* ---- backward ---- */

/* Generic N-d backward over POOL_LOOP: MaxPool sends dy to the recomputed
 * argmax; AveragePool spreads dy/count over the in-bounds taps. */
#define DEFINE_MAXPOOL_BWD(NAME, T)                                                                          \
  static void NAME(const amd_pool_geom *g, const T *x, const T *dy, T *dx) {                                     \
    T best = -INFINITY;                                                                                      \
    int64_t bidx = -1;                                                                                       \
    POOL_LOOP(                                                                                               \
        g, (best = -INFINITY, bidx = -1),                                                                    \
        {                                                                                                    \
          T v = x[p * g->in_plane + off];                                                                    \
          if (bidx < 0 || v > best) {                                                                        \
            best = v;                                                                                        \
            bidx = off;                                                                                      \
          }                                                                                                  \
        },                                                                                                   \
        {                                                                                                    \
          if (bidx >= 0) dx[p * g->in_plane + bidx] += dy[p * g->out_plane + o];                             \
        })                                                                                                   \
  }

DEFINE_MAXPOOL_BWD(maxpool_bwd_f32, float)
DEFINE_MAXPOOL_BWD(maxpool_bwd_f64, double)

#define DEFINE_AVGPOOL_BWD(NAME, T)                                                                          \
  static void NAME(const amd_pool_geom *g, const T *dy, T *dx, int include_pad) {                                \
    T gv = 0;                                                                                                \
    POOL_LOOP(                                                                                               \
        g,                                                                                                   \
        {                                                                                                    \
          int64_t cnt = 1;                                                                                   \
          for (int i = 0; i < g->nk; i++)                                                                    \
            cnt *= include_pad ? win_padded_count(g, i, st0[i]) : hi[i] - lo[i];                             \
          gv = cnt > 0 ? (T)(dy[p * g->out_plane + o] / (double)cnt) : (T)0;                                 \
        },                                                                                                   \
        { dx[p * g->in_plane + off] += gv; }, (void)0)                                                       \
  }

DEFINE_AVGPOOL_BWD(avgpool_bwd_f32, float)
DEFINE_AVGPOOL_BWD(avgpool_bwd_f64, double)

/* 2-D backward fast paths (same window tables and tap order as forward). */
#define DEFINE_POOL2D_BWD(NAME, T)                                                                           \
  static void NAME(const amd_pool_geom *g, const win1d *wh, const win1d *ww, const T *x, const T *dy, T *dx,     \
                   int is_max, int include_pad) {                                                            \
    const int64_t W = g->in[1], OH = g->out[0], OW = g->out[1], dh = g->d[0], dw = g->d[1];                  \
    for (int64_t p = 0; p < g->planes; p++) {                                                                \
      const T *xp = x + p * g->in_plane, *gp = dy + p * g->out_plane;                                        \
      T *dxp = dx + p * g->in_plane;                                                                         \
      for (int64_t oh = 0; oh < OH; oh++) {                                                                  \
        const win1d h = wh[oh];                                                                              \
        for (int64_t ow = 0; ow < OW; ow++) {                                                                \
          const win1d w = ww[ow];                                                                            \
          if (h.lo >= h.hi || w.lo >= w.hi) continue;                                                        \
          if (is_max) {                                                                                      \
            int64_t bi = (h.start + h.lo * dh) * W + w.start + w.lo * dw;                                    \
            T best = xp[bi];                                                                                 \
            for (int64_t kh = h.lo; kh < h.hi; kh++) {                                                       \
              int64_t r = (h.start + kh * dh) * W + w.start;                                                 \
              for (int64_t kw = w.lo; kw < w.hi; kw++)                                                       \
                if (xp[r + kw * dw] > best) {                                                                \
                  best = xp[r + kw * dw];                                                                    \
                  bi = r + kw * dw;                                                                          \
                }                                                                                            \
            }                                                                                                \
            dxp[bi] += gp[oh * OW + ow];                                                                     \
          } else {                                                                                           \
            int64_t cnt = include_pad ? h.padded * w.padded : (h.hi - h.lo) * (w.hi - w.lo);                 \
            if (cnt <= 0) continue;                                                                          \
            T gv = (T)(gp[oh * OW + ow] / (double)cnt);                                                      \
            for (int64_t kh = h.lo; kh < h.hi; kh++) {                                                       \
              T *row = dxp + (h.start + kh * dh) * W + w.start;                                              \
              for (int64_t kw = w.lo; kw < w.hi; kw++) row[kw * dw] += gv;                                   \
            }                                                                                                \
          }                                                                                                  \
        }                                                                                                    \
      }                                                                                                      \
    }                                                                                                        \
  }

DEFINE_POOL2D_BWD(pool2d_bwd_f32, float)
DEFINE_POOL2D_BWD(pool2d_bwd_f64, double)

static int pool_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                         const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  (void)out;
  const amd_pool_attrs *a = n->attrs;
  const amd_tensor *x = in[0], *dy = dout[0];
  amd_tensor *dx = din[0];
  if (!dy || !dx) return 0;
  if (x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE)
    return amd_fail(st, "%s: no gradient for dtype %s", n->op->name, amd_dtype_name(x->dtype));
  amd_pool_geom g;
  if (amd_pool_geometry(a, x, &g, st)) return -1;
  int is_max = a->kind == POOL_MAX, cip = a->count_include_pad, f32 = x->dtype == AMD_FLOAT;
  if (g.nk == 2) {
    win1d *wh = win_table(&g, 0), *ww = win_table(&g, 1);
    if (!wh || !ww) {
      free(wh);
      free(ww);
      return amd_fail(st, "out of memory");
    }
    if (f32)
      pool2d_bwd_f32(&g, wh, ww, x->data, dy->data, dx->data, is_max, cip);
    else
      pool2d_bwd_f64(&g, wh, ww, x->data, dy->data, dx->data, is_max, cip);
    free(wh);
    free(ww);
    return 0;
  }
  if (is_max) {
    if (f32)
      maxpool_bwd_f32(&g, x->data, dy->data, dx->data);
    else
      maxpool_bwd_f64(&g, x->data, dy->data, dx->data);
  } else {
    if (f32)
      avgpool_bwd_f32(&g, dy->data, dx->data, cip);
    else
      avgpool_bwd_f64(&g, dy->data, dx->data, cip);
  }
  return 0;
}

/* ---- global pools ---- */

static int global_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  if (n->n_in < 1 || !in[0]) return amd_fail(st, "input X is required");
  const amd_tensor *x = in[0];
  if (x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE)
    return amd_fail(st, "X has dtype %s (float and double are supported)", amd_dtype_name(x->dtype));
  if (x->rank < 2) return amd_fail(st, "X must have rank >= 2 (N, C, ...), got rank %d", x->rank);
  int64_t dims[AMD_MAX_RANK];
  for (int i = 0; i < x->rank; i++) dims[i] = i < 2 ? x->dims[i] : 1;
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, dims);
  return 0;
}

static int global_forward(const amd_node *n, const amd_tensor *x, amd_tensor *y, int is_max,
                          amd_status *st) {
  (void)n;
  int64_t planes = x->dims[0] * x->dims[1], inner = 1;
  for (int i = 2; i < x->rank; i++) inner *= x->dims[i];
  for (int64_t p = 0; p < planes; p++) {
    double acc = is_max ? -INFINITY : 0.0;
    if (x->dtype == AMD_FLOAT) {
      const float *xp = (const float *)x->data + p * inner;
      if (is_max) {
        float m = -INFINITY;
        for (int64_t i = 0; i < inner; i++)
          if (xp[i] > m || isnan(xp[i])) m = xp[i];
        acc = m;
      } else {
        for (int64_t i = 0; i < inner; i++) acc += xp[i];
      }
    } else if (x->dtype == AMD_DOUBLE) {
      const double *xp = (const double *)x->data + p * inner;
      for (int64_t i = 0; i < inner; i++) {
        if (is_max) {
          if (xp[i] > acc || isnan(xp[i])) acc = xp[i];
        } else {
          acc += xp[i];
        }
      }
    } else {
      return amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype));
    }
    if (!is_max) acc = inner > 0 ? acc / (double)inner : 0.0;
    if (x->dtype == AMD_FLOAT)
      ((float *)y->data)[p] = (float)acc;
    else
      ((double *)y->data)[p] = acc;
  }
  return 0;
}

static int gap_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  return global_forward(n, in[0], &out[0], 0, st);
}

static int gmp_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  return global_forward(n, in[0], &out[0], 1, st);
}

extern const amd_op amd_op_GlobalMaxPool;

/* Global pools backward: one plane of `inner` elements per (n, c). */
#define DEFINE_GLOBAL_BWD(NAME, T)                                                                           \
  static void NAME(const T *x, const T *dy, T *dx, int64_t planes, int64_t inner, int is_max) {              \
    for (int64_t p = 0; p < planes; p++) {                                                                   \
      const T *xp = x + p * inner;                                                                           \
      T *dxp = dx + p * inner;                                                                               \
      if (is_max) {                                                                                          \
        T m = -INFINITY;                                                                                     \
        int64_t bi = -1;                                                                                     \
        for (int64_t i = 0; i < inner; i++)                                                                  \
          if (xp[i] > m || isnan(xp[i])) {                                                                   \
            m = xp[i];                                                                                       \
            bi = i;                                                                                          \
          }                                                                                                  \
        if (bi >= 0) dxp[bi] += dy[p];                                                                       \
      } else if (inner > 0) {                                                                                \
        T gv = (T)(dy[p] / (double)inner);                                                                   \
        for (int64_t i = 0; i < inner; i++) dxp[i] += gv;                                                    \
      }                                                                                                      \
    }                                                                                                        \
  }

DEFINE_GLOBAL_BWD(global_bwd_f32, float)
DEFINE_GLOBAL_BWD(global_bwd_f64, double)

static int global_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                           const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                           amd_status *st) {
  (void)ctx;
  (void)out;
  const amd_tensor *x = in[0], *dy = dout[0];
  amd_tensor *dx = din[0];
  if (!dy || !dx) return 0;
  int is_max = n->op == &amd_op_GlobalMaxPool;
  int64_t planes = x->dims[0] * x->dims[1], inner = 1;
  for (int i = 2; i < x->rank; i++) inner *= x->dims[i];
  if (x->dtype == AMD_FLOAT)
    global_bwd_f32(x->data, dy->data, dx->data, planes, inner, is_max);
  else if (x->dtype == AMD_DOUBLE)
    global_bwd_f64(x->data, dy->data, dx->data, planes, inner, is_max);
  else
    return amd_fail(st, "%s: no gradient for dtype %s", n->op->name, amd_dtype_name(x->dtype));
  return 0;
}

const amd_op amd_op_MaxPool = {
    .name = "MaxPool",
    .idx = AMD_OP_IDX_MaxPool,
    .since = {1, 8, 10, 11, 12},
    .parse = maxpool_parse,
    .infer = pool_infer,
    .forward = pool_forward,
    .backward = pool_backward,
};
const amd_op amd_op_AveragePool = {
    .name = "AveragePool",
    .idx = AMD_OP_IDX_AveragePool,
    .since = {1, 7, 10, 11, 19},
    .parse = avgpool_parse,
    .infer = pool_infer,
    .forward = pool_forward,
    .backward = pool_backward,
};
const amd_op amd_op_GlobalAveragePool = {
    .name = "GlobalAveragePool",
    .idx = AMD_OP_IDX_GlobalAveragePool,
    .since = {1},
    .infer = global_infer,
    .forward = gap_forward,
    .backward = global_backward,
};
const amd_op amd_op_GlobalMaxPool = {
    .name = "GlobalMaxPool",
    .idx = AMD_OP_IDX_GlobalMaxPool,
    .since = {1},
    .infer = global_infer,
    .forward = gmp_forward,
    .backward = global_backward,
};
