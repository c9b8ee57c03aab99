/* The calibration state of the float nodes quantized on the fly (Conv[q8f],
 * Gemm[q8f], MatMul[q8f]: src/ops/qlinear.c, "float nodes quantized on the
 * fly"), for the backends that run these ops with their own kernels (the
 * CUDA backend, cuda/ops/q8f.cu).
 *
 * The state of a node: calls = the forward calls seen, and the data range
 * [lo, hi] (it includes 0): while calls < amd_q8f_calib_calls(), each forward
 * widens it to the min and max of its data input (NaN ignored) and counts the
 * call; then it is frozen. The node's attributes start with the float op's
 * own attribute struct (amd_conv_attrs for Conv, amd_gemm_attrs for Gemm), so
 * the float op's code reads n->attrs as its own. */
#ifndef AMD_OPS_Q8F_H
#define AMD_OPS_Q8F_H

#include "op.h"

typedef struct amd_q8f_state {
  int calls;
  double lo, hi;
} amd_q8f_state;

/* How many forward calls calibrate the data range (AMD_Q8_CALIB_CALLS). */
int amd_q8f_calib_calls(void);
/* The state of a Conv[q8f] / Gemm[q8f] / MatMul[q8f] node, read and set. */
void amd_q8f_get_state(const amd_node *n, amd_q8f_state *s);
void amd_q8f_set_state(const amd_node *n, const amd_q8f_state *s);

#endif
