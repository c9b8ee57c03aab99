/* Softmax and LogSoftmax; Hardmax and CumSum (the same row views) at the end.
 *
 * Before opset 13 the input is coerced to 2-D at `axis` (default 1): rows are
 * the dims before axis, and the softmax runs over all trailing dims flattened.
 * Since opset 13 it runs along the single dim `axis` (default -1). Both forms
 * are the same kernel over a [outer, n, inner] view: before 13, inner = 1.
 *
 * Numerically stable: x - max is exponentiated; sums accumulate in double.
 * LogSoftmax is (x - max) - log(sum exp(x - max)).
 * Types: float, double; float16 / bfloat16 are computed in float.
 *
 * Backward (float, double) works from the forward output and ACCUMULATES (+=)
 * into din[0]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/omp.h"
#include "attrs.h"



static int sm_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_sm_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->axis = amd_attr_int(p, "axis", n->since >= 13 ? -1 : 1);
  return 0;
}

/* The [outer, n, inner] view of x; -1 with st set on a bad axis. */
int amd_sm_view(const amd_node *n, const amd_tensor *x, int64_t *outer, int64_t *len, int64_t *inner,
                   amd_status *st) {
  const amd_sm_attrs *a = n->attrs;
  int r = x->rank;
  int64_t ax = a->axis < 0 ? a->axis + r : a->axis;
  if (n->since >= 13) {
    if (ax < 0 || ax >= r) return amd_fail(st, "axis %lld out of range for rank %d", (long long)a->axis, r);
  } else if (ax < 0 || ax > r) {
    return amd_fail(st, "axis %lld out of range for rank %d", (long long)a->axis, r);
  }
  *outer = 1;
  for (int64_t d = 0; d < ax; d++) *outer *= x->dims[d];
  if (n->since >= 13) {
    *len = x->dims[ax];
    *inner = 1;
    for (int d = (int)ax + 1; d < r; d++) *inner *= x->dims[d];
  } else {
    *len = 1;
    for (int d = (int)ax; d < r; d++) *len *= x->dims[d];
    *inner = 1;
  }
  return 0;
}

static int sm_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 1 || !in[0]) return amd_fail(st, "missing input");
  const amd_tensor *x = in[0];
  switch (x->dtype) {
  case AMD_FLOAT: case AMD_DOUBLE: case AMD_FLOAT16: case AMD_BFLOAT16: break;
  default: return amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype));
  }
  int64_t o, l, i;
  if (amd_sm_view(n, x, &o, &l, &i, st)) return -1;
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, x->dims);
  return 0;
}

/* T-typed kernel. Contiguous rows when inner == 1; otherwise `inner` columns
 * are processed together with per-column max / sum in `tmp` (2 * inner). */
#define SM_KERNEL(SUF, T, EXP, LOG)                                                                          \
  static void sm_##SUF(const T *x, T *y, int64_t outer, int64_t len, int64_t inner, int is_log,              \
                       double *tmp) {                                                                        \
    if (inner == 1) { /* rows on every core */                                                               \
      AMD_PARALLEL_FOR(outer *len)                                                                           \
      for (int64_t r = 0; r < outer; r++) {                                                                  \
        const T *xr = x + r * len;                                                                           \
        T *yr = y + r * len;                                                                                 \
        T m = xr[0];                                                                                         \
        for (int64_t i = 1; i < len; i++)                                                                    \
          if (xr[i] > m) m = xr[i];                                                                          \
        double s = 0;                                                                                        \
        if (is_log) {                                                                                        \
          for (int64_t i = 0; i < len; i++) s += EXP(xr[i] - m);                                             \
          T ls = (T)log(s);                                                                                  \
          for (int64_t i = 0; i < len; i++) yr[i] = (xr[i] - m) - ls;                                        \
        } else {                                                                                             \
          for (int64_t i = 0; i < len; i++) {                                                                \
            T e = EXP(xr[i] - m);                                                                            \
            yr[i] = e;                                                                                       \
            s += e;                                                                                          \
          }                                                                                                  \
          T inv = (T)(1.0 / s);                                                                              \
          for (int64_t i = 0; i < len; i++) yr[i] *= inv;                                                    \
        }                                                                                                    \
      }                                                                                                      \
      return;                                                                                                \
    }                                                                                                        \
    double *mx = tmp, *sum = tmp + inner;                                                                    \
    for (int64_t r = 0; r < outer; r++) {                                                                    \
      const T *xr = x + r * len * inner;                                                                     \
      T *yr = y + r * len * inner;                                                                           \
      for (int64_t j = 0; j < inner; j++) {                                                                  \
        mx[j] = xr[j];                                                                                       \
        sum[j] = 0;                                                                                          \
      }                                                                                                      \
      for (int64_t i = 1; i < len; i++)                                                                      \
        for (int64_t j = 0; j < inner; j++)                                                                  \
          if (xr[i * inner + j] > mx[j]) mx[j] = xr[i * inner + j];                                          \
      for (int64_t i = 0; i < len; i++)                                                                      \
        for (int64_t j = 0; j < inner; j++) {                                                                \
          T e = EXP(xr[i * inner + j] - (T)mx[j]);                                                           \
          if (!is_log) yr[i * inner + j] = e;                                                                \
          sum[j] += e;                                                                                       \
        }                                                                                                    \
      if (is_log) {                                                                                          \
        for (int64_t j = 0; j < inner; j++) sum[j] = LOG(sum[j]);                                            \
        for (int64_t i = 0; i < len; i++)                                                                    \
          for (int64_t j = 0; j < inner; j++)                                                                \
            yr[i * inner + j] = (xr[i * inner + j] - (T)mx[j]) - (T)sum[j];                                  \
      } else {                                                                                               \
        for (int64_t j = 0; j < inner; j++) sum[j] = 1.0 / sum[j];                                           \
        for (int64_t i = 0; i < len; i++)                                                                    \
          for (int64_t j = 0; j < inner; j++) yr[i * inner + j] *= (T)sum[j];                                \
      }                                                                                                      \
    }                                                                                                        \
  }

SM_KERNEL(f32, float, expf, log)
SM_KERNEL(f64, double, exp, log)

static int sm_forward_kind(int is_log, const amd_node *n, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  const amd_tensor *x = in[0];
  amd_tensor *y = &out[0];
  int64_t outer, len, inner;
  if (amd_sm_view(n, x, &outer, &len, &inner, st)) return -1;
  int64_t total = amd_tensor_numel(x);
  if (total == 0 || len == 0) return 0;
  double *tmp = NULL;
  if (inner > 1) {
    tmp = malloc((size_t)inner * 2 * sizeof(double));
    if (!tmp) return amd_fail(st, "out of memory");
  }
  int rc = 0;
  switch (x->dtype) {
  case AMD_FLOAT: sm_f32(x->data, y->data, outer, len, inner, is_log, tmp); break;
  case AMD_DOUBLE: sm_f64(x->data, y->data, outer, len, inner, is_log, tmp); break;
  case AMD_FLOAT16:
  case AMD_BFLOAT16: {
    float *buf = calloc((size_t)total * 2, sizeof(float));
    if (!buf) {
      rc = amd_fail(st, "out of memory");
      break;
    }
    for (int64_t i = 0; i < total; i++) buf[i] = (float)amd_tensor_get_f64(x, i);
    sm_f32(buf, buf + total, outer, len, inner, is_log, tmp);
    for (int64_t i = 0; i < total; i++) amd_tensor_set_f64(y, i, buf[total + i]);
    free(buf);
    break;
  }
  default: rc = amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype)); break;
  }
  free(tmp);
  return rc;
}

static int softmax_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  (void)ctx;
  return sm_forward_kind(0, n, in, out, st);
}
static int logsoftmax_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                              amd_tensor *out, amd_status *st) {
  (void)ctx;
  return sm_forward_kind(1, n, in, out, st);
}

/* ---- backward (float, double; ACCUMULATES += into din[0]) ----
 * From the forward output y along each softmax slice:
 *   Softmax:    dx = y * (g - sum(g * y))
 *   LogSoftmax: dx = g - exp(y) * sum(g)
 * Sums in double; `acc` holds one per column (inner of them). */
#define SM_BWD_KERNEL(SUF, T, EXP)                                                                           \
  static void sm_bwd_##SUF(const T *y, const T *g, T *dx, int64_t outer, int64_t len, int64_t inner,         \
                           int is_log, double *acc) {                                                        \
    if (inner == 1) { /* rows on every core, each with its own sum */                                        \
      AMD_PARALLEL_FOR(outer *len)                                                                           \
      for (int64_t r = 0; r < outer; r++) {                                                                  \
        const T *yr = y + r * len, *gr = g + r * len;                                                        \
        T *dr = dx + r * len;                                                                                \
        double a = 0;                                                                                        \
        for (int64_t i = 0; i < len; i++) a += is_log ? (double)gr[i] : (double)gr[i] * yr[i];               \
        for (int64_t i = 0; i < len; i++)                                                                    \
          dr[i] += is_log ? (T)(gr[i] - EXP(yr[i]) * a) : (T)(yr[i] * (gr[i] - a));                          \
      }                                                                                                      \
      return;                                                                                                \
    }                                                                                                        \
    for (int64_t r = 0; r < outer; r++) {                                                                    \
      const T *yr = y + r * len * inner, *gr = g + r * len * inner;                                          \
      T *dr = dx + r * len * inner;                                                                          \
      for (int64_t j = 0; j < inner; j++) acc[j] = 0;                                                        \
      for (int64_t i = 0; i < len; i++)                                                                      \
        for (int64_t j = 0; j < inner; j++)                                                                  \
          acc[j] += is_log ? (double)gr[i * inner + j] : (double)gr[i * inner + j] * yr[i * inner + j];      \
      for (int64_t i = 0; i < len; i++)                                                                      \
        for (int64_t j = 0; j < inner; j++) {                                                                \
          int64_t k = i * inner + j;                                                                         \
          if (is_log)                                                                                        \
            dr[k] += (T)(gr[k] - EXP(yr[k]) * acc[j]);                                                       \
          else                                                                                               \
            dr[k] += (T)(yr[k] * (gr[k] - acc[j]));                                                          \
        }                                                                                                    \
    }                                                                                                        \
  }

SM_BWD_KERNEL(f32, float, exp)
SM_BWD_KERNEL(f64, double, exp)

static int sm_backward_kind(int is_log, const amd_node *n, const amd_tensor *const *in, const amd_tensor *out,
                            const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  if (!dout[0] || !din[0]) return 0;
  const amd_tensor *x = in[0];
  if (x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE)
    return amd_fail(st, "backward supports float and double only (got %s)", amd_dtype_name(x->dtype));
  int64_t outer, len, inner;
  if (amd_sm_view(n, x, &outer, &len, &inner, st)) return -1;
  if (amd_tensor_numel(x) == 0 || len == 0) return 0;
  double *acc = malloc((size_t)inner * sizeof *acc);
  if (!acc) return amd_fail(st, "out of memory");
  if (x->dtype == AMD_FLOAT)
    sm_bwd_f32(out[0].data, dout[0]->data, din[0]->data, outer, len, inner, is_log, acc);
  else
    sm_bwd_f64(out[0].data, dout[0]->data, din[0]->data, outer, len, inner, is_log, acc);
  free(acc);
  return 0;
}

static int softmax_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                            const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                            amd_status *st) {
  (void)ctx;
  return sm_backward_kind(0, n, in, out, dout, din, st);
}
static int logsoftmax_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                               const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                               amd_status *st) {
  (void)ctx;
  return sm_backward_kind(1, n, in, out, dout, din, st);
}

const amd_op amd_op_Softmax = {.name = "Softmax",
                               .idx = AMD_OP_IDX_Softmax,
                               .since = {1, 11, 13},
                               .parse = sm_parse,
                               .infer = sm_infer,
                               .forward = softmax_forward,
                               .backward = softmax_backward};
const amd_op amd_op_LogSoftmax = {.name = "LogSoftmax",
                                  .idx = AMD_OP_IDX_LogSoftmax,
                                  .since = {1, 11, 13},
                                  .parse = sm_parse,
                                  .infer = sm_infer,
                                  .forward = logsoftmax_forward,
                                  .backward = logsoftmax_backward};

/* ---- Hardmax (1, 11, 13) ----
 * 1 at the first maximum of each row of the Softmax view (coerced 2-D at
 * `axis`, default 1, before 13; the single dim `axis`, default -1, since 13),
 * 0 elsewhere; a NaN counts as the maximum (the first one), as numpy's argmax.
 * 13 adds bfloat16 only. Types: float, double, float16, bfloat16.
 * Backward: the output is piecewise constant, so the gradient is zero: the
 * backward adds nothing (it exists so that a graph with Hardmax trains). */
static int hardmax_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  (void)ctx;
  const amd_tensor *x = in[0];
  int64_t outer, len, inner;
  if (amd_sm_view(n, x, &outer, &len, &inner, st)) return -1;
  for (int64_t i = 0; i < amd_tensor_numel(x); i++) amd_tensor_set_f64(&out[0], i, 0.0);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner && len > 0; j++) {
      int64_t base = o * len * inner + j, bi = 0;
      double best = amd_tensor_get_f64(x, base);
      for (int64_t i = 1; i < len && !isnan(best); i++) {
        double v = amd_tensor_get_f64(x, base + i * inner);
        if (v > best || isnan(v)) best = v, bi = i;
      }
      amd_tensor_set_f64(&out[0], base + bi * inner, 1.0);
    }
  return 0;
}

static int hardmax_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                            const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                            amd_status *st) {
  (void)n, (void)ctx, (void)in, (void)out, (void)dout, (void)din, (void)st;
  return 0; /* zero gradient */
}

const amd_op amd_op_Hardmax = {.name = "Hardmax",
                               .idx = AMD_OP_IDX_Hardmax,
                               .since = {1, 11, 13},
                               .parse = sm_parse,
                               .infer = sm_infer,
                               .forward = hardmax_forward,
                               .backward = hardmax_backward,
                               .bwd_unread_in = 1u,
                               .bwd_unread_out = 1u};

/* ---- CumSum (11, 14) ----
 * y = the running sum of x along the dim given by input 1 (an int32 or int64
 * scalar or 1-element tensor, read on the host; negative counts from the
 * back). exclusive=1 leaves the element itself out (the first sum is 0);
 * reverse=1 runs from the end of the dim. 14 adds float16 and bfloat16.
 * Types: float, double, float16, bfloat16 (sums in double), int32, int64,
 * uint32, uint64 (sums in their own width, wrapping).
 * Backward (float, double; ACCUMULATES): dx = the CumSum of dy with the same
 * exclusive and the opposite reverse (each x_i feeds the sums after it, or
 * before it when reversed). The axis input gets no gradient. */
static int cumsum_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_cumsum_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  int64_t e = amd_attr_int(p, "exclusive", 0), r = amd_attr_int(p, "reverse", 0);
  if ((e != 0 && e != 1) || (r != 0 && r != 1))
    return amd_fail(st, "exclusive and reverse must be 0 or 1 (got %lld, %lld)", (long long)e, (long long)r);
  a->exclusive = (int)e, a->reverse = (int)r;
  return 0;
}

/* The [outer, len, inner] view around the axis of input 1 (attrs.h). */
int amd_cumsum_view(const amd_tensor *const *in, int64_t *outer, int64_t *len, int64_t *inner,
                    amd_status *st) {
  const amd_tensor *x = in[0], *ax = in[1];
  if (!ax) return amd_fail(st, "missing axis input");
  if ((ax->dtype != AMD_INT32 && ax->dtype != AMD_INT64) || ax->rank > 1 || amd_tensor_numel(ax) != 1)
    return amd_fail(st, "axis must be an int32 or int64 scalar (got %s of rank %d)", amd_dtype_name(ax->dtype),
                    ax->rank);
  if (x->rank < 1) return amd_fail(st, "input must have rank >= 1");
  int a = amd_axis(amd_tensor_get_i64(ax, 0), x->rank, st);
  if (a < 0) return -1;
  *outer = *inner = 1;
  for (int d = 0; d < a; d++) *outer *= x->dims[d];
  for (int d = a + 1; d < x->rank; d++) *inner *= x->dims[d];
  *len = x->dims[a];
  return 0;
}

static int cumsum_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 2 || !in[0]) return amd_fail(st, "CumSum takes x and axis");
  switch (in[0]->dtype) {
  case AMD_FLOAT: case AMD_DOUBLE: case AMD_INT32: case AMD_INT64: case AMD_UINT32: case AMD_UINT64: break;
  case AMD_FLOAT16: case AMD_BFLOAT16:
    if (n->since >= 14) break;
    /* fall through */
  default: return amd_fail(st, "unsupported dtype %s", amd_dtype_name(in[0]->dtype));
  }
  int64_t o, l, i;
  if (amd_cumsum_view(in, &o, &l, &i, st)) return -1;
  amd_tensor_set_shape(&out[0], in[0]->dtype, in[0]->rank, in[0]->dims);
  return 0;
}

/* y (+)= cumsum of x over the view; ACC the running sum's type. */
#define CUMSUM_KERNEL(SUF, T, ACC)                                                                   \
  static void cumsum_##SUF(const T *x, T *y, int64_t outer, int64_t len, int64_t inner, int excl,    \
                           int rev, int add) {                                                       \
    for (int64_t o = 0; o < outer; o++)                                                              \
      for (int64_t j = 0; j < inner; j++) {                                                          \
        ACC s = 0;                                                                                   \
        for (int64_t k = 0; k < len; k++) {                                                          \
          int64_t i = o * len * inner + (rev ? len - 1 - k : k) * inner + j;                         \
          ACC v = (ACC)x[i];                                                                         \
          if (!excl) s += v;                                                                         \
          y[i] = add ? (T)(y[i] + (T)s) : (T)s;                                                      \
          if (excl) s += v;                                                                          \
        }                                                                                            \
      }                                                                                              \
  }

CUMSUM_KERNEL(f32, float, double)
CUMSUM_KERNEL(f64, double, double)
CUMSUM_KERNEL(i32, int32_t, int64_t)
CUMSUM_KERNEL(i64, int64_t, uint64_t)
CUMSUM_KERNEL(u32, uint32_t, uint64_t)
CUMSUM_KERNEL(u64, uint64_t, uint64_t)

static int cumsum_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                          amd_status *st) {
  (void)ctx;
  const amd_cumsum_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  int64_t outer, len, inner;
  if (amd_cumsum_view(in, &outer, &len, &inner, st)) return -1;
  int e = a->exclusive, r = a->reverse;
  switch (x->dtype) {
  case AMD_FLOAT: cumsum_f32(x->data, out[0].data, outer, len, inner, e, r, 0); break;
  case AMD_DOUBLE: cumsum_f64(x->data, out[0].data, outer, len, inner, e, r, 0); break;
  case AMD_INT32: cumsum_i32(x->data, out[0].data, outer, len, inner, e, r, 0); break;
  case AMD_INT64: cumsum_i64(x->data, out[0].data, outer, len, inner, e, r, 0); break;
  case AMD_UINT32: cumsum_u32(x->data, out[0].data, outer, len, inner, e, r, 0); break;
  case AMD_UINT64: cumsum_u64(x->data, out[0].data, outer, len, inner, e, r, 0); break;
  default: { /* float16, bfloat16: through double */
    int64_t cnt = amd_tensor_numel(x);
    double *xd = malloc((size_t)(cnt ? cnt : 1) * 2 * sizeof *xd);
    if (!xd) return amd_fail(st, "out of memory");
    for (int64_t i = 0; i < cnt; i++) xd[i] = amd_tensor_get_f64(x, i);
    cumsum_f64(xd, xd + cnt, outer, len, inner, e, r, 0);
    for (int64_t i = 0; i < cnt; i++) amd_tensor_set_f64(&out[0], i, xd[cnt + i]);
    free(xd);
  }
  }
  return 0;
}

static int cumsum_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                           const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                           amd_status *st) {
  (void)ctx, (void)out;
  if (!dout[0] || !din[0]) return 0;
  const amd_cumsum_attrs *a = n->attrs;
  int64_t outer, len, inner;
  if (amd_cumsum_view(in, &outer, &len, &inner, st)) return -1;
  if (in[0]->dtype == AMD_FLOAT)
    cumsum_f32(dout[0]->data, din[0]->data, outer, len, inner, a->exclusive, !a->reverse, 1);
  else if (in[0]->dtype == AMD_DOUBLE)
    cumsum_f64(dout[0]->data, din[0]->data, outer, len, inner, a->exclusive, !a->reverse, 1);
  else
    return amd_fail(st, "backward supports float and double only (got %s)", amd_dtype_name(in[0]->dtype));
  return 0;
}

const amd_op amd_op_CumSum = {.name = "CumSum",
                              .idx = AMD_OP_IDX_CumSum,
                              .since = {11, 14},
                              .parse = cumsum_parse,
                              .infer = cumsum_infer,
                              .forward = cumsum_forward,
                              .backward = cumsum_backward,
                              .nondiff_inputs = 1u << 1,
                              .bwd_unread_in = 1u,
                              .bwd_unread_out = 1u};
