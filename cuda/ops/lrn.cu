/* CUDA kernels of LRN (src/ops/lrn.c), float X of rank >= 2 (N, C, ...).
 *
 * With lo = (size - 1) / 2, hi = size / 2, channel c's window is [c - lo,
 * c + hi] clipped to [0, C), s_c = bias + alpha / size * sum of x_j^2 over
 * it, y_c = x_c s_c^-beta. Forward: one thread per element sums its window
 * directly, in double (the CPU slides one running sum over the channels: the
 * same value to round-off). Backward: one thread per element first writes
 * d = dy s^-beta and t = dy x s^(-beta-1) (doubles, scratch); then one
 * thread per element adds d - k x sum t_j over the transposed window
 * [c - hi, c + lo], k = 2 alpha beta / size, into dX in double, as the CPU
 * does (or, where the trainer allows, writes it over an unzeroed buffer). */
#include "ops_internal.h"

/* s^-beta, the fast forms of lrn.c's lrn_pow_neg for the common betas */
__device__ __forceinline__ double lrn_pow_neg(double s, double beta) {
  if (beta == 0.75) return 1.0 / sqrt(s * sqrt(s));
  if (beta == 0.5) return 1.0 / sqrt(s);
  if (beta == 1.0) return 1.0 / s;
  return pow(s, -beta);
}

struct lrn_geom {
  int64_t ch, inner, total, lo, hi;
  double alpha_n, beta, bias, k; /* alpha_n = alpha / size */
};

/* s of element i: bias + alpha / size * the sum of squares over its window */
__device__ __forceinline__ double lrn_s(const lrn_geom &g, const float *x, int64_t i) {
  const int64_t c = (i / g.inner) % g.ch, base = i - c * g.inner;
  const int64_t j0 = c - g.lo < 0 ? 0 : c - g.lo, j1 = c + g.hi >= g.ch ? g.ch - 1 : c + g.hi;
  double acc = 0;
  for (int64_t j = j0; j <= j1; j++) {
    const double v = x[base + j * g.inner];
    acc += v * v;
  }
  return g.bias + g.alpha_n * acc;
}

__global__ void k_lrn_fwd(lrn_geom g, const float *x, float *y) {
  AMD_CU_LOOP(i, g.total) y[i] = (float)((double)x[i] * lrn_pow_neg(lrn_s(g, x, i), g.beta));
}

/* dt[2i] = dy s^-beta, dt[2i + 1] = dy x s^(-beta-1) */
__global__ void k_lrn_bwd_terms(lrn_geom g, const float *x, const float *dy, double *dt) {
  AMD_CU_LOOP(i, g.total) {
    const double s = lrn_s(g, x, i), sb = lrn_pow_neg(s, g.beta), gv = dy[i];
    dt[2 * i + 1] = gv * (double)x[i] * sb / s;
    dt[2 * i] = gv * sb;
  }
}

__global__ void k_lrn_bwd_dx(lrn_geom g, const float *x, const double *dt, float *dx, bool acc_dx) {
  AMD_CU_LOOP(i, g.total) {
    const int64_t c = (i / g.inner) % g.ch, base = i - c * g.inner;
    const int64_t j0 = c - g.hi < 0 ? 0 : c - g.hi, j1 = c + g.lo >= g.ch ? g.ch - 1 : c + g.lo;
    double acc = 0;
    for (int64_t j = j0; j <= j1; j++) acc += dt[2 * (base + j * g.inner) + 1];
    const double row = acc_dx ? (double)dx[i] : 0.0;
    dx[i] = (float)(row + (dt[2 * i] - g.k * (double)x[i] * acc));
  }
}

static lrn_geom lrn_geometry(const amd_node *n, const amd_tensor *x) {
  const amd_lrn_attrs *a = (const amd_lrn_attrs *)n->attrs;
  lrn_geom g;
  g.ch = x->dims[1];
  g.inner = prod(x->dims, 2, x->rank);
  g.total = amd_tensor_numel(x);
  g.lo = (a->size - 1) / 2;
  g.hi = a->size / 2;
  g.alpha_n = a->alpha / (double)a->size;
  g.beta = a->beta;
  g.bias = a->bias;
  g.k = 2.0 * a->alpha * a->beta / (double)a->size;
  return g;
}

int lrn_forward(FWD_ARGS) {
  (void)ctx;
  const lrn_geom g = lrn_geometry(n, in[0]);
  if (!g.total) return 0;
  k_lrn_fwd<<<amd_cu_blocks(g.total), 256, 0, amd_cu.stream>>>(g, F(in[0]), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_lrn_fwd", st);
  return 0;
}

int lrn_backward(BWD_ARGS) {
  (void)out;
  if (!dout[0] || !din[0]) return 0;
  const lrn_geom g = lrn_geometry(n, in[0]);
  if (!g.total) return 0;
  scratch dt;
  if (dt.get((size_t)g.total * 2 * sizeof(double), st)) return -1;
  k_lrn_bwd_terms<<<amd_cu_blocks(g.total), 256, 0, amd_cu.stream>>>(g, F(in[0]), F(dout[0]), dt.d());
  AMD_CUDA_CHECK_LAUNCH("k_lrn_bwd_terms", st);
  k_lrn_bwd_dx<<<amd_cu_blocks(g.total), 256, 0, amd_cu.stream>>>(g, F(in[0]), dt.d(), F(din[0]),
                                                                  acc_of(ctx, 0));
  AMD_CUDA_CHECK_LAUNCH("k_lrn_bwd_dx", st);
  return 0;
}

int lrn_supported(const amd_node *n, const amd_tensor *const *in) {
  (void)n;
  return !in || (in[0] && in[0]->rank >= 2);
}
