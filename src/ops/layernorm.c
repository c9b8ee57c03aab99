/* LayerNormalization (ONNX since-version 17, the only one) on the CPU.
 *
 * X of rank r >= 1 is normalised over the axes [axis, r) (axis default -1,
 * negative counts from the end): seen as a matrix of rows = d0 * ... *
 * d(axis-1) by cols = d(axis) * ... * d(r-1), each row gets
 *   Mean = sum(x) / cols,  Var = sum((x - Mean)^2) / cols (biased),
 *   InvStdDev = 1 / sqrt(Var + epsilon),
 *   Y = (x - Mean) * InvStdDev * Scale + B.
 * Scale and the optional B broadcast unidirectionally to the normalised shape
 * (d(axis), ..., d(r-1)): right-aligned, each of their dims 1 or equal to X's;
 * dims that fall before the axis must be 1 (so that Y keeps X's shape). Any
 * other shape fails with a message naming both shapes.
 *
 * Outputs: Y (X's shape and dtype), and the optional Mean and InvStdDev of
 * X's rank with the normalised dims set to 1, in float (stash_type 1, the
 * default and the only value accepted; the ONNX type constraint U also allows
 * bfloat16, which this project does not compute in).
 *
 * Precision: X, Scale, B are float or double (all three the same). The
 * statistics and Y are computed in double for every dtype (the row is read
 * into doubles; mean first, then the variance from the deviations: the
 * two-pass form, no cancellation), then rounded to the outputs' types. That
 * is at least as accurate as stash_type 1's float32 statistics.
 *
 * Backward: gradients flow only from Y (dY); the gradients of the Mean and
 * InvStdDev outputs, if any reach them, are ignored (they are statistics, as
 * PyTorch's layer_norm treats them). Backward recomputes each row's Mean and
 * InvStdDev from X exactly as forward does, so it reads X and Scale but no
 * output (nor B's data). With n = cols, xhat = (x - Mean) * InvStdDev and
 * g = dY * Scale (Scale broadcast to the row):
 *   dX    += InvStdDev * (g - sum(g) / n - xhat * sum(g * xhat) / n)
 *   dScale += sum over rows of dY * xhat   (then summed over the dims Scale
 *   dB     += sum over rows of dY           broadcasts along)
 * each into its buffer when that buffer is non-NULL (ACCUMULATE, +=). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/omp.h"
#include "attrs.h"

static int ln_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  amd_ln_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->axis = amd_attr_int(p, "axis", -1);
  a->epsilon = amd_attr_float(p, "epsilon", 1e-5f);
  a->stash_type = (int)amd_attr_int(p, "stash_type", 1);
  if (!(a->epsilon >= 0)) return amd_fail(st, "epsilon must be >= 0, got %g", a->epsilon);
  if (a->stash_type != 1)
    return amd_fail(st, "stash_type %d is not supported (only 1: float32 statistics)", a->stash_type);
  return 0;
}

/* Whether parameter p (Scale or B) broadcasts to the normalised shape of x
 * (axes [axis, rank)). */
static int ln_param_check(const amd_tensor *x, int axis, const amd_tensor *p, const char *what,
                          amd_status *st) {
  int ok = p->rank <= x->rank;
  for (int i = 0; ok && i < p->rank; i++) {
    int xa = x->rank - p->rank + i; /* the axis of X that p's dim i lines up with */
    int64_t d = p->dims[i];
    ok = xa < axis ? d == 1 : (d == 1 || d == x->dims[xa]);
  }
  if (ok) return 0;
  char s1[128], s2[128], s3[128];
  amd_tensor nshape = {0};
  amd_tensor_set_shape(&nshape, x->dtype, x->rank - axis, x->dims + axis);
  return amd_fail(st,
                  "%s has shape %s, which does not broadcast to the normalised shape %s of X %s (axis %d)",
                  what, amd_shape_str(p, s1, sizeof s1), amd_shape_str(&nshape, s2, sizeof s2),
                  amd_shape_str(x, s3, sizeof s3), axis);
}

/* The normalised axis of x, checking the attribute against x's rank. */
static int ln_axis(const amd_node *n, const amd_tensor *x, amd_status *st) {
  const amd_ln_attrs *a = n->attrs;
  if (x->rank < 1) return amd_fail(st, "X must have rank >= 1, got a scalar");
  return amd_axis(a->axis, x->rank, st);
}

int amd_ln_view(const amd_node *n, const amd_tensor *const *in, int64_t *rows, int64_t *cols, int *full,
                amd_status *st) {
  if (n->n_in < 2 || !in[0] || !in[1]) return amd_fail(st, "inputs X and Scale are required");
  const amd_tensor *x = in[0], *b = n->n_in > 2 ? in[2] : NULL;
  static const char *names[] = {"X", "Scale", "B"};
  for (int k = 0; k < 3; k++) {
    if (k >= n->n_in || !in[k]) continue;
    if (in[k]->dtype != AMD_FLOAT && in[k]->dtype != AMD_DOUBLE)
      return amd_fail(st, "%s has dtype %s (float or double supported)", names[k],
                      amd_dtype_name(in[k]->dtype));
    if (in[k]->dtype != x->dtype)
      return amd_fail(st, "%s has dtype %s, X has %s (they must match)", names[k],
                      amd_dtype_name(in[k]->dtype), amd_dtype_name(x->dtype));
  }
  int axis = ln_axis(n, x, st);
  if (axis < 0) return -1;
  if (ln_param_check(x, axis, in[1], "Scale", st) || (b && ln_param_check(x, axis, b, "B", st))) return -1;
  int64_t r = 1, c = 1;
  for (int i = 0; i < x->rank; i++) *(i < axis ? &r : &c) *= x->dims[i];
  *rows = r;
  *cols = c;
  if (full) *full = amd_tensor_numel(in[1]) == c && (!b || amd_tensor_numel(b) == c);
  return 0;
}

static int ln_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  int64_t rows, cols;
  if (amd_ln_view(n, in, &rows, &cols, NULL, st)) return -1;
  if (n->n_out < 1 || n->n_out > 3)
    return amd_fail(st, "LayerNormalization has 1 to 3 outputs (Y, Mean, InvStdDev), got %d", n->n_out);
  const amd_tensor *x = in[0];
  int axis = ln_axis(n, x, st);
  amd_tensor_set_shape(&out[0], x->dtype, x->rank, x->dims);
  int64_t sd[AMD_MAX_RANK];
  for (int i = 0; i < x->rank; i++) sd[i] = i < axis ? x->dims[i] : 1;
  for (int k = 1; k < n->n_out; k++) amd_tensor_set_shape(&out[k], AMD_FLOAT, x->rank, sd);
  return 0;
}

/* idx[j]: the element of parameter p that column j of a row reads (p
 * broadcast to the normalised shape of x; ln_param_check passed). */
static void ln_param_index(const amd_tensor *x, int axis, const amd_tensor *p, int64_t cols, int64_t *idx) {
  int nr = x->rank - axis;
  int64_t stride[AMD_MAX_RANK], ctr[AMD_MAX_RANK] = {0};
  for (int i = 0; i < nr; i++) {
    int pi = axis + i - (x->rank - p->rank); /* p's dim lined up with X's axis (axis + i) */
    stride[i] = 0;
    if (pi < 0 || p->dims[pi] == 1) continue;
    int64_t s = 1;
    for (int k = pi + 1; k < p->rank; k++) s *= p->dims[k];
    stride[i] = s;
  }
  int64_t off = 0;
  for (int64_t j = 0; j < cols; j++) {
    idx[j] = off;
    for (int i = nr - 1; i >= 0; i--) { /* next column: odometer over the normalised dims */
      off += stride[i];
      if (++ctr[i] < x->dims[axis + i]) break;
      off -= stride[i] * ctr[i];
      ctr[i] = 0;
    }
  }
}

/* Element i of a float or double tensor, as a double. */
static inline double ln_at(const amd_tensor *t, int64_t i) {
  return t->dtype == AMD_FLOAT ? (double)((const float *)t->data)[i] : ((const double *)t->data)[i];
}

/* Row r's mean and 1 / sqrt(var + eps), two-pass in double. */
static void ln_row_stats(const amd_tensor *x, int64_t r, int64_t cols, double eps, double *mean,
                         double *inv) {
  const int64_t o = r * cols;
  double s = 0, q = 0;
  for (int64_t j = 0; j < cols; j++) s += ln_at(x, o + j);
  double m = cols > 0 ? s / (double)cols : 0.0;
  for (int64_t j = 0; j < cols; j++) q += (ln_at(x, o + j) - m) * (ln_at(x, o + j) - m);
  double v = cols > 0 ? q / (double)cols : 0.0;
  *mean = m;
  *inv = 1.0 / sqrt(v + eps);
}

/* Scale and B (or 0 when absent) expanded to one row of cols doubles, with
 * their index maps (sidx, bidx) for the backward's folding; the backward's
 * per-column sums and per-row statistics. */
typedef struct ln_work {
  double *sc, *bb;    /* Scale and B per column */
  double *dsc, *dbb;  /* per-column sums for dScale, dB (backward) */
  double *mean, *inv; /* per row (backward) */
  int64_t *sidx, *bidx;
  void *block;
} ln_work;

static int ln_work_init(ln_work *w, const amd_node *n, const amd_tensor *const *in, int64_t rows,
                        int64_t cols, int bwd, amd_status *st) {
  const amd_tensor *x = in[0], *s = in[1], *b = n->n_in > 2 ? in[2] : NULL;
  size_t c = (size_t)(cols > 0 ? cols : 1), nr = bwd ? (size_t)(rows > 0 ? rows : 1) : 0;
  memset(w, 0, sizeof *w);
  w->block = malloc(c * (sizeof(double) * (bwd ? 4 : 2) + sizeof(int64_t) * 2) + nr * 2 * sizeof(double));
  if (!w->block) return amd_fail(st, "out of memory");
  w->sc = w->block;
  w->bb = w->sc + c;
  w->dsc = bwd ? w->bb + c : NULL;
  w->dbb = bwd ? w->dsc + c : NULL;
  w->sidx = (int64_t *)(w->sc + c * (bwd ? 4 : 2));
  w->bidx = w->sidx + c;
  w->mean = bwd ? (double *)(w->bidx + c) : NULL;
  w->inv = bwd ? w->mean + nr : NULL;
  int axis = ln_axis(n, x, st);
  ln_param_index(x, axis, s, cols, w->sidx);
  for (int64_t j = 0; j < cols; j++) w->sc[j] = amd_tensor_get_f64(s, w->sidx[j]);
  if (b) {
    ln_param_index(x, axis, b, cols, w->bidx);
    for (int64_t j = 0; j < cols; j++) w->bb[j] = amd_tensor_get_f64(b, w->bidx[j]);
  } else {
    for (int64_t j = 0; j < cols; j++) w->bb[j] = 0;
  }
  if (bwd)
    for (int64_t j = 0; j < cols; j++) w->dsc[j] = w->dbb[j] = 0;
  return 0;
}

static int ln_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                      amd_status *st) {
  (void)ctx;
  const amd_ln_attrs *a = n->attrs;
  int64_t rows, cols;
  if (amd_ln_view(n, in, &rows, &cols, NULL, st)) return -1;
  ln_work w;
  if (ln_work_init(&w, n, in, rows, cols, 0, st)) return -1;
  const amd_tensor *x = in[0];
  amd_tensor *y = &out[0];
  amd_tensor *mo = n->n_out > 1 && n->out[1] >= 0 && out[1].data ? &out[1] : NULL;
  amd_tensor *io = n->n_out > 2 && n->out[2] >= 0 && out[2].data ? &out[2] : NULL;
  AMD_PARALLEL_FOR(rows * cols)
  for (int64_t r = 0; r < rows; r++) {
    double m, inv;
    ln_row_stats(x, r, cols, a->epsilon, &m, &inv);
    if (y->dtype == AMD_FLOAT) {
      float *yr = (float *)y->data + r * cols;
      for (int64_t j = 0; j < cols; j++)
        yr[j] = (float)((ln_at(x, r * cols + j) - m) * inv * w.sc[j] + w.bb[j]);
    } else {
      double *yr = (double *)y->data + r * cols;
      for (int64_t j = 0; j < cols; j++) yr[j] = (ln_at(x, r * cols + j) - m) * inv * w.sc[j] + w.bb[j];
    }
    if (mo) amd_tensor_set_f64(mo, r, m);
    if (io) amd_tensor_set_f64(io, r, inv);
  }
  free(w.block);
  return 0;
}

/* d += the per-column sums v folded into d's own shape (the dims it
 * broadcasts along summed, in double, before one addition per element). */
static int ln_fold(amd_tensor *d, const int64_t *idx, const double *v, int64_t cols, amd_status *st) {
  int64_t np = amd_tensor_numel(d);
  double *acc = calloc((size_t)(np > 0 ? np : 1), sizeof *acc);
  if (!acc) return amd_fail(st, "out of memory");
  for (int64_t j = 0; j < cols; j++) acc[idx[j]] += v[j];
  for (int64_t i = 0; i < np; i++) amd_tensor_set_f64(d, i, amd_tensor_get_f64(d, i) + acc[i]);
  free(acc);
  return 0;
}

static int ln_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                       const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx;
  (void)out;
  const amd_ln_attrs *a = n->attrs;
  const amd_tensor *dy = dout[0]; /* dout[1], dout[2] (Mean, InvStdDev) are ignored: see the header */
  amd_tensor *dx = din[0], *dscale = din[1], *dbias = n->n_in > 2 ? din[2] : NULL;
  if (!dy || (!dx && !dscale && !dbias)) return 0;
  int64_t rows, cols;
  if (amd_ln_view(n, in, &rows, &cols, NULL, st)) return -1;
  if (dy->dtype != in[0]->dtype || amd_tensor_numel(dy) != rows * cols)
    return amd_fail(st, "LayerNormalization: dY does not match Y (%s, %lld elements)",
                    amd_dtype_name(dy->dtype), (long long)amd_tensor_numel(dy));
  ln_work w;
  if (ln_work_init(&w, n, in, rows, cols, 1, st)) return -1;
  const amd_tensor *x = in[0];
  const double nc = (double)cols;
  /* rows on every core: their statistics and dX */
  AMD_PARALLEL_FOR(rows * cols)
  for (int64_t r = 0; r < rows; r++) {
    const int64_t o = r * cols;
    double m, inv, sg = 0, sgx = 0;
    ln_row_stats(x, r, cols, a->epsilon, &m, &inv);
    w.mean[r] = m;
    w.inv[r] = inv;
    if (!dx) continue;
    for (int64_t j = 0; j < cols; j++) {
      double xh = (ln_at(x, o + j) - m) * inv, g = ln_at(dy, o + j) * w.sc[j];
      sg += g;
      sgx += g * xh;
    }
    double c0 = sg / nc, c1 = sgx / nc;
    if (dx->dtype == AMD_FLOAT) {
      float *d = (float *)dx->data + o;
      for (int64_t j = 0; j < cols; j++)
        d[j] += (float)(inv * (ln_at(dy, o + j) * w.sc[j] - c0 - (ln_at(x, o + j) - m) * inv * c1));
    } else {
      double *d = (double *)dx->data + o;
      for (int64_t j = 0; j < cols; j++)
        d[j] += inv * (ln_at(dy, o + j) * w.sc[j] - c0 - (ln_at(x, o + j) - m) * inv * c1);
    }
  }
  /* columns on every core: dScale's and dB's sums over the rows, in row order */
  if (dscale || dbias) {
    AMD_PARALLEL_FOR(rows * cols)
    for (int64_t j = 0; j < cols; j++)
      for (int64_t r = 0; r < rows; r++) {
        const double g = ln_at(dy, r * cols + j);
        w.dsc[j] += g * ((ln_at(x, r * cols + j) - w.mean[r]) * w.inv[r]);
        w.dbb[j] += g;
      }
  }
  int rc = 0;
  if (dscale) rc = ln_fold(dscale, w.sidx, w.dsc, cols, st);
  if (rc == 0 && dbias) rc = ln_fold(dbias, w.bidx, w.dbb, cols, st);
  free(w.block);
  return rc;
}

const amd_op amd_op_LayerNormalization = {
    .name = "LayerNormalization",
    .idx = AMD_OP_IDX_LayerNormalization,
    .since = {17},
    .parse = ln_parse,
    .infer = ln_infer,
    .forward = ln_forward,
    .backward = ln_backward,
    .bwd_unread_in = 1u << 2,                            /* B: only its shape */
    .bwd_unread_out = (1u << 0) | (1u << 1) | (1u << 2), /* statistics recomputed from X */
};
