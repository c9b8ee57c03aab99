/* Softmax and LogSoftmax.
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
#define SM_KERNEL(SUF, T, EXP, LOG)                                                            \
  static void sm_##SUF(const T *x, T *y, int64_t outer, int64_t len, int64_t inner, int is_log, \
                       double *tmp) {                                                          \
    if (inner == 1) {                                                                          \
      for (int64_t r = 0; r < outer; r++) {                                                    \
        const T *xr = x + r * len;                                                             \
        T *yr = y + r * len;                                                                   \
        T m = xr[0];                                                                           \
        for (int64_t i = 1; i < len; i++)                                                      \
          if (xr[i] > m) m = xr[i];                                                            \
        double s = 0;                                                                          \
        if (is_log) {                                                                          \
          for (int64_t i = 0; i < len; i++) s += EXP(xr[i] - m);                               \
          T ls = (T)log(s);                                                                    \
          for (int64_t i = 0; i < len; i++) yr[i] = (xr[i] - m) - ls;                          \
        } else {                                                                               \
          for (int64_t i = 0; i < len; i++) {                                                  \
            T e = EXP(xr[i] - m);                                                              \
            yr[i] = e;                                                                         \
            s += e;                                                                            \
          }                                                                                    \
          T inv = (T)(1.0 / s);                                                                \
          for (int64_t i = 0; i < len; i++) yr[i] *= inv;                                      \
        }                                                                                      \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    double *mx = tmp, *sum = tmp + inner;                                                      \
    for (int64_t r = 0; r < outer; r++) {                                                      \
      const T *xr = x + r * len * inner;                                                       \
      T *yr = y + r * len * inner;                                                             \
      for (int64_t j = 0; j < inner; j++) {                                                    \
        mx[j] = xr[j];                                                                         \
        sum[j] = 0;                                                                            \
      }                                                                                        \
      for (int64_t i = 1; i < len; i++)                                                        \
        for (int64_t j = 0; j < inner; j++)                                                    \
          if (xr[i * inner + j] > mx[j]) mx[j] = xr[i * inner + j];                            \
      for (int64_t i = 0; i < len; i++)                                                        \
        for (int64_t j = 0; j < inner; j++) {                                                  \
          T e = EXP(xr[i * inner + j] - (T)mx[j]);                                             \
          if (!is_log) yr[i * inner + j] = e;                                                  \
          sum[j] += e;                                                                         \
        }                                                                                      \
      if (is_log) {                                                                            \
        for (int64_t j = 0; j < inner; j++) sum[j] = LOG(sum[j]);                              \
        for (int64_t i = 0; i < len; i++)                                                      \
          for (int64_t j = 0; j < inner; j++)                                                  \
            yr[i * inner + j] = (xr[i * inner + j] - (T)mx[j]) - (T)sum[j];                    \
      } else {                                                                                 \
        for (int64_t j = 0; j < inner; j++) sum[j] = 1.0 / sum[j];                             \
        for (int64_t i = 0; i < len; i++)                                                      \
          for (int64_t j = 0; j < inner; j++) yr[i * inner + j] *= (T)sum[j];                  \
      }                                                                                        \
    }                                                                                          \
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
#define SM_BWD_KERNEL(SUF, T, EXP)                                                                  \
  static void sm_bwd_##SUF(const T *y, const T *g, T *dx, int64_t outer, int64_t len, int64_t inner, \
                           int is_log, double *acc) {                                               \
    for (int64_t r = 0; r < outer; r++) {                                                           \
      const T *yr = y + r * len * inner, *gr = g + r * len * inner;                                 \
      T *dr = dx + r * len * inner;                                                                 \
      for (int64_t j = 0; j < inner; j++) acc[j] = 0;                                               \
      for (int64_t i = 0; i < len; i++)                                                             \
        for (int64_t j = 0; j < inner; j++)                                                         \
          acc[j] += is_log ? (double)gr[i * inner + j] : (double)gr[i * inner + j] * yr[i * inner + j]; \
      for (int64_t i = 0; i < len; i++)                                                             \
        for (int64_t j = 0; j < inner; j++) {                                                       \
          int64_t k = i * inner + j;                                                                \
          if (is_log)                                                                               \
            dr[k] += (T)(gr[k] - EXP(yr[k]) * acc[j]);                                              \
          else                                                                                      \
            dr[k] += (T)(yr[k] * (gr[k] - acc[j]));                                                 \
        }                                                                                           \
    }                                                                                               \
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
