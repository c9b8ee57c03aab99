/* Linear quantization: QuantizeLinear, DequantizeLinear (versions 10, 13, 19,
 * 21, 23; 24, 25 and 28 bind to 23, see src/onnx/opset.c) and
 * DynamicQuantizeLinear (11). The integer ops that compute on the codes are in
 * qlinear.c; both files share quant.h.
 *
 * Types implemented: quantized codes int8 and uint8 (DequantizeLinear also
 * int32, e.g. a bias); real values and scales float32. Anything else (int4,
 * int16, float8, float16 scales, ...) fails at run time with a message naming
 * the type; so do output_dtype or precision attributes asking for such types.
 *
 * Granularity, from the shape of the scale (the zero point, when given, must
 * have the scale's shape (or, per tensor, one element each: onnxruntime's
 * quantizer writes a [1] scale with a scalar zero point) and, for QuantizeLinear, the output's type; for
 * DequantizeLinear, x's type):
 *   - per tensor: one element (a scalar or a 1-element vector);
 *   - per axis (13+): a 1-D scale of length x.shape[axis] (axis default 1,
 *     negative counts from the back; out of range is an error);
 *   - blocked (21+, block_size > 0): the scale has x's rank and shape except
 *     along axis, where it has ceil(D / block_size) entries; element at index
 *     d along axis uses scale entry d / block_size.
 * Version 10 takes only a per-tensor scale.
 *
 * Arithmetic (as the ONNX reference implementation computes for float32):
 *   QuantizeLinear:   y = saturate(round_half_even(x / s) + zp), x / s a
 *                     float32 division (an int32 x is first converted to
 *                     float32), saturation to [-128, 127] or [0, 255]; NaN
 *                     gives zp. Default output type uint8 (21+: output_dtype).
 *   DequantizeLinear: y = (float)(x - zp) * s, the subtraction exact in
 *                     integers, then one float32 multiplication.
 *   DynamicQuantizeLinear (uint8 only, as the spec says):
 *                     hi = max(0, max x), lo = min(0, min x) (NaN skipped),
 *                     s = (hi == lo ? 1 : hi - lo) / 255 in float32,
 *                     zp = round_half_even(clamp(0 - lo / s, 0, 255)),
 *                     y = saturate(round_half_even(x / s) + zp).
 *
 * Backward: none. The trainer refuses a model whose loss depends on these ops
 * (amd_op_is_quantized, train/trainer.c); quantization-aware training with a
 * straight-through QuantizeLinear -> DequantizeLinear gradient is not
 * implemented. Non-float tensors live on the host, so with the CUDA backend
 * these ops run on its host fallback. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"
#include "quant.h"

typedef struct q_attrs {
  int64_t axis;
  int64_t block_size; /* 0: per tensor / per axis */
  int output_dtype;   /* 0: from the zero point (QuantizeLinear), float (DequantizeLinear) */
} q_attrs;

static int q_parse(amd_node *n, const amd_attr_list *p, amd_status *st, int is_quantize) {
  q_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->axis = n->since >= 13 ? amd_attr_int(p, "axis", 1) : 1;
  a->block_size = n->since >= 21 ? amd_attr_int(p, "block_size", 0) : 0;
  if (a->block_size < 0)
    return amd_fail(st, "block_size %lld must not be negative", (long long)a->block_size);
  int64_t od = 0;
  if ((is_quantize && n->since >= 21) || (!is_quantize && n->since >= 23)) od = amd_attr_int(p, "output_dtype", 0);
  if (is_quantize && od != 0 && od != AMD_INT8 && od != AMD_UINT8)
    return amd_fail(st, "output_dtype %s is not implemented: QuantizeLinear here produces int8 and uint8",
                    amd_dtype_name((amd_dtype)od));
  if (!is_quantize && od != 0 && od != AMD_FLOAT)
    return amd_fail(st, "output_dtype %s is not implemented: DequantizeLinear here produces float",
                    amd_dtype_name((amd_dtype)od));
  a->output_dtype = (int)od;
  if (is_quantize && n->since >= 23) {
    int64_t prec = amd_attr_int(p, "precision", 0);
    if (prec != 0 && prec != AMD_FLOAT)
      return amd_fail(st, "precision %s is not implemented: the division x / y_scale is done in float",
                      amd_dtype_name((amd_dtype)prec));
  }
  /* saturate (19+) applies only to float8 outputs, which are refused */
  return 0;
}

static int quantize_parse(amd_node *n, const amd_attr_list *p, amd_status *st) { return q_parse(n, p, st, 1); }
static int dequantize_parse(amd_node *n, const amd_attr_list *p, amd_status *st) { return q_parse(n, p, st, 0); }

/* x viewed as [outer, dim, inner] around the quantization axis, and how an
 * element finds its scale. */
typedef struct q_view {
  int kind; /* 0 per tensor, 1 per axis, 2 blocked */
  int64_t outer, dim, inner, block, sdim;
} q_view;

/* Checks scale s and zero point z (may be NULL) against x and the attributes. */
static int q_layout(const amd_node *n, const amd_tensor *x, const amd_tensor *s, const amd_tensor *z,
                    q_view *v, amd_status *st) {
  const q_attrs *a = n->attrs;
  char s1[128], s2[128];
  memset(v, 0, sizeof *v);
  if (s->dtype != AMD_FLOAT)
    return amd_fail(st, "scale has dtype %s: only float scales are implemented", amd_dtype_name(s->dtype));
  if (z && !amd_same_shape(s, z) && !(amd_tensor_numel(s) == 1 && amd_tensor_numel(z) == 1))
    return amd_fail(st, "zero point has shape %s but scale has shape %s: they must have the same shape",
                    amd_shape_str(z, s1, sizeof s1), amd_shape_str(s, s2, sizeof s2));
  v->outer = amd_tensor_numel(x);
  v->dim = v->inner = 1;
  if (amd_tensor_numel(s) == 1 && a->block_size == 0) return 0;
  if (n->since < 13)
    return amd_fail(st, "scale has shape %s: version %d takes a scalar scale (per-axis needs opset 13)",
                    amd_shape_str(s, s1, sizeof s1), n->since);
  int64_t ax = a->axis < 0 ? a->axis + x->rank : a->axis;
  if (ax < 0 || ax >= x->rank)
    return amd_fail(st, "axis %lld is out of range for input x of shape %s (rank %d)", (long long)a->axis,
                    amd_shape_str(x, s1, sizeof s1), x->rank);
  v->outer = v->inner = 1;
  for (int d = 0; d < ax; d++) v->outer *= x->dims[d];
  for (int d = (int)ax + 1; d < x->rank; d++) v->inner *= x->dims[d];
  v->dim = x->dims[ax];
  if (a->block_size == 0) {
    if (s->rank != 1 || s->dims[0] != v->dim)
      return amd_fail(st,
                      "scale has shape %s: expected a scalar or, per axis %lld of x %s, a 1-D tensor of "
                      "length %lld",
                      amd_shape_str(s, s1, sizeof s1), (long long)ax, amd_shape_str(x, s2, sizeof s2),
                      (long long)v->dim);
    v->kind = 1;
    return 0;
  }
  int ok = s->rank == x->rank;
  for (int d = 0; ok && d < x->rank; d++)
    ok = d == ax ? s->dims[d] == (v->dim + a->block_size - 1) / a->block_size : s->dims[d] == x->dims[d];
  if (!ok)
    return amd_fail(st,
                    "scale has shape %s: blocked quantization of x %s along axis %lld with block_size %lld "
                    "needs x's shape with ceil(%lld / %lld) = %lld along the axis",
                    amd_shape_str(s, s1, sizeof s1), amd_shape_str(x, s2, sizeof s2), (long long)ax,
                    (long long)a->block_size, (long long)v->dim, (long long)a->block_size,
                    (long long)((v->dim + a->block_size - 1) / a->block_size));
  v->kind = 2;
  v->block = a->block_size;
  v->sdim = s->dims[ax];
  return 0;
}

/* The scale / zero-point index of element (o, d, i) of the view. */
static inline int64_t q_param_index(const q_view *v, int64_t o, int64_t d, int64_t i) {
  switch (v->kind) {
  case 1: return d;
  case 2: return (o * v->sdim + d / v->block) * v->inner + i;
  default: return 0;
  }
}

/* ---------------------------------------------------------------- QuantizeLinear */

static int quantize_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const q_attrs *a = n->attrs;
  if (n->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "QuantizeLinear needs inputs x and y_scale");
  const amd_tensor *x = in[0], *s = in[1], *z = amd_q_opt_in(n, in, 2);
  if (x->dtype != AMD_FLOAT && x->dtype != AMD_INT32)
    return amd_fail(st, "input x has dtype %s: QuantizeLinear here takes float and int32",
                    amd_dtype_name(x->dtype));
  amd_dtype yt = z ? z->dtype : a->output_dtype ? (amd_dtype)a->output_dtype : AMD_UINT8;
  if (!amd_q_is8(yt))
    return amd_fail(st, "y_zero_point has dtype %s: QuantizeLinear here produces only int8 and uint8",
                    amd_dtype_name(yt));
  if (z && a->output_dtype && (amd_dtype)a->output_dtype != z->dtype)
    return amd_fail(st, "output_dtype %s differs from y_zero_point's dtype %s",
                    amd_dtype_name((amd_dtype)a->output_dtype), amd_dtype_name(z->dtype));
  q_view v;
  if (q_layout(n, x, s, z, &v, st)) return -1;
  amd_tensor_set_shape(&out[0], yt, x->rank, x->dims);
  return 0;
}

static int quantize_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                            amd_status *st) {
  (void)ctx;
  const amd_tensor *x = in[0], *s = in[1], *z = amd_q_opt_in(n, in, 2);
  q_view v;
  if (q_layout(n, x, s, z, &v, st)) return -1;
  int32_t lo, hi;
  amd_q_range(out[0].dtype, &lo, &hi);
  const float *sd = s->data;
  for (int64_t o = 0, e = 0; o < v.outer; o++)
    for (int64_t d = 0; d < v.dim; d++)
      for (int64_t i = 0; i < v.inner; i++, e++) {
        int64_t p = q_param_index(&v, o, d, i);
        float xv = x->dtype == AMD_FLOAT ? ((const float *)x->data)[e] : (float)((const int32_t *)x->data)[e];
        float q = xv / sd[p]; /* float32 division, as the reference */
        amd_q_store(&out[0], e, amd_q_round_sat(q, z ? amd_q_value(z, p) : 0, lo, hi));
      }
  return 0;
}

/* ---------------------------------------------------------------- DequantizeLinear */

static int dequantize_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "DequantizeLinear needs inputs x and x_scale");
  const amd_tensor *x = in[0], *s = in[1], *z = amd_q_opt_in(n, in, 2);
  if (!amd_q_is8(x->dtype) && x->dtype != AMD_INT32)
    return amd_fail(st, "input x has dtype %s: DequantizeLinear here takes int8, uint8 and int32",
                    amd_dtype_name(x->dtype));
  if (z && z->dtype != x->dtype)
    return amd_fail(st, "x_zero_point has dtype %s but x has dtype %s: they must have the same type",
                    amd_dtype_name(z->dtype), amd_dtype_name(x->dtype));
  q_view v;
  if (q_layout(n, x, s, z, &v, st)) return -1;
  amd_tensor_set_shape(&out[0], AMD_FLOAT, x->rank, x->dims);
  return 0;
}

static int dequantize_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                              amd_status *st) {
  (void)ctx;
  const amd_tensor *x = in[0], *s = in[1], *z = amd_q_opt_in(n, in, 2);
  q_view v;
  if (q_layout(n, x, s, z, &v, st)) return -1;
  const float *sd = s->data;
  float *y = out[0].data;
  for (int64_t o = 0, e = 0; o < v.outer; o++)
    for (int64_t d = 0; d < v.dim; d++)
      for (int64_t i = 0; i < v.inner; i++, e++) {
        int64_t p = q_param_index(&v, o, d, i);
        int64_t diff = (int64_t)amd_q_value(x, e) - (z ? amd_q_value(z, p) : 0);
        y[e] = (float)diff * sd[p];
      }
  return 0;
}

/* ---------------------------------------------------------------- DynamicQuantizeLinear */

static int dynq_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 1 || !in[0]) return amd_fail(st, "DynamicQuantizeLinear needs input x");
  if (n->n_out != 3) return amd_fail(st, "DynamicQuantizeLinear has 3 outputs (y, y_scale, y_zero_point)");
  if (amd_require_float(in[0], "input x", st)) return -1;
  amd_tensor_set_shape(&out[0], AMD_UINT8, in[0]->rank, in[0]->dims);
  amd_tensor_set_shape(&out[1], AMD_FLOAT, 0, NULL);
  amd_tensor_set_shape(&out[2], AMD_UINT8, 0, NULL);
  return 0;
}

static int dynq_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  (void)n;
  (void)ctx;
  (void)st;
  const float *x = in[0]->data;
  const int64_t cnt = amd_tensor_numel(in[0]);
  float hi = 0, lo = 0; /* the range always includes 0 */
  for (int64_t i = 0; i < cnt; i++) {
    if (x[i] > hi) hi = x[i];
    if (x[i] < lo) lo = x[i];
  }
  float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  float izp = 0.0f - lo / scale;
  izp = izp < 0 ? 0 : izp > 255 ? 255 : izp;
  int32_t zp = (int32_t)rintf(izp);
  *(float *)out[1].data = scale;
  *(uint8_t *)out[2].data = (uint8_t)zp;
  uint8_t *y = out[0].data;
  for (int64_t i = 0; i < cnt; i++) {
    float q = x[i] / scale;
    y[i] = (uint8_t)amd_q_round_sat(q, zp, 0, 255);
  }
  return 0;
}

/* ---------------------------------------------------------------- descriptors */

void amd_dequant_axis(const amd_node *n, int rank, int64_t *axis, int64_t *block_size) {
  const q_attrs *a = n->attrs;
  *axis = a->axis < 0 && rank >= 0 ? a->axis + rank : a->axis;
  *block_size = a->block_size;
}

int amd_op_is_quantized(const amd_op *op) {
  if (op == &amd_op_QdqConv8 || op == &amd_op_QdqGemm8 || op == &amd_op_QdqMatMul8 || op == &amd_op_Q8fConv ||
      op == &amd_op_Q8fGemm || op == &amd_op_Q8fMatMul)
    return 1;
  switch (op->idx) {
  case AMD_OP_IDX_QuantizeLinear:
  case AMD_OP_IDX_DequantizeLinear:
  case AMD_OP_IDX_DynamicQuantizeLinear:
  case AMD_OP_IDX_QLinearConv:
  case AMD_OP_IDX_QLinearMatMul:
  case AMD_OP_IDX_ConvInteger:
  case AMD_OP_IDX_MatMulInteger: return 1;
  default: return 0;
  }
}

const amd_op amd_op_QuantizeLinear = {
    .name = "QuantizeLinear",
    .idx = AMD_OP_IDX_QuantizeLinear,
    .since = {10, 13, 19, 21, 23},
    .parse = quantize_parse,
    .infer = quantize_infer,
    .forward = quantize_forward,
};

const amd_op amd_op_DequantizeLinear = {
    .name = "DequantizeLinear",
    .idx = AMD_OP_IDX_DequantizeLinear,
    .since = {10, 13, 19, 21, 23},
    .parse = dequantize_parse,
    .infer = dequantize_infer,
    .forward = dequantize_forward,
};

const amd_op amd_op_DynamicQuantizeLinear = {
    .name = "DynamicQuantizeLinear",
    .idx = AMD_OP_IDX_DynamicQuantizeLinear,
    .since = {11},
    .infer = dynq_infer,
    .forward = dynq_forward,
};
