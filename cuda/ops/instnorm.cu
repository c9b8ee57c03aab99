/* CUDA kernels of InstanceNormalization (src/ops/instnorm.c); MVN and
 * LpNormalization run on the host fallback.
 *
 * X is (N, C, D1, ...) contiguous, so a group (one (n, c) plane) is a run of
 * sp = D1 * ... elements. One block per group takes its statistics, in
 * double and two-pass like the CPU (mean, then the mean of squared
 * deviations; the block's partial sums are added in a fixed tree order, so
 * the result is reproducible, though not in the CPU's order). The forward
 * applies y = (x - mean) r scale + B, r = 1 / sqrt(var + eps); the backward
 * recomputes the statistics, takes per group sum dy and sum dy xhat (one
 * block each), then dx += scale r (dy - mean(dy) - xhat mean(dy xhat)) and,
 * per channel over the batch, dscale += sum dy xhat, dB += sum dy. */
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
