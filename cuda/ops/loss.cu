/* CUDA kernels of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (src/ops/loss.c), float input / scores.
 *
 * The target (int32 / int64) and the optional weight are read on the host
 * (dispatch.cu's host_inputs): the host checks the classes
 * (amd_loss_targets, as the CPU) and uploads each position's class (-1:
 * ignored) and weight; the weight sum, for the mean, stays on the host.
 * Forward: one thread per position (n, d) takes, for SCE, the log-softmax
 * along C in double (max, sum of exp, log: the CPU's formulas and order),
 * writes the log_prob output when there is one, and the position's loss
 * -weight * logprob[target]; reduction none writes it, sum and mean add the
 * positions' losses in one block (a fixed order: reproducible, not the
 * CPU's order) and divide by the weight sum for the mean. Backward: one
 * thread per position recomputes its softmax and adds c (softmax -
 * onehot(target)) (SCE) or -c at the target (NLL), with c = weight times
 * the output's gradient (over the weight sum for the mean), plus, when
 * log_prob has a gradient G, G - softmax sum_c G. Each position owns its
 * elements of dX: no atomics. */
#include <vector>

#include "../train_cuda.h" /* amd_cu_from_host */
#include "ops_internal.h"

enum { LOSS_THREADS = 256 };

/* The per-position classes and weights on the device: cls = p (np int64),
 * wt = p + np (np doubles, in the same block). */
struct loss_plan {
  amd_loss_geom g;
  double wsum;
  scratch s;
  const int64_t *cls() const { return (const int64_t *)s.p; }
  const double *wt() const { return (const double *)s.p + g.n * g.d; }
};

static int loss_plan_make(const amd_node *n, const amd_tensor *const *in, loss_plan &lp, amd_status *st) {
  if (amd_loss_check(n, in, &lp.g, st)) return -1;
  const int64_t np = lp.g.n * lp.g.d;
  std::vector<int64_t> cls((size_t)(np > 0 ? np : 1));
  std::vector<double> wt((size_t)(np > 0 ? np : 1));
  if (amd_loss_targets(n, in, &lp.g, cls.data(), wt.data(), &lp.wsum, st)) return -1;
  if (np == 0) return 0;
  const size_t half = (size_t)np * 8;
  if (lp.s.get(2 * half, st)) return -1;
  if (amd_cu_from_host(lp.s.p, cls.data(), half, st) ||
      amd_cu_from_host((char *)lp.s.p + half, wt.data(), half, st))
    return -1;
  return 0;
}

/* the log-softmax of the position at x + base (c classes d apart): max and log of the sum of exp */
__device__ __forceinline__ void loss_lse(const float *x, int64_t base, int64_t c, int64_t d, double *m,
                                         double *ls) {
  double mm = -INFINITY, s = 0;
  for (int64_t k = 0; k < c; k++) mm = fmax(mm, (double)x[base + k * d]);
  for (int64_t k = 0; k < c; k++) s += exp((double)x[base + k * d] - mm);
  *m = mm, *ls = log(s);
}

/* per position: loss into y (reduction none) or part (doubles); log_prob into lp when given */
__global__ void k_loss_fwd(amd_loss_geom g, int sce, const float *x, const int64_t *cls, const double *wt,
                           float *y, double *part, float *lp) {
  AMD_CU_LOOP(p, g.n * g.d) {
    const int64_t b = p / g.d, dd = p % g.d, base = b * g.c * g.d + dd, t = cls[p];
    double m = 0, ls = 0, l = 0;
    if (sce) {
      loss_lse(x, base, g.c, g.d, &m, &ls);
      if (lp)
        for (int64_t k = 0; k < g.c; k++) lp[base + k * g.d] = (float)((double)x[base + k * g.d] - m - ls);
    }
    if (t >= 0) {
      const double v = x[base + t * g.d];
      l = -wt[p] * (sce ? v - m - ls : v);
    }
    if (y)
      y[p] = (float)l;
    else
      part[p] = l;
  }
}

/* y[0] = the sum of part[0 .. np) (over div for the mean): contiguous chunks per thread, then in thread order
 */
__global__ void k_loss_sum(int64_t np, const double *part, double div, float *y) {
  __shared__ double sh[LOSS_THREADS];
  const int64_t per = (np + LOSS_THREADS - 1) / LOSS_THREADS, i0 = threadIdx.x * per;
  double s = 0;
  for (int64_t i = i0; i < i0 + per && i < np; i++) s += part[i];
  sh[threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int k = 0; k < LOSS_THREADS; k++) t += sh[k];
    y[0] = (float)(t / div);
  }
}

__global__ void k_loss_bwd(amd_loss_geom g, int sce, int reduction, double wsum, const float *x,
                           const int64_t *cls, const double *wt, const float *dy, const float *dlp,
                           float *dx) {
  AMD_CU_LOOP(p, g.n * g.d) {
    const int64_t b = p / g.d, dd = p % g.d, base = b * g.c * g.d + dd, t = cls[p];
    double coef = 0; /* dL / d(the loss at p) times its weight */
    if (dy && t >= 0) {
      double gy = reduction == AMD_LOSS_NONE ? (double)dy[p] : (double)dy[0];
      if (reduction == AMD_LOSS_MEAN) gy /= wsum;
      coef = gy * wt[p];
    }
    if (!sce) {
      if (t >= 0) dx[base + t * g.d] += (float)(-coef);
      continue;
    }
    double m, ls, gsum = 0;
    loss_lse(x, base, g.c, g.d, &m, &ls);
    for (int64_t k = 0; dlp && k < g.c; k++) gsum += dlp[base + k * g.d];
    for (int64_t k = 0; k < g.c; k++) {
      const int64_t e = base + k * g.d;
      const double sm = exp((double)x[e] - m - ls);
      double v = coef * (sm - (k == t ? 1.0 : 0.0));
      if (dlp) v += (double)dlp[e] - sm * gsum;
      dx[e] += (float)v;
    }
  }
}

static bool loss_is_sce(const amd_node *n) { return n->op->idx == AMD_OP_IDX_SoftmaxCrossEntropyLoss; }

int loss_forward(FWD_ARGS) {
  (void)ctx;
  const amd_loss_attrs *a = (const amd_loss_attrs *)n->attrs;
  loss_plan lp;
  if (loss_plan_make(n, in, lp, st)) return -1;
  const int64_t np = lp.g.n * lp.g.d;
  float *logp = n->n_out > 1 && out[1].data ? F(&out[1]) : NULL;
  const bool none = a->reduction == AMD_LOSS_NONE;
  if (np == 0) { /* no position: the sum 0, the mean 0 / 0 (the CPU's NaN), an empty log_prob */
    if (!none) {
      const float v = (float)(0.0 / (a->reduction == AMD_LOSS_MEAN ? lp.wsum : 1.0));
      if (amd_cu_from_host(out[0].data, &v, sizeof v, st)) return -1;
    }
    return 0;
  }
  scratch part;
  if (!none && part.get((size_t)np * sizeof(double), st)) return -1;
  k_loss_fwd<<<amd_cu_blocks(np, 128), 128, 0, amd_cu.stream>>>(
      lp.g, loss_is_sce(n), F(in[0]), lp.cls(), lp.wt(), none ? F(&out[0]) : NULL, part.d(), logp);
  AMD_CUDA_CHECK_LAUNCH("k_loss_fwd", st);
  if (!none) {
    k_loss_sum<<<1, LOSS_THREADS, 0, amd_cu.stream>>>(
        np, part.d(), a->reduction == AMD_LOSS_MEAN ? lp.wsum : 1.0, F(&out[0]));
    AMD_CUDA_CHECK_LAUNCH("k_loss_sum", st);
  }
  return 0;
}

int loss_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  const amd_loss_attrs *a = (const amd_loss_attrs *)n->attrs;
  const amd_tensor *dlp = n->n_out > 1 && n->out[1] >= 0 ? dout[1] : NULL;
  if (!din[0] || (!dout[0] && !dlp)) return 0;
  loss_plan lp;
  if (loss_plan_make(n, in, lp, st)) return -1;
  const int64_t np = lp.g.n * lp.g.d;
  if (np == 0) return 0;
  k_loss_bwd<<<amd_cu_blocks(np, 128), 128, 0, amd_cu.stream>>>(lp.g, loss_is_sce(n), a->reduction, lp.wsum,
                                                                F(in[0]), lp.cls(), lp.wt(), F(dout[0]),
                                                                dlp ? F(dlp) : NULL, F(din[0]));
  AMD_CUDA_CHECK_LAUNCH("k_loss_bwd", st);
  return 0;
}
