/* CUDA kernels of ReduceMean, ReduceSum, ReduceMax, ReduceMin,
 * ReduceSumSquare, ReduceL2, ReduceLogSumExp, ReduceL1, ReduceLogSum and
 * ReduceProd (src/ops/reduce.c) where the reduced axes are one run of
 * adjacent axes (dims of size 1 ignored): the [outer, len, inner] view, len
 * reduced (trailing axes: inner = 1; a middle axis such as the channels: the
 * sums run at stride inner). Other axes and the noop form run on the host
 * fallback.
 *
 * Forward: one thread per output element sums (or folds) its len elements in
 * order, in double, as the CPU does (so the same bits). Backward: one thread
 * per input element (Sum, Mean, SumSquare, L2, LogSumExp, L1, LogSum: the
 * formulas of reduce.c), or per output element for Max and Min (the whole
 * gradient to the first extremum, in memory order) and Prod (its zero count
 * and the product of its other elements first, in order: g times the product
 * of the others, exact with zeros). */
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

/* The [outer, len, inner] view when the reduced axes are one run of
 * adjacent axes, dims of size 1 ignored (len: the reduced elements of an
 * output); 0 when not (and for the noop form and an empty reduction). */
static int red_view(const amd_node *n, const amd_tensor *const *in, int64_t *outer, int64_t *len,
                    int64_t *inner) {
  amd_status st;
  int mask[AMD_MAX_RANK];
  const amd_tensor *x = in[0];
  if (amd_red_mask(n, in, mask, &st) != 0) return 0;
  int d0 = x->rank, d1 = x->rank; /* the run: [d0, d1) of the dims of size > 1 */
  for (int d = 0; d < x->rank; d++)
    if (mask[d] && x->dims[d] != 1) {
      if (d0 == x->rank) d0 = d;
      d1 = d + 1;
    }
  for (int d = d0; d < d1; d++)
    if (!mask[d] && x->dims[d] != 1) return 0;
  *outer = prod(x->dims, 0, d0);
  *len = prod(x->dims, d0, d1);
  *inner = prod(x->dims, d1, x->rank);
  return *len > 0;
}

/* output element o of the view: its first input element and the stride of its len elements */
__device__ __forceinline__ const float *red_row(const float *x, int64_t o, int64_t len, int64_t inner) {
  return x + (o / inner) * len * inner + o % inner;
}

__global__ void k_red_fwd(int kind, int64_t nout, int64_t len, int64_t inner, const float *x, float *y) {
  AMD_CU_LOOP(o, nout) {
    const float *row = red_row(x, o, len, inner);
    double acc = 0, m = -INFINITY;
    if (kind == RK_MIN) {
      acc = INFINITY;
      for (int64_t i = 0; i < len; i++) {
        double v = row[i * inner];
        if (v < acc || v != v) acc = v;
      }
    } else if (kind == RK_MAX) {
      acc = -INFINITY;
      for (int64_t i = 0; i < len; i++) {
        double v = row[i * inner];
        if (v > acc || v != v) acc = v;
      }
    } else if (kind == RK_LSE) {
      for (int64_t i = 0; i < len; i++) {
        double v = row[i * inner];
        if (v > m || v != v) m = v;
      }
      double s = isfinite(m) ? m : 0.0;
      for (int64_t i = 0; i < len; i++) acc += exp((double)row[i * inner] - s);
      acc = isfinite(m) ? log(acc) + m : m;
    } else if (kind == RK_MEAN || kind == RK_SUM || kind == RK_LOGSUM) {
      for (int64_t i = 0; i < len; i++) acc += row[i * inner];
      if (kind == RK_MEAN) acc /= (double)len;
      if (kind == RK_LOGSUM) acc = log(acc);
    } else if (kind == RK_L1) {
      for (int64_t i = 0; i < len; i++) acc += fabs((double)row[i * inner]);
    } else if (kind == RK_PROD) {
      acc = 1;
      for (int64_t i = 0; i < len; i++) acc *= (double)row[i * inner];
    } else {
      for (int64_t i = 0; i < len; i++) acc += (double)row[i * inner] * (double)row[i * inner];
      if (kind == RK_L2) acc = sqrt(acc);
    }
    y[o] = (float)acc;
  }
}

__global__ void k_red_bwd(int kind, int64_t total, int64_t len, int64_t inner, double scale, const float *x,
                          const float *y, const float *g, float *dx) {
  AMD_CU_LOOP(i, total) {
    const int64_t o = i / (len * inner) * inner + i % inner;
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

/* Max, Min: the whole gradient of an output to its first element equal to the extremum. */
__global__ void k_red_bwd_first(int64_t nout, int64_t len, int64_t inner, const float *x, const float *y,
                                const float *g, float *dx) {
  AMD_CU_LOOP(o, nout) {
    const float *row = red_row(x, o, len, inner);
    const float m = y[o];
    for (int64_t i = 0; i < len; i++) {
      const float v = row[i * inner];
      if (v == m || (v != v && m != m)) {
        dx[row - x + i * inner] += g[o];
        break;
      }
    }
  }
}

/* Prod: per output, its zero count and the product of its nonzero elements
 * (in order, as reduce.c's aux); then g times the product of the others. */
__global__ void k_red_bwd_prod(int64_t nout, int64_t len, int64_t inner, const float *x, const float *g,
                               float *dx) {
  AMD_CU_LOOP(o, nout) {
    const float *row = red_row(x, o, len, inner);
    double zc = 0, pnz = 1;
    for (int64_t i = 0; i < len; i++) {
      if (row[i * inner] == 0)
        zc += 1;
      else
        pnz *= row[i * inner];
    }
    const double gv = g[o];
    float *drow = dx + (row - x);
    for (int64_t i = 0; i < len; i++) {
      const float v = row[i * inner];
      if (zc == 0)
        drow[i * inner] += (float)(gv * (pnz / v));
      else if (zc == 1 && v == 0)
        drow[i * inner] += (float)(gv * pnz);
    }
  }
}

int red_forward(FWD_ARGS) {
  (void)ctx;
  int64_t outer, len, inner;
  if (!red_view(n, in, &outer, &len, &inner)) return amd_fail(st, "%s: not over adjacent axes", n->op->name);
  const int64_t nout = outer * inner;
  if (!nout) return 0;
  k_red_fwd<<<amd_cu_blocks(nout, 128), 128, 0, amd_cu.stream>>>(red_kind(n), nout, len, inner, F(in[0]),
                                                                 F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_red_fwd", st);
  return 0;
}

int red_backward(BWD_ARGS) {
  (void)ctx;
  if (!dout[0] || !din[0]) return 0;
  int64_t outer, len, inner;
  if (!red_view(n, in, &outer, &len, &inner)) return amd_fail(st, "%s: not over adjacent axes", n->op->name);
  const int64_t nout = outer * inner, total = nout * len;
  if (!total) return 0;
  const int kind = red_kind(n);
  if (kind == RK_MIN || kind == RK_MAX) {
    k_red_bwd_first<<<amd_cu_blocks(nout, 128), 128, 0, amd_cu.stream>>>(nout, len, inner, F(in[0]),
                                                                         F(&out[0]), F(dout[0]), F(din[0]));
    AMD_CUDA_CHECK_LAUNCH("k_red_bwd_first", st);
    return 0;
  }
  if (kind == RK_PROD) {
    k_red_bwd_prod<<<amd_cu_blocks(nout, 128), 128, 0, amd_cu.stream>>>(nout, len, inner, F(in[0]),
                                                                        F(dout[0]), F(din[0]));
    AMD_CUDA_CHECK_LAUNCH("k_red_bwd_prod", st);
    return 0;
  }
  /* Mean's scale as the CPU takes it: outputs / inputs */
  k_red_bwd<<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(
      kind, total, len, inner, (double)nout / (double)total, F(in[0]), F(&out[0]), F(dout[0]), F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_red_bwd", st);
  return 0;
}

int red_supported(const amd_node *n, const amd_tensor *const *in) {
  int64_t o, l, i;
  return !in || (in[0] && red_view(n, in, &o, &l, &i));
}
