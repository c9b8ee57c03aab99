/* The loss ops (the training loss of the trainer itself is src/train/loss.c).
 *
 * NegativeLogLikelihoodLoss (12, 13, 22): input [N, C] or [N, C, d1, ...]
 *   (log-probabilities), target [N] or [N, d1, ...] (int32 / int64, on the
 *   host), optional weight [C]. Each position (n, d) with target t gets
 *   loss = -weight[t] * input[n, t, d] (weight 1 without the input); a t equal
 *   to ignore_index (when given) gets loss 0 and weight 0; any other t
 *   outside [0, C) fails. reduction: none (the [N, d1, ...] losses), sum, or
 *   mean (the default: the sum divided by the sum of the weights of the
 *   positions, as ONNX's reference does, NaN when it is 0).
 * SoftmaxCrossEntropyLoss (12, 13): the same loss of log_softmax(scores)
 *   along axis 1, with labels as target; the optional second output is that
 *   log_softmax (scores' shape).
 *
 * float and double; sums in double. Backward (for the input / scores only;
 * target and weight are not trained): NLL adds -c at [n, t, d]; SCE adds
 * c * (softmax - onehot(t)) with c = weight[t] times the output's gradient
 * (none: per position; sum: the scalar; mean: the scalar over the weight
 * sum), plus, when log_prob has a gradient G, G - softmax * sum_c G. The
 * softmax is recomputed from the scores. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shape_util.h"

enum { LOSS_NONE = AMD_LOSS_NONE, LOSS_SUM = AMD_LOSS_SUM, LOSS_MEAN = AMD_LOSS_MEAN };
typedef amd_loss_attrs loss_attrs;

static int loss_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  loss_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  char buf[16];
  const char *r = amd_attr_string(p, "reduction", "mean", buf, sizeof buf);
  if (strcmp(r, "none") == 0)
    a->reduction = LOSS_NONE;
  else if (strcmp(r, "sum") == 0)
    a->reduction = LOSS_SUM;
  else if (strcmp(r, "mean") == 0)
    a->reduction = LOSS_MEAN;
  else
    return amd_fail(st, "reduction must be none, sum or mean (got '%s')", r);
  a->has_ii = amd_attr_find(p, "ignore_index") != NULL;
  a->ignore_index = amd_attr_int(p, "ignore_index", 0);
  return 0;
}

/* [N, C, D] with D the product of the trailing axes (attrs.h). */
typedef amd_loss_geom loss_geom;

int amd_loss_check(const amd_node *n, const amd_tensor *const *in, amd_loss_geom *g, amd_status *st) {
  if (need_in(n, in, 0, "input", st) || need_in(n, in, 1, "target", st)) return -1;
  const amd_tensor *x = in[0], *t = in[1], *w = n->n_in > 2 ? in[2] : NULL;
  if (x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE)
    return amd_fail(st, "input must be float or double (got %s)", amd_dtype_name(x->dtype));
  if (t->dtype != AMD_INT64 && t->dtype != AMD_INT32)
    return amd_fail(st, "target must be int32 or int64 (got %s)", amd_dtype_name(t->dtype));
  char sx[128], stt[128];
  if (x->rank < 2) return amd_fail(st, "input %s must be [N, C, ...]", amd_shape_str(x, sx, sizeof sx));
  int ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
  for (int i = 1; ok && i < t->rank; i++) ok = t->dims[i] == x->dims[i + 1];
  if (!ok)
    return amd_fail(st, "target %s does not fit input %s (want [N, d1, ...])", amd_shape_str(t, stt, sizeof stt),
                    amd_shape_str(x, sx, sizeof sx));
  if (w && (w->dtype != x->dtype || w->rank != 1 || w->dims[0] != x->dims[1]))
    return amd_fail(st, "weight must be a 1-D %s tensor of C = %lld values (got %s %s)", amd_dtype_name(x->dtype),
                    (long long)x->dims[1], amd_dtype_name(w->dtype), amd_shape_str(w, sx, sizeof sx));
  g->n = x->dims[0], g->c = x->dims[1], g->d = 1;
  for (int i = 2; i < x->rank; i++) g->d *= x->dims[i];
  return 0;
}

static double ld(const amd_tensor *t, int64_t i) {
  return t->dtype == AMD_FLOAT ? (double)((const float *)t->data)[i] : ((const double *)t->data)[i];
}
static void st_add(amd_tensor *t, int64_t i, double v) {
  if (t->dtype == AMD_FLOAT)
    ((float *)t->data)[i] += (float)v;
  else
    ((double *)t->data)[i] += v;
}

/* Each position's class (-1: ignored) and weight; the weight sum in *wsum (attrs.h). */
int amd_loss_targets(const amd_node *n, const amd_tensor *const *in, const amd_loss_geom *g, int64_t *cls,
                     double *wt, double *wsum, amd_status *st) {
  const loss_attrs *a = n->attrs;
  const amd_tensor *w = n->n_in > 2 ? in[2] : NULL;
  double s = 0;
  for (int64_t p = 0; p < g->n * g->d; p++) {
    int64_t t = amd_tensor_get_i64(in[1], p);
    if (a->has_ii && t == a->ignore_index) {
      cls[p] = -1, wt[p] = 0;
      continue;
    }
    if (t < 0 || t >= g->c)
      return amd_fail(st, "target %lld at position %lld is not a class in [0, %lld)", (long long)t, (long long)p,
                      (long long)g->c);
    cls[p] = t;
    wt[p] = w ? ld(w, t) : 1.0;
    s += wt[p];
  }
  *wsum = s;
  return 0;
}

static int loss_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const loss_attrs *a = n->attrs;
  loss_geom g;
  if (amd_loss_check(n, in, &g, st)) return -1;
  if (a->reduction == LOSS_NONE)
    amd_tensor_set_shape(&out[0], in[0]->dtype, in[1]->rank, in[1]->dims);
  else
    amd_tensor_set_shape(&out[0], in[0]->dtype, 0, NULL);
  if (n->n_out > 1) {
    if (n->op->idx != AMD_OP_IDX_SoftmaxCrossEntropyLoss) return amd_fail(st, "one output only");
    copy_shape(&out[1], in[0]);
  }
  return 0;
}

/* The working buffers of one pass: classes, weights, and for SCE the
 * log-probabilities [N, C, D] in double. */
typedef struct loss_work {
  loss_geom g;
  int64_t *cls;
  double *wt, *lp, wsum;
} loss_work;

static void work_free(loss_work *w) {
  free(w->cls);
  free(w->wt);
  free(w->lp);
}

static int work_init(const amd_node *n, const amd_tensor *const *in, loss_work *w, amd_status *st) {
  memset(w, 0, sizeof *w);
  if (amd_loss_check(n, in, &w->g, st)) return -1;
  int64_t np = w->g.n * w->g.d, nx = np * w->g.c;
  w->cls = malloc((size_t)(np > 0 ? np : 1) * sizeof *w->cls);
  w->wt = malloc((size_t)(np > 0 ? np : 1) * sizeof *w->wt);
  int sce = n->op->idx == AMD_OP_IDX_SoftmaxCrossEntropyLoss;
  if (sce) w->lp = malloc((size_t)(nx > 0 ? nx : 1) * sizeof *w->lp);
  if (!w->cls || !w->wt || (sce && !w->lp)) {
    work_free(w);
    return amd_fail(st, "out of memory");
  }
  if (amd_loss_targets(n, in, &w->g, w->cls, w->wt, &w->wsum, st)) {
    work_free(w);
    return -1;
  }
  if (!sce) return 0;
  const loss_geom *g = &w->g;
  for (int64_t b = 0; b < g->n; b++) /* log_softmax along C */
    for (int64_t d = 0; d < g->d; d++) {
      int64_t base = b * g->c * g->d + d;
      double m = -INFINITY, s = 0;
      for (int64_t c = 0; c < g->c; c++) m = fmax(m, ld(in[0], base + c * g->d));
      for (int64_t c = 0; c < g->c; c++) s += exp(ld(in[0], base + c * g->d) - m);
      double ls = log(s);
      for (int64_t c = 0; c < g->c; c++) w->lp[base + c * g->d] = ld(in[0], base + c * g->d) - m - ls;
    }
  return 0;
}

static int loss_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                        amd_status *st) {
  (void)ctx;
  const loss_attrs *a = n->attrs;
  loss_work w;
  if (work_init(n, in, &w, st)) return -1;
  const loss_geom *g = &w.g;
  double total = 0;
  for (int64_t b = 0; b < g->n; b++)
    for (int64_t d = 0; d < g->d; d++) {
      int64_t p = b * g->d + d, t = w.cls[p];
      double l = 0;
      if (t >= 0) {
        int64_t e = (b * g->c + t) * g->d + d;
        l = -w.wt[p] * (w.lp ? w.lp[e] : ld(in[0], e));
      }
      if (a->reduction == LOSS_NONE)
        amd_tensor_set_f64(&out[0], p, l);
      else
        total += l;
    }
  if (a->reduction == LOSS_SUM) amd_tensor_set_f64(&out[0], 0, total);
  if (a->reduction == LOSS_MEAN) amd_tensor_set_f64(&out[0], 0, total / w.wsum);
  if (n->n_out > 1 && n->out[1] >= 0 && out[1].data) /* log_prob is wanted */
    for (int64_t e = 0; e < g->n * g->c * g->d; e++) amd_tensor_set_f64(&out[1], e, w.lp[e]);
  work_free(&w);
  return 0;
}

static int loss_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                         const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  const loss_attrs *a = n->attrs;
  const amd_tensor *dlp = n->n_out > 1 && n->out[1] >= 0 ? dout[1] : NULL;
  if (!din[0] || (!dout[0] && !dlp)) return 0;
  loss_work w;
  if (work_init(n, in, &w, st)) return -1;
  const loss_geom *g = &w.g;
  for (int64_t b = 0; b < g->n; b++)
    for (int64_t d = 0; d < g->d; d++) {
      int64_t p = b * g->d + d, t = w.cls[p], base = b * g->c * g->d + d;
      double coef = 0; /* dL / d(loss at p) times its weight */
      if (dout[0] && t >= 0) {
        double gy = a->reduction == LOSS_NONE ? ld(dout[0], p) : ld(dout[0], 0);
        if (a->reduction == LOSS_MEAN) gy /= w.wsum;
        coef = gy * w.wt[p];
      }
      if (!w.lp) { /* NLL */
        if (t >= 0) st_add(din[0], base + t * g->d, -coef);
        continue;
      }
      double gsum = 0;
      for (int64_t c = 0; dlp && c < g->c; c++) gsum += ld(dlp, base + c * g->d);
      for (int64_t c = 0; c < g->c; c++) {
        int64_t e = base + c * g->d;
        double sm = exp(w.lp[e]), v = coef * (sm - (c == t ? 1.0 : 0.0));
        if (dlp) v += ld(dlp, e) - sm * gsum;
        st_add(din[0], e, v);
      }
    }
  work_free(&w);
  return 0;
}

const amd_op amd_op_NegativeLogLikelihoodLoss = {.name = "NegativeLogLikelihoodLoss",
                                                 .idx = AMD_OP_IDX_NegativeLogLikelihoodLoss,
                                                 .since = {12, 13},
                                                 .parse = loss_parse,
                                                 .infer = loss_infer,
                                                 .forward = loss_forward,
                                                 .backward = loss_backward,
                                                 .nondiff_inputs = 6u,
                                                 .bwd_unread_in = 1u,
                                                 .bwd_unread_out = 1u};

const amd_op amd_op_SoftmaxCrossEntropyLoss = {.name = "SoftmaxCrossEntropyLoss",
                                               .idx = AMD_OP_IDX_SoftmaxCrossEntropyLoss,
                                               .since = {12, 13},
                                               .parse = loss_parse,
                                               .infer = loss_infer,
                                               .forward = loss_forward,
                                               .backward = loss_backward,
                                               .nondiff_inputs = 6u,
                                               .bwd_unread_out = 3u};
