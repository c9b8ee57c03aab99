/* CUDA kernels of Relu, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh,
 * Clip, Erf, Gelu, Exp, Log, Sqrt, Neg, Abs and Reciprocal (src/ops/activation.c, whose comment gives the gradients
 * at the kinks; Erf's and Gelu's gradients in double, as there);
 * and of Elu, Selu, Celu, Softplus, Softsign, ThresholdedRelu, Mish, Shrink,
 * Ceil, Floor, Round, Sign, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh,
 * Asinh, Acosh and Atanh (src/ops/unary.c: the same float formulas; their
 * backward reads X only, never Y, and Ceil, Floor, Round and Sign add a zero
 * gradient). */
#include "ops_internal.h"

/* ================================================================ activations */

/* clang-format off */
enum {
  ACT_RELU, ACT_LEAKY, ACT_SIGMOID, ACT_HARDSIGMOID, ACT_HARDSWISH, ACT_TANH, ACT_CLIP, ACT_ERF, ACT_GELU,
  ACT_EXP, ACT_LOG, ACT_SQRT, ACT_NEG, ACT_ABS, ACT_RECIP,
  /* unary.c's, whose backward reads X only */
  ACT_ELU, ACT_SELU, ACT_CELU, ACT_SOFTPLUS, ACT_SOFTSIGN, ACT_THRELU, ACT_MISH, ACT_SHRINK,
  ACT_CEIL, ACT_FLOOR, ACT_ROUND, ACT_SIGN, ACT_SIN, ACT_COS, ACT_TAN, ACT_ASIN, ACT_ACOS, ACT_ATAN,
  ACT_SINH, ACT_COSH, ACT_ASINH, ACT_ACOSH, ACT_ATANH
};
/* clang-format on */

/* Gelu's constants (activation.c's) */
#define GELU_K 0.7978845608028654     /* sqrt(2 / pi) */
#define GELU_C 0.044715
#define SQRT1_2 0.7071067811865476    /* 1 / sqrt(2) */
#define SQRT2 1.4142135623730951
#define TWO_SQRTPI 1.1283791670955126 /* 2 / sqrt(pi) */

/* p0 != 0: approximate = "tanh"; p1 != 0: half_first (the CPU's operations, activation.c) */
__device__ __forceinline__ float gelu_f(float v, float p0, float p1) {
  if (p0 != 0) return 0.5f * v * (1.0f + tanhf((float)GELU_K * (v + (float)GELU_C * v * v * v)));
  const float a = erff(v / (float)SQRT2) + 1.0f;
  return p1 != 0 ? (v * 0.5f) * a : (v * a) * 0.5f;
}
__device__ __forceinline__ double gelu_grad(double v, float p0) {
  if (p0 == 0) return 0.5 * (1.0 + erf(v * SQRT1_2)) + v * exp(-0.5 * v * v) * 0.3989422804014327;
  const double th = tanh(GELU_K * (v + GELU_C * v * v * v));
  return 0.5 * (1.0 + th) + 0.5 * v * (1.0 - th * th) * GELU_K * (1.0 + 3.0 * GELU_C * v * v);
}

/* max(0, min(1, t)) */
__device__ __forceinline__ float unit_f(float t) { return t < 0 ? 0.0f : t > 1 ? 1.0f : t; }

__device__ __forceinline__ float sigmoid_f(float v) {
  if (v >= 0) return 1.0f / (1.0f + expf(-v));
  float e = expf(v);
  return e / (1.0f + e);
}

__device__ __forceinline__ float softplus_f(float v) {
  return v > 0 ? v + log1pf(expf(-v)) : log1pf(expf(v));
}

/* halves to the even neighbour */
__device__ __forceinline__ float round_even_f(float v) {
  float r = roundf(v);
  if (fabsf(v - truncf(v)) == 0.5f) r = 2 * roundf(v / 2);
  return r;
}

/* unary.c's forward: p0, p1 as its un_params */
__device__ __forceinline__ float unary_f(int kind, float v, float p0, float p1) {
  switch (kind) {
  case ACT_ELU:
    return v < 0 ? p0 * expm1f(v) : v;
  case ACT_SELU:
    return v > 0 ? p1 * v : p1 * p0 * expm1f(v);
  case ACT_CELU:
    return v < 0 ? p0 * expm1f(v / p0) : v;
  case ACT_SOFTPLUS:
    return softplus_f(v);
  case ACT_SOFTSIGN:
    return v / (1 + fabsf(v));
  case ACT_THRELU:
    return v > p0 ? v : 0.0f;
  case ACT_MISH:
    return v * tanhf(softplus_f(v));
  case ACT_SHRINK:
    return v < -p0 ? v + p1 : v > p0 ? v - p1 : 0.0f;
  case ACT_CEIL:
    return ceilf(v);
  case ACT_FLOOR:
    return floorf(v);
  case ACT_ROUND:
    return round_even_f(v);
  case ACT_SIGN:
    return v > 0 ? 1.0f : v < 0 ? -1.0f : v == 0 ? 0.0f : v;
  case ACT_SIN:
    return sinf(v);
  case ACT_COS:
    return cosf(v);
  case ACT_TAN:
    return tanf(v);
  case ACT_ASIN:
    return asinf(v);
  case ACT_ACOS:
    return acosf(v);
  case ACT_ATAN:
    return atanf(v);
  case ACT_SINH:
    return sinhf(v);
  case ACT_COSH:
    return coshf(v);
  case ACT_ASINH:
    return asinhf(v);
  case ACT_ACOSH:
    return acoshf(v);
  default:
    return atanhf(v);
  }
}

/* unary.c's derivative f'(v) */
__device__ __forceinline__ float unary_df(int kind, float v, float p0, float p1) {
  switch (kind) {
  case ACT_ELU:
    return v < 0 ? p0 * expf(v) : 1.0f;
  case ACT_SELU:
    return v > 0 ? p1 : p1 * p0 * expf(v);
  case ACT_CELU:
    return v < 0 ? expf(v / p0) : 1.0f;
  case ACT_SOFTPLUS:
    return sigmoid_f(v);
  case ACT_SOFTSIGN:
    return 1 / ((1 + fabsf(v)) * (1 + fabsf(v)));
  case ACT_THRELU:
    return v > p0 ? 1.0f : 0.0f;
  case ACT_MISH: {
    float t = tanhf(softplus_f(v));
    return t + v * sigmoid_f(v) * (1 - t * t);
  }
  case ACT_SHRINK:
    return v < -p0 || v > p0 ? 1.0f : 0.0f;
  case ACT_SIN:
    return cosf(v);
  case ACT_COS:
    return -sinf(v);
  case ACT_TAN: {
    float t = tanf(v);
    return 1 + t * t;
  }
  case ACT_ASIN:
    return 1 / sqrtf(1 - v * v);
  case ACT_ACOS:
    return -1 / sqrtf(1 - v * v);
  case ACT_ATAN:
    return 1 / (1 + v * v);
  case ACT_SINH:
    return coshf(v);
  case ACT_COSH:
    return sinhf(v);
  case ACT_ASINH:
    return 1 / sqrtf(v * v + 1);
  case ACT_ACOSH:
    return 1 / sqrtf(v * v - 1);
  case ACT_ATANH:
    return 1 / (1 - v * v);
  default: /* Ceil, Floor, Round, Sign */
    return 0.0f;
  }
}

__device__ __forceinline__ float act_f(int kind, float v, float p0, float p1) {
  if (kind >= ACT_ELU) return unary_f(kind, v, p0, p1);
  switch (kind) {
  case ACT_RELU: /* the fused Relu's expression (ops_internal.h), so both give the same bits */
    return vec_relu(v);
  case ACT_LEAKY:
    return v < 0 ? v * p0 : v;
  case ACT_SIGMOID:
    return sigmoid_f(v);
  case ACT_HARDSIGMOID: /* p0 alpha, p1 beta */
    return unit_f(p0 * v + p1);
  case ACT_HARDSWISH:
    return v * unit_f(p0 * v + p1);
  case ACT_TANH:
    return tanhf(v);
  case ACT_ERF:
    return erff(v);
  case ACT_GELU:
    return gelu_f(v, p0, p1);
  case ACT_EXP:
    return expf(v);
  case ACT_LOG:
    return logf(v);
  case ACT_SQRT:
    return sqrtf(v);
  case ACT_NEG:
    return -v;
  case ACT_ABS:
    return fabsf(v);
  case ACT_RECIP:
    return 1.0f / v;
  default: {
    float lo = v < p0 ? p0 : v;
    return lo > p1 ? p1 : lo;
  }
  }
}

/* the gradient through the activation: x v, y u, upstream gradient g */
__device__ __forceinline__ float act_g(int kind, float v, float u, float g, float p0, float p1) {
  /* Ceil, Floor, Round, Sign: nothing added, as on the CPU (also for g inf or NaN) */
  if (kind >= ACT_CEIL && kind <= ACT_SIGN) return 0.0f;
  if (kind >= ACT_ELU) return g * unary_df(kind, v, p0, p1);
  switch (kind) {
  case ACT_RELU:
    return v > 0 ? g : 0.0f;
  case ACT_LEAKY:
    return v < 0 ? g * p0 : g;
  case ACT_SIGMOID:
    return g * u * (1.0f - u);
  case ACT_HARDSIGMOID:
    return p0 * v + p1 > 0 && p0 * v + p1 < 1 ? g * p0 : 0.0f;
  case ACT_HARDSWISH:
    return p0 * v + p1 < 0 ? 0.0f : p0 * v + p1 > 1 ? g : g * (2 * p0 * v + p1);
  case ACT_TANH:
    return g * (1.0f - u * u);
  case ACT_ERF:
    return g * (float)(TWO_SQRTPI * exp(-(double)v * v));
  case ACT_GELU:
    return g * (float)gelu_grad(v, p0);
  case ACT_EXP:
    return g * u;
  case ACT_LOG:
    return g / v;
  case ACT_SQRT:
    return g * 0.5f / u;
  case ACT_NEG:
    return -g;
  case ACT_ABS:
    return v > 0 ? g : (v < 0 ? -g : 0.0f);
  case ACT_RECIP:
    return -g * u * u;
  default:
    return v > p0 && v < p1 ? g : 0.0f;
  }
}

/* V elements at a time (V = 4: 16-byte accesses; nel % V == 0) */
template <int V>
__global__ void k_act_fwd(int kind, int64_t nel, const float *x, float *y, float p0, float p1) {
  AMD_CU_LOOP(i, nel / V) {
    vecf<V> xv = ((const vecf<V> *)x)[i], yv;
    const float *xe = (const float *)&xv;
    float *ye = (float *)&yv;
#pragma unroll
    for (int e = 0; e < V; e++) ye[e] = act_f(kind, xe[e], p0, p1);
    ((vecf<V> *)y)[i] = yv;
  }
}

template <int V>
__global__ void k_act_bwd(int kind, int64_t nel, const float *x, const float *y, const float *g, float *dx,
                          float p0, float p1, bool acc) {
  AMD_CU_LOOP(i, nel / V) {
    vecf<V> xv = ((const vecf<V> *)x)[i], yv = ((const vecf<V> *)y)[i], gv = ((const vecf<V> *)g)[i], dv = {};
    if (acc) dv = ((const vecf<V> *)dx)[i];
    const float *xe = (const float *)&xv, *ye = (const float *)&yv, *ge = (const float *)&gv;
    float *de = (float *)&dv;
#pragma unroll
    for (int e = 0; e < V; e++) de[e] += act_g(kind, xe[e], ye[e], ge[e], p0, p1);
    ((vecf<V> *)dx)[i] = dv;
  }
}

static int act_kind(const amd_node *n) {
  switch (n->op->idx) {
  case AMD_OP_IDX_Relu:
    return ACT_RELU;
  case AMD_OP_IDX_LeakyRelu:
    return ACT_LEAKY;
  case AMD_OP_IDX_Sigmoid:
    return ACT_SIGMOID;
  case AMD_OP_IDX_HardSigmoid:
    return ACT_HARDSIGMOID;
  case AMD_OP_IDX_HardSwish:
    return ACT_HARDSWISH;
  case AMD_OP_IDX_Tanh:
    return ACT_TANH;
  case AMD_OP_IDX_Erf:
    return ACT_ERF;
  case AMD_OP_IDX_Gelu:
    return ACT_GELU;
  case AMD_OP_IDX_Exp:
    return ACT_EXP;
  case AMD_OP_IDX_Log:
    return ACT_LOG;
  case AMD_OP_IDX_Sqrt:
    return ACT_SQRT;
  case AMD_OP_IDX_Neg:
    return ACT_NEG;
  case AMD_OP_IDX_Abs:
    return ACT_ABS;
  case AMD_OP_IDX_Reciprocal:
    return ACT_RECIP;
  case AMD_OP_IDX_Elu:
    return ACT_ELU;
  case AMD_OP_IDX_Selu:
    return ACT_SELU;
  case AMD_OP_IDX_Celu:
    return ACT_CELU;
  case AMD_OP_IDX_Softplus:
    return ACT_SOFTPLUS;
  case AMD_OP_IDX_Softsign:
    return ACT_SOFTSIGN;
  case AMD_OP_IDX_ThresholdedRelu:
    return ACT_THRELU;
  case AMD_OP_IDX_Mish:
    return ACT_MISH;
  case AMD_OP_IDX_Shrink:
    return ACT_SHRINK;
  case AMD_OP_IDX_Ceil:
    return ACT_CEIL;
  case AMD_OP_IDX_Floor:
    return ACT_FLOOR;
  case AMD_OP_IDX_Round:
    return ACT_ROUND;
  case AMD_OP_IDX_Sign:
    return ACT_SIGN;
  case AMD_OP_IDX_Sin:
    return ACT_SIN;
  case AMD_OP_IDX_Cos:
    return ACT_COS;
  case AMD_OP_IDX_Tan:
    return ACT_TAN;
  case AMD_OP_IDX_Asin:
    return ACT_ASIN;
  case AMD_OP_IDX_Acos:
    return ACT_ACOS;
  case AMD_OP_IDX_Atan:
    return ACT_ATAN;
  case AMD_OP_IDX_Sinh:
    return ACT_SINH;
  case AMD_OP_IDX_Cosh:
    return ACT_COSH;
  case AMD_OP_IDX_Asinh:
    return ACT_ASINH;
  case AMD_OP_IDX_Acosh:
    return ACT_ACOSH;
  case AMD_OP_IDX_Atanh:
    return ACT_ATANH;
  default:
    return ACT_CLIP;
  }
}

/* The parameters: LeakyRelu alpha; HardSigmoid and HardSwish alpha, beta; Clip
 * bounds (from the host-staged inputs at opset >= 11); unary.c's as its
 * un_params: Shrink lambd, bias; the others alpha, gamma. */
static void act_params(const amd_node *n, const amd_tensor *const *in, int kind, float *p0, float *p1) {
  *p0 = 0, *p1 = 0;
  if (kind >= ACT_ELU) {
    const amd_unary_attrs *u = (const amd_unary_attrs *)n->attrs;
    if (u) *p0 = kind == ACT_SHRINK ? u->lambd : u->alpha, *p1 = kind == ACT_SHRINK ? u->bias : u->gamma;
    return;
  }
  if (kind == ACT_LEAKY) *p0 = ((const amd_act_attrs *)n->attrs)->alpha;
  if (kind == ACT_HARDSIGMOID || kind == ACT_HARDSWISH) {
    *p0 = ((const amd_act_attrs *)n->attrs)->alpha;
    *p1 = ((const amd_act_attrs *)n->attrs)->beta;
  }
  if (kind == ACT_GELU) {
    *p0 = ((const amd_act_attrs *)n->attrs)->tanh_approx ? 1.0f : 0.0f;
    *p1 = ((const amd_act_attrs *)n->attrs)->half_first ? 1.0f : 0.0f;
  }
  if (kind != ACT_CLIP) return;
  double lo, hi;
  if (n->since >= 11) {
    const amd_tensor *tmin = n->n_in > 1 ? in[1] : NULL, *tmax = n->n_in > 2 ? in[2] : NULL;
    lo = tmin ? amd_tensor_get_f64(tmin, 0) : -INFINITY;
    hi = tmax ? amd_tensor_get_f64(tmax, 0) : INFINITY;
  } else {
    const amd_act_attrs *a = (const amd_act_attrs *)n->attrs;
    lo = a->min, hi = a->max;
  }
  *p0 = (float)lo, *p1 = (float)hi;
}

int act_forward(FWD_ARGS) {
  (void)ctx;
  int kind = act_kind(n);
  float p0, p1;
  act_params(n, in, kind, &p0, &p1);
  int64_t nel = amd_tensor_numel(in[0]);
  if (!nel) return 0;
  if (nel % 4 == 0 && aligned16(F(in[0])) && aligned16(F(&out[0])))
    k_act_fwd<4><<<amd_cu_blocks(nel / 4), 256, 0, amd_cu.stream>>>(kind, nel, F(in[0]), F(&out[0]), p0, p1);
  else
    k_act_fwd<1><<<amd_cu_blocks(nel), 256, 0, amd_cu.stream>>>(kind, nel, F(in[0]), F(&out[0]), p0, p1);
  AMD_CUDA_CHECK_LAUNCH("k_act_fwd", st);
  return 0;
}

int act_backward(BWD_ARGS) {
  if (!dout[0] || !din[0]) return 0;
  const bool acc = acc_of(ctx, 0);
  int kind = act_kind(n);
  float p0, p1;
  act_params(n, in, kind, &p0, &p1);
  int64_t nel = amd_tensor_numel(in[0]);
  if (!nel) return 0;
  /* Relu's gradient from its output (y > 0 where x > 0): training frees Relu's input (bwd_unread_in);
   * unary.c's from the input alone: training frees their output (bwd_unread_out) */
  const float *y = kind >= ACT_ELU ? F(in[0]) : F(&out[0]), *x = kind == ACT_RELU ? y : F(in[0]),
              *g = F(dout[0]);
  float *dx = F(din[0]);
  if (nel % 4 == 0 && aligned16(x) && aligned16(y) && aligned16(g) && aligned16(dx))
    k_act_bwd<4><<<amd_cu_blocks(nel / 4), 256, 0, amd_cu.stream>>>(kind, nel, x, y, g, dx, p0, p1, acc);
  else
    k_act_bwd<1><<<amd_cu_blocks(nel), 256, 0, amd_cu.stream>>>(kind, nel, x, y, g, dx, p0, p1, acc);
  AMD_CUDA_CHECK_LAUNCH("k_act_bwd", st);
  return 0;
}
