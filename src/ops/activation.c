/* Elementwise activations and unary math on the CPU: Relu, LeakyRelu, PRelu,
 * Sigmoid, HardSigmoid, HardSwish, Gelu, Erf, Tanh, Clip, Exp, Log, Sqrt,
 * Neg, Abs, Reciprocal.
 *
 * Every op maps X to Y of the same shape and dtype, element by element, on
 * contiguous tensors. Float and double are computed in their own precision
 * (float with the libm float functions). Integer dtypes are accepted where the
 * ONNX type constraints allow them and the op is exact on integers: Relu and
 * Neg (signed), Abs and Clip (signed and unsigned). Neg and Abs of the most
 * negative integer wrap, as two's complement does.
 *
 * PRelu's slope broadcasts unidirectionally to X (numpy rules, Y has X's
 * shape). Clip reads min/max from attributes before opset 11 and from the
 * optional scalar inputs 1 and 2 from opset 11 on; a missing bound is the
 * dtype's extreme. When min > max every element becomes max (ONNX rule:
 * y = min(max(x, min), max)). NaN passes through Relu and Clip.
 *
 * Backward (float and double only): dX[i] += dY[i] * f'(x[i]), ACCUMULATING
 * into the gradient buffers the autograd engine zeroed. At kinks the
 * derivative is taken from the side the forward's comparison picks: Relu and
 * Abs give 0 at x = 0, LeakyRelu/PRelu use the x >= 0 branch (slope 1), Clip
 * passes the gradient only where min < x < max. HardSigmoid,
 * max(0, min(1, alpha x + beta)), passes alpha * dY where 0 < alpha x + beta
 * < 1; HardSwish, x * HardSigmoid(x) with alpha 1/6 and beta 1/2, has the
 * gradient 2 alpha x + beta where 0 <= alpha x + beta <= 1 (PyTorch's
 * -3 <= x <= 3), 1 above and 0 below. Sigmoid, Tanh, Exp, Sqrt and
 * Reciprocal use the forward output Y. PRelu's slope gradient is reduced over
 * the axes the slope broadcasts along (in double). Clip's min/max inputs get
 * no gradient. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/omp.h"
#include "attrs.h"

#define BIT(t) (1u << (t))
#define M_FLT (BIT(AMD_FLOAT) | BIT(AMD_DOUBLE))
#define M_SINT (BIT(AMD_INT8) | BIT(AMD_INT16) | BIT(AMD_INT32) | BIT(AMD_INT64))
#define M_UINT (BIT(AMD_UINT8) | BIT(AMD_UINT16) | BIT(AMD_UINT32) | BIT(AMD_UINT64))



static int unary_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out,
                       unsigned mask, const char *types, amd_status *st) {
  if (n->n_in < 1 || !in[0]) return amd_fail(st, "input X is required");
  const amd_tensor *x = in[0];
  if ((unsigned)x->dtype >= 32 || !(mask & BIT(x->dtype)))
    return amd_fail(st, "X has dtype %s (supported: %s)", amd_dtype_name(x->dtype), types);
  if (n->n_out != 1) return amd_fail(st, "expected 1 output, got %d", n->n_out);
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, x->dims);
  return 0;
}

#define UNARY_INFER(NAME, MASK, TYPES)                                                          \
  static int NAME(const amd_node *n, const amd_tensor *const *in, amd_tensor *out,              \
                  amd_status *st) {                                                             \
    return unary_infer(n, in, out, MASK, TYPES, st);                                            \
  }

/* y[i] = EXPR(v) with v = x[i], over the whole tensor. */
#define MAP(T, EXPR)                                                                                         \
  do {                                                                                                       \
    const T *xs_ = (const T *)x->data;                                                                       \
    T *ys_ = (T *)y->data;                                                                                   \
    AMD_PARALLEL_FOR(nel)                                                                                    \
    for (int64_t i_ = 0; i_ < nel; i_++) {                                                                   \
      T v = xs_[i_];                                                                                         \
      ys_[i_] = (T)(EXPR);                                                                                   \
    }                                                                                                        \
  } while (0)

#define CASE_MAP(DT, T, EXPR)                                                                   \
  case DT:                                                                                      \
    MAP(T, EXPR);                                                                               \
    break;

#define FWD_ARGS                                                                                \
  const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out, amd_status *st

/* Unused-argument silencing and the names MAP uses. */
#define FWD_SETUP                                                                               \
  (void)n;                                                                                      \
  (void)ctx;                                                                                    \
  const amd_tensor *x = in[0];                                                                  \
  amd_tensor *y = &out[0];                                                                      \
  int64_t nel = amd_tensor_numel(x)

static int bad_dtype(const amd_tensor *x, amd_status *st) {
  return amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype));
}

/* Float-only unary ops: EF on float v, ED on double v. */
#define FLOAT_UNARY(NAME, EF, ED)                                                               \
  UNARY_INFER(NAME##_infer, M_FLT, "float, double")                                            \
  static int NAME##_forward(FWD_ARGS) {                                                         \
    FWD_SETUP;                                                                                  \
    switch (x->dtype) {                                                                         \
      CASE_MAP(AMD_FLOAT, float, EF)                                                            \
      CASE_MAP(AMD_DOUBLE, double, ED)                                                          \
    default: return bad_dtype(x, st);                                                           \
    }                                                                                           \
    return 0;                                                                                   \
  }

static inline float sigmoid_f(float v) {
  if (v >= 0) return 1.0f / (1.0f + expf(-v));
  float e = expf(v);
  return e / (1.0f + e);
}
static inline double sigmoid_d(double v) {
  if (v >= 0) return 1.0 / (1.0 + exp(-v));
  double e = exp(v);
  return e / (1.0 + e);
}

FLOAT_UNARY(sigmoid, sigmoid_f(v), sigmoid_d(v))
FLOAT_UNARY(erf, erff(v), erf(v))
FLOAT_UNARY(tanh, tanhf(v), tanh(v))
FLOAT_UNARY(exp, expf(v), exp(v))
FLOAT_UNARY(log, logf(v), log(v))
FLOAT_UNARY(sqrt, sqrtf(v), sqrt(v))
FLOAT_UNARY(reciprocal, 1.0f / v, 1.0 / v)

/* ---- Relu, Neg, Abs: also integers ---- */

UNARY_INFER(relu_infer, M_FLT | M_SINT, "float, double, int8, int16, int32, int64")
static int relu_forward(FWD_ARGS) {
  FWD_SETUP;
  switch (x->dtype) {
  CASE_MAP(AMD_FLOAT, float, amd_relu_f(v))
  CASE_MAP(AMD_DOUBLE, double, v < 0 ? 0.0 : v)
  CASE_MAP(AMD_INT8, int8_t, v < 0 ? 0 : v)
  CASE_MAP(AMD_INT16, int16_t, v < 0 ? 0 : v)
  CASE_MAP(AMD_INT32, int32_t, v < 0 ? 0 : v)
  CASE_MAP(AMD_INT64, int64_t, v < 0 ? 0 : v)
  default: return bad_dtype(x, st);
  }
  return 0;
}

/* Integer negation through uint64 so that the most negative value wraps instead
 * of overflowing. */
#define INEG(v) (0u - (uint64_t)(int64_t)(v))

UNARY_INFER(neg_infer, M_FLT | M_SINT, "float, double, int8, int16, int32, int64")
static int neg_forward(FWD_ARGS) {
  FWD_SETUP;
  switch (x->dtype) {
  CASE_MAP(AMD_FLOAT, float, -v)
  CASE_MAP(AMD_DOUBLE, double, -v)
  CASE_MAP(AMD_INT8, int8_t, INEG(v))
  CASE_MAP(AMD_INT16, int16_t, INEG(v))
  CASE_MAP(AMD_INT32, int32_t, INEG(v))
  CASE_MAP(AMD_INT64, int64_t, INEG(v))
  default: return bad_dtype(x, st);
  }
  return 0;
}

UNARY_INFER(abs_infer, M_FLT | M_SINT | M_UINT,
            "float, double, int8..int64, uint8..uint64")
static int abs_forward(FWD_ARGS) {
  FWD_SETUP;
  switch (x->dtype) {
  CASE_MAP(AMD_FLOAT, float, fabsf(v))
  CASE_MAP(AMD_DOUBLE, double, fabs(v))
  CASE_MAP(AMD_INT8, int8_t, v < 0 ? INEG(v) : (uint64_t)v)
  CASE_MAP(AMD_INT16, int16_t, v < 0 ? INEG(v) : (uint64_t)v)
  CASE_MAP(AMD_INT32, int32_t, v < 0 ? INEG(v) : (uint64_t)v)
  CASE_MAP(AMD_INT64, int64_t, v < 0 ? INEG(v) : (uint64_t)v)
  CASE_MAP(AMD_UINT8, uint8_t, v)
  CASE_MAP(AMD_UINT16, uint16_t, v)
  CASE_MAP(AMD_UINT32, uint32_t, v)
  CASE_MAP(AMD_UINT64, uint64_t, v)
  default: return bad_dtype(x, st);
  }
  return 0;
}

/* ---- LeakyRelu ---- */

static int leakyrelu_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_act_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->alpha = amd_attr_float(p, "alpha", 0.01f);
  return 0;
}

UNARY_INFER(leakyrelu_infer, M_FLT, "float, double")
static int leakyrelu_forward(FWD_ARGS) {
  FWD_SETUP;
  const amd_act_attrs *a = n->attrs;
  float af = a->alpha;
  double ad = a->alpha;
  switch (x->dtype) {
  CASE_MAP(AMD_FLOAT, float, v < 0 ? v * af : v)
  CASE_MAP(AMD_DOUBLE, double, v < 0 ? v * ad : v)
  default: return bad_dtype(x, st);
  }
  return 0;
}

/* ---- HardSigmoid, HardSwish ---- */

static int hardsigmoid_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_act_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->alpha = amd_attr_float(p, "alpha", 0.2f);
  a->beta = amd_attr_float(p, "beta", 0.5f);
  return 0;
}

/* HardSwish has no attributes: its alpha and beta are fixed. */
static int hardswish_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  (void)p;
  amd_act_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->alpha = 1.0f / 6.0f;
  a->beta = 0.5f;
  return 0;
}

/* max(0, min(1, t)) */
#define UNIT(t) ((t) < 0 ? 0 : (t) > 1 ? 1 : (t))

UNARY_INFER(hardsigmoid_infer, M_FLT, "float, double")
static int hardsigmoid_forward(FWD_ARGS) {
  FWD_SETUP;
  const amd_act_attrs *a = n->attrs;
  const float af = a->alpha, bf = a->beta;
  const double ad = a->alpha, bd = a->beta;
  switch (x->dtype) {
  CASE_MAP(AMD_FLOAT, float, UNIT(af * v + bf))
  CASE_MAP(AMD_DOUBLE, double, UNIT(ad * v + bd))
  default: return bad_dtype(x, st);
  }
  return 0;
}

UNARY_INFER(hardswish_infer, M_FLT, "float, double")
static int hardswish_forward(FWD_ARGS) {
  FWD_SETUP;
  const amd_act_attrs *a = n->attrs;
  const float af = a->alpha, bf = a->beta;
  const double ad = a->alpha, bd = a->beta;
  switch (x->dtype) {
  CASE_MAP(AMD_FLOAT, float, v * UNIT(af * v + bf))
  CASE_MAP(AMD_DOUBLE, double, v * UNIT(ad * v + bd))
  default: return bad_dtype(x, st);
  }
  return 0;
}

/* ---- Gelu: x Phi(x), exactly (erf) or with approximate = "tanh" ---- */

#define GELU_K 0.7978845608028654 /* sqrt(2 / pi) */
#define GELU_C 0.044715
#define SQRT1_2 0.7071067811865476   /* 1 / sqrt(2) */
#define SQRT2 1.4142135623730951
#define TWO_SQRTPI 1.1283791670955126 /* 2 / sqrt(pi) (Erf's gradient) */

static int gelu_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_act_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  char buf[16];
  const char *ap = amd_attr_string(p, "approximate", "none", buf, sizeof buf);
  if (strcmp(ap, "tanh") == 0) a->tanh_approx = 1;
  else if (strcmp(ap, "none") != 0) return amd_fail(st, "approximate '%s' is not none or tanh", ap);
  return 0;
}

/* The exact form computes (x (erf(x / sqrt 2) + 1)) 0.5, the operations of
 * the five nodes PyTorch exports GELU as below opset 20, in their order, or
 * with h (half_first) (x 0.5) (erf(x / sqrt 2) + 1), the order of the
 * hand-written x * 0.5 * (1 + erf(x / sqrt 2)): the loader fuses either
 * chain into one Gelu node (src/onnx/rewrite.c), which must give the
 * chain's bits. */
static inline float gelu_f(float v, int t, int h) {
  if (t) return 0.5f * v * (1.0f + tanhf((float)GELU_K * (v + (float)GELU_C * v * v * v)));
  const float a = erff(v / (float)SQRT2) + 1.0f;
  return h ? (v * 0.5f) * a : (v * a) * 0.5f;
}
static inline double gelu_d(double v, int t, int h) {
  if (t) return 0.5 * v * (1.0 + tanh(GELU_K * (v + GELU_C * v * v * v)));
  const double a = erf(v / SQRT2) + 1.0;
  return h ? (v * 0.5) * a : (v * a) * 0.5;
}
/* d/dx: exact Phi(x) + x phi(x); tanh form 0.5 (1 + th) + 0.5 x (1 - th^2) K (1 + 3 C x^2) */
static inline double gelu_grad(double v, int t) {
  if (!t) return 0.5 * (1.0 + erf(v * SQRT1_2)) + v * exp(-0.5 * v * v) * 0.3989422804014327;
  const double th = tanh(GELU_K * (v + GELU_C * v * v * v));
  return 0.5 * (1.0 + th) + 0.5 * v * (1.0 - th * th) * GELU_K * (1.0 + 3.0 * GELU_C * v * v);
}

UNARY_INFER(gelu_infer, M_FLT, "float, double")
static int gelu_forward(FWD_ARGS) {
  FWD_SETUP;
  const int t = ((const amd_act_attrs *)n->attrs)->tanh_approx,
            h = ((const amd_act_attrs *)n->attrs)->half_first;
  switch (x->dtype) {
    CASE_MAP(AMD_FLOAT, float, gelu_f(v, t, h))
    CASE_MAP(AMD_DOUBLE, double, gelu_d(v, t, h))
  default: return bad_dtype(x, st);
  }
  return 0;
}

/* ---- PRelu ---- */

static int prelu_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  if (unary_infer(n, in, out, M_FLT, "float, double", st)) return -1;
  if (n->n_in < 2 || !in[1]) return amd_fail(st, "input slope is required");
  const amd_tensor *x = in[0], *s = in[1];
  if (s->dtype != x->dtype)
    return amd_fail(st, "slope has dtype %s, X has %s (they must match)", amd_dtype_name(s->dtype),
                    amd_dtype_name(x->dtype));
  amd_tensor b;
  if (amd_broadcast_shape(x, s, &b, st)) return -1;
  if (!amd_same_shape(&b, x)) {
    char s1[128], s2[128];
    return amd_fail(st, "slope of shape %s does not broadcast to X of shape %s",
                    amd_shape_str(s, s1, sizeof s1), amd_shape_str(x, s2, sizeof s2));
  }
  return 0;
}

#define PRELU_LOOP(T)                                                                           \
  do {                                                                                          \
    const T *xs = (const T *)x->data, *ss = (const T *)s->data;                                 \
    T *ys = (T *)y->data;                                                                       \
    if (sn == nel) {                                                                            \
      for (int64_t i = 0; i < nel; i++) ys[i] = xs[i] < 0 ? ss[i] * xs[i] : xs[i];              \
    } else if (sn == 1) {                                                                       \
      for (int64_t i = 0; i < nel; i++) ys[i] = xs[i] < 0 ? ss[0] * xs[i] : xs[i];              \
    } else {                                                                                    \
      int64_t idx[AMD_MAX_RANK] = {0}, so = 0;                                                  \
      for (int64_t i = 0; i < nel; i++) {                                                       \
        ys[i] = xs[i] < 0 ? ss[so] * xs[i] : xs[i];                                             \
        for (int d = y->rank - 1; d >= 0; d--) {                                                \
          so += str[d];                                                                         \
          if (++idx[d] < y->dims[d]) break;                                                     \
          so -= str[d] * idx[d];                                                                \
          idx[d] = 0;                                                                           \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
  } while (0)

static int prelu_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                         amd_tensor *out, amd_status *st) {
  (void)n;
  (void)ctx;
  const amd_tensor *x = in[0], *s = in[1];
  amd_tensor *y = &out[0];
  int64_t nel = amd_tensor_numel(x), sn = amd_tensor_numel(s);
  int64_t str[AMD_MAX_RANK];
  amd_broadcast_strides(s, y, str);
  if (x->dtype == AMD_FLOAT)
    PRELU_LOOP(float);
  else if (x->dtype == AMD_DOUBLE)
    PRELU_LOOP(double);
  else
    return amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype));
  return 0;
}

/* ---- Clip ---- */

static int clip_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_act_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->min = amd_attr_float(p, "min", -FLT_MAX);
  a->max = amd_attr_float(p, "max", FLT_MAX);
  return 0;
}

static int clip_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out,
                      amd_status *st) {
  if (unary_infer(n, in, out, M_FLT | M_SINT | M_UINT,
                  "float, double, int8..int64, uint8..uint64", st))
    return -1;
  if (n->since >= 11) {
    static const char *names[] = {"", "min", "max"};
    for (int k = 1; k < n->n_in && k < 3; k++) {
      if (!in[k]) continue;
      if (in[k]->dtype != in[0]->dtype)
        return amd_fail(st, "input %s has dtype %s, X has %s (they must match)", names[k],
                        amd_dtype_name(in[k]->dtype), amd_dtype_name(in[0]->dtype));
      if (amd_tensor_numel(in[k]) != 1) {
        char s[128];
        return amd_fail(st, "input %s must be a scalar, got shape %s", names[k],
                        amd_shape_str(in[k], s, sizeof s));
      }
    }
    if (n->n_in > 3) return amd_fail(st, "Clip has at most 3 inputs, got %d", n->n_in);
  } else if (n->n_in > 1) {
    return amd_fail(st, "Clip-%d takes min/max as attributes, not inputs", n->since);
  }
  return 0;
}

#define CLIP_F(T, LO, HI)                                                                       \
  do {                                                                                          \
    T lo_ = (T)(LO), hi_ = (T)(HI);                                                             \
    MAP(T, (v < lo_ ? lo_ : v) > hi_ ? hi_ : (v < lo_ ? lo_ : v));                              \
  } while (0)

static int clip_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                        amd_tensor *out, amd_status *st) {
  (void)ctx;
  const amd_tensor *x = in[0];
  amd_tensor *y = &out[0];
  int64_t nel = amd_tensor_numel(x);
  const amd_tensor *tmin = n->since >= 11 && n->n_in > 1 ? in[1] : NULL;
  const amd_tensor *tmax = n->since >= 11 && n->n_in > 2 ? in[2] : NULL;
  if (x->dtype == AMD_FLOAT || x->dtype == AMD_DOUBLE) {
    double lo, hi;
    if (n->since >= 11) {
      lo = tmin ? amd_tensor_get_f64(tmin, 0) : -INFINITY;
      hi = tmax ? amd_tensor_get_f64(tmax, 0) : INFINITY;
    } else {
      const amd_act_attrs *a = n->attrs;
      lo = a->min;
      hi = a->max;
    }
    if (x->dtype == AMD_FLOAT)
      CLIP_F(float, lo, hi);
    else
      CLIP_F(double, lo, hi);
    return 0;
  }
  if ((unsigned)x->dtype < 32 && (M_SINT & BIT(x->dtype))) {
    int64_t lo = tmin ? amd_tensor_get_i64(tmin, 0) : INT64_MIN;
    int64_t hi = tmax ? amd_tensor_get_i64(tmax, 0) : INT64_MAX;
    if (lo > hi) lo = hi; /* every element becomes max */
    switch (x->dtype) {
    case AMD_INT8: MAP(int8_t, v < lo ? lo : (v > hi ? hi : v)); break;
    case AMD_INT16: MAP(int16_t, v < lo ? lo : (v > hi ? hi : v)); break;
    case AMD_INT32: MAP(int32_t, v < lo ? lo : (v > hi ? hi : v)); break;
    default: MAP(int64_t, v < lo ? lo : (v > hi ? hi : v)); break;
    }
    return 0;
  }
  if ((unsigned)x->dtype < 32 && (M_UINT & BIT(x->dtype))) {
    uint64_t lo = tmin ? (uint64_t)amd_tensor_get_i64(tmin, 0) : 0;
    uint64_t hi = tmax ? (uint64_t)amd_tensor_get_i64(tmax, 0) : UINT64_MAX;
    if (lo > hi) lo = hi;
    switch (x->dtype) {
    case AMD_UINT8: MAP(uint8_t, v < lo ? lo : (v > hi ? hi : v)); break;
    case AMD_UINT16: MAP(uint16_t, v < lo ? lo : (v > hi ? hi : v)); break;
    case AMD_UINT32: MAP(uint32_t, v < lo ? lo : (v > hi ? hi : v)); break;
    default: MAP(uint64_t, v < lo ? lo : (v > hi ? hi : v)); break;
    }
    return 0;
  }
  return amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype));
}

/* ---- backward ---- */

#define BWD_ARGS                                                                                             \
  const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,                       \
      const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st

/* dx[i] += dy[i] * (DERIV), with v = x[i] and u = y[i] (the forward output). */
#define GRAD_MAP(T, DERIV)                                                                                   \
  do {                                                                                                       \
    const T *xs_ = (const T *)x->data, *us_ = (const T *)y->data, *gs_ = (const T *)dy->data;                \
    T *dxs_ = (T *)dx->data;                                                                                 \
    AMD_PARALLEL_FOR(nel)                                                                                    \
    for (int64_t i_ = 0; i_ < nel; i_++) {                                                                   \
      T v = xs_[i_], u = us_[i_], g = gs_[i_];                                                               \
      (void)v;                                                                                               \
      (void)u;                                                                                               \
      dxs_[i_] += (T)(DERIV);                                                                                \
    }                                                                                                        \
  } while (0)

/* Common checks; sets up x, y, dy, dx, nel. Returns early (0) when there is
 * nothing to do. */
#define BWD_SETUP                                                                                            \
  (void)ctx;                                                                                                 \
  const amd_tensor *x = in[0], *y = &out[0], *dy = dout[0];                                                  \
  amd_tensor *dx = din[0];                                                                                   \
  if (!dy || !dx) return 0;                                                                                  \
  if (x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE)                                                       \
    return amd_fail(st, "%s: no gradient for dtype %s", n->op->name, amd_dtype_name(x->dtype));              \
  int64_t nel = amd_tensor_numel(x)

/* An elementwise backward with derivative expressions EF (float) and ED (double). */
#define UNARY_BWD(NAME, EF, ED)                                                                              \
  static int NAME##_backward(BWD_ARGS) {                                                                     \
    BWD_SETUP;                                                                                               \
    if (x->dtype == AMD_FLOAT)                                                                               \
      GRAD_MAP(float, EF);                                                                                   \
    else                                                                                                     \
      GRAD_MAP(double, ED);                                                                                  \
    return 0;                                                                                                \
  }

/* From the output alone (y > 0 exactly where x > 0, NaN neither), so that
 * training need not keep Relu's input (bwd_unread_in). */
static int relu_backward(BWD_ARGS) {
  BWD_SETUP;
  if (x->dtype == AMD_FLOAT) {
    const float *u = y->data, *g = dy->data;
    float *d = dx->data;
    AMD_PARALLEL_FOR(nel)
    for (int64_t i = 0; i < nel; i++) d[i] += u[i] > 0 ? g[i] : 0.0f;
  } else {
    const double *u = y->data, *g = dy->data;
    double *d = dx->data;
    AMD_PARALLEL_FOR(nel)
    for (int64_t i = 0; i < nel; i++) d[i] += u[i] > 0 ? g[i] : 0.0;
  }
  return 0;
}
UNARY_BWD(sigmoid, g *u *(1.0f - u), g *u *(1.0 - u))
UNARY_BWD(tanh, g *(1.0f - u * u), g *(1.0 - u * u))
UNARY_BWD(exp, g *u, g *u)
UNARY_BWD(log, g / v, g / v)
UNARY_BWD(sqrt, g * 0.5f / u, g * 0.5 / u)
UNARY_BWD(neg, -g, -g)
UNARY_BWD(abs, v > 0 ? g : (v < 0 ? -g : 0.0f), v > 0 ? g : (v < 0 ? -g : 0.0))
UNARY_BWD(reciprocal, -g *u *u, -g *u *u)

static int leakyrelu_backward(BWD_ARGS) {
  BWD_SETUP;
  const amd_act_attrs *a = n->attrs;
  float af = a->alpha;
  double ad = a->alpha;
  if (x->dtype == AMD_FLOAT)
    GRAD_MAP(float, v < 0 ? g * af : g);
  else
    GRAD_MAP(double, v < 0 ? g * ad : g);
  return 0;
}

UNARY_BWD(erf, g * (float)(TWO_SQRTPI * exp(-(double)v * v)), g * TWO_SQRTPI * exp(-v * v))

static int gelu_backward(BWD_ARGS) {
  BWD_SETUP;
  const int t = ((const amd_act_attrs *)n->attrs)->tanh_approx;
  if (x->dtype == AMD_FLOAT)
    GRAD_MAP(float, g * (float)gelu_grad(v, t));
  else
    GRAD_MAP(double, g * gelu_grad(v, t));
  return 0;
}

static int hardsigmoid_backward(BWD_ARGS) {
  BWD_SETUP;
  const amd_act_attrs *a = n->attrs;
  const float af = a->alpha, bf = a->beta;
  const double ad = a->alpha, bd = a->beta;
  if (x->dtype == AMD_FLOAT)
    GRAD_MAP(float, af * v + bf > 0 && af * v + bf < 1 ? g * af : 0.0f);
  else
    GRAD_MAP(double, ad * v + bd > 0 && ad * v + bd < 1 ? g * ad : 0.0);
  return 0;
}

static int hardswish_backward(BWD_ARGS) {
  BWD_SETUP;
  const amd_act_attrs *a = n->attrs;
  const float af = a->alpha, bf = a->beta;
  const double ad = a->alpha, bd = a->beta;
  if (x->dtype == AMD_FLOAT)
    GRAD_MAP(float, af * v + bf < 0 ? 0.0f : af * v + bf > 1 ? g : g * (2 * af * v + bf));
  else
    GRAD_MAP(double, ad * v + bd < 0 ? 0.0 : ad * v + bd > 1 ? g : g * (2 * ad * v + bd));
  return 0;
}

static int clip_backward(BWD_ARGS) {
  BWD_SETUP;
  double lo, hi;
  if (n->since >= 11) {
    const amd_tensor *tmin = n->n_in > 1 ? in[1] : NULL, *tmax = n->n_in > 2 ? in[2] : NULL;
    lo = tmin ? amd_tensor_get_f64(tmin, 0) : -INFINITY;
    hi = tmax ? amd_tensor_get_f64(tmax, 0) : INFINITY;
  } else {
    const amd_act_attrs *a = n->attrs;
    lo = a->min;
    hi = a->max;
  }
  if (x->dtype == AMD_FLOAT) {
    /* Compare in float, as the forward clamps in float. */
    float lf = (float)lo, hf = (float)hi;
    GRAD_MAP(float, v > lf && v < hf ? g : 0.0f);
  } else {
    GRAD_MAP(double, v > lo && v < hi ? g : 0.0);
  }
  return 0;
}

/* dX += x < 0 ? s * dY : dY;  dS (broadcast-reduced, in the scratch acc) += x < 0 ? x * dY : 0. */
#define PRELU_BWD_LOOP(T)                                                                                    \
  do {                                                                                                       \
    const T *xs = (const T *)x->data, *ss = (const T *)s->data, *gs = (const T *)dy->data;                   \
    T *dxs = dx ? (T *)dx->data : NULL;                                                                      \
    int64_t idx[AMD_MAX_RANK] = {0}, so = 0;                                                                 \
    for (int64_t i = 0; i < nel; i++) {                                                                      \
      T v = xs[i], g = gs[i];                                                                                \
      if (v < 0) {                                                                                           \
        if (dxs) dxs[i] += ss[so] * g;                                                                       \
        if (acc) acc[so] += (double)v * (double)g;                                                           \
      } else if (dxs) {                                                                                      \
        dxs[i] += g;                                                                                         \
      }                                                                                                      \
      for (int d = x->rank - 1; d >= 0; d--) {                                                               \
        so += str[d];                                                                                        \
        if (++idx[d] < x->dims[d]) break;                                                                    \
        so -= str[d] * idx[d];                                                                               \
        idx[d] = 0;                                                                                          \
      }                                                                                                      \
    }                                                                                                        \
  } while (0)

static int prelu_backward(BWD_ARGS) {
  (void)ctx;
  const amd_tensor *x = in[0], *s = in[1], *dy = dout[0];
  amd_tensor *dx = din[0], *ds = n->n_in > 1 ? din[1] : NULL;
  if (!dy || (!dx && !ds)) return 0;
  if (x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE)
    return amd_fail(st, "PRelu: no gradient for dtype %s", amd_dtype_name(x->dtype));
  int64_t nel = amd_tensor_numel(x), sn = amd_tensor_numel(s);
  int64_t str[AMD_MAX_RANK];
  amd_broadcast_strides(s, &out[0], str);
  double *acc = NULL;
  if (ds) {
    acc = calloc((size_t)(sn > 0 ? sn : 1), sizeof *acc);
    if (!acc) return amd_fail(st, "out of memory");
  }
  if (x->dtype == AMD_FLOAT)
    PRELU_BWD_LOOP(float);
  else
    PRELU_BWD_LOOP(double);
  if (ds) {
    for (int64_t j = 0; j < sn; j++) amd_tensor_set_f64(ds, j, amd_tensor_get_f64(ds, j) + acc[j]);
    free(acc);
  }
  return 0;
}

const amd_op amd_op_Relu = {.name = "Relu",
                            .idx = AMD_OP_IDX_Relu,
                            .since = {1, 6, 13, 14},
                            .infer = relu_infer,
                            .forward = relu_forward,
                            .backward = relu_backward,
                            .bwd_unread_in = 1};
const amd_op amd_op_LeakyRelu = {.name = "LeakyRelu",
                                 .idx = AMD_OP_IDX_LeakyRelu,
                                 .since = {1, 6, 16},
                                 .parse = leakyrelu_parse,
                                 .infer = leakyrelu_infer,
                                 .forward = leakyrelu_forward,
                                 .backward = leakyrelu_backward};
const amd_op amd_op_PRelu = {.name = "PRelu",
                             .idx = AMD_OP_IDX_PRelu,
                             .since = {1, 6, 7, 9, 16},
                             .infer = prelu_infer,
                             .forward = prelu_forward,
                             .backward = prelu_backward};
const amd_op amd_op_Sigmoid = {.name = "Sigmoid",
                               .idx = AMD_OP_IDX_Sigmoid,
                               .since = {1, 6, 13},
                               .infer = sigmoid_infer,
                               .forward = sigmoid_forward,
                               .backward = sigmoid_backward};
const amd_op amd_op_Tanh = {.name = "Tanh",
                            .idx = AMD_OP_IDX_Tanh,
                            .since = {1, 6, 13},
                            .infer = tanh_infer,
                            .forward = tanh_forward,
                            .backward = tanh_backward};
const amd_op amd_op_Clip = {.name = "Clip",
                            .idx = AMD_OP_IDX_Clip,
                            .since = {1, 6, 11, 12, 13},
                            .parse = clip_parse,
                            .infer = clip_infer,
                            .forward = clip_forward,
                            .backward = clip_backward,
                            .nondiff_inputs = 0x6u};
const amd_op amd_op_Exp = {.name = "Exp",
                           .idx = AMD_OP_IDX_Exp,
                           .since = {1, 6, 13},
                           .infer = exp_infer,
                           .forward = exp_forward,
                           .backward = exp_backward};
const amd_op amd_op_Log = {.name = "Log",
                           .idx = AMD_OP_IDX_Log,
                           .since = {1, 6, 13},
                           .infer = log_infer,
                           .forward = log_forward,
                           .backward = log_backward};
const amd_op amd_op_Sqrt = {.name = "Sqrt",
                            .idx = AMD_OP_IDX_Sqrt,
                            .since = {1, 6, 13},
                            .infer = sqrt_infer,
                            .forward = sqrt_forward,
                            .backward = sqrt_backward};
const amd_op amd_op_Neg = {.name = "Neg",
                           .idx = AMD_OP_IDX_Neg,
                           .since = {1, 6, 13},
                           .infer = neg_infer,
                           .forward = neg_forward,
                           .backward = neg_backward};
const amd_op amd_op_Abs = {.name = "Abs",
                           .idx = AMD_OP_IDX_Abs,
                           .since = {1, 6, 13},
                           .infer = abs_infer,
                           .forward = abs_forward,
                           .backward = abs_backward};
const amd_op amd_op_Reciprocal = {.name = "Reciprocal",
                                  .idx = AMD_OP_IDX_Reciprocal,
                                  .since = {1, 6, 13},
                                  .infer = reciprocal_infer,
                                  .forward = reciprocal_forward,
                                  .backward = reciprocal_backward};
const amd_op amd_op_HardSigmoid = {.name = "HardSigmoid",
                                   .idx = AMD_OP_IDX_HardSigmoid,
                                   .since = {1, 6, 22},
                                   .parse = hardsigmoid_parse,
                                   .infer = hardsigmoid_infer,
                                   .forward = hardsigmoid_forward,
                                   .backward = hardsigmoid_backward};
const amd_op amd_op_HardSwish = {.name = "HardSwish",
                                 .idx = AMD_OP_IDX_HardSwish,
                                 .since = {14, 22},
                                 .parse = hardswish_parse,
                                 .infer = hardswish_infer,
                                 .forward = hardswish_forward,
                                 .backward = hardswish_backward};
const amd_op amd_op_Gelu = {.name = "Gelu",
                            .idx = AMD_OP_IDX_Gelu,
                            .since = {20},
                            .parse = gelu_parse,
                            .infer = gelu_infer,
                            .forward = gelu_forward,
                            .backward = gelu_backward};
const amd_op amd_op_Erf = {.name = "Erf",
                           .idx = AMD_OP_IDX_Erf,
                           .since = {9, 13},
                           .infer = erf_infer,
                           .forward = erf_forward,
                           .backward = erf_backward};
