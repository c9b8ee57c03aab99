/* More elementwise activations and unary math on the CPU (activation.c has
 * the first ones): Elu, Selu, Celu, Softplus, Softsign, ThresholdedRelu,
 * Mish, Shrink, Ceil, Floor, Round, Sign, Sin, Cos, Tan, Asin, Acos, Atan,
 * Sinh, Cosh, Asinh, Acosh, Atanh; and the tests IsNaN and IsInf (bool
 * outputs).
 *
 * Y has X's shape and dtype (IsNaN / IsInf: bool), element by element:
 *   Elu (alpha 1)           x < 0 ? alpha (e^x - 1) : x
 *   Selu (alpha 1.6733, gamma 1.0507)  x > 0 ? gamma x : gamma alpha (e^x - 1)
 *   Celu (alpha 1, not 0)   max(0, x) + min(0, alpha (e^(x/alpha) - 1)),
 *                           which is x < 0 ? alpha (e^(x/alpha) - 1) : x
 *   Softplus                ln(1 + e^x) (as x + ln(1 + e^-x) for x > 0)
 *   Softsign                x / (1 + |x|)
 *   ThresholdedRelu (alpha 1)  x > alpha ? x : 0
 *   Mish                    x tanh(softplus(x))
 *   Shrink (lambd 0.5, bias 0)  x < -lambd ? x + bias : x > lambd ? x - bias : 0
 *   Ceil, Floor; Round (halves to the even neighbour); Sign (-1, 0, 1; NaN stays)
 *   Sin ... Atanh           the libm functions
 *   IsNaN                   x != x;  IsInf: +inf (detect_positive, default 1)
 *                           or -inf (detect_negative, default 1)
 * Float and double are computed in their own precision (the libm float
 * functions for float); float16 and bfloat16 (forward only) in float. Sign
 * and Shrink also take every integer type (Shrink computed in double and
 * converted back).
 *
 * Versions: Elu and Selu 1 (whose consumed_inputs is ignored) and 6, Celu
 * 12, Softplus and Softsign 1, ThresholdedRelu 10, Mish 18, Shrink 9, Ceil
 * and Floor 1 and 6, Round 11, Sign 9, Sin ... Atan 7, Sinh ... Atanh 9,
 * IsNaN 9, IsInf 10. The newer versions only add types (bfloat16, float8,
 * double for Celu): src/onnx/opset.c's equivalents bind them to these.
 *
 * Backward (float and double): dX[i] += dY[i] f'(x[i]), from X alone (the
 * output is not read, bwd_unread_out):
 *   Elu x < 0 ? alpha e^x : 1     Selu x > 0 ? gamma : gamma alpha e^x
 *   Celu x < 0 ? e^(x/alpha) : 1  Softplus sigmoid(x)
 *   Softsign 1 / (1 + |x|)^2      ThresholdedRelu x > alpha ? 1 : 0
 *   Mish t + x sigmoid(x) (1 - t^2) with t = tanh(softplus(x))
 *   Shrink |x| > lambd ? 1 : 0 (x < -lambd or x > lambd)
 *   Sin cos x, Cos -sin x, Tan 1 + tan^2 x, Asin 1/sqrt(1 - x^2),
 *   Acos -1/sqrt(1 - x^2), Atan 1/(1 + x^2), Sinh cosh x, Cosh sinh x,
 *   Asinh 1/sqrt(x^2 + 1), Acosh 1/sqrt(x^2 - 1), Atanh 1/(1 - x^2).
 * Ceil, Floor, Round and Sign are piecewise constant: their gradient is 0
 * (nothing is added), so training passes through them without error. At the
 * kinks the side the forward's comparison picks gives the derivative (Elu
 * and Celu at 0: 1; ThresholdedRelu at alpha: 0; Shrink at +-lambd: 0).
 * IsNaN and IsInf have no backward (X gets no gradient through a bool). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../core/omp.h"
#include "attrs.h"

/* The kinds, in the order of op_list.h (Elu ... Atanh stand together there). */
/* clang-format off */
enum {
  UN_ELU, UN_SELU, UN_CELU, UN_SOFTPLUS, UN_SOFTSIGN, UN_THRELU, UN_MISH, UN_SHRINK,
  UN_CEIL, UN_FLOOR, UN_ROUND, UN_SIGN, UN_SIN, UN_COS, UN_TAN, UN_ASIN, UN_ACOS, UN_ATAN,
  UN_SINH, UN_COSH, UN_ASINH, UN_ACOSH, UN_ATANH, UN_COUNT
};
/* clang-format on */
_Static_assert(AMD_OP_IDX_Atanh - AMD_OP_IDX_Elu == UN_ATANH, "op_list.h: Elu ... Atanh must stand together");

static int un_kind(const amd_node *n) { return n->op->idx - AMD_OP_IDX_Elu; }

/* The libm function of each precision: M_f(exp) is expf, M_d(exp) is exp. */
#define M_f(fn) fn##f
#define M_d(fn) fn

/* y = f(v) and f'(v) for kind k with the parameters p0, p1 (see un_params),
 * in T's precision. */
#define UN_EVAL(T, M)                                                                                        \
  static inline T un_sigmoid_##T(T v) {                                                                      \
    if (v >= 0) return 1 / (1 + M(exp)(-v));                                                                 \
    T e = M(exp)(v);                                                                                         \
    return e / (1 + e);                                                                                      \
  }                                                                                                          \
  static inline T un_softplus_##T(T v) { return v > 0 ? v + M(log1p)(M(exp)(-v)) : M(log1p)(M(exp)(v)); }    \
  static inline T un_round_##T(T v) {                                                                        \
    T r = M(round)(v);                                                                                       \
    if (M(fabs)(v - M(trunc)(v)) == (T)0.5) r = 2 * M(round)(v / 2);                                         \
    return r;                                                                                                \
  }                                                                                                          \
  static inline T un_f_##T(int k, T v, T p0, T p1) {                                                         \
    switch (k) {                                                                                             \
    case UN_ELU:                                                                                             \
      return v < 0 ? p0 * M(expm1)(v) : v;                                                                   \
    case UN_SELU:                                                                                            \
      return v > 0 ? p1 * v : p1 * p0 * M(expm1)(v);                                                         \
    case UN_CELU:                                                                                            \
      return v < 0 ? p0 * M(expm1)(v / p0) : v;                                                              \
    case UN_SOFTPLUS:                                                                                        \
      return un_softplus_##T(v);                                                                             \
    case UN_SOFTSIGN:                                                                                        \
      return v / (1 + M(fabs)(v));                                                                           \
    case UN_THRELU:                                                                                          \
      return v > p0 ? v : 0;                                                                                 \
    case UN_MISH:                                                                                            \
      return v * M(tanh)(un_softplus_##T(v));                                                                \
    case UN_SHRINK:                                                                                          \
      return v < -p0 ? v + p1 : v > p0 ? v - p1 : 0;                                                         \
    case UN_CEIL:                                                                                            \
      return M(ceil)(v);                                                                                     \
    case UN_FLOOR:                                                                                           \
      return M(floor)(v);                                                                                    \
    case UN_ROUND:                                                                                           \
      return un_round_##T(v);                                                                                \
    case UN_SIGN:                                                                                            \
      return v > 0 ? 1 : v < 0 ? -1 : v == 0 ? 0 : v;                                                        \
    case UN_SIN:                                                                                             \
      return M(sin)(v);                                                                                      \
    case UN_COS:                                                                                             \
      return M(cos)(v);                                                                                      \
    case UN_TAN:                                                                                             \
      return M(tan)(v);                                                                                      \
    case UN_ASIN:                                                                                            \
      return M(asin)(v);                                                                                     \
    case UN_ACOS:                                                                                            \
      return M(acos)(v);                                                                                     \
    case UN_ATAN:                                                                                            \
      return M(atan)(v);                                                                                     \
    case UN_SINH:                                                                                            \
      return M(sinh)(v);                                                                                     \
    case UN_COSH:                                                                                            \
      return M(cosh)(v);                                                                                     \
    case UN_ASINH:                                                                                           \
      return M(asinh)(v);                                                                                    \
    case UN_ACOSH:                                                                                           \
      return M(acosh)(v);                                                                                    \
    default:                                                                                                 \
      return M(atanh)(v);                                                                                    \
    }                                                                                                        \
  }                                                                                                          \
  static inline T un_df_##T(int k, T v, T p0, T p1) {                                                        \
    switch (k) {                                                                                             \
    case UN_ELU:                                                                                             \
      return v < 0 ? p0 * M(exp)(v) : 1;                                                                     \
    case UN_SELU:                                                                                            \
      return v > 0 ? p1 : p1 * p0 * M(exp)(v);                                                               \
    case UN_CELU:                                                                                            \
      return v < 0 ? M(exp)(v / p0) : 1;                                                                     \
    case UN_SOFTPLUS:                                                                                        \
      return un_sigmoid_##T(v);                                                                              \
    case UN_SOFTSIGN:                                                                                        \
      return 1 / ((1 + M(fabs)(v)) * (1 + M(fabs)(v)));                                                      \
    case UN_THRELU:                                                                                          \
      return v > p0 ? 1 : 0;                                                                                 \
    case UN_MISH: {                                                                                          \
      T t = M(tanh)(un_softplus_##T(v));                                                                     \
      return t + v * un_sigmoid_##T(v) * (1 - t * t);                                                        \
    }                                                                                                        \
    case UN_SHRINK:                                                                                          \
      return v < -p0 || v > p0 ? 1 : 0;                                                                      \
    case UN_SIN:                                                                                             \
      return M(cos)(v);                                                                                      \
    case UN_COS:                                                                                             \
      return -M(sin)(v);                                                                                     \
    case UN_TAN: {                                                                                           \
      T t = M(tan)(v);                                                                                       \
      return 1 + t * t;                                                                                      \
    }                                                                                                        \
    case UN_ASIN:                                                                                            \
      return 1 / M(sqrt)(1 - v * v);                                                                         \
    case UN_ACOS:                                                                                            \
      return -1 / M(sqrt)(1 - v * v);                                                                        \
    case UN_ATAN:                                                                                            \
      return 1 / (1 + v * v);                                                                                \
    case UN_SINH:                                                                                            \
      return M(cosh)(v);                                                                                     \
    case UN_COSH:                                                                                            \
      return M(sinh)(v);                                                                                     \
    case UN_ASINH:                                                                                           \
      return 1 / M(sqrt)(v * v + 1);                                                                         \
    case UN_ACOSH:                                                                                           \
      return 1 / M(sqrt)(v * v - 1);                                                                         \
    case UN_ATANH:                                                                                           \
      return 1 / (1 - v * v);                                                                                \
    default:                                                                                                 \
      return 0; /* Ceil, Floor, Round, Sign */                                                               \
    }                                                                                                        \
  }

UN_EVAL(float, M_f)
UN_EVAL(double, M_d)

/* p0, p1 of kind k: Elu, Celu, ThresholdedRelu alpha; Selu alpha, gamma; Shrink lambd, bias. */
static void un_params(const amd_node *n, int k, double *p0, double *p1) {
  const amd_unary_attrs *a = n->attrs;
  *p0 = *p1 = 0;
  if (!a) return;
  if (k == UN_SHRINK) {
    *p0 = a->lambd, *p1 = a->bias;
  } else {
    *p0 = a->alpha, *p1 = a->gamma;
  }
}

static int un_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_unary_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  const int idx = n->op->idx;
  a->alpha = amd_attr_float(p, "alpha", idx == AMD_OP_IDX_Selu ? 1.67326319217681884765625f : 1.0f);
  a->gamma = amd_attr_float(p, "gamma", 1.05070102214813232421875f);
  a->lambd = amd_attr_float(p, "lambd", 0.5f);
  a->bias = amd_attr_float(p, "bias", 0.0f);
  int64_t pos = amd_attr_int(p, "detect_positive", 1), neg = amd_attr_int(p, "detect_negative", 1);
  if (idx == AMD_OP_IDX_Celu && a->alpha == 0) return amd_fail(st, "Celu's alpha must not be 0");
  if (!isfinite(a->alpha) || !isfinite(a->gamma) || !isfinite(a->lambd) || !isfinite(a->bias))
    return amd_fail(st, "%s: attributes must be finite", n->op->name);
  if ((pos != 0 && pos != 1) || (neg != 0 && neg != 1))
    return amd_fail(st, "IsInf: detect_positive and detect_negative must be 0 or 1 (got %lld, %lld)",
                    (long long)pos, (long long)neg);
  a->detect_pos = (int)pos;
  a->detect_neg = (int)neg;
  return 0;
}

static int is_int_dtype(amd_dtype t) {
  switch (t) {
  case AMD_INT8:
  case AMD_INT16:
  case AMD_INT32:
  case AMD_INT64:
  case AMD_UINT8:
  case AMD_UINT16:
  case AMD_UINT32:
  case AMD_UINT64:
    return 1;
  default:
    return 0;
  }
}
static int is_flt_dtype(amd_dtype t) {
  return t == AMD_FLOAT || t == AMD_DOUBLE || t == AMD_FLOAT16 || t == AMD_BFLOAT16;
}

static int un_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in != 1 || !in[0]) return amd_fail(st, "%s takes one input X", n->op->name);
  if (n->n_out != 1) return amd_fail(st, "expected 1 output, got %d", n->n_out);
  const amd_tensor *x = in[0];
  const int k = un_kind(n), ints = k == UN_SIGN || k == UN_SHRINK;
  if (!is_flt_dtype(x->dtype) && !(ints && is_int_dtype(x->dtype)))
    return amd_fail(st, "X has dtype %s (supported: float, double, float16, bfloat16%s)",
                    amd_dtype_name(x->dtype), ints ? ", int8..int64, uint8..uint64" : "");
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, x->dims);
  return 0;
}

static int un_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                      amd_status *st) {
  (void)ctx, (void)st;
  const amd_tensor *x = in[0];
  amd_tensor *y = &out[0];
  const int k = un_kind(n);
  double p0, p1;
  un_params(n, k, &p0, &p1);
  const int64_t nel = amd_tensor_numel(x);
  if (x->dtype == AMD_FLOAT) {
    const float *xs = x->data, f0 = (float)p0, f1 = (float)p1;
    float *ys = y->data;
    AMD_PARALLEL_FOR(nel)
    for (int64_t i = 0; i < nel; i++) ys[i] = un_f_float(k, xs[i], f0, f1);
  } else if (x->dtype == AMD_DOUBLE) {
    const double *xs = x->data;
    double *ys = y->data;
    AMD_PARALLEL_FOR(nel)
    for (int64_t i = 0; i < nel; i++) ys[i] = un_f_double(k, xs[i], p0, p1);
  } else if (is_flt_dtype(x->dtype)) { /* float16, bfloat16: in float */
    for (int64_t i = 0; i < nel; i++)
      amd_tensor_set_f64(y, i, un_f_float(k, (float)amd_tensor_get_f64(x, i), (float)p0, (float)p1));
  } else if (k == UN_SIGN) {
    for (int64_t i = 0; i < nel; i++) {
      int64_t v = amd_tensor_get_i64(x, i);
      if (x->dtype == AMD_UINT64) v = v != 0;
      amd_tensor_set_i64(y, i, v > 0 ? 1 : v < 0 ? -1 : 0);
    }
  } else { /* Shrink on integers, in double (uint64 beyond 2^53 rounds) */
    for (int64_t i = 0; i < nel; i++) {
      double v = amd_tensor_get_f64(x, i), r = v < -p0 ? v + p1 : v > p0 ? v - p1 : 0;
      amd_tensor_set_i64(y, i, (int64_t)r);
    }
  }
  return 0;
}

static int un_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                       const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  const amd_tensor *x = in[0], *dy = dout[0];
  amd_tensor *dx = din[0];
  if (!dy || !dx) return 0;
  if (x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE)
    return amd_fail(st, "%s: no gradient for dtype %s", n->op->name, amd_dtype_name(x->dtype));
  const int k = un_kind(n);
  if (k == UN_CEIL || k == UN_FLOOR || k == UN_ROUND || k == UN_SIGN) return 0; /* zero gradient */
  double p0, p1;
  un_params(n, k, &p0, &p1);
  const int64_t nel = amd_tensor_numel(x);
  if (x->dtype == AMD_FLOAT) {
    const float *xs = x->data, *g = dy->data, f0 = (float)p0, f1 = (float)p1;
    float *d = dx->data;
    AMD_PARALLEL_FOR(nel)
    for (int64_t i = 0; i < nel; i++) d[i] += g[i] * un_df_float(k, xs[i], f0, f1);
  } else {
    const double *xs = x->data, *g = dy->data;
    double *d = dx->data;
    AMD_PARALLEL_FOR(nel)
    for (int64_t i = 0; i < nel; i++) d[i] += g[i] * un_df_double(k, xs[i], p0, p1);
  }
  return 0;
}

#define UN_OP(NAME, ...)                                                                                     \
  const amd_op amd_op_##NAME = {.name = #NAME,                                                               \
                                .idx = AMD_OP_IDX_##NAME,                                                    \
                                .since = {__VA_ARGS__},                                                      \
                                .parse = un_parse,                                                           \
                                .infer = un_infer,                                                           \
                                .forward = un_forward,                                                       \
                                .backward = un_backward,                                                     \
                                .bwd_unread_out = 1}

UN_OP(Elu, 1, 6);
UN_OP(Selu, 1, 6);
UN_OP(Celu, 12);
UN_OP(Softplus, 1);
UN_OP(Softsign, 1);
UN_OP(ThresholdedRelu, 10);
UN_OP(Mish, 18);
UN_OP(Shrink, 9);
UN_OP(Ceil, 1, 6);
UN_OP(Floor, 1, 6);
UN_OP(Round, 11);
UN_OP(Sign, 9);
UN_OP(Sin, 7);
UN_OP(Cos, 7);
UN_OP(Tan, 7);
UN_OP(Asin, 7);
UN_OP(Acos, 7);
UN_OP(Atan, 7);
UN_OP(Sinh, 9);
UN_OP(Cosh, 9);
UN_OP(Asinh, 9);
UN_OP(Acosh, 9);
UN_OP(Atanh, 9);

/* ---------------------------------------------------------------- IsNaN, IsInf */

static int test_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in != 1 || !in[0]) return amd_fail(st, "%s takes one input X", n->op->name);
  if (n->n_out != 1) return amd_fail(st, "expected 1 output, got %d", n->n_out);
  if (!is_flt_dtype(in[0]->dtype))
    return amd_fail(st, "X has dtype %s (supported: float, double, float16, bfloat16)",
                    amd_dtype_name(in[0]->dtype));
  amd_tensor_set_shape(&out[0], AMD_BOOL, in[0]->rank, in[0]->dims);
  return 0;
}

static int test_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  (void)ctx, (void)st;
  const amd_tensor *x = in[0];
  uint8_t *y = out[0].data;
  const int64_t nel = amd_tensor_numel(x);
  const int nan = n->op->idx == AMD_OP_IDX_IsNaN;
  const amd_unary_attrs *a = n->attrs;
  for (int64_t i = 0; i < nel; i++) {
    double v = amd_tensor_get_f64(x, i); /* exact for every float dtype, NaN and inf kept */
    y[i] = nan ? v != v : (v == INFINITY && a->detect_pos) || (v == -INFINITY && a->detect_neg);
  }
  return 0;
}

const amd_op amd_op_IsNaN = {.name = "IsNaN",
                             .idx = AMD_OP_IDX_IsNaN,
                             .since = {9},
                             .parse = un_parse,
                             .infer = test_infer,
                             .forward = test_forward,
                             .nondiff_inputs = 1};
const amd_op amd_op_IsInf = {.name = "IsInf",
                             .idx = AMD_OP_IDX_IsInf,
                             .since = {10},
                             .parse = un_parse,
                             .infer = test_infer,
                             .forward = test_forward,
                             .nondiff_inputs = 1};
