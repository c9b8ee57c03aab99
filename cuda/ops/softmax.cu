/* CUDA kernels of Softmax, LogSoftmax and CumSum (src/ops/softmax.c).
 *
 * CumSum (float; the axis on the host): one thread per column of the
 * [outer, len, inner] view runs the sum along the axis in double, in the
 * CPU's order (so the same bits); exclusive leaves the element out, reverse
 * runs from the end. Backward: the CumSum of dY with the same exclusive and
 * the opposite reverse, added into dX (or, written over, 0 + v). */
#include "ops_internal.h"

/* ================================================================ Softmax, LogSoftmax */

__global__ void k_sm_fwd(int64_t outer, int64_t len, int64_t inner, int is_log, const float *x, float *y) {
  AMD_CU_LOOP(col, outer * inner) {
    int64_t r = col / inner, j = col % inner;
    const float *xr = x + r * len * inner + j;
    float *yr = y + r * len * inner + j;
    float m = xr[0];
    for (int64_t i = 1; i < len; i++)
      if (xr[i * inner] > m) m = xr[i * inner];
    double s = 0;
    for (int64_t i = 0; i < len; i++) s += expf(xr[i * inner] - m);
    if (is_log) {
      float ls = (float)log(s);
      for (int64_t i = 0; i < len; i++) yr[i * inner] = (xr[i * inner] - m) - ls;
    } else {
      float inv = (float)(1.0 / s);
      for (int64_t i = 0; i < len; i++) yr[i * inner] = expf(xr[i * inner] - m) * inv;
    }
  }
}

__global__ void k_sm_bwd(int64_t outer, int64_t len, int64_t inner, int is_log, const float *y,
                         const float *g, float *dx) {
  AMD_CU_LOOP(col, outer * inner) {
    int64_t r = col / inner, j = col % inner, base = r * len * inner + j;
    double acc = 0;
    for (int64_t i = 0; i < len; i++) {
      int64_t k = base + i * inner;
      acc += is_log ? (double)g[k] : (double)g[k] * y[k];
    }
    for (int64_t i = 0; i < len; i++) {
      int64_t k = base + i * inner;
      dx[k] += is_log ? (float)(g[k] - exp((double)y[k]) * acc) : (float)(y[k] * (g[k] - acc));
    }
  }
}

int sm_forward(FWD_ARGS) {
  (void)ctx;
  int64_t outer, len, inner;
  if (amd_sm_view(n, in[0], &outer, &len, &inner, st)) return -1;
  if (!amd_tensor_numel(in[0]) || !len) return 0;
  k_sm_fwd<<<amd_cu_blocks(outer * inner, 128), 128, 0, amd_cu.stream>>>(
      outer, len, inner, n->op->idx == AMD_OP_IDX_LogSoftmax, F(in[0]), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_sm_fwd", st);
  return 0;
}

int sm_backward(BWD_ARGS) {
  (void)ctx;
  if (!dout[0] || !din[0]) return 0;
  int64_t outer, len, inner;
  if (amd_sm_view(n, in[0], &outer, &len, &inner, st)) return -1;
  if (!amd_tensor_numel(in[0]) || !len) return 0;
  k_sm_bwd<<<amd_cu_blocks(outer * inner, 128), 128, 0, amd_cu.stream>>>(
      outer, len, inner, n->op->idx == AMD_OP_IDX_LogSoftmax, F(&out[0]), F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_sm_bwd", st);
  return 0;
}

/* ================================================================ CumSum */

/* y (+)= the running sums of x along the view's len axis; !acc: y = 0 + sum. */
__global__ void k_cumsum(int64_t outer, int64_t len, int64_t inner, int excl, int rev, int add, bool acc,
                         const float *x, float *y) {
  AMD_CU_LOOP(col, outer * inner) {
    const int64_t o = col / inner, j = col % inner;
    double s = 0;
    for (int64_t k = 0; k < len; k++) {
      const int64_t i = o * len * inner + (rev ? len - 1 - k : k) * inner + j;
      const double v = x[i];
      if (!excl) s += v;
      if (!add)
        y[i] = (float)s;
      else
        y[i] = (acc ? y[i] : 0.0f) + (float)s;
      if (excl) s += v;
    }
  }
}

static int cumsum_launch(const amd_node *n, const amd_tensor *const *in, const float *x, float *y, int bwd,
                         bool acc, amd_status *st) {
  const amd_cumsum_attrs *a = (const amd_cumsum_attrs *)n->attrs;
  int64_t outer, len, inner;
  if (amd_cumsum_view(in, &outer, &len, &inner, st)) return -1;
  if (!outer || !len || !inner) return 0;
  /* backward: each x_i feeds the sums after it (before it when reversed) */
  const int rev = bwd ? !a->reverse : a->reverse;
  k_cumsum<<<amd_cu_blocks(outer * inner, 128), 128, 0, amd_cu.stream>>>(outer, len, inner, a->exclusive, rev,
                                                                         bwd, acc, x, y);
  AMD_CUDA_CHECK_LAUNCH("k_cumsum", st);
  return 0;
}

int cumsum_forward(FWD_ARGS) {
  (void)ctx;
  return cumsum_launch(n, in, F(in[0]), F(&out[0]), 0, true, st);
}

int cumsum_backward(BWD_ARGS) {
  (void)out;
  if (!dout[0] || !din[0]) return 0;
  return cumsum_launch(n, in, F(dout[0]), F(din[0]), 1, acc_of(ctx, 0), st);
}
