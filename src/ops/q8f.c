/* The float Conv, Gemm and MatMul nodes a q8 mode quantizes on the fly
 * (Conv[q8f], Gemm[q8f], MatMul[q8f]): each forward quantizes the data (per
 * tensor, calibrated on the first calls) and the weight (per output channel)
 * to the mode's codes and computes as the QDQ ops of qlinear.c do, through
 * the mode's table; the backward is the clipped straight-through estimator
 * or the table-derived gradients (q8_grad.h). The calibration state, for the
 * backends with their own kernels: q8f.h. docs/quantized.md has the
 * arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/omp.h"
#include "../gemm/qgemm.h"
#include "../mult/mult.h"
#include "attrs.h"
#include "q8_grad.h"
#include "q8f.h"
#include "quant.h"

extern const amd_op amd_op_Conv;

/* In a q8 mode, a float Conv, Gemm or MatMul that is not in QDQ form becomes
 * Conv[q8f] / Gemm[q8f] / MatMul[q8f] (amd_q8_float_node, called by
 * amd_mode_apply): same inputs and attributes; each forward quantizes its
 * float inputs to the mode's codes (uint8 for q8u, int8 for q8s, range
 * [qmin, qmax]) and then computes exactly as Conv[q8] / Gemm[q8] / MatMul[q8]:
 *   data (input 0), per tensor, asymmetric: [lo, hi] = the min and max of
 *     the inputs of the first AMD_Q8_CALIB_CALLS forward calls (batches),
 *     widened to include 0, then frozen (later values saturate); with
 *     --q8-calib percentile:P the min of the calls' lower and the max of
 *     their upper percentile edges instead (amd_q8f_percentile_range);
 *     scale = (hi - lo) / (qmax - qmin) (float32; 1 when hi = lo),
 *     zp = saturate(round_half_even(qmin - lo / scale)),
 *     code = saturate(round_half_even(x / scale) + zp);
 *   weight (input 1), per output channel (Conv: axis 0; Gemm: B's column,
 *     row of B with transB = 1; MatMul: B's last axis), from its current
 *     values at every call: q8u asymmetric as above over the channel's
 *     [min(0, min), max(0, max)]; q8s symmetric, scale = max |w| / 127,
 *     zp = 0 (scale 1 for an all-zero channel). */
#define AMD_Q8_CALIB_CALLS 4

typedef struct q8f_attrs {
  union {
    amd_conv_attrs conv; /* first: Conv's and Gemm's code reads n->attrs as its own struct */
    amd_gemm_attrs gemm;
  } op;
  int calls;     /* forward calls seen (calibration while < AMD_Q8_CALIB_CALLS) */
  double lo, hi; /* the data range so far (includes 0) */
  int grad;      /* the backward: AMD_Q8_GRAD_STE or AMD_Q8_GRAD_TABLE (amd_q8_float_set_grad) */
  double calib_q; /* the calibration: 0 min / max, else the percentile's P / 100 (amd_q8_float_set_calib) */
} q8f_attrs;

extern const amd_op amd_op_Gemm, amd_op_MatMul;

/* scale and zero point of a range [lo, hi] (lo <= 0 <= hi) */
static void q8f_params(double lo, double hi, int32_t qmin, int32_t qmax, float *scale, int32_t *zp) {
  float s = (float)((hi - lo) / (double)(qmax - qmin));
  if (!(s > 0) || !isfinite(s)) s = 1.0f;
  *scale = s;
  *zp = amd_q_round_sat((double)qmin - lo / (double)s, 0, qmin, qmax);
}

/* A scalar / 1-D tensor of n elements of dtype dt (allocated). */
static int q8f_tensor(amd_tensor *t, amd_dtype dt, int rank, int64_t n, amd_status *st) {
  int64_t d[1] = {n};
  memset(t, 0, sizeof *t);
  amd_tensor_set_shape(t, dt, rank, d);
  return amd_tensor_alloc(t, st);
}

/* The codes and parameters of one node's float inputs (see above), as the
 * inputs x, x_scale, x_zp, w, w_scale, w_zp of the QDQ ops. nch channels of
 * the weight; element e of w is in channel (e / inner) % nch. */
typedef struct q8f_in {
  amd_tensor xc, xs, xz, wc, ws, wz;
} q8f_in;

static void q8f_free(q8f_in *q) {
  amd_tensor_free(&q->xc), amd_tensor_free(&q->xs), amd_tensor_free(&q->xz);
  amd_tensor_free(&q->wc), amd_tensor_free(&q->ws), amd_tensor_free(&q->wz);
}

static int q8f_quantize(const amd_node *n, const amd_tensor *x, const amd_tensor *w, int64_t nch, int64_t inner,
                        q8f_in *q, amd_status *st) {
  memset(q, 0, sizeof *q);
  const amd_mult *m = n->mult;
  if (x->dtype != AMD_FLOAT || w->dtype != AMD_FLOAT)
    return amd_fail(st, "data and weight must be float to be quantized on the fly (have %s and %s)",
                    amd_dtype_name(x->dtype), amd_dtype_name(w->dtype));
  const int sgn = m->q8 == 's';
  const amd_dtype dt = sgn ? AMD_INT8 : AMD_UINT8;
  const int32_t qmin = sgn ? -128 : 0, qmax = sgn ? 127 : 255;
  q8f_attrs *a = n->attrs;
  const int64_t nx = amd_tensor_numel(x), nw = amd_tensor_numel(w);
  const float *xd = x->data, *wd = w->data;
  if (a->calls < AMD_Q8_CALIB_CALLS) {
    if (a->calib_q > 0) {
      double clo, chi;
      if (amd_q8f_percentile_range(xd, nx, a->calib_q, &clo, &chi)) {
        if (clo < a->lo) a->lo = clo;
        if (chi > a->hi) a->hi = chi;
      }
    } else {
      for (int64_t i = 0; i < nx; i++) {
        if (xd[i] < a->lo) a->lo = xd[i];
        if (xd[i] > a->hi) a->hi = xd[i];
      }
    }
    a->calls++;
  }
  float xsv;
  int32_t xzv;
  q8f_params(a->lo, a->hi, qmin, qmax, &xsv, &xzv);
  amd_tensor_set_shape(&q->xc, dt, x->rank, x->dims);
  amd_tensor_set_shape(&q->wc, dt, w->rank, w->dims);
  if (amd_tensor_alloc(&q->xc, st) || amd_tensor_alloc(&q->wc, st) || q8f_tensor(&q->xs, AMD_FLOAT, 0, 1, st) ||
      q8f_tensor(&q->xz, dt, 0, 1, st) || q8f_tensor(&q->ws, AMD_FLOAT, 1, nch, st) ||
      q8f_tensor(&q->wz, dt, 1, nch, st)) {
    q8f_free(q);
    return -1;
  }
  ((float *)q->xs.data)[0] = xsv;
  amd_q_store(&q->xz, 0, xzv);
  for (int64_t i = 0; i < nx; i++) amd_q_store(&q->xc, i, amd_q_round_sat((double)xd[i] / xsv, xzv, qmin, qmax));
  /* weight range per channel */
  double *lo = calloc((size_t)(2 * nch + 1), sizeof *lo), *hi = lo + nch;
  if (!lo) {
    q8f_free(q);
    return amd_fail(st, "out of memory");
  }
  for (int64_t e = 0; e < nw; e++) {
    const int64_t c = (e / inner) % nch;
    if (wd[e] < lo[c]) lo[c] = wd[e];
    if (wd[e] > hi[c]) hi[c] = wd[e];
  }
  float *wsd = q->ws.data;
  for (int64_t c = 0; c < nch; c++) {
    int32_t zp = 0;
    if (sgn) {
      double mx = -lo[c] > hi[c] ? -lo[c] : hi[c];
      wsd[c] = (float)(mx / 127.0);
      if (!(wsd[c] > 0) || !isfinite(wsd[c])) wsd[c] = 1.0f;
    } else {
      q8f_params(lo[c], hi[c], qmin, qmax, &wsd[c], &zp);
    }
    amd_q_store(&q->wz, c, zp);
  }
  for (int64_t e = 0; e < nw; e++) {
    const int64_t c = (e / inner) % nch;
    amd_q_store(&q->wc, e, amd_q_round_sat((double)wd[e] / wsd[c], amd_q_value(&q->wz, c), qmin, qmax));
  }
  free(lo);
  return 0;
}

/* The state accessors of q8f.h (for the CUDA kernels of these ops). */
int amd_q8f_calib_calls(void) { return AMD_Q8_CALIB_CALLS; }

double amd_q8f_calib_q(const amd_node *n) { return ((const q8f_attrs *)n->attrs)->calib_q; }

/* The bin edge e(j) of amd_q8f_percentile_range. */
static double q8f_edge(double mn, double mx, double range, int j) {
  return j == AMD_Q8F_BINS ? mx : mn + range * (double)j / (double)AMD_Q8F_BINS;
}

int64_t amd_q8f_percentile_range(const float *x, int64_t n, double q, double *lo, double *hi) {
  float mn = INFINITY, mx = -INFINITY;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i])) continue;
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
    count++;
  }
  if (count == 0) return 0;
  if (!isfinite(mn) || !isfinite(mx) || mn == mx) {
    *lo = mn, *hi = mx;
    return count;
  }
  /* the bins over [mn, mx]: the same double operations as the CUDA kernel */
  int64_t bins[AMD_Q8F_BINS] = {0};
  const double dmn = mn, range = (double)mx - dmn, inv = (double)AMD_Q8F_BINS / range;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i])) continue;
    int b = (int)(((double)x[i] - dmn) * inv);
    bins[b < AMD_Q8F_BINS ? b : AMD_Q8F_BINS - 1]++;
  }
  int64_t k = (int64_t)ceil(q * (double)count);
  if (k < 1) k = 1;
  if (k > count) k = count;
  int64_t c = 0;
  int b = 0;
  while (b < AMD_Q8F_BINS - 1 && (c += bins[b]) < k) b++;
  *hi = q8f_edge(dmn, mx, range, b + 1);
  c = 0;
  b = AMD_Q8F_BINS - 1;
  while (b > 0 && (c += bins[b]) < k) b--;
  *lo = q8f_edge(dmn, mx, range, b);
  return count;
}

void amd_q8f_get_state(const amd_node *n, amd_q8f_state *s) {
  const q8f_attrs *a = n->attrs;
  s->calls = a->calls, s->lo = a->lo, s->hi = a->hi;
}

void amd_q8f_set_state(const amd_node *n, const amd_q8f_state *s) {
  q8f_attrs *a = n->attrs;
  a->calls = s->calls, a->lo = s->lo, a->hi = s->hi;
}

static int q8fconv_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return amd_op_Conv.infer(n, in, out, st);
}

static int q8fconv_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  if (n->n_in < 2 || !in[0] || !in[1] || in[1]->rank < 1) return amd_fail(st, "Conv needs X and W");
  q8f_in q;
  const int64_t M = in[1]->dims[0];
  if (q8f_quantize(n, in[0], in[1], M, M ? amd_tensor_numel(in[1]) / M : 1, &q, st)) return -1;
  const amd_tensor *v[7] = {&q.xc, &q.xs, &q.xz, &q.wc, &q.ws, &q.wz, amd_q_opt_in(n, in, 2)};
  amd_node m = *n;
  m.n_in = 7;
  int rc = amd_op_QdqConv8.forward(&m, ctx, v, out, st);
  q8f_free(&q);
  return rc;
}

static int q8fgemm_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return amd_op_Gemm.infer(n, in, out, st);
}

static int q8fgemm_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                           amd_status *st) {
  const amd_gemm_attrs *a = n->attrs;
  if (n->n_in < 2 || !in[0] || !in[1] || in[1]->rank != 2) return amd_fail(st, "Gemm needs 2-D A and B");
  if (a->trans_a) return amd_fail(st, "transA = 1 is not implemented in the q8 modes");
  /* B's output columns: [K, N] (channel = column, inner 1) or [N, K] with transB (channel = row) */
  const int64_t N = a->trans_b ? in[1]->dims[0] : in[1]->dims[1];
  q8f_in q;
  if (q8f_quantize(n, in[0], in[1], N, a->trans_b ? in[1]->dims[1] : 1, &q, st)) return -1;
  const amd_tensor *v[7] = {&q.xc, &q.xs, &q.xz, &q.wc, &q.ws, &q.wz, amd_q_opt_in(n, in, 2)};
  amd_node m = *n;
  m.n_in = 7;
  int rc = amd_op_QdqGemm8.forward(&m, ctx, v, out, st);
  q8f_free(&q);
  return rc;
}

static int q8fmatmul_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  return amd_op_MatMul.infer(n, in, out, st);
}

static int q8fmatmul_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                             amd_status *st) {
  if (n->n_in < 2 || !in[0] || !in[1] || in[1]->rank < 1) return amd_fail(st, "MatMul needs A and B");
  const int64_t N = in[1]->rank >= 2 ? in[1]->dims[in[1]->rank - 1] : 1;
  q8f_in q;
  if (q8f_quantize(n, in[0], in[1], N, 1, &q, st)) return -1;
  const amd_tensor *v[6] = {&q.xc, &q.xs, &q.xz, &q.wc, &q.ws, &q.wz};
  amd_node m = *n;
  m.n_in = 6;
  int rc = amd_op_QdqMatMul8.forward(&m, ctx, v, out, st);
  q8f_free(&q);
  return rc;
}

/* Backward: the straight-through estimator, clipped (what fake-quantization
 * in QAT does): the rounding to codes and the table count as the identity,
 * so the float op's own backward runs on the float inputs, both GEMMs in
 * exact fp32 (amd_q8_float_node leaves bwd_mult NULL), except that the data
 * gradient is 0 where the data lay outside the calibrated range [lo, hi]
 * (its code saturated). The weights' range is their own at every call, so
 * nothing of theirs saturates. The float op reads n->attrs as its own
 * struct, the first member of q8f_attrs. With --q8-grad table
 * (amd_q8_float_set_grad) the table's own slopes are added to both
 * gradients before the clipping (q8f_table_grad, below). */
static int q8f_table_grad(const amd_op *fop, const amd_node *n, const amd_tensor *const *in,
                          const amd_tensor *const *dout, float *dx, amd_tensor *const *din, amd_status *st);

static int q8f_backward(const amd_op *fop, const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                        const amd_tensor *const *out, const amd_tensor *const *dout, amd_tensor *const *din,
                        amd_status *st) {
  amd_tensor *dx = din[0];
  if (!dx || !in[0] || dx->dtype != AMD_FLOAT) {
    int rc = fop->backward(n, ctx, in, *out, dout, din, st);
    return rc ? rc : q8f_table_grad(fop, n, in, dout, NULL, din, st);
  }
  amd_tensor full = {0};
  amd_tensor_set_shape(&full, AMD_FLOAT, dx->rank, dx->dims);
  if (amd_tensor_alloc(&full, st)) return -1;
  memset(full.data, 0, amd_tensor_nbytes(&full));
  amd_tensor *d2[8] = {0};
  for (int k = 0; k < n->n_in && k < 8; k++) d2[k] = din[k];
  d2[0] = &full;
  amd_ctx c2 = ctx ? *ctx : (amd_ctx){0};
  c2.bwd_overwrite &= ~1u; /* full is zeroed: added to */
  int rc = fop->backward(n, &c2, in, *out, dout, d2, st);
  if (rc == 0) rc = q8f_table_grad(fop, n, in, dout, full.data, din, st);
  if (rc == 0) {
    const q8f_attrs *a = n->attrs;
    const float *x = in[0]->data, *g = full.data;
    float *d = dx->data;
    const int over = ctx && (ctx->bwd_overwrite & 1u);
    for (int64_t i = 0, cnt = amd_tensor_numel(dx); i < cnt; i++) {
      const float v = x[i] >= a->lo && x[i] <= a->hi ? g[i] : 0.0f;
      d[i] = (over ? 0.0f : d[i]) + v;
    }
  }
  amd_tensor_free(&full);
  return rc;
}

/* ---- the table-derived backward (--q8-grad table; src/ops/q8_grad.h)
 *
 * The forward's product term, as a function of the float operands: with the
 * continuous codes a = zx + x / sx and b = zw + w / sw (the rounding taken as
 * the identity, as the STE does) and E[a][b] = T[a][b] - a * b the table's
 * error against the exact products,
 *   sx * sw * (T[a][b] - zw * a - zx * b + zx * zw)
 *     = sx * sw * ((a - zx) * (b - zw) + E[a][b]) = x * w + sx * sw * E[a][b]:
 * the zero-point terms cancel against the exact part. Its derivatives are
 *   d/dx = w + sw * dE/da,   d/dw = x + sx * dE/db.
 * The first terms are the STE's gradient (the float op's backward above);
 * this adds the second ones, dE/da and dE/db the table's difference
 * quotients at the forward's codes (amd_q8_grad_tables), times sw of the
 * output channel and sx (and Gemm's alpha). The exact table has E = 0 and
 * slopes 0: the result is then the STE's. A convolution's padding reads
 * the code zx (the real 0): its exact part is 0 but E[zx][b] is not, so
 * padded positions add to the weight's gradient (as they add to the
 * forward), not to the data's. The data gradient is then clipped like the
 * STE's (q8f_backward). */

/* The positions one group's window reads, per row (c, kernel offset) of the
 * unfolded matrix: the channel's offset into x and the kernel offset per
 * spatial dimension (times the dilation). rows = cg * kvol; koff has
 * rows * nsp entries. */
static void window_rows(const amd_conv_geom *g, int64_t *coff, int64_t *koff) {
  for (int64_t row = 0; row < g->cg * g->kvol; row++) {
    int64_t kidx = row % g->kvol;
    coff[row] = row / g->kvol * g->isize;
    for (int d = g->nsp - 1; d >= 0; d--) {
      koff[row * g->nsp + d] = kidx % g->k[d] * g->dil[d];
      kidx /= g->k[d];
    }
  }
}

/* The input offset read by output position opos and row (-1: padding). */
static int64_t window_at(const amd_conv_geom *g, const int64_t *base, const int64_t *coff, const int64_t *koff,
                         int64_t row) {
  int64_t off = 0;
  for (int d = 0; d < g->nsp; d++) {
    const int64_t i = base[d] + koff[row * g->nsp + d];
    if (i < 0 || i >= g->in[d]) return -1;
    off = off * g->in[d] + i;
  }
  return coff[row] + off;
}

/* Output position o's first input coordinate per dimension. */
static void window_base(const amd_conv_geom *g, int64_t o, int64_t *base) {
  for (int d = g->nsp - 1; d >= 0; d--) {
    base[d] = o % g->out[d] * g->stride[d] - g->pad0[d];
    o /= g->out[d];
  }
}

/* colT (osize x rows) = the codes of im2col_q8, transposed: row o holds the
 * window of output position o (padding: the code pad). */
static void im2col_t_q8(const amd_conv_geom *g, const int64_t *coff, const int64_t *koff, const uint8_t *x,
                        uint8_t pad, uint8_t *colT) {
  const int64_t rows = g->cg * g->kvol;
  for (int64_t o = 0; o < g->osize; o++) {
    int64_t base[AMD_SP];
    window_base(g, o, base);
    uint8_t *dst = colT + o * rows;
    for (int64_t row = 0; row < rows; row++) {
      const int64_t at = window_at(g, base, coff, koff, row);
      dst[row] = at < 0 ? pad : x[at];
    }
  }
}

/* dx (x's layout) += dcolT (osize x rows), folded back as im2col_t_q8
 * unfolded it; padding dropped. */
static void col2im_t_add(const amd_conv_geom *g, const int64_t *coff, const int64_t *koff, const float *dcolT,
                         float *dx) {
  const int64_t rows = g->cg * g->kvol;
  for (int64_t o = 0; o < g->osize; o++) {
    int64_t base[AMD_SP];
    window_base(g, o, base);
    const float *src = dcolT + o * rows;
    for (int64_t row = 0; row < rows; row++) {
      const int64_t at = window_at(g, base, coff, koff, row);
      if (at >= 0) dx[at] += src[row];
    }
  }
}

/* Conv[q8f]: per group, the data-first product colT (rows: output
 * positions of several batch entries, kdim columns) x W_g^T (kdim x mg) with
 * G = dY^T; the batch entries go in chunks of about AMD_Q8G_CHUNK im2col
 * elements (q8_grad.h): each chunk's dW sum (over its rows in order) is
 * scaled and added to a zeroed dW^T on its own, which is then added to dW. */
static int q8f_conv_table_grad(const amd_node *n, const q8f_in *q, const float *dy, float *dx, float *dw,
                               amd_status *st) {
  const amd_mult *m = n->mult;
  const q8f_attrs *a = n->attrs;
  amd_conv_geom g;
  if (amd_conv_geometry(&a->op.conv, &q->xc, &q->wc, &g, st)) return -1;
  const int64_t kdim = g.cg * g.kvol, os = g.osize, mg = g.mg;
  if (os == 0 || g.m == 0 || g.n == 0 || kdim == 0) return 0;
  int64_t nbc = AMD_Q8G_CHUNK / (os * kdim);
  nbc = nbc < 1 ? 1 : nbc > g.n ? g.n : nbc;
  const int64_t rows = nbc * os;
  uint8_t *colT = malloc((size_t)(rows * kdim)), *wT = malloc((size_t)(kdim * g.m));
  int64_t *coff = malloc(sizeof(int64_t) * (size_t)(kdim * (g.nsp + 1))), *koff = coff + kdim;
  float *gT = malloc(sizeof(float) * (size_t)(rows * mg)), *cb = malloc(sizeof(float) * (size_t)g.m);
  float *dcolT = dx ? malloc(sizeof(float) * (size_t)(rows * kdim)) : NULL;
  float *dwT = dw ? calloc((size_t)(kdim * g.m), sizeof(float)) : NULL;
  int rc = 0;
  if (!coff || !colT || !wT || !gT || !cb || (dx && !dcolT) || (dw && !dwT))
    rc = amd_fail(st, "out of memory for the table-derived gradient");
  const uint8_t *xc = q->xc.data, *wc = q->wc.data;
  const float xs = ((const float *)q->xs.data)[0], *ws = q->ws.data;
  const uint8_t padcode = ((const uint8_t *)q->xz.data)[0];
  if (rc == 0) window_rows(&g, coff, koff);
  for (int64_t c = 0; rc == 0 && c < g.m; c++) cb[c] = ws[c];
  for (int64_t gi = 0; rc == 0 && gi < g.group; gi++) /* wT_g[k][j] = w[gi * mg + j][k] */
    for (int64_t j = 0; j < mg; j++)
      for (int64_t k = 0; k < kdim; k++) wT[gi * kdim * mg + k * mg + j] = wc[(gi * mg + j) * kdim + k];
  for (int64_t gi = 0; rc == 0 && gi < g.group; gi++)
    for (int64_t b0 = 0; rc == 0 && b0 < g.n; b0 += nbc) {
      const int64_t nb = g.n - b0 < nbc ? g.n - b0 : nbc;
      AMD_PRAGMA(omp parallel for schedule(static) if (nb > 1 && nb * os * kdim > 65536))
      for (int64_t b = b0; b < b0 + nb; b++) {
        float *gt = gT + (b - b0) * os * mg;
        im2col_t_q8(&g, coff, koff, xc + (b * g.c + gi * g.cg) * g.isize, padcode, colT + (b - b0) * os * kdim);
        for (int64_t j = 0; j < mg; j++)
          for (int64_t o = 0; o < os; o++) gt[o * mg + j] = dy[(b * g.m + gi * mg + j) * os + o];
      }
      if (dcolT) memset(dcolT, 0, sizeof(float) * (size_t)(nb * os * kdim));
      if (amd_q8_grad_gemm(nb * os, mg, kdim, colT, wT + gi * kdim * mg, gT, cb + gi * mg, xs, m->q8_ea, m->q8_eb,
                           dcolT, dwT ? dwT + gi * kdim * mg : NULL)) {
        rc = amd_fail(st, "out of memory for the table-derived gradient");
        break;
      }
      AMD_PRAGMA(omp parallel for schedule(static) if (dx && nb > 1 && nb * os * kdim > 65536))
      for (int64_t b = b0; b < b0 + nb; b++)
        if (dx) col2im_t_add(&g, coff, koff, dcolT + (b - b0) * os * kdim, dx + (b * g.c + gi * g.cg) * g.isize);
    }
  for (int64_t gi = 0; rc == 0 && dw && gi < g.group; gi++)
    for (int64_t j = 0; j < mg; j++)
      for (int64_t k = 0; k < kdim; k++) dw[(gi * mg + j) * kdim + k] += dwT[gi * kdim * mg + k * mg + j];
  free(coff), free(colT), free(wT), free(gT), free(cb), free(dcolT), free(dwT);
  return rc;
}

/* Gemm[q8f]: A [M, K] (transA = 0), B as [K, N] (a transposed copy with
 * transB), the column scales times alpha. */
static int q8f_gemm_table_grad(const amd_node *n, const q8f_in *q, const float *dy, float *dx, float *dw,
                               amd_status *st) {
  const amd_mult *m = n->mult;
  const amd_gemm_attrs *ga = n->attrs;
  const int64_t M = q->xc.dims[0], K = q->xc.dims[1], N = ga->trans_b ? q->wc.dims[0] : q->wc.dims[1];
  const uint8_t *wc = q->wc.data;
  uint8_t *bT = ga->trans_b ? malloc((size_t)(K * N > 0 ? K * N : 1)) : NULL;
  float *cb = malloc(sizeof(float) * (size_t)(N > 0 ? N : 1));
  float *db = dw && ga->trans_b ? calloc((size_t)(K * N > 0 ? K * N : 1), sizeof(float)) : NULL;
  int rc = 0;
  if (!cb || (ga->trans_b && !bT) || (dw && ga->trans_b && !db))
    rc = amd_fail(st, "out of memory for the table-derived gradient");
  if (rc == 0) {
    const float *ws = q->ws.data, xs = ((const float *)q->xs.data)[0];
    for (int64_t j = 0; j < N; j++) cb[j] = ga->alpha * ws[j];
    if (bT)
      for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) bT[k * N + j] = wc[j * K + k];
    if (amd_q8_grad_gemm(M, N, K, q->xc.data, bT ? bT : wc, dy, cb, ga->alpha * xs, m->q8_ea, m->q8_eb, dx,
                         ga->trans_b ? db : dw))
      rc = amd_fail(st, "out of memory for the table-derived gradient");
    if (rc == 0 && db)
      for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) dw[j * K + k] += db[k * N + j];
  }
  free(bT), free(cb), free(db);
  return rc;
}

/* MatMul[q8f]: one product per batch entry with numpy broadcasting; the
 * gradients of broadcast operands sum over the entries that read them. */
static int q8f_matmul_table_grad(const amd_node *n, const q8f_in *q, const float *dy, float *dx, float *dw,
                                 amd_status *st) {
  const amd_mult *m = n->mult;
  amd_mm_shape s;
  if (amd_mm_shapes(&q->xc, &q->wc, &s, st)) return -1;
  const int64_t M = s.M, N = s.N, K = s.K, nb = amd_tensor_numel(&s.batch);
  float *cb = malloc(sizeof(float) * (size_t)(N > 0 ? N : 1));
  if (!cb) return amd_fail(st, "out of memory for the table-derived gradient");
  const float *ws = q->ws.data, xs = ((const float *)q->xs.data)[0];
  for (int64_t j = 0; j < N; j++) cb[j] = ws[j];
  const uint8_t *xc = q->xc.data, *wc = q->wc.data;
  int64_t sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], idx[AMD_MAX_RANK] = {0};
  amd_broadcast_strides(&s.batch_a, &s.batch, sa);
  amd_broadcast_strides(&s.batch_b, &s.batch, sb);
  int64_t oa = 0, ob = 0;
  int rc = 0;
  for (int64_t t = 0; t < nb && rc == 0; t++) {
    if (amd_q8_grad_gemm(M, N, K, xc + oa * M * K, wc + ob * K * N, dy + t * M * N, cb, xs, m->q8_ea, m->q8_eb,
                         dx ? dx + oa * M * K : NULL, dw ? dw + ob * K * N : NULL))
      rc = amd_fail(st, "out of memory for the table-derived gradient");
    amd_mm_batch_next(&s, sa, sb, idx, &oa, &ob);
  }
  free(cb);
  return rc;
}

/* Adds the table's terms to dx (x's full gradient before the clipping, or
 * NULL) and to din[1] (the weight's, when wanted); nothing in the STE mode. */
static int q8f_table_grad(const amd_op *fop, const amd_node *n, const amd_tensor *const *in,
                          const amd_tensor *const *dout, float *dx, amd_tensor *const *din, amd_status *st) {
  const q8f_attrs *a = n->attrs;
  if (a->grad != AMD_Q8_GRAD_TABLE || !dout[0]) return 0;
  float *dw = n->n_in > 1 && din[1] && din[1]->dtype == AMD_FLOAT ? din[1]->data : NULL;
  if (!dx && !dw) return 0;
  const amd_mult *m = n->mult;
  if (!m || !m->q8 || !m->q8_ea || !m->q8_eb)
    return amd_fail(st, "the table-derived backward (--q8-grad table) needs the node's 8-bit table");
  if (dout[0]->dtype != AMD_FLOAT) return amd_fail(st, "the output gradient must be float");
  /* the forward's codes again: the range as this step's forward left it,
   * without counting another calibration call */
  q8f_attrs frozen = *a;
  frozen.calls = AMD_Q8_CALIB_CALLS;
  amd_node fn = *n;
  fn.attrs = &frozen;
  const amd_tensor *x = in[0], *w = n->n_in > 1 ? in[1] : NULL;
  if (!x || !w || w->rank < 1) return amd_fail(st, "the table-derived backward needs the data and the weight");
  const int64_t wr = w->rank;
  int64_t nch, inner;
  if (fop == &amd_op_Conv) {
    nch = w->dims[0], inner = nch ? amd_tensor_numel(w) / nch : 1;
  } else if (fop == &amd_op_Gemm) {
    const int tb = a->op.gemm.trans_b;
    nch = tb ? w->dims[0] : w->dims[1], inner = tb ? w->dims[1] : 1;
  } else {
    nch = wr >= 2 ? w->dims[wr - 1] : 1, inner = 1;
  }
  q8f_in q;
  if (q8f_quantize(&fn, x, w, nch, inner, &q, st)) return -1;
  const float *dy = dout[0]->data;
  int rc = fop == &amd_op_Conv   ? q8f_conv_table_grad(n, &q, dy, dx, dw, st)
           : fop == &amd_op_Gemm ? q8f_gemm_table_grad(n, &q, dy, dx, dw, st)
                                 : q8f_matmul_table_grad(n, &q, dy, dx, dw, st);
  q8f_free(&q);
  return rc;
}

static int q8fconv_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                            const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  return q8f_backward(&amd_op_Conv, n, ctx, in, &out, dout, din, st);
}

static int q8fgemm_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                            const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  return q8f_backward(&amd_op_Gemm, n, ctx, in, &out, dout, din, st);
}

static int q8fmatmul_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                              const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  return q8f_backward(&amd_op_MatMul, n, ctx, in, &out, dout, din, st);
}

const amd_op amd_op_Q8fConv = {.name = "Conv[q8f]",
                               .idx = -1,
                               .infer = q8fconv_infer,
                               .forward = q8fconv_forward,
                               .backward = q8fconv_backward};
const amd_op amd_op_Q8fGemm = {.name = "Gemm[q8f]",
                               .idx = -1,
                               .infer = q8fgemm_infer,
                               .forward = q8fgemm_forward,
                               .backward = q8fgemm_backward};
const amd_op amd_op_Q8fMatMul = {.name = "MatMul[q8f]",
                                 .idx = -1,
                                 .infer = q8fmatmul_infer,
                                 .forward = q8fmatmul_forward,
                                 .backward = q8fmatmul_backward};

int amd_q8_float_node(amd_node *n, amd_status *st) {
  const int op = n->op->idx;
  q8f_attrs *a = calloc(1, sizeof *a);
  if (!a) return amd_fail(st, "out of memory");
  if (op == AMD_OP_IDX_Conv) memcpy(&a->op.conv, n->attrs, sizeof a->op.conv);
  if (op == AMD_OP_IDX_Gemm) {
    memcpy(&a->op.gemm, n->attrs, sizeof a->op.gemm);
    if (a->op.gemm.trans_a) {
      free(a);
      return amd_fail(st, "node '%s' (Gemm) has transA = 1, which the q8 modes do not implement", n->name);
    }
  }
  free(n->attrs);
  n->attrs = a;
  n->op = op == AMD_OP_IDX_Conv ? &amd_op_Q8fConv : op == AMD_OP_IDX_Gemm ? &amd_op_Q8fGemm : &amd_op_Q8fMatMul;
  n->bwd_mult = NULL;
  return 0;
}

int amd_q8_float_is(const amd_node *n) {
  return n->op == &amd_op_Q8fConv || n->op == &amd_op_Q8fGemm || n->op == &amd_op_Q8fMatMul;
}

int amd_q8_float_set_grad(amd_node *n, int grad) {
  if (!amd_q8_float_is(n)) return 0;
  ((q8f_attrs *)n->attrs)->grad = grad;
  return 1;
}

int amd_q8_float_set_calib(amd_node *n, double pct) {
  if (!amd_q8_float_is(n)) return 0;
  ((q8f_attrs *)n->attrs)->calib_q = pct > 0 ? pct / 100.0 : 0.0;
  return 1;
}

int amd_q8_float_grad(const amd_node *n) {
  if (!amd_q8_float_is(n)) return AMD_Q8_GRAD_STE;
  return ((const q8f_attrs *)n->attrs)->grad;
}
