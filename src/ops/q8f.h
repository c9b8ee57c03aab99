/* The calibration state of the float nodes quantized on the fly (Conv[q8f],
 * Gemm[q8f], MatMul[q8f]: src/ops/q8f.c), for the backends that run these ops with their own kernels (the
 * CUDA backend, cuda/ops/q8f.cu).
 *
 * The state of a node: calls = the forward calls seen, and the data range
 * [lo, hi] (it includes 0): while calls < amd_q8f_calib_calls(), each forward
 * widens it to the min and max of its data input (NaN ignored), or with
 * --q8-calib percentile:P to the call's percentile range
 * (amd_q8f_percentile_range), and counts the call; then it is frozen. The node's attributes start with the float op's
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
/* The calibration rule of node n (--q8-calib, amd_q8_float_set_calib): 0 for
 * min / max, else the percentile's fraction q = P / 100 (0.5 < q <= 1). */
double amd_q8f_calib_q(const amd_node *n);

/* The bins of the percentile calibration's histogram. */
#define AMD_Q8F_BINS 2048

/* One calibrating call's range under percentile q (docs/quantized.md, "A
 * float Conv / Gemm / MatMul"): over the n values x (NaN ignored), mn and mx
 * their min and max; when both are finite and differ, a histogram of
 * AMD_Q8F_BINS bins over [mn, mx], value v in bin
 *   b = min(BINS - 1, (int)(((double)v - mn) * (BINS / (mx - mn)))),
 * edges e(j) = mn + (mx - mn) * j / BINS (e(BINS) = mx), k = ceil(q * count):
 * hi = e(b + 1) for the lowest bin b whose count from the bottom up to b
 * reaches k, lo = e(b) for the highest bin b whose count from the top down to
 * b reaches k; otherwise lo = mn, hi = mx. Every step in double, each
 * operation rounded once (the CUDA kernels make the same bits). Returns the
 * count of values that are not NaN (0: no range, lo and hi untouched). */
int64_t amd_q8f_percentile_range(const float *x, int64_t n, double q, double *lo, double *hi);

/* The state of a Conv[q8f] / Gemm[q8f] / MatMul[q8f] node, read and set. */
void amd_q8f_get_state(const amd_node *n, amd_q8f_state *s);
void amd_q8f_set_state(const amd_node *n, const amd_q8f_state *s);

#endif
