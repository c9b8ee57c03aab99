/* CUDA kernels of BatchNormalization (src/ops/norm.c); the per-channel sums
 * are in op_util.cu. */
#include "ops_internal.h"

/* ================================================================ BatchNormalization */

/* Per channel (one thread each): the statistics used (batch: mean and biased
 * variance from the shifted sums, in double; running: the inputs),
 * k = scale / sqrt(v + eps) and, for training, the new running statistics.
 * coef[c*4 + {0..3}] = m, k, v, 0. */
__global__ void k_bn_stats(chan_slicing s, const double *part, const float *x, const float *scale,
                           const float *mean_in, const float *var_in, int batch_stats, double eps, double mom,
                           double unbias, float *rm_out, float *rv_out, float *sm_out, float *sv_out,
                           double *coef) {
  AMD_CU_LOOP(c, s.ch) {
    double m, v;
    if (batch_stats && s.cnt > 0) {
      double t[CHAN_SUMS];
      chan_total(part, c, s.slices, t);
      double n = (double)s.cnt, dm = t[0] / n;
      m = chan_shift(s, x, c) + dm;
      v = t[1] / n - dm * dm;
      if (v < 0) v = 0;
    } else if (batch_stats) {
      m = v = 0;
    } else {
      m = mean_in[c];
      v = var_in[c];
    }
    coef[c * 4 + 0] = m;
    coef[c * 4 + 1] = (double)scale[c] / sqrt(v + eps);
    coef[c * 4 + 2] = v;
    coef[c * 4 + 3] = 0;
    double rm = batch_stats ? (double)mean_in[c] * mom + m * (1.0 - mom) : (double)mean_in[c];
    double rv = batch_stats ? (double)var_in[c] * mom + v * unbias * (1.0 - mom) : (double)var_in[c];
    if (rm_out) rm_out[c] = (float)rm;
    if (rv_out) rv_out[c] = (float)rv;
    if (sm_out) sm_out[c] = (float)m; /* opset < 14: saved mean / variance (the statistics used) */
    if (sv_out) sv_out[c] = (float)v;
  }
}

/* y = (x - m) k + bias, then a fused Relu where relu (ctx->relu_out); V floats of one channel at a time
 * (sp % V == 0) */
template <typename I, int V>
__global__ void k_bn_apply(int64_t total, int64_t ch, int64_t sp, const float *x, const float *bias,
                           const double *coef, bool relu, float *y) {
  AMD_CU_LOOP_I(I, i, total / V) {
    I c = (i / (I)(sp / V)) % (I)ch;
    const double m = coef[c * 4], k = coef[c * 4 + 1], b = bias[c];
    vecf<V> xv = ((const vecf<V> *)x)[i], yv;
    const float *xe = (const float *)&xv;
    float *ye = (float *)&yv;
#pragma unroll
    for (int e = 0; e < V; e++) ye[e] = (float)(((double)xe[e] - m) * k + b);
    ((vecf<V> *)y)[i] = relu ? vec_relu(yv) : yv;
  }
}

/* --sync-bn (ctx->sync_stats): adds this rank's per-channel sums (part, with
 * the shift s.shift that every rank shares) and element count to every other
 * rank's, through the host, into gpart as one slice; *gs describes them. */
static int bn_sync_sums(const amd_ctx *ctx, const chan_slicing &s, const double *part, double *gpart,
                        chan_slicing *gs, amd_status *st) {
  size_t nl = (size_t)(s.ch * s.slices * CHAN_SUMS), ng = (size_t)(s.ch * CHAN_SUMS);
  double *h = (double *)malloc((nl + ng + 1) * sizeof(double));
  if (!h) return amd_fail(st, "out of memory");
  double *tot = h + nl;
  int rc = -1;
  if (s.cnt == 0) /* no sample here (the sums were not run) */
    memset(h, 0, nl * sizeof(double));
  else if (cudaMemcpyAsync(h, part, nl * sizeof(double), cudaMemcpyDeviceToHost, amd_cu.stream) !=
               cudaSuccess ||
           cudaStreamSynchronize(amd_cu.stream) != cudaSuccess) {
    amd_fail(st, "CUDA error %s reading the BatchNormalization sums", cudaGetErrorName(cudaGetLastError()));
    goto done;
  }
  for (int64_t c = 0; c < s.ch; c++)
    for (int k = 0; k < CHAN_SUMS; k++) {
      double v = 0;
      for (int sl = 0; sl < s.slices; sl++) v += h[(c * s.slices + sl) * CHAN_SUMS + k];
      tot[c * CHAN_SUMS + k] = v;
    }
  tot[ng] = (double)s.cnt;
  if (ctx->sync_stats(ctx->sync_user, tot, (int64_t)ng + 1, st)) {
    amd_fail_prefix(st, "BatchNormalization statistics over the ranks");
    goto done;
  }
  if (cudaMemcpyAsync(gpart, tot, ng * sizeof(double), cudaMemcpyHostToDevice, amd_cu.stream) !=
          cudaSuccess ||
      cudaStreamSynchronize(amd_cu.stream) != cudaSuccess) { /* tot is freed below */
    amd_fail(st, "CUDA error %s writing the BatchNormalization sums", cudaGetErrorName(cudaGetLastError()));
    goto done;
  }
  *gs = s;
  gs->slices = 1;
  gs->cnt = (int64_t)tot[ng];
  rc = 0;
done:
  free(h);
  return rc;
}

int bn_forward(FWD_ARGS) {
  const amd_bn_attrs *a = (const amd_bn_attrs *)n->attrs;
  const amd_tensor *x = in[0];
  int64_t batch = x->dims[0], ch = x->dims[1], sp = 1;
  for (int i = 2; i < x->rank; i++) sp *= x->dims[i];
  if (ch == 0) return 0;
  int bstats = amd_bn_use_batch_stats(n, ctx);
  int64_t count = batch * sp;
  double unbias = ctx && ctx->training && count > 1 ? (double)count / (double)(count - 1) : 1.0;
  float *rm = n->n_out > 1 && n->out[1] >= 0 && out[1].data ? F(&out[1]) : NULL;
  float *rv = n->n_out > 2 && n->out[2] >= 0 && out[2].data ? F(&out[2]) : NULL;
  float *sm = n->n_out > 3 && n->out[3] >= 0 && out[3].data ? F(&out[3]) : NULL;
  float *sv = n->n_out > 4 && n->out[4] >= 0 && out[4].data ? F(&out[4]) : NULL;
  chan_slicing s = chan_slices(batch, ch, sp), gs;
  const bool sync = bstats && ctx && ctx->training && ctx->sync_stats;
  if (sync) s.shift = F(in[3]); /* the running mean: the same on every rank */
  scratch coef, part, gpart;
  if (coef.get((size_t)ch * 4 * sizeof(double), st) ||
      part.get((size_t)ch * s.slices * CHAN_SUMS * sizeof(double), st) ||
      gpart.get((size_t)ch * CHAN_SUMS * sizeof(double), st))
    return -1;
  if (bstats && count > 0 && chan_partial(s, F(x), NULL, part.d(), st)) return -1;
  if (sync) { /* the statistics of the global batch */
    if (bn_sync_sums(ctx, s, part.d(), gpart.d(), &gs, st)) return -1;
    s = gs;
    count = s.cnt;
    unbias = count > 1 ? (double)count / (double)(count - 1) : 1.0;
  }
  k_bn_stats<<<amd_cu_blocks(ch, 128), 128, 0, amd_cu.stream>>>(
      s, sync ? gpart.d() : part.d(), F(x), F(in[1]), F(in[3]), F(in[4]), bstats, a->epsilon, a->momentum,
      unbias, rm, rv, sm, sv, coef.d());
  AMD_CUDA_CHECK_LAUNCH("k_bn_stats", st);
  int64_t total = amd_tensor_numel(x);
  if (total) {
    const float *xp = F(x), *bp = F(in[2]);
    float *yp = F(&out[0]);
    const bool relu = ctx && ctx->relu_out; /* a fused Relu (src/exec/exec.c) */
    if (sp % 4 == 0 && aligned16(xp) && aligned16(yp) && fits32(total))
      k_bn_apply<int, 4>
          <<<amd_cu_blocks(total / 4), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, bp, coef.d(), relu, yp);
    else if (fits32(total))
      k_bn_apply<int, 1>
          <<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, bp, coef.d(), relu, yp);
    else
      k_bn_apply<int64_t, 1>
          <<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, bp, coef.d(), relu, yp);
    AMD_CUDA_CHECK_LAUNCH("k_bn_apply", st);
  }
  return 0;
}

/* Per channel (one thread each), from one pass of sums over x and dy: the
 * statistics used, sg = sum dy, sgx = sum dy (x - m) (from the shifted sums:
 * sum dy (x - K) - (m - K) sg); dscale += sgx / sqrt(v + eps), dbias += sg;
 * coef = m, k, c0, c1 for dx. */
__global__ void k_bn_bwd_coef(chan_slicing s, const double *part, chan_slicing gs, const double *gpart,
                              const float *x, const float *scale, const float *mean_in, const float *var_in,
                              int batch_stats, double eps, double *coef, float *dscale, float *dbias) {
  AMD_CU_LOOP(c, s.ch) {
    /* t: this rank's sums (dscale, dbias); g: every rank's (the statistics, dx) with --sync-bn, else t */
    double t[CHAN_SUMS] = {0, 0, 0, 0}, g[CHAN_SUMS] = {0, 0, 0, 0}, K = 0, n = (double)gs.cnt, m, v;
    if (s.cnt > 0) {
      chan_total(part, c, s.slices, t);
      K = chan_shift(s, x, c);
    }
    if (gs.cnt > 0) chan_total(gpart, c, gs.slices, g);
    if (batch_stats) {
      double dm = gs.cnt > 0 ? g[0] / n : 0.0;
      m = K + dm;
      v = gs.cnt > 0 ? g[1] / n - dm * dm : 0.0;
      if (v < 0) v = 0;
    } else {
      m = mean_in[c];
      v = var_in[c];
    }
    double inv = 1.0 / sqrt(v + eps), sg = t[2], sgx = t[3] - (m - K) * sg;
    if (dscale) dscale[c] = (float)((double)dscale[c] + sgx * inv);
    if (dbias) dbias[c] = (float)((double)dbias[c] + sg);
    double c0 = 0, c1 = 0;
    if (batch_stats && gs.cnt > 0) {
      double gsg = g[2], gsgx = g[3] - (m - K) * gsg;
      c0 = gsg / n;
      c1 = gsgx * inv * inv / n;
    }
    coef[c * 4 + 0] = m;
    coef[c * 4 + 1] = (double)scale[c] * inv;
    coef[c * 4 + 2] = c0;
    coef[c * 4 + 3] = c1;
  }
}

/* dx += k (dy - c0 - (x - m) c1), V floats of one channel at a time */
template <typename I, int V>
__global__ void k_bn_dx(int64_t total, int64_t ch, int64_t sp, const float *x, const float *dy,
                        const double *coef, float *dx, bool acc) {
  AMD_CU_LOOP_I(I, i, total / V) {
    I c = (i / (I)(sp / V)) % (I)ch;
    const double *k = coef + c * 4;
    vecf<V> xv = ((const vecf<V> *)x)[i], gv = ((const vecf<V> *)dy)[i], dv = {};
    if (acc) dv = ((const vecf<V> *)dx)[i];
    const float *xe = (const float *)&xv, *ge = (const float *)&gv;
    float *de = (float *)&dv;
#pragma unroll
    for (int e = 0; e < V; e++)
      de[e] += (float)(k[1] * ((double)ge[e] - k[2] - ((double)xe[e] - k[0]) * k[3]));
    ((vecf<V> *)dx)[i] = dv;
  }
}

int bn_backward(BWD_ARGS) {
  (void)out;
  const amd_bn_attrs *a = (const amd_bn_attrs *)n->attrs;
  const amd_tensor *x = in[0], *dy = dout[0];
  amd_tensor *dx = din[0], *dscale = din[1], *dbias = din[2];
  if (!dy || (!dx && !dscale && !dbias)) return 0;
  int64_t batch = x->dims[0], ch = x->dims[1], sp = 1;
  for (int i = 2; i < x->rank; i++) sp *= x->dims[i];
  if (ch == 0) return 0;
  int bstats = amd_bn_use_batch_stats(n, ctx);
  chan_slicing s = chan_slices(batch, ch, sp), gs;
  const bool sync = bstats && ctx && ctx->training && ctx->sync_stats;
  if (sync) s.shift = F(in[3]); /* as the forward pass */
  scratch coef, part, gpart;
  if (coef.get((size_t)ch * 4 * sizeof(double), st) ||
      part.get((size_t)ch * s.slices * CHAN_SUMS * sizeof(double), st) ||
      gpart.get((size_t)ch * CHAN_SUMS * sizeof(double), st))
    return -1;
  if (s.cnt > 0 && chan_partial(s, F(x), F(dy), part.d(), st)) return -1;
  if (sync && bn_sync_sums(ctx, s, part.d(), gpart.d(), &gs, st)) return -1;
  k_bn_bwd_coef<<<amd_cu_blocks(ch, 128), 128, 0, amd_cu.stream>>>(
      s, part.d(), sync ? gs : s, sync ? gpart.d() : part.d(), F(x), F(in[1]), F(in[3]), F(in[4]), bstats,
      a->epsilon, coef.d(), F(dscale), F(dbias));
  AMD_CUDA_CHECK_LAUNCH("k_bn_bwd_coef", st);
  int64_t total = amd_tensor_numel(x);
  if (dx && total) {
    const float *xp = F(x), *gp = F(dy);
    float *dp = F(dx);
    const bool acc = acc_of(ctx, 0);
    if (sp % 4 == 0 && aligned16(xp) && aligned16(gp) && aligned16(dp) && fits32(total))
      k_bn_dx<int, 4>
          <<<amd_cu_blocks(total / 4), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, gp, coef.d(), dp, acc);
    else if (fits32(total))
      k_bn_dx<int, 1>
          <<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, gp, coef.d(), dp, acc);
    else
      k_bn_dx<int64_t, 1>
          <<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, ch, sp, xp, gp, coef.d(), dp, acc);
    AMD_CUDA_CHECK_LAUNCH("k_bn_dx", st);
  }
  return 0;
}

int bn_supported(const amd_node *n, const amd_tensor *const *in) {
  const amd_bn_attrs *a = (const amd_bn_attrs *)n->attrs;
  if (a && !a->spatial) return 0;
  if (n->n_in < 5) return 0;
  if (in && in[0] && in[0]->rank < 2) return 0;
  return 1;
}
