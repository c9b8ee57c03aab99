/* CUDA kernels of ReduceMean, ReduceSum, ReduceMax, ReduceMin,
 * ReduceSumSquare, ReduceL2, ReduceLogSumExp, ReduceL1, ReduceLogSum and
 * ReduceProd over trailing axes (src/ops/reduce.c); other axes and the noop
 * form run on the host fallback.
 *
 * Forward: one thread per output row sums (or folds) its `inner` elements in
 * order, in double, as the CPU does (so Prod, L1 and LogSum are the CPU's
 * bits). Backward: one thread per input element (Sum, Mean, SumSquare, L2,
 * LogSumExp, L1, LogSum: the formulas of reduce.c), or per output row for
 * Max and Min (the whole gradient to the first extremum, in memory order)
 * and Prod (the row's zero count and product of its other elements first,
 * in order: g times the product of the others, exact with zeros). */
#include "ops_internal.h"

enum { RK_MEAN, RK_SUM, RK_MAX, RK_SUMSQ, RK_L2, RK_MIN, RK_LSE, RK_L1, RK_LOGSUM, RK_PROD };

static int red_kind(const amd_node *n) {
  switch (n->op->idx) {
  case AMD_OP_IDX_ReduceSum:
    return RK_SUM;
  case AMD_OP_IDX_ReduceMax:
    return RK_MAX;
  case AMD_OP_IDX_ReduceSumSquare:
    return RK_SUMSQ;
  case AMD_OP_IDX_ReduceL2:
    return RK_L2;
  case AMD_OP_IDX_ReduceMin:
    return RK_MIN;
  case AMD_OP_IDX_ReduceLogSumExp:
    return RK_LSE;
  case AMD_OP_IDX_ReduceL1:
    return RK_L1;
  case AMD_OP_IDX_ReduceLogSum:
    return RK_LOGSUM;
  case AMD_OP_IDX_ReduceProd:
    return RK_PROD;
  default: /* ReduceMean */
    return RK_MEAN;
  }
}

/* The [outer, inner] view when the reduced axes are exactly the trailing
 * ones (dims of size 1 ignored); 0 when not (and for the noop form). */
static int red_view(const amd_node *n, const amd_tensor *const *in, int64_t *outer, int64_t *inner) {
  amd_status st;
  int mask[AMD_MAX_RANK];
  const amd_tensor *x = in[0];
  if (amd_red_mask(n, in, mask, &st) != 0) return 0;
  int k = x->rank;
  while (k > 0 && (mask[k - 1] || x->dims[k - 1] == 1)) k--;
  for (int d = 0; d < k; d++)
    if (mask[d] && x->dims[d] != 1) return 0;
  *outer = prod(x->dims, 0, k);
  *inner = prod(x->dims, k, x->rank);
  return *inner > 0;
}

__global__ void k_red_fwd(int kind, int64_t outer, int64_t inner, const float *x, float *y) {
  AMD_CU_LOOP(o, outer) {
    const float *row = x + o * inner;
    double acc = 0, m = -INFINITY;
    if (kind == RK_MIN) {
      acc = INFINITY;
      for (int64_t i = 0; i < inner; i++) {
        double v = row[i];
        if (v < acc || v != v) acc = v;
      }
    } else if (kind == RK_MAX) {
      acc = -INFINITY;
      for (int64_t i = 0; i < inner; i++) {
        double v = row[i];
        if (v > acc || v != v) acc = v;
      }
    } else if (kind == RK_LSE) {
      for (int64_t i = 0; i < inner; i++) {
        double v = row[i];
        if (v > m || v != v) m = v;
      }
      double s = isfinite(m) ? m : 0.0;
      for (int64_t i = 0; i < inner; i++) acc += exp((double)row[i] - s);
      acc = isfinite(m) ? log(acc) + m : m;
    } else if (kind == RK_MEAN || kind == RK_SUM || kind == RK_LOGSUM) {
      for (int64_t i = 0; i < inner; i++) acc += row[i];
      if (kind == RK_MEAN) acc /= (double)inner;
      if (kind == RK_LOGSUM) acc = log(acc);
    } else if (kind == RK_L1) {
      for (int64_t i = 0; i < inner; i++) acc += fabs((double)row[i]);
    } else if (kind == RK_PROD) {
      acc = 1;
      for (int64_t i = 0; i < inner; i++) acc *= (double)row[i];
    } else {
      for (int64_t i = 0; i < inner; i++) acc += (double)row[i] * (double)row[i];
      if (kind == RK_L2) acc = sqrt(acc);
    }
    y[o] = (float)acc;
  }
}

__global__ void k_red_bwd(int kind, int64_t total, int64_t inner, double scale, const float *x,
                          const float *y, const float *g, float *dx) {
  AMD_CU_LOOP(i, total) {
    int64_t o = i / inner;
    double gv = g[o], v = x[i], d;
    if (kind == RK_MEAN)
      d = gv * scale;
    else if (kind == RK_SUM)
      d = gv;
    else if (kind == RK_SUMSQ)
      d = 2.0 * gv * v;
    else if (kind == RK_L2)
      d = y[o] != 0 ? gv * v / (double)y[o] : 0.0;
    else if (kind == RK_L1)
      d = v > 0 ? gv : v < 0 ? -gv : 0.0;
    else if (kind == RK_LOGSUM)
      d = gv / exp((double)y[o]);
    else
      d = gv * exp(v - (double)y[o]); /* RK_LSE */
    dx[i] += (float)d;
  }
}

/* Max, Min: the whole gradient of a row to its first element equal to the extremum. */
__global__ void k_red_bwd_first(int64_t outer, int64_t inner, const float *x, const float *y, const float *g,
                                float *dx) {
  AMD_CU_LOOP(o, outer) {
    const float *row = x + o * inner;
    const float m = y[o];
    for (int64_t i = 0; i < inner; i++)
      if (row[i] == m || (row[i] != row[i] && m != m)) {
        dx[o * inner + i] += g[o];
        break;
      }
  }
}

/* Prod: per row, its zero count and the product of its nonzero elements (in
 * order, as reduce.c's aux); then g times the product of the others. */
__global__ void k_red_bwd_prod(int64_t outer, int64_t inner, const float *x, const float *g, float *dx) {
  AMD_CU_LOOP(o, outer) {
    const float *row = x + o * inner;
    double zc = 0, pnz = 1;
    for (int64_t i = 0; i < inner; i++) {
      if (row[i] == 0)
        zc += 1;
      else
        pnz *= row[i];
    }
    const double gv = g[o];
    for (int64_t i = 0; i < inner; i++) {
      if (zc == 0)
        dx[o * inner + i] += (float)(gv * (pnz / row[i]));
      else if (zc == 1 && row[i] == 0)
        dx[o * inner + i] += (float)(gv * pnz);
    }
  }
}

int red_forward(FWD_ARGS) {
  (void)ctx;
  int64_t outer, inner;
  if (!red_view(n, in, &outer, &inner)) return amd_fail(st, "%s: not over trailing axes", n->op->name);
  if (!outer) return 0;
  k_red_fwd<<<amd_cu_blocks(outer, 128), 128, 0, amd_cu.stream>>>(red_kind(n), outer, inner, F(in[0]),
                                                                  F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_red_fwd", st);
  return 0;
}

int red_backward(BWD_ARGS) {
  (void)ctx;
  if (!dout[0] || !din[0]) return 0;
  int64_t outer, inner;
  if (!red_view(n, in, &outer, &inner)) return amd_fail(st, "%s: not over trailing axes", n->op->name);
  int64_t total = outer * inner;
  if (!total) return 0;
  int kind = red_kind(n);
  if (kind == RK_MIN || kind == RK_MAX) {
    k_red_bwd_first<<<amd_cu_blocks(outer, 128), 128, 0, amd_cu.stream>>>(outer, inner, F(in[0]), F(&out[0]),
                                                                          F(dout[0]), F(din[0]));
    AMD_CUDA_CHECK_LAUNCH("k_red_bwd_first", st);
    return 0;
  }
  if (kind == RK_PROD) {
    k_red_bwd_prod<<<amd_cu_blocks(outer, 128), 128, 0, amd_cu.stream>>>(outer, inner, F(in[0]), F(dout[0]),
                                                                         F(din[0]));
    AMD_CUDA_CHECK_LAUNCH("k_red_bwd_prod", st);
    return 0;
  }
  k_red_bwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(
      kind, total, inner, (double)outer / (double)total, F(in[0]), F(&out[0]), F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_red_bwd", st);
  return 0;
}

int red_supported(const amd_node *n, const amd_tensor *const *in) {
  int64_t o, i;
  return !in || (in[0] && red_view(n, in, &o, &i));
}
