/* BatchNormalization (ONNX since-versions 1, 6, 7, 9, 14, 15) on the CPU.
 *
 * Layout: X is (N, C, D1, ..., Dk), rank >= 2, contiguous NCHW. The
 * per-channel parameters scale, B, mean, var have shape [C] (or, with the
 * opset 1..7 attribute spatial=0, the shape of one sample (C, D1, ..., Dk)).
 *
 * Inference:  Y = (X - mean) / sqrt(var + epsilon) * scale + B.
 * Training (batch statistics): mean and variance are taken over every axis but
 * 1 (over N only with spatial=0); the variance is the biased one (divide by the
 * element count), as in the ONNX reference implementation. The optional
 * outputs are then
 *   opset >= 14: running_mean = mean_in * momentum + batch_mean * (1 - momentum),
 *                running_var  = var_in  * momentum + batch_var  * (1 - momentum)
 *                (in the trainer, ctx->training, batch_var is the unbiased variance, as
 *                in PyTorch);
 *   opset <  14: mean, var (the same running values), saved_mean, saved_var
 *                (the batch statistics).
 * Batch statistics are used in training (ctx->training), never in inference
 * (ctx->inference), and otherwise when the node says so: training_mode=1 at
 * opset >= 14, or the extra mean/var outputs at older opsets.
 * Outside training the optional outputs, if requested, pass the inputs' mean
 * and var through.
 *
 * Statistics and per-channel coefficients are computed in double; X and Y
 * may be float or double, the parameters float or double (opset 15 lets them
 * differ).
 *
 * Backward: gradients ACCUMULATE (+=) into dX, dscale, dB (buffers the
 * autograd engine zeroed); only Y's gradient flows back (the statistics
 * outputs are buffers, as in PyTorch). Inputs mean and var (running
 * statistics) never get a gradient. With xhat = (x - m) / sqrt(v + eps) and
 * sums over the channel's cnt elements:
 *   dscale += sum(dy * xhat),  dB += sum(dy),
 *   batch statistics (recomputed from X, biased variance):
 *     dx += scale / sqrt(v + eps) * (dy - sum(dy) / cnt - xhat * sum(dy * xhat) / cnt),
 *   running statistics (fixed): dx += scale / sqrt(v + eps) * dy. */
#include <math.h>
#include <string.h>

#include "../core/omp.h"
#include "attrs.h"



static int bn_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_bn_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->epsilon = amd_attr_float(p, "epsilon", 1e-5f);
  a->momentum = amd_attr_float(p, "momentum", 0.9f);
  a->training_mode = n->since >= 14 ? (int)amd_attr_int(p, "training_mode", 0) : 0;
  a->spatial = n->since <= 7 ? (int)amd_attr_int(p, "spatial", 1) : 1;
  if (a->training_mode != 0 && a->training_mode != 1)
    return amd_fail(st, "training_mode must be 0 or 1, got %d", a->training_mode);
  if (a->epsilon < 0) return amd_fail(st, "epsilon must be >= 0, got %g", a->epsilon);
  return 0;
}

/* The single place that decides between batch and running statistics. */
int amd_bn_use_batch_stats(const amd_node *n, const amd_ctx *ctx) {
  const amd_bn_attrs *a = n->attrs;
  /* The trainer and `eval` decide for the whole graph; `run` follows the model. */
  if (ctx && ctx->inference) return 0;
  if (ctx && ctx->training) return 1;
  if (n->since >= 14) return a->training_mode;
  /* Before opset 14 training mode is implied by the extra outputs (mean, var,
   * saved_mean, saved_var): PyTorch's TrainingMode.TRAINING export at opset 13. */
  for (int o = 1; o < n->n_out; o++)
    if (n->out[o] >= 0) return 1;
  return 0;
}

static int is_float_like(amd_dtype t) { return t == AMD_FLOAT || t == AMD_DOUBLE; }

/* Number of parameter entries per sample: C (spatial) or C*D1*...*Dk. */
static int64_t bn_param_count(const amd_bn_attrs *a, const amd_tensor *x) {
  int64_t c = x->dims[1];
  if (!a->spatial)
    for (int i = 2; i < x->rank; i++) c *= x->dims[i];
  return c;
}

static int bn_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const amd_bn_attrs *a = n->attrs;
  static const char *names[] = {"X", "scale", "B", "mean", "var"};
  if (n->n_in < 5) return amd_fail(st, "BatchNormalization needs 5 inputs, got %d", n->n_in);
  for (int k = 0; k < 5; k++) {
    if (!in[k]) return amd_fail(st, "input %s is required", names[k]);
    if (!is_float_like(in[k]->dtype))
      return amd_fail(st, "input %s has dtype %s (float or double supported)", names[k],
                      amd_dtype_name(in[k]->dtype));
  }
  const amd_tensor *x = in[0];
  if (x->rank < 2) return amd_fail(st, "X must have rank >= 2 (N, C, ...), got rank %d", x->rank);
  int64_t pc = bn_param_count(a, x);
  for (int k = 1; k < 5; k++) {
    if (amd_tensor_numel(in[k]) != pc) {
      char s1[128], s2[128];
      return amd_fail(st, "input %s has shape %s, expected %lld elements for X of shape %s",
                      names[k], amd_shape_str(in[k], s1, sizeof s1), (long long)pc,
                      amd_shape_str(x, s2, sizeof s2));
    }
  }
  int max_out = n->since >= 14 ? 3 : 5;
  if (n->n_out > max_out)
    return amd_fail(st, "BatchNormalization-%d has at most %d outputs, got %d", n->since, max_out,
                    n->n_out);
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, x->dims);
  for (int k = 1; k < n->n_out; k++) {
    /* Running statistics take the type of input mean/var; saved ones X's type. */
    const amd_tensor *like = k <= 2 ? in[k + 2] : x;
    amd_tensor_set_shape(&out[k], like->dtype == AMD_DOUBLE ? AMD_DOUBLE : AMD_FLOAT, in[3]->rank,
                         in[3]->dims);
    if (k > 2) out[k].dtype = x->dtype;
  }
  return 0;
}

static int out_wanted(const amd_node *n, amd_tensor *out, int k) {
  return k < n->n_out && n->out[k] >= 0 && out[k].data != NULL;
}

static int bn_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                      amd_status *st) {
  const amd_bn_attrs *a = n->attrs;
  const amd_tensor *x = in[0];
  int64_t batch = x->dims[0], inner = 1;
  for (int i = 2; i < x->rank; i++) inner *= x->dims[i];
  int64_t pc = bn_param_count(a, x);
  /* With spatial=0 each of the `inner` positions has its own parameters: treat
   * the sample as pc "channels" of inner size 1. */
  int64_t ch = pc, sp = a->spatial ? inner : 1;

  double *buf = malloc(sizeof(double) * ((size_t)(ch > 0 ? ch : 1) * 7 + 1));
  if (!buf) return amd_fail(st, "out of memory");
  double *scale = buf, *bias = buf + ch, *mean = buf + 2 * ch, *var = buf + 3 * ch;
  double *bmean = buf + 4 * ch, *bvar = buf + 5 * ch, *sums = buf + 6 * ch; /* sums: ch + 1 (the count) */
  for (int64_t c = 0; c < ch; c++) {
    scale[c] = amd_tensor_get_f64(in[1], c);
    bias[c] = amd_tensor_get_f64(in[2], c);
    mean[c] = amd_tensor_get_f64(in[3], c);
    var[c] = amd_tensor_get_f64(in[4], c);
  }

  int batch_stats = amd_bn_use_batch_stats(n, ctx);
  const float *xf = x->dtype == AMD_FLOAT ? x->data : NULL;
  const double *xd = x->dtype == AMD_DOUBLE ? x->data : NULL;
  int64_t count = batch * sp; /* samples behind the statistics (every rank's with sync_stats) */
  if (batch_stats) {
    int sync = ctx && ctx->training && ctx->sync_stats;
    AMD_PARALLEL_FOR(batch * ch * sp)
    for (int64_t c = 0; c < ch; c++) {
      double s = 0;
      for (int64_t b = 0; b < batch; b++) {
        int64_t off = (b * ch + c) * sp;
        if (xf)
          for (int64_t i = 0; i < sp; i++) s += xf[off + i];
        else
          for (int64_t i = 0; i < sp; i++) s += xd[off + i];
      }
      sums[c] = s;
    }
    sums[ch] = (double)count;
    if (sync && ctx->sync_stats(ctx->sync_user, sums, ch + 1, st)) {
      free(buf);
      return amd_fail_prefix(st, "BatchNormalization statistics over the ranks");
    }
    count = (int64_t)sums[ch];
    double cnt = (double)count;
    AMD_PARALLEL_FOR(batch * ch * sp)
    for (int64_t c = 0; c < ch; c++) {
      double m = count > 0 ? sums[c] / cnt : 0.0, q = 0;
      for (int64_t b = 0; b < batch; b++) {
        int64_t off = (b * ch + c) * sp;
        for (int64_t i = 0; i < sp; i++) {
          double d = (xf ? (double)xf[off + i] : xd[off + i]) - m;
          q += d * d;
        }
      }
      bmean[c] = m;
      bvar[c] = q;
    }
    if (sync && ctx->sync_stats(ctx->sync_user, bvar, ch, st)) {
      free(buf);
      return amd_fail_prefix(st, "BatchNormalization statistics over the ranks");
    }
    for (int64_t c = 0; c < ch; c++) bvar[c] = count > 0 ? bvar[c] / cnt : 0.0;
  }

  const double *um = batch_stats ? bmean : mean, *uv = batch_stats ? bvar : var;
  const int relu = ctx && ctx->relu_out; /* a fused Relu (src/exec/exec.c; float data only) */
  AMD_PARALLEL_FOR(batch * ch * sp)
  for (int64_t c = 0; c < ch; c++) {
    double k = scale[c] / sqrt(uv[c] + a->epsilon);
    double b0 = bias[c];
    double m = um[c];
    for (int64_t b = 0; b < batch; b++) {
      int64_t off = (b * ch + c) * sp;
      if (xf) {
        float *y = out[0].data;
        for (int64_t i = 0; i < sp; i++) y[off + i] = (float)(((double)xf[off + i] - m) * k + b0);
        if (relu) amd_relu_inplace(y + off, sp);
      } else {
        double *y = out[0].data;
        for (int64_t i = 0; i < sp; i++) y[off + i] = (xd[off + i] - m) * k + b0;
      }
    }
  }

  /* Optional outputs. */
  double mom = a->momentum;
  /* The trainer updates the running variance with the unbiased batch variance,
   * as PyTorch does (the models come from there and the goldens check it);
   * `run` keeps the ONNX reference's biased one. */
  double unbias = ctx && ctx->training && count > 1 ? (double)count / (double)(count - 1) : 1.0;
  for (int64_t c = 0; c < ch; c++) {
    double rm = batch_stats ? mean[c] * mom + bmean[c] * (1.0 - mom) : mean[c];
    double rv = batch_stats ? var[c] * mom + bvar[c] * unbias * (1.0 - mom) : var[c];
    if (out_wanted(n, out, 1)) amd_tensor_set_f64(&out[1], c, rm);
    if (out_wanted(n, out, 2)) amd_tensor_set_f64(&out[2], c, rv);
    if (out_wanted(n, out, 3)) amd_tensor_set_f64(&out[3], c, batch_stats ? bmean[c] : mean[c]);
    if (out_wanted(n, out, 4)) amd_tensor_set_f64(&out[4], c, batch_stats ? bvar[c] : var[c]);
  }
  free(buf);
  return 0;
}

/* One channel's sums for backward: sum(dy), sum(dy * (x - m)). */
#define BN_CHANNEL_SUMS(T)                                                                                   \
  do {                                                                                                       \
    const T *xs = x->data, *gs = dy->data;                                                                   \
    for (int64_t b = 0; b < batch; b++) {                                                                    \
      int64_t off = (b * ch + c) * sp;                                                                       \
      for (int64_t i = 0; i < sp; i++) {                                                                     \
        double gv = gs[off + i];                                                                             \
        sg += gv;                                                                                            \
        sgx += gv * ((double)xs[off + i] - m);                                                               \
      }                                                                                                      \
    }                                                                                                        \
  } while (0)

/* dx += k * (dy - c0 - (x - m) * c1) for one channel. */
#define BN_DX(T)                                                                                             \
  do {                                                                                                       \
    const T *xs = x->data, *gs = dy->data;                                                                   \
    T *dxs = dx->data;                                                                                       \
    for (int64_t b = 0; b < batch; b++) {                                                                    \
      int64_t off = (b * ch + c) * sp;                                                                       \
      for (int64_t i = 0; i < sp; i++)                                                                       \
        dxs[off + i] += (T)(k * ((double)gs[off + i] - c0 - ((double)xs[off + i] - m) * c1));                \
    }                                                                                                        \
  } while (0)

static int bn_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                       const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)out;
  const amd_bn_attrs *a = n->attrs;
  const amd_tensor *x = in[0], *dy = dout[0];
  amd_tensor *dx = din[0], *dscale = din[1], *dbias = din[2];
  if (!dy || (!dx && !dscale && !dbias)) return 0;
  if (!is_float_like(x->dtype) || dy->dtype != x->dtype)
    return amd_fail(st, "BatchNormalization: no gradient for dtype %s", amd_dtype_name(x->dtype));
  int64_t batch = x->dims[0], inner = 1;
  for (int i = 2; i < x->rank; i++) inner *= x->dims[i];
  int64_t ch = bn_param_count(a, x), sp = a->spatial ? inner : 1, cnt = batch * sp;
  int batch_stats = amd_bn_use_batch_stats(n, ctx);
  int f32 = x->dtype == AMD_FLOAT;
  /* Per channel: mean, (count), variance, sum(dy), sum(dy * (x - m)); with
   * sync_stats the sums are over every rank's batch (dy is then the gradient
   * of the global loss), while dscale and dbias get this rank's part only
   * (the gradient all-reduce adds the others). */
  int sync = batch_stats && ctx && ctx->training && ctx->sync_stats;
  double *w = malloc(sizeof(double) * ((size_t)(ch > 0 ? ch : 1) * 4 + 1));
  if (!w) return amd_fail(st, "out of memory");
  double *mv = w, *vv = w + ch + 1, *sgv = w + 2 * ch + 1, *sgxv = w + 3 * ch + 1;
  double total = (double)cnt;
  if (batch_stats) { /* recompute exactly as forward does */
    AMD_PARALLEL_FOR(cnt * ch)
    for (int64_t c = 0; c < ch; c++) {
      double s = 0;
      for (int64_t b = 0; b < batch; b++) {
        int64_t off = (b * ch + c) * sp;
        for (int64_t i = 0; i < sp; i++)
          s += f32 ? (double)((const float *)x->data)[off + i] : ((const double *)x->data)[off + i];
      }
      mv[c] = s;
    }
    mv[ch] = total;
    if (sync && ctx->sync_stats(ctx->sync_user, mv, ch + 1, st)) goto sync_failed;
    total = mv[ch];
    AMD_PARALLEL_FOR(cnt * ch)
    for (int64_t c = 0; c < ch; c++) {
      double m = total > 0 ? mv[c] / total : 0.0, q = 0;
      for (int64_t b = 0; b < batch; b++) {
        int64_t off = (b * ch + c) * sp;
        for (int64_t i = 0; i < sp; i++) {
          double d =
              (f32 ? (double)((const float *)x->data)[off + i] : ((const double *)x->data)[off + i]) - m;
          q += d * d;
        }
      }
      mv[c] = m;
      vv[c] = q;
    }
    if (sync && ctx->sync_stats(ctx->sync_user, vv, ch, st)) goto sync_failed;
    for (int64_t c = 0; c < ch; c++) vv[c] = total > 0 ? vv[c] / total : 0.0;
  } else {
    for (int64_t c = 0; c < ch; c++) {
      mv[c] = amd_tensor_get_f64(in[3], c);
      vv[c] = amd_tensor_get_f64(in[4], c);
    }
  }
  AMD_PARALLEL_FOR(cnt * ch)
  for (int64_t c = 0; c < ch; c++) {
    double m = mv[c], inv = 1.0 / sqrt(vv[c] + a->epsilon), sg = 0, sgx = 0;
    if (f32)
      BN_CHANNEL_SUMS(float);
    else
      BN_CHANNEL_SUMS(double);
    if (dscale) amd_tensor_set_f64(dscale, c, amd_tensor_get_f64(dscale, c) + sgx * inv);
    if (dbias) amd_tensor_set_f64(dbias, c, amd_tensor_get_f64(dbias, c) + sg);
    sgv[c] = sg;
    sgxv[c] = sgx;
  }
  if (dx && sync && ctx->sync_stats(ctx->sync_user, sgv, 2 * ch, st)) goto sync_failed;
  AMD_PARALLEL_FOR(dx ? cnt * ch : 0)
  for (int64_t c = 0; c < (dx ? ch : 0); c++) {
    double m = mv[c], inv = 1.0 / sqrt(vv[c] + a->epsilon);
    double k = amd_tensor_get_f64(in[1], c) * inv, c0 = 0, c1 = 0;
    if (batch_stats && total > 0) {
      c0 = sgv[c] / total;
      c1 = sgxv[c] * inv * inv / total;
    }
    if (f32)
      BN_DX(float);
    else
      BN_DX(double);
  }
  free(w);
  return 0;
sync_failed:
  free(w);
  return amd_fail_prefix(st, "BatchNormalization statistics over the ranks");
}

const amd_op amd_op_BatchNormalization = {
    .name = "BatchNormalization",
    .idx = AMD_OP_IDX_BatchNormalization,
    .since = {1, 6, 7, 9, 14, 15},
    .parse = bn_parse,
    .infer = bn_infer,
    .forward = bn_forward,
    .backward = bn_backward,
    .nondiff_inputs = (1u << 3) | (1u << 4), /* running mean, var */
    .bwd_unread_out = 1,                     /* Y: the gradient needs X and the statistics */
    .fuses_relu = 1,
};
