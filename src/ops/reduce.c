/* Reductions: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
 *
 * Axes come from the `axes` attribute (ReduceSum before 13, the others before
 * 18) or from the optional second input (ReduceSum since 13, all since 18).
 * Absent or empty axes reduce every dim, unless noop_with_empty_axes=1 (the
 * input-form versions): then no dim is reduced, so each output element is its
 * input element alone: x for Sum, Mean, Max, Min, Prod and LogSumExp, |x|
 * for L1 and L2, x^2 for SumSquare, log(x) for LogSum (as ONNX's reference
 * computes it). keepdims (default 1) keeps reduced dims as size 1. Negative
 * axes count from the back; an axis out of range or repeated fails.
 *
 * Versions: Mean 1, 11, 13, 18; Sum 1, 11, 13; Max and Min 1, 11, 12, 13, 18,
 * 20; Prod, L1, L2, SumSquare 1, 11, 13, 18; LogSum, LogSumExp 1, 11, 13, 18
 * (12 and 20 add types; 11 allows negative axes, which every version here
 * accepts).
 *
 * The forward pass collapses adjacent dims that are both reduced or both kept,
 * then walks the input once in order, accumulating into a per-output buffer
 * (double for floating types, int64 / uint64 for integers); the innermost dim
 * is either one running accumulator (reduced) or a contiguous output run (kept).
 * Sum, Mean and Max run on the input's own type; the other kinds first copy
 * the input to double (floating types, and L2 / LogSum / LogSumExp of
 * integers, whose result is truncated back) or int64 (Min, Prod, L1 and
 * SumSquare of integers; uint64 is refused for them). LogSumExp is
 * max + log(sum exp(x - max)). Empty reductions (a zero-size reduced dim)
 * give the identity of the fold: 0 (Sum, L1, L2, SumSquare), NaN (Mean),
 * -inf / the type minimum (Max), +inf / the type maximum (Min), 1 (Prod),
 * -inf (LogSum, LogSumExp). Integer means truncate toward zero, as numpy's
 * mean cast back does. NaN propagates through Max and Min.
 *
 * Backward (float, double) ACCUMULATES (+=) into din[0], with g = dY at the
 * element's output and y = Y there:
 *   Sum g, Mean g / count, Max and Min: all of g to the first extremum (in
 *   memory order, the row-major order of the reduced dims), Prod: g times the
 *   product of the other elements (exact with zeros: counted apart), L1:
 *   g sign(x), L2: g x / y (0 where y = 0: the subgradient of |.| at 0),
 *   SumSquare 2 g x, LogSum g / exp(y), LogSumExp g exp(x - y).
 * The axes input is not differentiable. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"

enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD, RED_L1, RED_L2, RED_LOGSUM, RED_LOGSUMEXP, RED_SUMSQ };

static int red_parse_common(amd_node *n, const amd_attr_list *p, int input_since, amd_status *st) {
  amd_red_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->keepdims = amd_attr_int(p, "keepdims", 1) != 0;
  a->noop_with_empty_axes = amd_attr_int(p, "noop_with_empty_axes", 0) != 0;
  a->axes_from_input = n->since >= input_since;
  a->n_axes = -1;
  if (!a->axes_from_input) {
    a->n_axes = amd_attr_ints(p, "axes", a->axes, AMD_MAX_RANK);
    if (a->n_axes == -2) return amd_fail(st, "too many axes (at most %d)", AMD_MAX_RANK);
  }
  return 0;
}

static int sum_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  return red_parse_common(n, p, 13, st);
}
/* every reduction but ReduceSum: axes as input since 18 */
static int red18_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  return red_parse_common(n, p, 18, st);
}

static int red_dtype_ok(amd_dtype t, int kind) {
  switch (t) {
  case AMD_FLOAT: case AMD_DOUBLE: case AMD_FLOAT16: case AMD_BFLOAT16:
  case AMD_INT8: case AMD_INT16: case AMD_INT32: case AMD_INT64:
  case AMD_UINT8: case AMD_UINT16: case AMD_UINT32:
    return 1;
  case AMD_BOOL:
    return kind == RED_MAX || kind == RED_MIN;
  case AMD_UINT64: /* the int64 accumulators of the other kinds cannot hold it */
    return kind == RED_SUM || kind == RED_MEAN || kind == RED_MAX;
  default:
    return 0;
  }
}

/* Which dims are reduced (mask[d] = 1). Returns 1 when the node is a no-op
 * (empty axes with noop_with_empty_axes), 0 otherwise, -1 on error. */
int amd_red_mask(const amd_node *n, const amd_tensor *const *in, int *mask, amd_status *st) {
  const amd_red_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  int64_t axes[AMD_MAX_RANK];
  int n_axes = 0;
  if (a->axes_from_input) {
    if (n->n_in > 1 && in[1]) {
      const amd_tensor *t = in[1];
      if (t->dtype != AMD_INT64 && t->dtype != AMD_INT32)
        return amd_fail(st, "axes input has dtype %s (expected int64)", amd_dtype_name(t->dtype));
      if (t->rank > 1) return amd_fail(st, "axes input must be 1-D");
      int64_t cnt = amd_tensor_numel(t);
      if (cnt > AMD_MAX_RANK) return amd_fail(st, "too many axes (%lld)", (long long)cnt);
      for (int64_t i = 0; i < cnt; i++) axes[i] = amd_tensor_get_i64(t, i);
      n_axes = (int)cnt;
    }
  } else if (a->n_axes > 0) {
    memcpy(axes, a->axes, sizeof(int64_t) * (size_t)a->n_axes);
    n_axes = a->n_axes;
  }
  if (n_axes == 0) {
    if (a->axes_from_input && a->noop_with_empty_axes) return 1;
    for (int d = 0; d < x->rank; d++) mask[d] = 1;
    return 0;
  }
  for (int d = 0; d < x->rank; d++) mask[d] = 0;
  for (int i = 0; i < n_axes; i++) {
    int64_t ax = axes[i] < 0 ? axes[i] + x->rank : axes[i];
    if (ax < 0 || ax >= x->rank)
      return amd_fail(st, "axis %lld out of range for rank %d", (long long)axes[i], x->rank);
    if (mask[ax]) return amd_fail(st, "axis %lld repeated", (long long)axes[i]);
    mask[ax] = 1;
  }
  return 0;
}

static int red_infer_kind(int kind, const amd_node *n, const amd_tensor *const *in, amd_tensor *out,
                          amd_status *st) {
  if (n->n_in < 1 || !in[0]) return amd_fail(st, "missing input");
  const amd_tensor *x = in[0];
  if (!red_dtype_ok(x->dtype, kind)) return amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype));
  int mask[AMD_MAX_RANK];
  int r = amd_red_mask(n, in, mask, st);
  if (r < 0) return -1;
  if (r == 1) {
    amd_tensor_set_shape(&out[0], x->dtype, x->rank, x->dims);
    return 0;
  }
  const amd_red_attrs *a = n->attrs;
  int64_t dims[AMD_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < x->rank; d++) {
    if (!mask[d])
      dims[rank++] = x->dims[d];
    else if (a->keepdims)
      dims[rank++] = 1;
  }
  amd_tensor_set_shape(&out[0], x->dtype, rank, dims);
  return 0;
}

/* ---- the walk ---- */

typedef struct {
  int nd;
  int64_t dim[AMD_MAX_RANK];
  int64_t ostride[AMD_MAX_RANK]; /* 0 on reduced dims */
  int inner_reduced;
  int64_t n_in, n_out;
} red_plan;

static void red_make_plan(const amd_tensor *x, const int *mask, red_plan *p) {
  int red[AMD_MAX_RANK] = {0};
  p->nd = 0;
  p->n_in = amd_tensor_numel(x);
  for (int d = 0; d < x->rank; d++) {
    if (x->dims[d] == 1) continue;
    if (p->nd > 0 && red[p->nd - 1] == mask[d]) {
      p->dim[p->nd - 1] *= x->dims[d];
      continue;
    }
    p->dim[p->nd] = x->dims[d];
    red[p->nd] = mask[d];
    p->nd++;
  }
  int64_t s = 1;
  for (int d = p->nd - 1; d >= 0; d--) {
    p->ostride[d] = red[d] ? 0 : s;
    if (!red[d]) s *= p->dim[d];
  }
  p->n_out = s;
  p->inner_reduced = p->nd > 0 ? red[p->nd - 1] : 0;
}

/* Odometer over the outer dims; BODY sees `xi` (input row), `oi` (output
 * offset of the row's first element), `inner` (row length). */
#define RED_WALK(P, BODY)                                                     \
  do {                                                                        \
    int64_t inner = (P)->nd ? (P)->dim[(P)->nd - 1] : 1;                      \
    int64_t idx_[AMD_MAX_RANK] = {0};                                         \
    int64_t oi = 0;                                                           \
    for (int64_t xi = 0; xi < (P)->n_in; xi += inner) {                       \
      BODY;                                                                   \
      for (int d_ = (P)->nd - 2; d_ >= 0; d_--) {                             \
        oi += (P)->ostride[d_];                                               \
        if (++idx_[d_] < (P)->dim[d_]) break;                                 \
        oi -= (P)->ostride[d_] * (P)->dim[d_];                                \
        idx_[d_] = 0;                                                         \
      }                                                                       \
    }                                                                         \
  } while (0)

/* Sum kernels: acc[o] += x. */
#define RED_SUM_KERNEL(SUF, T, ACC, LOAD)                                          \
  static void red_sum_##SUF(const void *xv, ACC *acc, const red_plan *p) {         \
    const T *x = xv;                                                               \
    RED_WALK(p, {                                                                  \
      const T *row = x + xi;                                                       \
      if (p->inner_reduced) {                                                      \
        ACC s = 0;                                                                 \
        for (int64_t i = 0; i < inner; i++) s += (ACC)LOAD(row[i]);                \
        acc[oi] += s;                                                              \
      } else {                                                                     \
        ACC *o = acc + oi;                                                         \
        for (int64_t i = 0; i < inner; i++) o[i] += (ACC)LOAD(row[i]);             \
      }                                                                            \
    });                                                                            \
  }

/* Max kernels: NaN wins (once acc is NaN, `v > acc` stays false). */
#define RED_MAX_KERNEL(SUF, T, ACC, LOAD)                                          \
  static void red_max_##SUF(const void *xv, ACC *acc, const red_plan *p) {         \
    const T *x = xv;                                                               \
    RED_WALK(p, {                                                                  \
      const T *row = x + xi;                                                       \
      if (p->inner_reduced) {                                                      \
        ACC m = acc[oi];                                                           \
        for (int64_t i = 0; i < inner; i++) {                                      \
          ACC v = (ACC)LOAD(row[i]);                                               \
          if (v > m || v != v) m = v;                                              \
        }                                                                          \
        acc[oi] = m;                                                               \
      } else {                                                                     \
        ACC *o = acc + oi;                                                         \
        for (int64_t i = 0; i < inner; i++) {                                      \
          ACC v = (ACC)LOAD(row[i]);                                               \
          if (v > o[i] || v != v) o[i] = v;                                        \
        }                                                                          \
      }                                                                            \
    });                                                                            \
  }

#define LOAD_ID(v) (v)
#define LOAD_F16(v) amd_half_to_float(v)
#define LOAD_BF16(v) amd_bf16_to_float(v)

#define RED_KERNELS(SUF, T, ACC, LOAD) \
  RED_SUM_KERNEL(SUF, T, ACC, LOAD)    \
  RED_MAX_KERNEL(SUF, T, ACC, LOAD)

RED_KERNELS(f32, float, double, LOAD_ID)
RED_KERNELS(f64, double, double, LOAD_ID)
RED_KERNELS(f16, uint16_t, double, LOAD_F16)
RED_KERNELS(bf16, uint16_t, double, LOAD_BF16)
RED_KERNELS(i8, int8_t, int64_t, LOAD_ID)
RED_KERNELS(i16, int16_t, int64_t, LOAD_ID)
RED_KERNELS(i32, int32_t, int64_t, LOAD_ID)
RED_KERNELS(i64, int64_t, int64_t, LOAD_ID)
RED_KERNELS(u8, uint8_t, int64_t, LOAD_ID)
RED_KERNELS(u16, uint16_t, int64_t, LOAD_ID)
RED_KERNELS(u32, uint32_t, int64_t, LOAD_ID)
RED_KERNELS(u64, uint64_t, uint64_t, LOAD_ID)
RED_MAX_KERNEL(b8, uint8_t, int64_t, LOAD_ID)

/* ---- the other kinds: folds over a double or int64 copy of the input ----
 * FOLD(a, v) updates the accumulator a with the element v. */
#define RED_FOLD_KERNEL(NAME, T, FOLD)                                                             \
  static void NAME(const T *x, T *acc, const red_plan *p) {                                        \
    RED_WALK(p, {                                                                                  \
      const T *row = x + xi;                                                                       \
      if (p->inner_reduced) {                                                                      \
        T a_ = acc[oi];                                                                            \
        for (int64_t i = 0; i < inner; i++) FOLD(a_, row[i]);                                      \
        acc[oi] = a_;                                                                              \
      } else {                                                                                     \
        T *o = acc + oi;                                                                           \
        for (int64_t i = 0; i < inner; i++) FOLD(o[i], row[i]);                                    \
      }                                                                                            \
    });                                                                                            \
  }

#define FOLD_MIN(a, v) if ((v) < (a) || (v) != (v)) (a) = (v)
#define FOLD_MAX(a, v) if ((v) > (a) || (v) != (v)) (a) = (v)
#define FOLD_SUM(a, v) (a) += (v)
#define FOLD_PROD(a, v) (a) *= (v)
#define FOLD_ABS_D(a, v) (a) += fabs(v)
#define FOLD_ABS_I(a, v) (a) += (v) < 0 ? -(v) : (v)
#define FOLD_SQ(a, v) (a) += (v) * (v)

RED_FOLD_KERNEL(fold_min_d, double, FOLD_MIN)
RED_FOLD_KERNEL(fold_max_d, double, FOLD_MAX)
RED_FOLD_KERNEL(fold_sum_d, double, FOLD_SUM)
RED_FOLD_KERNEL(fold_prod_d, double, FOLD_PROD)
RED_FOLD_KERNEL(fold_abs_d, double, FOLD_ABS_D)
RED_FOLD_KERNEL(fold_sq_d, double, FOLD_SQ)
RED_FOLD_KERNEL(fold_min_i, int64_t, FOLD_MIN)
RED_FOLD_KERNEL(fold_prod_i, int64_t, FOLD_PROD)
RED_FOLD_KERNEL(fold_abs_i, int64_t, FOLD_ABS_I)
RED_FOLD_KERNEL(fold_sq_i, int64_t, FOLD_SQ)

/* x[i] = exp(x[i] - m[o(i)]) (LogSumExp's shifted terms; m non-finite: 0) */
static void lse_shift(double *x, const double *m, const red_plan *p) {
  RED_WALK(p, {
    double *row = x + xi;
    for (int64_t i = 0; i < inner; i++) {
      double s = m[p->inner_reduced ? oi : oi + i];
      row[i] = exp(row[i] - (isfinite(s) ? s : 0.0));
    }
  });
}

static int64_t int_max_of(amd_dtype t) {
  switch (t) {
  case AMD_INT8: return INT8_MAX;
  case AMD_INT16: return INT16_MAX;
  case AMD_INT32: return INT32_MAX;
  case AMD_INT64: return INT64_MAX;
  case AMD_UINT8: return UINT8_MAX;
  case AMD_UINT16: return UINT16_MAX;
  case AMD_UINT32: return UINT32_MAX;
  default: return 1; /* bool */
  }
}

/* Min, Prod, L1, SumSquare of integer types, in int64. */
static int red_fold_int(int kind, const amd_tensor *x, amd_tensor *o, const red_plan *p, amd_status *st) {
  int64_t n_out = amd_tensor_numel(o);
  int64_t *xi = malloc((size_t)(p->n_in ? p->n_in : 1) * sizeof *xi);
  int64_t *acc = malloc((size_t)n_out * sizeof *acc);
  if (!xi || !acc) {
    free(xi), free(acc);
    return amd_fail(st, "out of memory");
  }
  for (int64_t i = 0; i < p->n_in; i++) xi[i] = amd_tensor_get_i64(x, i);
  for (int64_t i = 0; i < n_out; i++) acc[i] = kind == RED_MIN ? int_max_of(x->dtype) : kind == RED_PROD;
  if (p->n_in > 0) {
    if (kind == RED_MIN) fold_min_i(xi, acc, p);
    else if (kind == RED_PROD) fold_prod_i(xi, acc, p);
    else if (kind == RED_L1) fold_abs_i(xi, acc, p);
    else fold_sq_i(xi, acc, p);
  }
  for (int64_t i = 0; i < n_out; i++) amd_tensor_set_i64(o, i, acc[i]);
  free(xi);
  free(acc);
  return 0;
}

/* The other kinds in double (floating types; L2, LogSum, LogSumExp of
 * integers, truncated back). */
static int red_fold_double(int kind, const amd_tensor *x, amd_tensor *o, const red_plan *p, amd_status *st) {
  int64_t n_out = amd_tensor_numel(o);
  double *xd = malloc((size_t)(p->n_in ? p->n_in : 1) * sizeof *xd);
  double *acc = malloc((size_t)n_out * sizeof *acc), *m = NULL;
  if (kind == RED_LOGSUMEXP) m = malloc((size_t)n_out * sizeof *m);
  if (!xd || !acc || (kind == RED_LOGSUMEXP && !m)) {
    free(xd), free(acc), free(m);
    return amd_fail(st, "out of memory");
  }
  if (x->dtype == AMD_FLOAT) {
    const float *xf = x->data;
    for (int64_t i = 0; i < p->n_in; i++) xd[i] = xf[i];
  } else {
    for (int64_t i = 0; i < p->n_in; i++) xd[i] = amd_tensor_get_f64(x, i);
  }
  for (int64_t i = 0; i < n_out; i++) acc[i] = kind == RED_MIN ? INFINITY : kind == RED_PROD ? 1.0 : 0.0;
  if (p->n_in > 0) {
    switch (kind) {
    case RED_MIN: fold_min_d(xd, acc, p); break;
    case RED_PROD: fold_prod_d(xd, acc, p); break;
    case RED_L1: fold_abs_d(xd, acc, p); break;
    case RED_L2: case RED_SUMSQ: fold_sq_d(xd, acc, p); break;
    case RED_LOGSUM: fold_sum_d(xd, acc, p); break;
    case RED_LOGSUMEXP:
      for (int64_t i = 0; i < n_out; i++) m[i] = -INFINITY;
      fold_max_d(xd, m, p);
      lse_shift(xd, m, p);
      fold_sum_d(xd, acc, p);
      break;
    }
  }
  for (int64_t i = 0; i < n_out; i++) {
    double v = acc[i];
    if (kind == RED_L2) v = sqrt(v);
    else if (kind == RED_LOGSUM) v = log(v);
    else if (kind == RED_LOGSUMEXP) v = isfinite(m[i]) ? log(v) + m[i] : m[i];
    if (x->dtype == AMD_FLOAT) ((float *)o->data)[i] = (float)v;
    else if (x->dtype == AMD_DOUBLE) ((double *)o->data)[i] = v;
    else if (x->dtype == AMD_FLOAT16 || x->dtype == AMD_BFLOAT16) amd_tensor_set_f64(o, i, v);
    else amd_tensor_set_i64(o, i, isfinite(v) ? (int64_t)v : (v > 0 ? INT64_MAX : INT64_MIN));
  }
  free(xd);
  free(acc);
  free(m);
  return 0;
}

/* Forward of the kinds beyond Sum, Mean and Max. */
static int red_forward_fold(int kind, const amd_node *n, const amd_tensor *const *in, amd_tensor *out,
                            amd_status *st) {
  const amd_tensor *x = in[0];
  int mask[AMD_MAX_RANK];
  int r = amd_red_mask(n, in, mask, st);
  if (r < 0) return -1;
  if (r == 1) /* noop: no dim reduced, each element alone */
    for (int d = 0; d < x->rank; d++) mask[d] = 0;
  red_plan p;
  red_make_plan(x, mask, &p);
  if (amd_tensor_numel(&out[0]) == 0) return 0;
  amd_dtype t = x->dtype;
  int is_fp = t == AMD_FLOAT || t == AMD_DOUBLE || t == AMD_FLOAT16 || t == AMD_BFLOAT16;
  if (!is_fp && (kind == RED_MIN || kind == RED_PROD || kind == RED_L1 || kind == RED_SUMSQ))
    return red_fold_int(kind, x, &out[0], &p, st);
  return red_fold_double(kind, x, &out[0], &p, st);
}

static int64_t int_min_of(amd_dtype t) {
  switch (t) {
  case AMD_INT8: return INT8_MIN;
  case AMD_INT16: return INT16_MIN;
  case AMD_INT32: return INT32_MIN;
  case AMD_INT64: return INT64_MIN;
  default: return 0; /* unsigned, bool */
  }
}

static int red_forward_kind(int kind, const amd_node *n, const amd_tensor *const *in, amd_tensor *out,
                            amd_status *st) {
  if (kind > RED_MAX) return red_forward_fold(kind, n, in, out, st);
  const amd_tensor *x = in[0];
  amd_tensor *o = &out[0];
  int mask[AMD_MAX_RANK];
  int r = amd_red_mask(n, in, mask, st);
  if (r < 0) return -1;
  if (r == 1) {
    memcpy(o->data, x->data, amd_tensor_nbytes(x));
    return 0;
  }
  red_plan p;
  red_make_plan(x, mask, &p);
  int64_t n_out = amd_tensor_numel(o);
  AMD_ASSERT(n_out == p.n_out || p.n_in == 0);
  if (n_out == 0) return 0;
  int64_t count = n_out > 0 ? (p.n_out ? p.n_in / p.n_out : 0) : 0;
  if (p.n_in == 0) { /* empty reduction over a zero-size dim */
    count = 0;
  }

  amd_dtype t = x->dtype;
  int is_fp = t == AMD_FLOAT || t == AMD_DOUBLE || t == AMD_FLOAT16 || t == AMD_BFLOAT16;
  void *acc = malloc((size_t)n_out * 8);
  if (!acc) return amd_fail(st, "out of memory");
  double *accd = acc;
  int64_t *acci = acc;
  uint64_t *accu = acc;
  for (int64_t i = 0; i < n_out; i++) {
    if (is_fp)
      accd[i] = kind == RED_MAX ? -INFINITY : 0.0;
    else
      acci[i] = kind == RED_MAX ? int_min_of(t) : 0;
  }

  if (p.n_in > 0) {
#define DISPATCH(SUF, A)                                  \
  if (kind == RED_MAX) red_max_##SUF(x->data, A, &p);     \
  else red_sum_##SUF(x->data, A, &p);                     \
  break;
    switch (t) {
    case AMD_FLOAT: DISPATCH(f32, accd)
    case AMD_DOUBLE: DISPATCH(f64, accd)
    case AMD_FLOAT16: DISPATCH(f16, accd)
    case AMD_BFLOAT16: DISPATCH(bf16, accd)
    case AMD_INT8: DISPATCH(i8, acci)
    case AMD_INT16: DISPATCH(i16, acci)
    case AMD_INT32: DISPATCH(i32, acci)
    case AMD_INT64: DISPATCH(i64, acci)
    case AMD_UINT8: DISPATCH(u8, acci)
    case AMD_UINT16: DISPATCH(u16, acci)
    case AMD_UINT32: DISPATCH(u32, acci)
    case AMD_UINT64: DISPATCH(u64, accu)
    case AMD_BOOL: red_max_b8(x->data, acci, &p); break;
    default:
      free(acc);
      return amd_fail(st, "unsupported dtype %s", amd_dtype_name(t));
    }
#undef DISPATCH
  }

  if (is_fp) {
    if (kind == RED_MEAN)
      for (int64_t i = 0; i < n_out; i++) accd[i] = count ? accd[i] / (double)count : NAN;
    if (t == AMD_FLOAT) {
      float *y = o->data;
      for (int64_t i = 0; i < n_out; i++) y[i] = (float)accd[i];
    } else if (t == AMD_DOUBLE) {
      memcpy(o->data, accd, (size_t)n_out * sizeof(double));
    } else {
      for (int64_t i = 0; i < n_out; i++) amd_tensor_set_f64(o, i, accd[i]);
    }
  } else if (t == AMD_UINT64) {
    uint64_t *y = o->data;
    for (int64_t i = 0; i < n_out; i++)
      y[i] = kind == RED_MEAN ? (count ? accu[i] / (uint64_t)count : 0) : accu[i];
  } else {
    for (int64_t i = 0; i < n_out; i++) {
      int64_t v = acci[i];
      if (kind == RED_MEAN) v = count ? v / count : 0;
      amd_tensor_set_i64(o, i, v);
    }
  }
  free(acc);
  return 0;
}

#define RED_OP(FN, KIND)                                                                          \
  static int FN##_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out,           \
                        amd_status *st) {                                                         \
    return red_infer_kind(KIND, n, in, out, st);                                                  \
  }                                                                                               \
  static int FN##_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,            \
                          amd_tensor *out, amd_status *st) {                                      \
    (void)ctx;                                                                                    \
    return red_forward_kind(KIND, n, in, out, st);                                                \
  }

RED_OP(sum, RED_SUM)
RED_OP(mean, RED_MEAN)
RED_OP(max, RED_MAX)
RED_OP(min, RED_MIN)
RED_OP(prod, RED_PROD)
RED_OP(l1, RED_L1)
RED_OP(l2, RED_L2)
RED_OP(logsum, RED_LOGSUM)
RED_OP(logsumexp, RED_LOGSUMEXP)
RED_OP(sumsq, RED_SUMSQ)

/* ---- backward (float, double; ACCUMULATES += into din[0]; the formulas in
 * the header). aux (Prod only): per output, the count of zeros and the
 * product of the other elements. ---- */

/* d(kind's y)/dx times g at one element v (not Sum, Mean, Max, Min, Prod). */
static double red_dx(int kind, double v, double y, double g) {
  switch (kind) {
  case RED_L1: return v > 0 ? g : v < 0 ? -g : 0.0;
  case RED_L2: return y != 0 ? g * v / y : 0.0;
  case RED_SUMSQ: return 2.0 * g * v;
  case RED_LOGSUM: return g / exp(y);
  default: return g * exp(v - y); /* RED_LOGSUMEXP */
  }
}

#define RED_BWD_KERNEL(SUF, T)                                                                   \
  static void red_bwd_##SUF(int kind, const T *x, const T *y, const T *g, T *dx, double scale,   \
                            unsigned char *done, const double *aux, const red_plan *p) {         \
    RED_WALK(p, {                                                                                \
      const T *row = x + xi;                                                                     \
      T *drow = dx + xi;                                                                         \
      if (kind == RED_SUM || kind == RED_MEAN) {                                                 \
        if (p->inner_reduced) {                                                                  \
          T v = (T)(g[oi] * scale);                                                              \
          for (int64_t i = 0; i < inner; i++) drow[i] += v;                                      \
        } else {                                                                                 \
          for (int64_t i = 0; i < inner; i++) drow[i] += (T)(g[oi + i] * scale);                 \
        }                                                                                        \
      } else if (kind == RED_MAX || kind == RED_MIN) {                                           \
        for (int64_t i = 0; i < inner; i++) {                                                    \
          int64_t o = p->inner_reduced ? oi : oi + i;                                            \
          if (!done[o] && (row[i] == y[o] || (row[i] != row[i] && y[o] != y[o]))) {              \
            drow[i] += g[o];                                                                     \
            done[o] = 1;                                                                         \
          }                                                                                      \
        }                                                                                        \
      } else if (kind == RED_PROD) {                                                             \
        for (int64_t i = 0; i < inner; i++) {                                                    \
          int64_t o = p->inner_reduced ? oi : oi + i;                                            \
          double zc = aux[2 * o];                                                                \
          double pnz = aux[2 * o + 1];                                                           \
          if (zc == 0) drow[i] += (T)(g[o] * (pnz / row[i]));                                    \
          else if (zc == 1 && row[i] == 0) drow[i] += (T)(g[o] * pnz);                           \
        }                                                                                        \
      } else {                                                                                   \
        for (int64_t i = 0; i < inner; i++) {                                                    \
          int64_t o = p->inner_reduced ? oi : oi + i;                                            \
          drow[i] += (T)red_dx(kind, row[i], y[o], g[o]);                                        \
        }                                                                                        \
      }                                                                                          \
    });                                                                                          \
  }

/* Prod's aux: aux[2o] = zeros in the group, aux[2o + 1] = product of the nonzero ones. */
#define RED_PROD_AUX(SUF, T)                                                                     \
  static void red_prod_aux_##SUF(const T *x, double *aux, const red_plan *p) {                   \
    RED_WALK(p, {                                                                                \
      const T *row = x + xi;                                                                     \
      for (int64_t i = 0; i < inner; i++) {                                                      \
        int64_t o = p->inner_reduced ? oi : oi + i;                                              \
        if (row[i] == 0) aux[2 * o] += 1;                                                        \
        else aux[2 * o + 1] *= row[i];                                                           \
      }                                                                                          \
    });                                                                                          \
  }

RED_BWD_KERNEL(f32, float)
RED_BWD_KERNEL(f64, double)
RED_PROD_AUX(f32, float)
RED_PROD_AUX(f64, double)

static int red_backward_kind(int kind, const amd_node *n, const amd_tensor *const *in, const amd_tensor *out,
                             const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  if (!dout[0] || !din[0]) return 0;
  const amd_tensor *x = in[0];
  amd_tensor *dx = din[0];
  amd_dtype t = x->dtype;
  if (t != AMD_FLOAT && t != AMD_DOUBLE)
    return amd_fail(st, "backward supports float and double only (got %s)", amd_dtype_name(t));
  int mask[AMD_MAX_RANK];
  int r = amd_red_mask(n, in, mask, st);
  if (r < 0) return -1;
  if (r == 1) /* noop: no dim reduced (for Sum, Mean, Max and Min a pass-through) */
    for (int d = 0; d < x->rank; d++) mask[d] = 0;
  int64_t n_in = amd_tensor_numel(x);
  if (n_in == 0) return 0;
  red_plan p;
  red_make_plan(x, mask, &p);
  double scale = kind == RED_MEAN ? (double)p.n_out / (double)n_in : 1.0;
  unsigned char *done = NULL;
  double *aux = NULL;
  if (kind == RED_MAX || kind == RED_MIN) {
    done = calloc((size_t)p.n_out, 1);
    if (!done) return amd_fail(st, "out of memory");
  }
  if (kind == RED_PROD) {
    aux = malloc((size_t)p.n_out * 2 * sizeof *aux);
    if (!aux) return amd_fail(st, "out of memory");
    for (int64_t o = 0; o < p.n_out; o++) aux[2 * o] = 0, aux[2 * o + 1] = 1;
    if (t == AMD_FLOAT) red_prod_aux_f32(x->data, aux, &p);
    else red_prod_aux_f64(x->data, aux, &p);
  }
  if (t == AMD_FLOAT)
    red_bwd_f32(kind, x->data, out[0].data, dout[0]->data, dx->data, scale, done, aux, &p);
  else
    red_bwd_f64(kind, x->data, out[0].data, dout[0]->data, dx->data, scale, done, aux, &p);
  free(done);
  free(aux);
  return 0;
}

#define RED_BWD(FN, KIND)                                                                         \
  static int FN##_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,           \
                           const amd_tensor *out, const amd_tensor *const *dout,                  \
                           amd_tensor *const *din, amd_status *st) {                              \
    (void)ctx;                                                                                    \
    return red_backward_kind(KIND, n, in, out, dout, din, st);                                    \
  }

RED_BWD(sum, RED_SUM)
RED_BWD(mean, RED_MEAN)
RED_BWD(max, RED_MAX)
RED_BWD(min, RED_MIN)
RED_BWD(prod, RED_PROD)
RED_BWD(l1, RED_L1)
RED_BWD(l2, RED_L2)
RED_BWD(logsum, RED_LOGSUM)
RED_BWD(logsumexp, RED_LOGSUMEXP)
RED_BWD(sumsq, RED_SUMSQ)

const amd_op amd_op_ReduceMean = {.name = "ReduceMean",
                                  .idx = AMD_OP_IDX_ReduceMean,
                                  .since = {1, 11, 13, 18},
                                  .parse = red18_parse,
                                  .infer = mean_infer,
                                  .forward = mean_forward,
                                  .backward = mean_backward,
                                  .nondiff_inputs = 1u << 1};
const amd_op amd_op_ReduceSum = {.name = "ReduceSum",
                                 .idx = AMD_OP_IDX_ReduceSum,
                                 .since = {1, 11, 13},
                                 .parse = sum_parse,
                                 .infer = sum_infer,
                                 .forward = sum_forward,
                                 .backward = sum_backward,
                                 .nondiff_inputs = 1u << 1};
const amd_op amd_op_ReduceMax = {.name = "ReduceMax",
                                 .idx = AMD_OP_IDX_ReduceMax,
                                 .since = {1, 11, 12, 13, 18, 20},
                                 .parse = red18_parse,
                                 .infer = max_infer,
                                 .forward = max_forward,
                                 .backward = max_backward,
                                 .nondiff_inputs = 1u << 1};

#define RED_DESC(NAME, FN, ...)                                                                   \
  const amd_op amd_op_##NAME = {.name = #NAME,                                                    \
                                .idx = AMD_OP_IDX_##NAME,                                         \
                                .since = {__VA_ARGS__},                                           \
                                .parse = red18_parse,                                             \
                                .infer = FN##_infer,                                              \
                                .forward = FN##_forward,                                          \
                                .backward = FN##_backward,                                        \
                                .nondiff_inputs = 1u << 1};

RED_DESC(ReduceMin, min, 1, 11, 12, 13, 18, 20)
RED_DESC(ReduceProd, prod, 1, 11, 13, 18)
RED_DESC(ReduceL1, l1, 1, 11, 13, 18)
RED_DESC(ReduceL2, l2, 1, 11, 13, 18)
RED_DESC(ReduceLogSum, logsum, 1, 11, 13, 18)
RED_DESC(ReduceLogSumExp, logsumexp, 1, 11, 13, 18)
RED_DESC(ReduceSumSquare, sumsq, 1, 11, 13, 18)
