/* CUDA kernels of InstanceNormalization, MeanVarianceNormalization and
 * LpNormalization (src/ops/instnorm.c).
 *
 * InstanceNormalization: X is (N, C, D1, ...) contiguous, so a group (one
 * (n, c) plane) is a run of sp = D1 * ... elements. One block per group
 * takes its statistics, in double and two-pass like the CPU (mean, then the
 * mean of squared deviations; the block's partial sums are added in a fixed
 * tree order, so the result is reproducible, though not in the CPU's order).
 * The forward applies y = (x - mean) r scale + B, r = 1 / sqrt(var + eps);
 * the backward recomputes the statistics, takes per group sum dy and sum dy
 * xhat (one block each), then dx += scale r (dy - mean(dy) - xhat mean(dy
 * xhat)) and, per channel over the batch, dscale += sum dy xhat, dB += sum dy.
 *
 * MeanVarianceNormalization and LpNormalization: a group is the elements
 * that share their coordinates on the kept dims (amd_grp_mask), anywhere in
 * X: one block per group walks its elements through the kept and the
 * reduced dims' strides (grp_view), with the same two-pass statistics in
 * double (MVN: mean, variance, d = sqrt(var) + 1e-9; Lp: the norm, p = 1 or
 * 2); then one thread per element applies instnorm.c's formulas, the
 * backward after one block per group has taken sum dy and sum dy t (t =
 * x - mean for MVN, x for Lp). */
#include "ops_internal.h"

enum { IN_THREADS = 256 };

/* The block's sum of v (every thread gets it). */
__device__ double block_sum(double v, double *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = IN_THREADS / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads();
  return r;
}

/* stats[2g] = mean, stats[2g + 1] = 1 / sqrt(var + eps) of group g (blockIdx.x strided). */
__global__ void k_in_stats(int64_t groups, int64_t sp, double eps, const float *x, double *stats) {
  __shared__ double sh[IN_THREADS];
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const float *p = x + g * sp;
    double s = 0;
    for (int64_t i = threadIdx.x; i < sp; i += IN_THREADS) s += p[i];
    double m = block_sum(s, sh) / (double)sp;
    double q = 0;
    for (int64_t i = threadIdx.x; i < sp; i += IN_THREADS) q += ((double)p[i] - m) * ((double)p[i] - m);
    double v = block_sum(q, sh) / (double)sp;
    if (threadIdx.x == 0) {
      stats[2 * g] = m;
      stats[2 * g + 1] = 1.0 / sqrt(v + eps);
    }
  }
}

__global__ void k_in_apply(int64_t total, int64_t ch, int64_t sp, const float *x, const float *scale,
                           const float *bias, const double *stats, float *y) {
  AMD_CU_LOOP(i, total) {
    int64_t g = i / sp, c = g % ch;
    y[i] = (float)(((double)x[i] - stats[2 * g]) * stats[2 * g + 1] * (double)scale[c] + (double)bias[c]);
  }
}

/* sums[2g] = sum dy, sums[2g + 1] = sum dy xhat over group g. */
__global__ void k_in_bwd_sums(int64_t groups, int64_t sp, const float *x, const float *dy,
                              const double *stats, double *sums) {
  __shared__ double sh[IN_THREADS];
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const float *p = x + g * sp, *d = dy + g * sp;
    const double m = stats[2 * g], r = stats[2 * g + 1];
    double s0 = 0, s1 = 0;
    for (int64_t i = threadIdx.x; i < sp; i += IN_THREADS) {
      s0 += d[i];
      s1 += (double)d[i] * (((double)p[i] - m) * r);
    }
    s0 = block_sum(s0, sh);
    s1 = block_sum(s1, sh);
    if (threadIdx.x == 0) {
      sums[2 * g] = s0;
      sums[2 * g + 1] = s1;
    }
  }
}

__global__ void k_in_bwd_dx(int64_t total, int64_t ch, int64_t sp, const float *x, const float *dy,
                            const float *scale, const double *stats, const double *sums, float *dx) {
  AMD_CU_LOOP(i, total) {
    int64_t g = i / sp, c = g % ch;
    const double r = stats[2 * g + 1], xhat = ((double)x[i] - stats[2 * g]) * r, n = (double)sp;
    dx[i] += (float)((double)scale[c] * r * ((double)dy[i] - sums[2 * g] / n - xhat * sums[2 * g + 1] / n));
  }
}

/* per channel, over the batch in order: dscale += sum dy xhat, dB += sum dy */
__global__ void k_in_bwd_params(int64_t batch, int64_t ch, const double *sums, float *dscale, float *dbias) {
  AMD_CU_LOOP(c, ch) {
    double s0 = 0, s1 = 0;
    for (int64_t b = 0; b < batch; b++) {
      s0 += sums[2 * (b * ch + c)];
      s1 += sums[2 * (b * ch + c) + 1];
    }
    if (dscale) dscale[c] += (float)s1;
    if (dbias) dbias[c] += (float)s0;
  }
}

struct in_geom {
  int64_t batch, ch, sp, groups, total;
};

static in_geom in_geometry(const amd_tensor *x) {
  in_geom g;
  g.batch = x->dims[0];
  g.ch = x->dims[1];
  g.sp = prod(x->dims, 2, x->rank);
  g.groups = g.batch * g.ch;
  g.total = g.groups * g.sp;
  return g;
}

static unsigned group_blocks(int64_t groups) {
  return (unsigned)(groups < 65536 ? (groups ? groups : 1) : 65536);
}

static int in_stats(const amd_node *n, const amd_tensor *x, const in_geom &g, scratch &buf, amd_status *st) {
  if (buf.get((size_t)g.groups * 2 * sizeof(double), st)) return -1;
  const double eps = ((const amd_grp_attrs *)n->attrs)->epsilon;
  k_in_stats<<<group_blocks(g.groups), IN_THREADS, 0, amd_cu.stream>>>(g.groups, g.sp, eps, F(x), buf.d());
  AMD_CUDA_CHECK_LAUNCH("k_in_stats", st);
  return 0;
}

int in_forward(FWD_ARGS) {
  (void)ctx;
  const in_geom g = in_geometry(in[0]);
  if (!g.total) return 0;
  scratch stats;
  if (in_stats(n, in[0], g, stats, st)) return -1;
  k_in_apply<<<amd_cu_blocks(g.total), 256, 0, amd_cu.stream>>>(g.total, g.ch, g.sp, F(in[0]), F(in[1]),
                                                                F(in[2]), stats.d(), F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_in_apply", st);
  return 0;
}

int in_backward(BWD_ARGS) {
  (void)ctx, (void)out;
  if (!dout[0] || !(din[0] || din[1] || din[2])) return 0;
  const in_geom g = in_geometry(in[0]);
  if (!g.total) return 0;
  scratch stats, sums;
  if (in_stats(n, in[0], g, stats, st) || sums.get((size_t)g.groups * 2 * sizeof(double), st)) return -1;
  k_in_bwd_sums<<<group_blocks(g.groups), IN_THREADS, 0, amd_cu.stream>>>(g.groups, g.sp, F(in[0]),
                                                                          F(dout[0]), stats.d(), sums.d());
  AMD_CUDA_CHECK_LAUNCH("k_in_bwd_sums", st);
  if (din[0]) {
    k_in_bwd_dx<<<amd_cu_blocks(g.total), 256, 0, amd_cu.stream>>>(g.total, g.ch, g.sp, F(in[0]), F(dout[0]),
                                                                   F(in[1]), stats.d(), sums.d(), F(din[0]));
    AMD_CUDA_CHECK_LAUNCH("k_in_bwd_dx", st);
  }
  if (din[1] || din[2]) {
    k_in_bwd_params<<<amd_cu_blocks(g.ch, 128), 128, 0, amd_cu.stream>>>(g.batch, g.ch, sums.d(), F(din[1]),
                                                                         F(din[2]));
    AMD_CUDA_CHECK_LAUNCH("k_in_bwd_params", st);
  }
  return 0;
}

int in_supported(const amd_node *n, const amd_tensor *const *in) {
  (void)n;
  return !in || (in[0] && in[0]->rank >= 3 && in[1] && in[2]);
}

/* ======================================================= MeanVarianceNormalization, LpNormalization */

/* The groups of X: the kept dims (kd, their strides ks in X) number the
 * groups row-major; the reduced dims (rd, rs) the elements of a group, in
 * row-major order (the CPU's order); gs: per dim of X, its stride in the
 * group number (0 on reduced dims). */
struct grp_view {
  int rank, nk, nr;
  int64_t dims[AMD_MAX_RANK], gs[AMD_MAX_RANK];
  int64_t kd[AMD_MAX_RANK], ks[AMD_MAX_RANK], rd[AMD_MAX_RANK], rs[AMD_MAX_RANK];
  int64_t groups, cnt, total;
};

enum { GK_MVN, GK_LP1, GK_LP2 };

static int grp_view_make(const amd_node *n, const amd_tensor *x, grp_view *v, amd_status *st) {
  int mask[AMD_MAX_RANK];
  if (amd_grp_mask(n, x, mask, st)) return -1;
  int64_t xs[AMD_MAX_RANK], s = 1;
  for (int d = x->rank - 1; d >= 0; d--) xs[d] = s, s *= x->dims[d];
  v->rank = x->rank, v->nk = v->nr = 0, v->groups = v->cnt = 1;
  v->total = amd_tensor_numel(x);
  for (int d = 0; d < x->rank; d++) {
    v->dims[d] = x->dims[d];
    if (mask[d])
      v->rd[v->nr] = x->dims[d], v->rs[v->nr++] = xs[d], v->cnt *= x->dims[d];
    else
      v->kd[v->nk] = x->dims[d], v->ks[v->nk++] = xs[d], v->groups *= x->dims[d];
  }
  int64_t g = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    v->gs[d] = mask[d] ? 0 : g;
    if (!mask[d]) g *= x->dims[d];
  }
  return 0;
}

static int grp_kind(const amd_node *n) {
  if (n->op->idx == AMD_OP_IDX_MeanVarianceNormalization) return GK_MVN;
  return ((const amd_grp_attrs *)n->attrs)->p == 1 ? GK_LP1 : GK_LP2;
}

/* X's offset of group g's first element, and of element k within a group */
__device__ __forceinline__ int64_t grp_base(const grp_view &v, int64_t g) {
  int64_t o = 0;
  for (int d = v.nk - 1; d >= 0; d--) o += (g % v.kd[d]) * v.ks[d], g /= v.kd[d];
  return o;
}
__device__ __forceinline__ int64_t grp_elem(const grp_view &v, int64_t k) {
  int64_t o = 0;
  for (int d = v.nr - 1; d >= 0; d--) o += (k % v.rd[d]) * v.rs[d], k /= v.rd[d];
  return o;
}
/* the group of X's element i */
__device__ __forceinline__ int64_t grp_of(const grp_view &v, int64_t i) {
  int64_t g = 0;
  for (int d = v.rank - 1; d >= 0; d--) g += (i % v.dims[d]) * v.gs[d], i /= v.dims[d];
  return g;
}

/* per group g: stats[3g] = the mean (MVN) or the norm (Lp), stats[3g + 1] =
 * the variance (MVN), stats[3g + 2] = the divisor (sqrt(var) + 1e-9, or the norm) */
__global__ void k_grp_stats(grp_view v, int kind, const float *x, double *stats) {
  __shared__ double sh[IN_THREADS];
  for (int64_t g = blockIdx.x; g < v.groups; g += gridDim.x) {
    const float *p = x + grp_base(v, g);
    double s = 0;
    for (int64_t k = threadIdx.x; k < v.cnt; k += IN_THREADS) {
      const double e = p[grp_elem(v, k)];
      s += kind == GK_MVN ? e : kind == GK_LP1 ? fabs(e) : e * e;
    }
    s = block_sum(s, sh);
    double m = 0, var = 0, den;
    if (kind == GK_MVN) {
      m = v.cnt > 0 ? s / (double)v.cnt : 0;
      double q = 0;
      for (int64_t k = threadIdx.x; k < v.cnt; k += IN_THREADS) {
        const double d = (double)p[grp_elem(v, k)] - m;
        q += d * d;
      }
      q = block_sum(q, sh);
      var = v.cnt > 0 ? q / (double)v.cnt : 0;
      den = sqrt(var) + 1e-9;
    } else {
      m = kind == GK_LP1 ? s : sqrt(s);
      den = m;
    }
    if (threadIdx.x == 0) stats[3 * g] = m, stats[3 * g + 1] = var, stats[3 * g + 2] = den;
  }
}

__global__ void k_grp_apply(grp_view v, int kind, const float *x, const double *stats, float *y) {
  AMD_CU_LOOP(i, v.total) {
    const double *q = stats + 3 * grp_of(v, i);
    if (kind == GK_MVN)
      y[i] = (float)(((double)x[i] - q[0]) / q[2]);
    else
      y[i] = (float)(q[2] == 0 ? 0.0 : (double)x[i] / q[2]);
  }
}

/* per group: sums[2g] = sum dy, sums[2g + 1] = sum dy t (t = x - mean for MVN, x for Lp) */
__global__ void k_grp_bwd_sums(grp_view v, int kind, const float *x, const float *dy, const double *stats,
                               double *sums) {
  __shared__ double sh[IN_THREADS];
  for (int64_t g = blockIdx.x; g < v.groups; g += gridDim.x) {
    const int64_t base = grp_base(v, g);
    const double m = kind == GK_MVN ? stats[3 * g] : 0.0;
    double s0 = 0, s1 = 0;
    for (int64_t k = threadIdx.x; k < v.cnt; k += IN_THREADS) {
      const int64_t e = base + grp_elem(v, k);
      s0 += dy[e];
      s1 += (double)dy[e] * ((double)x[e] - m);
    }
    s0 = block_sum(s0, sh);
    s1 = block_sum(s1, sh);
    if (threadIdx.x == 0) sums[2 * g] = s0, sums[2 * g + 1] = s1;
  }
}

__global__ void k_grp_bwd_dx(grp_view v, int kind, const float *x, const float *dy, const double *stats,
                             const double *sums, float *dx, bool acc) {
  AMD_CU_LOOP(i, v.total) {
    const int64_t g = grp_of(v, i);
    const double *q = stats + 3 * g, *u = sums + 2 * g, gv = dy[i], den = q[2], cnt = (double)v.cnt;
    double d;
    if (kind == GK_MVN) {
      const double sd = sqrt(q[1]), xc = (double)x[i] - q[0];
      d = (gv - u[0] / cnt) / den - (sd > 0 ? xc * (u[1] / cnt) / (den * den * sd) : 0.0);
    } else if (den == 0) {
      d = 0;
    } else if (kind == GK_LP2) {
      d = (gv - (double)x[i] / den * u[1] / den) / den;
    } else {
      const double xv = x[i], sgn = xv > 0 ? 1.0 : xv < 0 ? -1.0 : 0.0;
      d = gv / den - sgn * u[1] / (den * den);
    }
    dx[i] = (float)((acc ? (double)dx[i] : 0.0) + d);
  }
}

static int grp_stats_launch(const amd_node *n, const amd_tensor *x, grp_view *v, scratch &stats,
                            amd_status *st) {
  if (grp_view_make(n, x, v, st)) return -1;
  if (!v->total) return 0;
  if (stats.get((size_t)v->groups * 3 * sizeof(double), st)) return -1;
  k_grp_stats<<<group_blocks(v->groups), IN_THREADS, 0, amd_cu.stream>>>(*v, grp_kind(n), F(x), stats.d());
  AMD_CUDA_CHECK_LAUNCH("k_grp_stats", st);
  return 0;
}

int grp_forward(FWD_ARGS) {
  (void)ctx;
  grp_view v;
  scratch stats;
  if (grp_stats_launch(n, in[0], &v, stats, st)) return -1;
  if (!v.total) return 0;
  k_grp_apply<<<amd_cu_blocks(v.total), 256, 0, amd_cu.stream>>>(v, grp_kind(n), F(in[0]), stats.d(),
                                                                 F(&out[0]));
  AMD_CUDA_CHECK_LAUNCH("k_grp_apply", st);
  return 0;
}

int grp_backward(BWD_ARGS) {
  (void)out;
  if (!dout[0] || !din[0]) return 0;
  grp_view v;
  scratch stats, sums;
  if (grp_stats_launch(n, in[0], &v, stats, st)) return -1;
  if (!v.total) return 0;
  if (sums.get((size_t)v.groups * 2 * sizeof(double), st)) return -1;
  const int kind = grp_kind(n);
  k_grp_bwd_sums<<<group_blocks(v.groups), IN_THREADS, 0, amd_cu.stream>>>(v, kind, F(in[0]), F(dout[0]),
                                                                           stats.d(), sums.d());
  AMD_CUDA_CHECK_LAUNCH("k_grp_bwd_sums", st);
  k_grp_bwd_dx<<<amd_cu_blocks(v.total), 256, 0, amd_cu.stream>>>(v, kind, F(in[0]), F(dout[0]), stats.d(),
                                                                  sums.d(), F(din[0]), acc_of(ctx, 0));
  AMD_CUDA_CHECK_LAUNCH("k_grp_bwd_dx", st);
  return 0;
}
