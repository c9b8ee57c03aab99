/* The table-derived backward of the q8 modes (train --q8-grad table;
 * src/ops/q8_grad.c, qlinear.c "the table-derived backward",
 * amd_q8_grad_tables in src/mult/q8.c):
 *  - the slope tables: 0 for the exact tables (q8u, q8s); for a table of
 *    random entries, equal to the difference quotients written here in
 *    value space (central inside, one-sided at both ends of the range; the
 *    int8 neighbours across 0x7f / 0x80 and 0xff / 0x00);
 *  - with the exact table, `table` gradients equal `ste` gradients bit for
 *    bit (every slope is 0, so every added term is +-0, every added sum +0,
 *    and v + 0 = v exactly; == takes -0 = +0), for Conv, Gemm and MatMul;
 *  - with approximate tables (the truncated array multiplier with columns
 *    i + j < 4 left out for q8u; random errors in [-40, 40] for q8s), the
 *    data, weight and bias gradients of Conv (padding, stride, dilation,
 *    groups, bias; a larger one in two batch chunks), Gemm (transB, alpha,
 *    beta, C) and batched MatMuls (the weight broadcast over the batch, and
 *    one weight matrix per batch entry, as attention's products)
 *    equal a reference computed here in
 *    double from the definition d/dx = w + sw * dE/da, d/dw = x + sx * dE/db
 *    (direct loops, no im2col), the codes quantized here from the same
 *    formulas, the data gradient 0 outside the calibrated range. The
 *    tolerance is 2e-6 of the sum of the absolute terms (float sums of at
 *    most a few hundred terms: a few times 1e-7 in practice);
 *  - a node with no data gradient (din[0] NULL) still gets its weight's. */
#pragma GCC diagnostic ignored "-Wunused-function" /* gradcheck.h helpers this test does not use */
#include "../grad/gradcheck.h"

#include "../test_check.h"
#include "mult/mult.h"
#include "mult/q8.h"
#include "ops/quant.h"

/* ---------------------------------------------------------------- tables */

static int val(int code, int sgn) { return sgn ? (int8_t)(uint8_t)code : (uint8_t)code; }
static int code_of(int v) { return (uint8_t)v; }

/* T at values (va, vb) */
static double tv(const int32_t *t, int va, int vb) { return t[code_of(va) * 256 + code_of(vb)]; }

/* dE/da and dE/db at codes (a, b), in value space */
static double slope_a(const int32_t *t, int sgn, int a, int b) {
  const int va = val(a, sgn), vb = val(b, sgn), lo = sgn ? -128 : 0, hi = sgn ? 127 : 255;
  double d = va == lo ? tv(t, va + 1, vb) - tv(t, va, vb)
             : va == hi ? tv(t, va, vb) - tv(t, va - 1, vb)
                        : (tv(t, va + 1, vb) - tv(t, va - 1, vb)) / 2;
  return d - vb;
}
static double slope_b(const int32_t *t, int sgn, int a, int b) {
  const int va = val(a, sgn), vb = val(b, sgn), lo = sgn ? -128 : 0, hi = sgn ? 127 : 255;
  double d = vb == lo ? tv(t, va, vb + 1) - tv(t, va, vb)
             : vb == hi ? tv(t, va, vb) - tv(t, va, vb - 1)
                        : (tv(t, va, vb + 1) - tv(t, va, vb - 1)) / 2;
  return d - va;
}

/* truncated array multiplier: the partial products a_i b_j 2^(i+j) with i + j < cut left out */
static void trunc_table(int32_t *t, int cut) {
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      int32_t p = 0;
      for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
          if (i + j >= cut && (a >> i & 1) && (b >> j & 1)) p += 1 << (i + j);
      t[a * 256 + b] = p;
    }
}

/* the signed exact products plus a seeded error in [-40, 40] */
static void noisy_signed_table(int32_t *t) {
  uint64_t s = 0x1234567ull;
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      t[a * 256 + b] = val(a, 1) * val(b, 1) + (int32_t)(s % 81) - 40;
    }
}

/* m's table replaced by t (its transpose and slopes recomputed) */
static void set_table(amd_mult *m, const int32_t *t) {
  memcpy(m->q8_table, t, sizeof(int32_t) * AMD_Q8_ENTRIES);
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) m->q8_table_t[b * 256 + a] = t[a * 256 + b];
  amd_q8_grad_tables(m->q8 == 's', t, m->q8_ea, m->q8_eb);
}

static void test_tables(void) {
  static int32_t t[AMD_Q8_ENTRIES];
  static float ea[AMD_Q8_ENTRIES], eb[AMD_Q8_ENTRIES];
  for (int sgn = 0; sgn < 2; sgn++) {
    amd_q8_exact(sgn, t);
    amd_q8_grad_tables(sgn, t, ea, eb);
    int nz = 0;
    for (int i = 0; i < AMD_Q8_ENTRIES; i++) nz += ea[i] != 0 || eb[i] != 0;
    CHECK(nz == 0, "exact %s table: %d non-zero slopes", sgn ? "q8s" : "q8u", nz);
    /* random entries in [-2^17, 2^17] */
    uint64_t s = 99 + (uint64_t)sgn;
    for (int i = 0; i < AMD_Q8_ENTRIES; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      t[i] = (int32_t)(s % (2 * AMD_Q8_MAX_ABS + 1)) - AMD_Q8_MAX_ABS;
    }
    amd_q8_grad_tables(sgn, t, ea, eb);
    int bad = 0;
    for (int a = 0; a < 256; a++)
      for (int b = 0; b < 256; b++)
        bad += ea[a * 256 + b] != slope_a(t, sgn, a, b) || eb[a * 256 + b] != slope_b(t, sgn, a, b);
    CHECK(bad == 0, "random %s table: %d slopes differ from the value-space quotients", sgn ? "q8s" : "q8u", bad);
  }
  /* by hand, int8: code 0xff (-1) between 0xfe (-2) and 0x00 (0); 0x7f (127) the top, 0x80 (-128) the bottom */
  for (int i = 0; i < AMD_Q8_ENTRIES; i++) t[i] = 0;
  t[0xfe * 256 + 3] = 10, t[0x00 * 256 + 3] = 40, t[0x7e * 256 + 3] = 5, t[0x7f * 256 + 3] = 12;
  t[0x80 * 256 + 3] = 7, t[0x81 * 256 + 3] = 1;
  amd_q8_grad_tables(1, t, ea, eb);
  CHECK(ea[0xff * 256 + 3] == (40 - 10) / 2.0f - 3, "central across 0: %g", ea[0xff * 256 + 3]);
  CHECK(ea[0x7f * 256 + 3] == 12 - 5 - 3, "one-sided at 127: %g", ea[0x7f * 256 + 3]);
  CHECK(ea[0x80 * 256 + 3] == 1 - 7 - 3, "one-sided at -128: %g", ea[0x80 * 256 + 3]);
  CHECK(eb[3 * 256 + 0x7f] == 0 - 0 - 3, "eb at the top: %g", eb[3 * 256 + 0x7f]);
}

/* ---------------------------------------------------------------- nodes */

/* the test's own quantization (docs/quantized.md, "quantized on the fly") */
typedef struct qparams {
  int sgn, qmin, qmax;
  double lo, hi; /* the data's calibrated range */
  float xs;
  int xz;
} qparams;

static int qcode(double x, float s, int zp, int qmin, int qmax) {
  double r = rint(x / (double)s) + zp;
  return (int)(r < qmin ? qmin : r > qmax ? qmax : r);
}

static void range_params(double lo, double hi, int qmin, int qmax, float *s, int *zp) {
  *s = (float)((hi - lo) / (double)(qmax - qmin));
  if (!(*s > 0)) *s = 1.0f;
  double r = rint((double)qmin - lo / (double)*s);
  *zp = (int)(r < qmin ? qmin : r > qmax ? qmax : r);
}

static void data_params(const amd_tensor *cal, int sgn, qparams *p) {
  p->sgn = sgn, p->qmin = sgn ? -128 : 0, p->qmax = sgn ? 127 : 255;
  p->lo = 0, p->hi = 0;
  const float *c = cal->data;
  for (int64_t i = 0; i < amd_tensor_numel(cal); i++) {
    if (c[i] < p->lo) p->lo = c[i];
    if (c[i] > p->hi) p->hi = c[i];
  }
  range_params(p->lo, p->hi, p->qmin, p->qmax, &p->xs, &p->xz);
}

/* per-channel weight codes (channel of element e: (e / inner) % nch) as raw bytes, scales */
static void weight_codes(const amd_tensor *w, int64_t nch, int64_t inner, const qparams *p, uint8_t *codes,
                         float *ws) {
  const float *wd = w->data;
  const int64_t n = amd_tensor_numel(w);
  for (int64_t c = 0; c < nch; c++) {
    double lo = 0, hi = 0;
    for (int64_t e = 0; e < n; e++)
      if ((e / inner) % nch == c) {
        if (wd[e] < lo) lo = wd[e];
        if (wd[e] > hi) hi = wd[e];
      }
    int zp = 0;
    if (p->sgn) ws[c] = (float)((-lo > hi ? -lo : hi) / 127.0);
    else range_params(lo, hi, p->qmin, p->qmax, &ws[c], &zp);
    for (int64_t e = 0; e < n; e++)
      if ((e / inner) % nch == c) codes[e] = (uint8_t)qcode(wd[e], ws[c], zp, p->qmin, p->qmax);
  }
}

/* Binds op as its q8f node in mode m with backward kind, runs 4 calibration
 * forwards on cal (as input 0) and one on in, then backward with dout dy
 * into grads[k] (zeroed, for each k in mask). 0 or -1 (message printed). */
static int run_q8f(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                   amd_tensor **in, int n_in, amd_tensor *cal, const amd_mult *m, int kind, const amd_tensor *dy,
                   unsigned mask, amd_tensor *grads) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[GC_MAX_OUT];
  int rc = gc_bind(&g, op, opset, attrs, n_attrs, in, n_in, 1, &st);
  g.node.mult = m;
  if (rc == 0) rc = amd_q8_float_node(&g.node, &st);
  if (rc == 0 && amd_q8_float_set_grad(&g.node, kind) != 1) rc = amd_fail(&st, "not a q8f node");
  amd_tensor *cin[GC_MAX_IN];
  for (int k = 0; k < n_in; k++) cin[k] = in[k];
  cin[0] = cal;
  for (int c = 0; rc == 0 && c < 4; c++) {
    rc = gc_forward(&g.node, cin, out, NULL, NULL, &st);
    if (rc == 0) gc_free_outs(out, 1);
  }
  if (rc == 0) rc = gc_forward(&g.node, in, out, NULL, NULL, &st);
  amd_tensor *din[GC_MAX_IN] = {0};
  for (int k = 0; k < n_in; k++) {
    memset(&grads[k], 0, sizeof grads[k]);
    if (!((mask >> k) & 1) || !in[k]) continue;
    grads[k] = gc_tensor(AMD_FLOAT, in[k]->rank, in[k]->dims, 0, 0);
    din[k] = &grads[k];
  }
  if (rc == 0) {
    const amd_tensor *dout[1] = {dy};
    amd_ctx ctx = {.training = 1};
    rc = g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st);
    gc_free_outs(out, 1);
  }
  if (rc) printf("FAIL %s: %s\n", label, st.msg);
  free(g.node.attrs);
  return rc;
}

static void free_grads(amd_tensor *g, int n) {
  for (int k = 0; k < n; k++) amd_tensor_free(&g[k]);
}

/* got against ref (double) with the absolute term sums abs: max error / abs */
static int close_to(const char *label, const amd_tensor *got, const double *ref, const double *abs) {
  const float *g = got->data;
  double worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < amd_tensor_numel(got); i++) {
    double e = fabs((double)g[i] - ref[i]) / (abs[i] + 1e-30);
    if (e > worst) worst = e, at = i;
  }
  int ok = worst <= 2e-6;
  CHECK(ok, "%s: max relative error %.3g at %lld (got %.9g, reference %.9g)", label, worst, (long long)at,
        at >= 0 ? g[at] : 0.0, at >= 0 ? ref[at] : 0.0);
  if (ok) printf("ok   %s: %lld values, max error %.2e of the term sums\n", label, (long long)amd_tensor_numel(got), worst);
  return ok;
}

/* every element equal (==) */
static void same(const char *label, const amd_tensor *a, const amd_tensor *b) {
  int64_t bad = 0;
  for (int64_t i = 0; i < amd_tensor_numel(a); i++) bad += ((const float *)a->data)[i] != ((const float *)b->data)[i];
  CHECK(bad == 0, "%s: %lld of %lld differ", label, (long long)bad, (long long)amd_tensor_numel(a));
  if (!bad) printf("ok   %s: %lld values equal\n", label, (long long)amd_tensor_numel(a));
}

/* ---- Conv */
typedef struct conv_case {
  int64_t n, c, h, w, m, kh, kw, group, stride, pad, dil;
} conv_case;

static void conv_ref(const conv_case *cc, const amd_tensor *x, const amd_tensor *w, const amd_tensor *dy,
                     const qparams *p, const int32_t *t, double *dx, double *dxa, double *dw, double *dwa) {
  const int64_t cg = cc->c / cc->group, mg = cc->m / cc->group, kvol = cc->kh * cc->kw;
  const int64_t oh = (cc->h + 2 * cc->pad - cc->dil * (cc->kh - 1) - 1) / cc->stride + 1;
  const int64_t ow = (cc->w + 2 * cc->pad - cc->dil * (cc->kw - 1) - 1) / cc->stride + 1;
  uint8_t *wc = malloc((size_t)amd_tensor_numel(w));
  float *ws = malloc(sizeof(float) * (size_t)cc->m);
  weight_codes(w, cc->m, cg * kvol, p, wc, ws);
  const float *xd = x->data, *wd = w->data, *g = dy->data;
  memset(dx, 0, sizeof(double) * (size_t)amd_tensor_numel(x)), memset(dxa, 0, sizeof(double) * (size_t)amd_tensor_numel(x));
  memset(dw, 0, sizeof(double) * (size_t)amd_tensor_numel(w)), memset(dwa, 0, sizeof(double) * (size_t)amd_tensor_numel(w));
  for (int64_t b = 0; b < cc->n; b++)
    for (int64_t mo = 0; mo < cc->m; mo++)
      for (int64_t oy = 0; oy < oh; oy++)
        for (int64_t ox = 0; ox < ow; ox++) {
          const double gy = g[((b * cc->m + mo) * oh + oy) * ow + ox];
          const int64_t gi = mo / mg;
          for (int64_t ci = 0; ci < cg; ci++)
            for (int64_t ky = 0; ky < cc->kh; ky++)
              for (int64_t kx = 0; kx < cc->kw; kx++) {
                const int64_t iy = oy * cc->stride - cc->pad + ky * cc->dil, ix = ox * cc->stride - cc->pad + kx * cc->dil;
                const int valid = iy >= 0 && iy < cc->h && ix >= 0 && ix < cc->w;
                const int64_t xi = ((b * cc->c + gi * cg + ci) * cc->h + iy) * cc->w + ix;
                const int64_t wi = ((mo * cg + ci) * cc->kh + ky) * cc->kw + kx;
                const double xv = valid ? xd[xi] : 0.0;
                const int ac = valid ? (uint8_t)qcode(xv, p->xs, p->xz, p->qmin, p->qmax) : (uint8_t)p->xz;
                const int bc = wc[wi];
                if (valid) {
                  double term = gy * (wd[wi] + (double)ws[mo] * slope_a(t, p->sgn, ac, bc));
                  dx[xi] += term, dxa[xi] += fabs(term);
                }
                double term = gy * (xv + (double)p->xs * slope_b(t, p->sgn, ac, bc));
                dw[wi] += term, dwa[wi] += fabs(term);
              }
        }
  for (int64_t i = 0; i < amd_tensor_numel(x); i++)
    if (!(xd[i] >= p->lo && xd[i] <= p->hi)) dx[i] = 0, dxa[i] = 0;
  free(wc);
  free(ws);
}

static void test_conv(const char *label, const conv_case *cc, const char *mode, const int32_t *table) {
  amd_status st = {{0}};
  amd_mult m;
  CHECK(amd_mult_parse(mode, &m, &st) == 0, "%s", st.msg);
  if (table) set_table(&m, table);
  const int sgn = m.q8 == 's';
  const int64_t oh = (cc->h + 2 * cc->pad - cc->dil * (cc->kh - 1) - 1) / cc->stride + 1;
  const int64_t ow = (cc->w + 2 * cc->pad - cc->dil * (cc->kw - 1) - 1) / cc->stride + 1;
  int64_t xd[4] = {cc->n, cc->c, cc->h, cc->w}, wd[4] = {cc->m, cc->c / cc->group, cc->kh, cc->kw}, bd[1] = {cc->m};
  int64_t yd[4] = {cc->n, cc->m, oh, ow};
  amd_tensor cal = gc_tensor(AMD_FLOAT, 4, xd, -0.6, 1.0), x = gc_tensor(AMD_FLOAT, 4, xd, -0.8, 1.3);
  amd_tensor w = gc_tensor(AMD_FLOAT, 4, wd, -0.5, 0.4), bias = gc_tensor(AMD_FLOAT, 1, bd, -1, 1);
  amd_tensor dy = gc_tensor(AMD_FLOAT, 4, yd, -1, 1);
  Onnx__AttributeProto *at[4] = {gc_attr_ints("strides", 2, (int64_t[]){cc->stride, cc->stride}),
                                 gc_attr_ints("pads", 4, (int64_t[]){cc->pad, cc->pad, cc->pad, cc->pad}),
                                 gc_attr_ints("dilations", 2, (int64_t[]){cc->dil, cc->dil}),
                                 gc_attr_int("group", cc->group)};
  amd_tensor *in[3] = {&x, &w, &bias}, ste[3], tab[3];
  char l1[200], l2[200];
  snprintf(l1, sizeof l1, "%s ste", label), snprintf(l2, sizeof l2, "%s table", label);
  int rc1 = run_q8f(l1, "Conv", 11, at, 4, in, 3, &cal, &m, AMD_Q8_GRAD_STE, &dy, 7u, ste);
  int rc2 = run_q8f(l2, "Conv", 11, at, 4, in, 3, &cal, &m, AMD_Q8_GRAD_TABLE, &dy, 7u, tab);
  CHECK(rc1 == 0 && rc2 == 0, "%s: backward failed", label);
  if (rc1 == 0 && rc2 == 0) {
    if (!table) {
      snprintf(l1, sizeof l1, "%s, exact table: dX table = ste", label), same(l1, &tab[0], &ste[0]);
      snprintf(l1, sizeof l1, "%s, exact table: dW table = ste", label), same(l1, &tab[1], &ste[1]);
    } else {
      qparams p;
      data_params(&cal, sgn, &p);
      const int64_t nx = amd_tensor_numel(&x), nw = amd_tensor_numel(&w);
      double *r = malloc(sizeof(double) * (size_t)(2 * nx + 2 * nw));
      conv_ref(cc, &x, &w, &dy, &p, table, r, r + nx, r + 2 * nx, r + 2 * nx + nw);
      snprintf(l1, sizeof l1, "%s: dX against the double reference", label), close_to(l1, &tab[0], r, r + nx);
      snprintf(l1, sizeof l1, "%s: dW against the double reference", label),
          close_to(l1, &tab[1], r + 2 * nx, r + 2 * nx + nw);
      free(r);
    }
    snprintf(l1, sizeof l1, "%s: dB table = ste", label), same(l1, &tab[2], &ste[2]);
  }
  /* the first layer: no data gradient wanted, the weight's still gets the table's terms */
  amd_tensor only[3];
  snprintf(l1, sizeof l1, "%s, weight only", label);
  if (run_q8f(l1, "Conv", 11, at, 4, in, 3, &cal, &m, AMD_Q8_GRAD_TABLE, &dy, 2u, only) == 0 && rc2 == 0)
    same(l1, &only[1], &tab[1]);
  free_grads(only, 3);
  free_grads(ste, 3), free_grads(tab, 3);
  gc_attrs_free(at, 4);
  amd_tensor_free(&cal), amd_tensor_free(&x), amd_tensor_free(&w), amd_tensor_free(&bias), amd_tensor_free(&dy);
  amd_mult_free(&m);
}

/* ---- Gemm and MatMul: Y[t][i][j] = alpha * sum_k X[t][i][k] W[k][j] (W shared by the batch, or with
 * wb: W[t][k][j], one matrix per batch entry, the channels still its last axis) */
static void mm_ref(int64_t nb, int wb, int64_t M, int64_t K, int64_t N, int trans_b, float alpha, const amd_tensor *x,
                   const amd_tensor *w, const amd_tensor *dy, const qparams *p, const int32_t *t, double *dx,
                   double *dxa, double *dw, double *dwa) {
  const int64_t nw = (wb ? nb : 1) * K * N;
  uint8_t *wc = malloc((size_t)nw);
  float *ws = malloc(sizeof(float) * (size_t)N);
  weight_codes(w, N, trans_b ? K : 1, p, wc, ws);
  const float *xd = x->data, *wd = w->data, *g = dy->data;
  memset(dx, 0, sizeof(double) * (size_t)(nb * M * K)), memset(dxa, 0, sizeof(double) * (size_t)(nb * M * K));
  memset(dw, 0, sizeof(double) * (size_t)nw), memset(dwa, 0, sizeof(double) * (size_t)nw);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        const double gy = (double)g[(b * M + i) * N + j] * alpha;
        for (int64_t k = 0; k < K; k++) {
          const int64_t xi = (b * M + i) * K + k, wi = (wb ? b * K * N : 0) + (trans_b ? j * K + k : k * N + j);
          const int ac = (uint8_t)qcode(xd[xi], p->xs, p->xz, p->qmin, p->qmax), bc = wc[wi];
          double term = gy * (wd[wi] + (double)ws[j] * slope_a(t, p->sgn, ac, bc));
          dx[xi] += term, dxa[xi] += fabs(term);
          term = gy * (xd[xi] + (double)p->xs * slope_b(t, p->sgn, ac, bc));
          dw[wi] += term, dwa[wi] += fabs(term);
        }
      }
  for (int64_t i = 0; i < nb * M * K; i++)
    if (!(xd[i] >= p->lo && xd[i] <= p->hi)) dx[i] = 0, dxa[i] = 0;
  free(wc);
  free(ws);
}

/* gemm: Gemm with transB = 1, alpha, beta and C; else MatMul of X [nb, M, K] and W [K, N] (wb: [nb, K, N]) */
static void test_mm(const char *label, int gemm, int64_t nb, int wb, int64_t M, int64_t K, int64_t N,
                    const char *mode, const int32_t *table) {
  amd_status st = {{0}};
  amd_mult m;
  CHECK(amd_mult_parse(mode, &m, &st) == 0, "%s", st.msg);
  if (table) set_table(&m, table);
  const int sgn = m.q8 == 's';
  const float alpha = gemm ? 0.75f : 1.0f;
  int64_t xd[3] = {nb, M, K}, wd[3] = {nb, gemm ? N : K, gemm ? K : N}, yd[3] = {nb, M, N}, cd[1] = {N};
  const int xr = gemm ? 2 : 3;
  const int64_t *xdims = gemm ? xd + 1 : xd, *ydims = gemm ? yd + 1 : yd;
  amd_tensor cal = gc_tensor(AMD_FLOAT, xr, xdims, -1.0, 0.7), x = gc_tensor(AMD_FLOAT, xr, xdims, -1.2, 0.9);
  amd_tensor w = gc_tensor(AMD_FLOAT, wb ? 3 : 2, wb ? wd : wd + 1, -0.3, 0.5), c = gc_tensor(AMD_FLOAT, 1, cd, -1, 1);
  amd_tensor dy = gc_tensor(AMD_FLOAT, xr, ydims, -1, 1);
  Onnx__AttributeProto *at[3] = {gc_attr_int("transB", 1), gc_attr_float("alpha", alpha),
                                 gc_attr_float("beta", 0.5f)};
  amd_tensor *in[3] = {&x, &w, &c}, ste[3], tab[3];
  const int n_in = gemm ? 3 : 2, n_at = gemm ? 3 : 0;
  const char *op = gemm ? "Gemm" : "MatMul";
  const int opset = gemm ? 11 : 13;
  char l1[200];
  const unsigned mask = gemm ? 7u : 3u;
  snprintf(l1, sizeof l1, "%s ste", label);
  int rc1 = run_q8f(l1, op, opset, at, n_at, in, n_in, &cal, &m, AMD_Q8_GRAD_STE, &dy, mask, ste);
  snprintf(l1, sizeof l1, "%s table", label);
  int rc2 = run_q8f(l1, op, opset, at, n_at, in, n_in, &cal, &m, AMD_Q8_GRAD_TABLE, &dy, mask, tab);
  CHECK(rc1 == 0 && rc2 == 0, "%s: backward failed", label);
  if (rc1 == 0 && rc2 == 0) {
    if (!table) {
      snprintf(l1, sizeof l1, "%s, exact table: dX table = ste", label), same(l1, &tab[0], &ste[0]);
      snprintf(l1, sizeof l1, "%s, exact table: dW table = ste", label), same(l1, &tab[1], &ste[1]);
    } else {
      qparams p;
      data_params(&cal, sgn, &p);
      const int64_t nx = amd_tensor_numel(&x), nw = amd_tensor_numel(&w);
      double *r = malloc(sizeof(double) * (size_t)(2 * nx + 2 * nw));
      mm_ref(gemm ? 1 : nb, wb, M, K, N, gemm, alpha, &x, &w, &dy, &p, table, r, r + nx, r + 2 * nx,
             r + 2 * nx + nw);
      snprintf(l1, sizeof l1, "%s: dX against the double reference", label), close_to(l1, &tab[0], r, r + nx);
      snprintf(l1, sizeof l1, "%s: dW against the double reference", label),
          close_to(l1, &tab[1], r + 2 * nx, r + 2 * nx + nw);
      free(r);
    }
    if (gemm) snprintf(l1, sizeof l1, "%s: dC table = ste", label), same(l1, &tab[2], &ste[2]);
  }
  free_grads(ste, 3), free_grads(tab, 3);
  gc_attrs_free(at, 3);
  amd_tensor_free(&cal), amd_tensor_free(&x), amd_tensor_free(&w), amd_tensor_free(&c), amd_tensor_free(&dy);
  amd_mult_free(&m);
}

int main(void) {
  test_tables();
  static int32_t trunc4[AMD_Q8_ENTRIES], noisy[AMD_Q8_ENTRIES];
  trunc_table(trunc4, 4);
  noisy_signed_table(noisy);
  const conv_case c1 = {.n = 2, .c = 4, .h = 7, .w = 6, .m = 6, .kh = 3, .kw = 3, .group = 2, .stride = 2, .pad = 1,
                        .dil = 1};
  const conv_case c2 = {.n = 1, .c = 3, .h = 9, .w = 8, .m = 5, .kh = 3, .kw = 2, .group = 1, .stride = 1, .pad = 2,
                        .dil = 2};
  /* large enough for the parallel unfolding and two batch chunks (2^21 im2col elements each) */
  const conv_case c3 = {.n = 16, .c = 16, .h = 32, .w = 32, .m = 8, .kh = 3, .kw = 3, .group = 1, .stride = 1,
                        .pad = 1, .dil = 1};
  test_conv("Conv q8u truncated [16, 16, 32, 32] (two chunks)", &c3, "q8u:exact", trunc4);
  test_conv("Conv q8u:exact (groups, stride 2, pad 1)", &c1, "q8u:exact", NULL);
  test_conv("Conv q8s:exact (pad 2, dilation 2)", &c2, "q8s:exact", NULL);
  test_conv("Conv q8u truncated (groups, stride 2, pad 1)", &c1, "q8u:exact", trunc4);
  test_conv("Conv q8s noisy (pad 2, dilation 2)", &c2, "q8s:exact", noisy);
  test_mm("Gemm q8u:exact (transB, alpha, C)", 1, 1, 0, 7, 19, 5, "q8u:exact", NULL);
  test_mm("Gemm q8u truncated (transB, alpha, C)", 1, 1, 0, 7, 19, 5, "q8u:exact", trunc4);
  test_mm("Gemm q8s noisy (transB, alpha, C)", 1, 1, 0, 6, 33, 4, "q8s:exact", noisy);
  test_mm("MatMul q8s:exact [3, 5, 11] x [11, 6]", 0, 3, 0, 5, 11, 6, "q8s:exact", NULL);
  test_mm("MatMul q8u truncated [3, 5, 11] x [11, 6]", 0, 3, 0, 5, 11, 6, "q8u:exact", trunc4);
  test_mm("MatMul q8s noisy [3, 5, 11] x [11, 6]", 0, 3, 0, 5, 11, 6, "q8s:exact", noisy);
  test_mm("MatMul q8u:exact [4, 6, 9] x [4, 9, 5]", 0, 4, 1, 6, 9, 5, "q8u:exact", NULL);
  test_mm("MatMul q8u truncated [4, 6, 9] x [4, 9, 5]", 0, 4, 1, 6, 9, 5, "q8u:exact", trunc4);
  return check_summary();
}
