/* Normalisations over groups of elements: InstanceNormalization,
 * MeanVarianceNormalization, LpNormalization (CPU; float and double, and
 * float16 / bfloat16 forward through double).
 *
 * Each op splits X into groups (the elements that share their coordinates on
 * the kept dims) and normalises each group on its own; statistics are
 * computed in double, two-pass (mean, then the mean of squared deviations).
 *
 * InstanceNormalization (1, 6, 22): X (N, C, D1, ..., Dk), rank >= 3,
 *   scale and B of shape [C]; a group is one (n, c) plane:
 *   y = scale[c] (x - mean) / sqrt(var + epsilon) + B[c] (epsilon default
 *   1e-5, biased variance). 1's consumed_inputs is ignored; 22 adds bfloat16.
 *   Backward: with xhat = (x - mean) / sqrt(var + eps), r = 1 / sqrt(var + eps),
 *   dB[c] += sum dy, dscale[c] += sum dy xhat,
 *   dx += scale r (dy - mean(dy) - xhat mean(dy xhat)).
 * MeanVarianceNormalization (9, 13): groups over the dims in `axes` (default
 *   [0, 2, 3]; negative counted from the back): y = (x - mean) / (sqrt(var) +
 *   1e-9), as ONNX's function body computes it (which takes the variance as
 *   E[x^2] - E[x]^2; here the two-pass form, the same value without the
 *   cancellation). 13 adds bfloat16.
 *   Backward: with d = sqrt(var) + 1e-9, xc = x - mean,
 *   dx += (dy - mean(dy)) / d - xc mean(dy xc) / (d^2 sqrt(var)) (the last
 *   term 0 for a constant group, var = 0).
 * LpNormalization (1, 22): along the single dim `axis` (default -1),
 *   y = x / ||x||_p with p (default 2) 1 or 2. A group whose norm is 0 gives
 *   0 (ONNX's reference does the same) and gets a zero gradient.
 *   Backward: p = 2: dx += (dy - y sum(dy y)) / n;
 *   p = 1: dx += dy / n - sign(x) sum(dy x) / n^2.
 * Every backward ACCUMULATES (+=) into din. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"

enum { NK_INSTANCE, NK_MVN, NK_LP };

static int grp_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_grp_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  const char *op = n->op->name;
  if (strcmp(op, "InstanceNormalization") == 0) {
    a->epsilon = amd_attr_float(p, "epsilon", 1e-5f);
    if (!(a->epsilon >= 0)) return amd_fail(st, "epsilon must be >= 0, got %g", a->epsilon);
  } else if (strcmp(op, "MeanVarianceNormalization") == 0) {
    a->n_axes = amd_attr_ints(p, "axes", a->axes, AMD_MAX_RANK);
    if (a->n_axes == -2) return amd_fail(st, "too many axes (at most %d)", AMD_MAX_RANK);
    if (a->n_axes < 0) {
      a->n_axes = 3;
      a->axes[0] = 0, a->axes[1] = 2, a->axes[2] = 3;
    }
  } else {
    a->axis = amd_attr_int(p, "axis", -1);
    int64_t pp = amd_attr_int(p, "p", 2);
    if (pp != 1 && pp != 2) return amd_fail(st, "p must be 1 or 2, got %lld", (long long)pp);
    a->p = (int)pp;
  }
  return 0;
}

static int kind_of(const amd_node *n) {
  return n->op->idx == AMD_OP_IDX_InstanceNormalization       ? NK_INSTANCE
         : n->op->idx == AMD_OP_IDX_MeanVarianceNormalization ? NK_MVN
                                                              : NK_LP;
}

/* mask[d] = 1 for the dims a group spans (attrs.h). */
int amd_grp_mask(const amd_node *n, const amd_tensor *x, int *mask, amd_status *st) {
  const amd_grp_attrs *a = n->attrs;
  for (int d = 0; d < x->rank; d++) mask[d] = 0;
  switch (kind_of(n)) {
  case NK_INSTANCE:
    if (x->rank < 3) return amd_fail(st, "input must have rank >= 3 (N, C, D1, ...), got %d", x->rank);
    for (int d = 2; d < x->rank; d++) mask[d] = 1;
    return 0;
  case NK_MVN:
    for (int i = 0; i < a->n_axes; i++) {
      int ax = amd_axis(a->axes[i], x->rank, st);
      if (ax < 0) return -1;
      if (mask[ax]) return amd_fail(st, "axis %lld repeated", (long long)a->axes[i]);
      mask[ax] = 1;
    }
    return 0;
  default: {
    if (x->rank < 1) return amd_fail(st, "input must have rank >= 1");
    int ax = amd_axis(a->axis, x->rank, st);
    if (ax < 0) return -1;
    mask[ax] = 1;
    return 0;
  }
  }
}

static int float_like(amd_dtype t) {
  return t == AMD_FLOAT || t == AMD_DOUBLE || t == AMD_FLOAT16 || t == AMD_BFLOAT16;
}

static int grp_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  if (n->n_in < 1 || !in[0]) return amd_fail(st, "missing input");
  const amd_tensor *x = in[0];
  if (!float_like(x->dtype)) return amd_fail(st, "unsupported dtype %s", amd_dtype_name(x->dtype));
  int mask[AMD_MAX_RANK];
  if (amd_grp_mask(n, x, mask, st)) return -1;
  if (kind_of(n) == NK_INSTANCE) {
    if (n->n_in < 3 || !in[1] || !in[2]) return amd_fail(st, "InstanceNormalization takes X, scale and B");
    for (int k = 1; k <= 2; k++) {
      if (in[k]->dtype != x->dtype)
        return amd_fail(st, "%s has dtype %s, X %s", k == 1 ? "scale" : "B", amd_dtype_name(in[k]->dtype),
                        amd_dtype_name(x->dtype));
      if (in[k]->rank != 1 || in[k]->dims[0] != x->dims[1])
        return amd_fail(st, "%s must have shape [C] = [%lld]", k == 1 ? "scale" : "B", (long long)x->dims[1]);
    }
  }
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, x->dims);
  return 0;
}

/* The element -> group map (groups numbered row-major over the kept dims). */
typedef struct grp_map {
  int64_t n, n_groups;
  int64_t *gid;
  double *xd; /* x in double */
  double *s;  /* per group: 4 doubles of statistics and sums */
} grp_map;

static void grp_free(grp_map *g) {
  free(g->gid);
  free(g->xd);
  free(g->s);
}

static int grp_build(const amd_tensor *x, const int *mask, grp_map *g, amd_status *st) {
  memset(g, 0, sizeof *g);
  g->n = amd_tensor_numel(x);
  int64_t stride[AMD_MAX_RANK], s = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    stride[d] = mask[d] ? 0 : s;
    if (!mask[d]) s *= x->dims[d];
  }
  g->n_groups = s;
  size_t ne = (size_t)(g->n ? g->n : 1);
  g->gid = malloc(ne * sizeof *g->gid);
  g->xd = malloc(ne * sizeof *g->xd);
  g->s = calloc((size_t)(s ? s : 1) * 4, sizeof *g->s);
  if (!g->gid || !g->xd || !g->s) {
    grp_free(g);
    return amd_fail(st, "out of memory");
  }
  int64_t idx[AMD_MAX_RANK] = {0}, gi = 0;
  for (int64_t i = 0; i < g->n; i++) {
    g->gid[i] = gi;
    g->xd[i] = amd_tensor_get_f64(x, i);
    for (int d = x->rank - 1; d >= 0; d--) {
      gi += stride[d];
      if (++idx[d] < x->dims[d]) break;
      gi -= stride[d] * x->dims[d];
      idx[d] = 0;
    }
  }
  return 0;
}

/* s[4g] = count, s[4g+1] = mean (or the norm for Lp), s[4g+2] = variance. */
static void grp_stats(const amd_node *n, grp_map *g) {
  double *s = g->s;
  int lp = kind_of(n) == NK_LP, p = lp ? ((const amd_grp_attrs *)n->attrs)->p : 0;
  for (int64_t i = 0; i < g->n; i++) {
    double *q = s + 4 * g->gid[i], v = g->xd[i];
    q[0] += 1;
    q[1] += lp ? (p == 1 ? fabs(v) : v * v) : v;
  }
  for (int64_t k = 0; k < g->n_groups; k++) {
    double *q = s + 4 * k;
    q[1] = lp ? (p == 1 ? q[1] : sqrt(q[1])) : (q[0] > 0 ? q[1] / q[0] : 0);
  }
  if (lp) return;
  for (int64_t i = 0; i < g->n; i++) {
    double *q = s + 4 * g->gid[i], d = g->xd[i] - q[1];
    q[2] += d * d;
  }
  for (int64_t k = 0; k < g->n_groups; k++) s[4 * k + 2] = s[4 * k] > 0 ? s[4 * k + 2] / s[4 * k] : 0;
}

/* The group's divisor: sqrt(var + eps), sqrt(var) + 1e-9, or the norm. */
static double grp_den(int kind, const amd_grp_attrs *a, const double *q) {
  if (kind == NK_INSTANCE) return sqrt(q[2] + a->epsilon);
  if (kind == NK_MVN) return sqrt(q[2]) + 1e-9;
  return q[1];
}

static int grp_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                       amd_status *st) {
  (void)ctx;
  const amd_tensor *x = in[0];
  const amd_grp_attrs *a = n->attrs;
  int kind = kind_of(n), mask[AMD_MAX_RANK];
  if (amd_grp_mask(n, x, mask, st)) return -1;
  grp_map g;
  if (grp_build(x, mask, &g, st)) return -1;
  grp_stats(n, &g);
  int64_t C = kind == NK_INSTANCE ? x->dims[1] : 1;
  for (int64_t i = 0; i < g.n; i++) {
    const double *q = g.s + 4 * g.gid[i];
    double den = grp_den(kind, a, q), y;
    if (kind == NK_LP) {
      y = den == 0 ? 0.0 : g.xd[i] / den;
    } else {
      y = (g.xd[i] - q[1]) / den;
      if (kind == NK_INSTANCE) {
        int64_t c = g.gid[i] % C;
        y = y * amd_tensor_get_f64(in[1], c) + amd_tensor_get_f64(in[2], c);
      }
    }
    amd_tensor_set_f64(&out[0], i, y);
  }
  grp_free(&g);
  return 0;
}

/* Per-group sums of the backward: s[4g+3] and the reused s[4g] (after the
 * divisors are taken): sum dy and sum dy * (xhat, xc, y or x). */
static int grp_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                        const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  if (!dout[0]) return 0;
  const amd_tensor *x = in[0], *dy = dout[0];
  if (x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE)
    return amd_fail(st, "backward supports float and double only (got %s)", amd_dtype_name(x->dtype));
  const amd_grp_attrs *a = n->attrs;
  int kind = kind_of(n), mask[AMD_MAX_RANK];
  if (amd_grp_mask(n, x, mask, st)) return -1;
  grp_map g;
  if (grp_build(x, mask, &g, st)) return -1;
  grp_stats(n, &g);
  int64_t C = kind == NK_INSTANCE ? x->dims[1] : 1;
  double *sg = calloc((size_t)(g.n_groups ? g.n_groups : 1) * 2, sizeof *sg);
  if (!sg) {
    grp_free(&g);
    return amd_fail(st, "out of memory");
  }
  /* sg[2k] = sum dy, sg[2k+1] = sum dy * t with t = xhat (instance), xc (MVN), x (Lp) */
  for (int64_t i = 0; i < g.n; i++) {
    const double *q = g.s + 4 * g.gid[i];
    double gv = amd_tensor_get_f64(dy, i), t = g.xd[i];
    if (kind == NK_INSTANCE)
      t = (t - q[1]) / grp_den(kind, a, q);
    else if (kind == NK_MVN)
      t = t - q[1];
    sg[2 * g.gid[i]] += gv;
    sg[2 * g.gid[i] + 1] += gv * t;
  }
  for (int64_t i = 0; din[0] && i < g.n; i++) {
    const double *q = g.s + 4 * g.gid[i], *u = sg + 2 * g.gid[i];
    double gv = amd_tensor_get_f64(dy, i), den = grp_den(kind, a, q), cnt = q[0], d;
    if (kind == NK_INSTANCE) {
      double xhat = (g.xd[i] - q[1]) / den;
      d = amd_tensor_get_f64(in[1], g.gid[i] % C) / den * (gv - u[0] / cnt - xhat * u[1] / cnt);
    } else if (kind == NK_MVN) {
      double sd = sqrt(q[2]), xc = g.xd[i] - q[1];
      d = (gv - u[0] / cnt) / den - (sd > 0 ? xc * (u[1] / cnt) / (den * den * sd) : 0.0);
    } else if (den == 0) {
      d = 0;
    } else if (a->p == 2) {
      d = (gv - g.xd[i] / den * u[1] / den) / den;
    } else {
      double v = g.xd[i], sgn = v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0;
      d = gv / den - sgn * u[1] / (den * den);
    }
    amd_tensor_set_f64(din[0], i, amd_tensor_get_f64(din[0], i) + d);
  }
  if (kind == NK_INSTANCE && (din[1] || din[2])) {
    for (int64_t k = 0; k < g.n_groups; k++) {
      int64_t c = k % C;
      if (din[1]) amd_tensor_set_f64(din[1], c, amd_tensor_get_f64(din[1], c) + sg[2 * k + 1]);
      if (din[2]) amd_tensor_set_f64(din[2], c, amd_tensor_get_f64(din[2], c) + sg[2 * k]);
    }
  }
  free(sg);
  grp_free(&g);
  return 0;
}

const amd_op amd_op_InstanceNormalization = {.name = "InstanceNormalization",
                                             .idx = AMD_OP_IDX_InstanceNormalization,
                                             .since = {1, 6, 22},
                                             .parse = grp_parse,
                                             .infer = grp_infer,
                                             .forward = grp_forward,
                                             .backward = grp_backward,
                                             .bwd_unread_out = 1u};
const amd_op amd_op_MeanVarianceNormalization = {.name = "MeanVarianceNormalization",
                                                 .idx = AMD_OP_IDX_MeanVarianceNormalization,
                                                 .since = {9, 13},
                                                 .parse = grp_parse,
                                                 .infer = grp_infer,
                                                 .forward = grp_forward,
                                                 .backward = grp_backward,
                                                 .bwd_unread_out = 1u};
const amd_op amd_op_LpNormalization = {.name = "LpNormalization",
                                       .idx = AMD_OP_IDX_LpNormalization,
                                       .since = {1, 22},
                                       .parse = grp_parse,
                                       .infer = grp_infer,
                                       .forward = grp_forward,
                                       .backward = grp_backward,
                                       .bwd_unread_out = 1u};
