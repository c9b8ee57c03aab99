/* Shared pieces of the quantized ops (quant.c: QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear; qlinear.c: QLinearConv,
 * QLinearMatMul, ConvInteger, MatMulInteger) and the trainer's test for them. */
#ifndef AMD_OPS_QUANT_H
#define AMD_OPS_QUANT_H

#include <math.h>

#include "op.h"

/* 1 for the ops of quant.c and qlinear.c: they have no backward, and the
 * trainer refuses a model whose loss depends on one (train/trainer.c). */
int amd_op_is_quantized(const amd_op *op);

/* The internal ops of the q8 modes (qlinear.c, "QDQ nodes of the q8 modes"):
 * a QDQ Conv / Gemm / MatMul computed on the codes with the mode's table. */
extern const amd_op amd_op_QdqConv8, amd_op_QdqGemm8, amd_op_QdqMatMul8;
/* ... and a float Conv / Gemm / MatMul quantized on the fly (q8f.c): Conv[q8f], Gemm[q8f], MatMul[q8f]. */
extern const amd_op amd_op_Q8fConv, amd_op_Q8fGemm, amd_op_Q8fMatMul;
/* Turns float Conv / Gemm / MatMul node n (in a q8 mode) into its q8f op. */
int amd_q8_float_node(amd_node *n, amd_status *st);
/* The backward of those nodes (train --q8-grad): the clipped straight-through
 * estimator (the default) or the table-derived gradients (q8f.c, "the
 * table-derived backward"; docs/quantized.md). amd_q8_float_set_grad sets it
 * and returns 1 for a q8f node, 0 (nothing set) for any other;
 * amd_q8_float_grad reads it (AMD_Q8_GRAD_STE for any other node). A
 * backend's native q8f kernels must leave AMD_Q8_GRAD_TABLE nodes to the
 * host or implement it (the CUDA backend implements it: cuda/ops/q8f.cu). */
enum { AMD_Q8_GRAD_STE = 0, AMD_Q8_GRAD_TABLE = 1 };
int amd_q8_float_set_grad(amd_node *n, int grad);
int amd_q8_float_grad(const amd_node *n);
/* Their data range's calibration (--q8-calib, docs/quantized.md): pct 0 for
 * min / max (the default), else the percentile P (50 < P <= 100; q8f.h,
 * amd_q8f_percentile_range). Returns 1 for a q8f node, 0 (nothing set) for
 * any other. */
int amd_q8_float_set_calib(amd_node *n, double pct);
/* 1 for a Conv[q8f] / Gemm[q8f] / MatMul[q8f] node (its calibration state:
 * q8f.h, amd_q8f_get_state / amd_q8f_set_state). */
int amd_q8_float_is(const amd_node *n);

/* A DequantizeLinear node's axis (normalised against rank when rank >= 0)
 * and block_size. */
void amd_dequant_axis(const amd_node *n, int rank, int64_t *axis, int64_t *block_size);

static inline int amd_q_is8(amd_dtype t) { return t == AMD_INT8 || t == AMD_UINT8; }

/* Input k of node n, or NULL where the node has no such input. */
static inline const amd_tensor *amd_q_opt_in(const amd_node *n, const amd_tensor *const *in, int k) {
  return n->n_in > k ? in[k] : NULL;
}

/* The value of element i of an int8 / uint8 / int32 tensor. */
static inline int32_t amd_q_value(const amd_tensor *t, int64_t i) {
  switch (t->dtype) {
  case AMD_INT8: return ((const int8_t *)t->data)[i];
  case AMD_UINT8: return ((const uint8_t *)t->data)[i];
  default: return ((const int32_t *)t->data)[i];
  }
}

/* saturate(round_half_even(q) + zp) into [lo, hi]; q is the real value in
 * quantization steps (x / scale). rint rounds half to even in the default
 * rounding mode. NaN gives zp (as q = 0 would). */
static inline int32_t amd_q_round_sat(double q, int32_t zp, int32_t lo, int32_t hi) {
  if (isnan(q)) q = 0;
  double r = rint(q) + (double)zp;
  return r < lo ? lo : r > hi ? hi : (int32_t)r;
}

/* The code range of an int8 / uint8 dtype. */
static inline void amd_q_range(amd_dtype t, int32_t *lo, int32_t *hi) {
  *lo = t == AMD_INT8 ? -128 : 0;
  *hi = t == AMD_INT8 ? 127 : 255;
}

/* Stores v (already in range) as element i of an int8 / uint8 tensor. */
static inline void amd_q_store(amd_tensor *t, int64_t i, int32_t v) {
  if (t->dtype == AMD_INT8)
    ((int8_t *)t->data)[i] = (int8_t)v;
  else
    ((uint8_t *)t->data)[i] = (uint8_t)v;
}

#endif
