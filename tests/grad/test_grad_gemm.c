/* Finite-difference checks of the backward passes in src/ops/conv.c and
 * src/ops/matmul.c: Conv (2-D, strides, groups, depthwise, dilation, 1x1 fast
 * path, 1-D, 3-D, bias, auto_pad), Gemm (every transA/transB, alpha, beta, C
 * broadcast) and MatMul (2-D, batched, broadcast, 1-D).
 *
 * Float only (the GEMM ops are float-only): h = 1e-2, tolerance 2e-2. Beyond
 * gradcheck: gradients accumulate into pre-filled buffers and do not depend on
 * which other gradients are requested; and with node->bwd_mult = am16 the
 * gradients of Conv (dX and dW) and Gemm equal, bit for bit, naive loops that
 * take every product from amd_mult_product, differ from the exact ones, and do
 * not depend on the forward multiplier node->mult. */
#include "gradcheck.h"
#include "mult/mult.h"

#define TOL 2e-2

static void count(int ok) {
  if (ok)
    gc_passed++;
  else
    gc_failed++;
}

static Onnx__AttributeProto *attr_string(const char *name, const char *v) {
  Onnx__AttributeProto *a = gc_attr_new(name);
  a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  a->has_s = 1, a->s.data = (uint8_t *)v, a->s.len = strlen(v);
  return a;
}

/* ---- backward contract: accumulation, one input at a time ---- */

/* Runs backward for the inputs in mask (pre-filled with `fill`); returns 0 or -1. */
static int run_backward(gc_node *g, amd_tensor **in, int n_in, const amd_tensor *dy, unsigned mask,
                        double fill, amd_tensor *grads) {
  amd_status st = {{0}};
  amd_tensor out[8], *din[8] = {0};
  if (gc_forward(&g->node, in, out, NULL, NULL, &st)) {
    printf("forward: %s\n", st.msg);
    return -1;
  }
  for (int k = 0; k < n_in; k++) {
    amd_tensor_free(&grads[k]);
    if (!((mask >> k) & 1) || !in[k]) continue;
    amd_tensor_set_shape(&grads[k], in[k]->dtype, in[k]->rank, in[k]->dims);
    AMD_ASSERT(amd_tensor_alloc(&grads[k], &st) == 0);
    for (int64_t i = 0; i < amd_tensor_numel(&grads[k]); i++) amd_tensor_set_f64(&grads[k], i, fill);
    din[k] = &grads[k];
  }
  const amd_tensor *dout[8] = {dy};
  amd_ctx ctx = {.training = 1, .rng = 12345};
  int rc = g->node.op->backward(&g->node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st);
  if (rc) printf("backward: %s\n", st.msg);
  gc_free_outs(out, g->node.n_out);
  return rc;
}

static int close_to(const amd_tensor *t, const amd_tensor *ref, double add, double tol, const char *label,
                    const char *what, int k) {
  for (int64_t i = 0; i < amd_tensor_numel(t); i++) {
    double want = amd_tensor_get_f64(ref, i) + add, have = amd_tensor_get_f64(t, i);
    if (fabs(want - have) > tol * (1 + fabs(want))) {
      printf("FAIL %s: %s, input %d [%lld]: %.9g, expected %.9g\n", label, what, k, (long long)i, have, want);
      return 0;
    }
  }
  return 1;
}

/* Pre-filled buffers end at gradient + 0.25; each input alone gets the same gradient. */
static void check_contract(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs,
                           int n_attrs, amd_tensor **in, int n_in, unsigned mask) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor ref[8], got[8], out[8];
  memset(ref, 0, sizeof ref);
  memset(got, 0, sizeof got);
  if (gc_bind(&g, op, opset, attrs, n_attrs, in, n_in, 1, &st) ||
      gc_forward(&g.node, in, out, NULL, NULL, &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    count(0);
    return;
  }
  amd_tensor dy = gc_tensor(AMD_FLOAT, out[0].rank, out[0].dims, -1, 1);
  gc_free_outs(out, 1);
  int ok = run_backward(&g, in, n_in, &dy, mask, 0, ref) == 0;
  ok = ok && run_backward(&g, in, n_in, &dy, mask, 0.25, got) == 0;
  for (int k = 0; ok && k < n_in; k++)
    if (got[k].data) ok = close_to(&got[k], &ref[k], 0.25, 1e-5, label, "accumulation", k);
  for (int only = 0; ok && only < n_in; only++) {
    if (!((mask >> only) & 1) || !in[only]) continue;
    ok = run_backward(&g, in, n_in, &dy, 1u << only, 0, got) == 0;
    ok = ok && close_to(&got[only], &ref[only], 0, 1e-6, label, "alone", only);
  }
  if (ok) printf("ok   %s: accumulates, inputs alone match\n", label);
  count(ok);
  for (int k = 0; k < 8; k++) {
    amd_tensor_free(&ref[k]);
    amd_tensor_free(&got[k]);
  }
  amd_tensor_free(&dy);
  free(g.node.attrs);
}

/* ---- Conv ---- */

typedef struct conv_case {
  const char *label;
  int nsp;
  int64_t x[5], w[5];
  int64_t strides[3], dil[3], pads[6]; /* 0 in strides[0] / dil[0]: attribute absent; pads[0] < 0: absent */
  int group;
  const char *auto_pad;
  int bias;
} conv_case;

static void check_conv(const conv_case *c) {
  Onnx__AttributeProto *attrs[5];
  int na = 0, r = c->nsp + 2;
  if (c->strides[0]) attrs[na++] = gc_attr_ints("strides", c->nsp, c->strides);
  if (c->dil[0]) attrs[na++] = gc_attr_ints("dilations", c->nsp, c->dil);
  if (c->pads[0] >= 0 && !c->auto_pad) attrs[na++] = gc_attr_ints("pads", 2 * c->nsp, c->pads);
  if (c->group != 1) attrs[na++] = gc_attr_int("group", c->group);
  if (c->auto_pad) attrs[na++] = attr_string("auto_pad", c->auto_pad);
  amd_tensor x = gc_tensor(AMD_FLOAT, r, c->x, -1, 1), w = gc_tensor(AMD_FLOAT, r, c->w, -1, 1);
  amd_tensor b = gc_tensor(AMD_FLOAT, 1, c->w, -1, 1);
  amd_tensor *in[] = {&x, &w, c->bias ? &b : NULL};
  int n_in = c->bias ? 3 : 2;
  char label[128];
  snprintf(label, sizeof label, "Conv-11 %s", c->label);
  gradcheck(label, "Conv", 11, attrs, na, in, n_in, 1, c->bias ? 7u : 3u, TOL);
  check_contract(label, "Conv", 11, attrs, na, in, n_in, c->bias ? 7u : 3u);
  gc_attrs_free(attrs, na);
  amd_tensor_free(&x);
  amd_tensor_free(&w);
  amd_tensor_free(&b);
}

static void test_conv(void) {
  static const conv_case cases[] = {
      {"3x3 pad1 stride1", 2, {2, 3, 6, 6}, {4, 3, 3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, NULL, 0},
      {"3x3 pad1 stride1 +bias", 2, {2, 3, 6, 6}, {4, 3, 3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, NULL, 1},
      {"3x3 pad1 stride2 +bias", 2, {2, 3, 7, 7}, {4, 3, 3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 1, NULL, 1},
      {"3x3 stride 2x1 pads 0,1,1,0", 2, {1, 2, 6, 5}, {3, 2, 3, 3}, {2, 1}, {0}, {0, 1, 1, 0}, 1, NULL, 0},
      {"3x3 pad1 groups=2 +bias", 2, {2, 4, 5, 5}, {6, 2, 3, 3}, {0}, {0}, {1, 1, 1, 1}, 2, NULL, 1},
      {"3x3 pad1 depthwise +bias", 2, {2, 4, 6, 6}, {4, 1, 3, 3}, {0}, {0}, {1, 1, 1, 1}, 4, NULL, 1},
      {"3x3 depthwise x2 stride2", 2, {1, 3, 7, 7}, {6, 1, 3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 3, NULL, 0},
      {"3x3 dilation2 pad2", 2, {2, 3, 7, 7}, {4, 3, 3, 3}, {0}, {2, 2}, {2, 2, 2, 2}, 1, NULL, 0},
      {"3x3 dilation2 no pad", 2, {1, 2, 8, 7}, {3, 2, 3, 3}, {0}, {2, 2}, {-1}, 1, NULL, 1},
      {"1x1 (direct path)", 2, {2, 5, 4, 4}, {3, 5, 1, 1}, {0}, {0}, {-1}, 1, NULL, 0},
      {"1x1 +bias groups=2 (direct)", 2, {2, 4, 3, 5}, {6, 2, 1, 1}, {0}, {0}, {-1}, 2, NULL, 1},
      {"1x1 stride2 (im2col)", 2, {2, 3, 5, 5}, {4, 3, 1, 1}, {2, 2}, {0}, {-1}, 1, NULL, 1},
      {"1x1 pad1", 2, {1, 3, 3, 3}, {2, 3, 1, 1}, {0}, {0}, {1, 1, 1, 1}, 1, NULL, 0},
      {"1-D k3 pad1 stride2 +bias", 1, {2, 3, 11}, {4, 3, 3}, {2}, {0}, {1, 1}, 1, NULL, 1},
      {"1-D k5 dil2 groups=3", 1, {2, 6, 13}, {3, 2, 5}, {0}, {2}, {2, 1}, 3, NULL, 0},
      {"3-D 2x3x3 pad stride",
       3,
       {1, 2, 4, 5, 5},
       {3, 2, 2, 3, 3},
       {1, 2, 2},
       {0},
       {0, 1, 1, 1, 1, 1},
       1,
       NULL,
       1},
      {"3-D 1x1x1", 3, {2, 3, 2, 3, 3}, {2, 3, 1, 1, 1}, {0}, {0}, {-1}, 1, NULL, 0},
      {"3x3 SAME_UPPER stride2 +bias", 2, {2, 3, 6, 6}, {4, 3, 3, 3}, {2, 2}, {0}, {-1}, 1, "SAME_UPPER", 1},
      {"3x3 SAME_UPPER stride1", 2, {1, 2, 5, 5}, {3, 2, 3, 3}, {0}, {0}, {-1}, 1, "SAME_UPPER", 0},
      {"2x2 SAME_LOWER", 2, {1, 2, 5, 5}, {3, 2, 2, 2}, {0}, {0}, {-1}, 1, "SAME_LOWER", 0},
      {"3x3 VALID stride2", 2, {1, 2, 8, 8}, {3, 2, 3, 3}, {2, 2}, {0}, {-1}, 1, "VALID", 1},
      {"output taller than 256 (K blocks)",
       2,
       {1, 2, 20, 20},
       {3, 2, 3, 3},
       {0},
       {0},
       {1, 1, 1, 1},
       1,
       NULL,
       1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_conv(&cases[i]);
}

/* ---- Gemm ---- */

static void check_gemm(int ta, int tb, float alpha, float beta, int crank, const int64_t *cdims, int opset) {
  const int64_t M = 5, K = 4, N = 3;
  int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
  amd_tensor A = gc_tensor(AMD_FLOAT, 2, ad, -1, 1), B = gc_tensor(AMD_FLOAT, 2, bd, -1, 1);
  amd_tensor C = {0};
  if (crank >= 0) C = gc_tensor(AMD_FLOAT, crank, cdims, -1, 1);
  Onnx__AttributeProto *attrs[] = {gc_attr_int("transA", ta), gc_attr_int("transB", tb),
                                   gc_attr_float("alpha", alpha), gc_attr_float("beta", beta)};
  amd_tensor *in[] = {&A, &B, crank >= 0 ? &C : NULL};
  char label[128], cs[64] = "none";
  if (crank >= 0) {
    int n = snprintf(cs, sizeof cs, "[");
    for (int i = 0; i < crank; i++)
      n += snprintf(cs + n, sizeof cs - (size_t)n, i ? ",%lld" : "%lld", (long long)cdims[i]);
    snprintf(cs + n, sizeof cs - (size_t)n, "]");
  }
  snprintf(label, sizeof label, "Gemm-%d transA=%d transB=%d alpha=%g beta=%g C %s", opset, ta, tb, alpha,
           beta, cs);
  gradcheck(label, "Gemm", opset, attrs, 4, in, 3, 1, crank >= 0 ? 7u : 3u, TOL);
  check_contract(label, "Gemm", opset, attrs, 4, in, 3, crank >= 0 ? 7u : 3u);
  gc_attrs_free(attrs, 4);
  amd_tensor_free(&A);
  amd_tensor_free(&B);
  amd_tensor_free(&C);
}

static void test_gemm(void) {
  const int64_t mn[] = {5, 3}, n[] = {3}, m1[] = {5, 1}, one[] = {1}, r1[] = {1, 3};
  for (int ta = 0; ta <= 1; ta++)
    for (int tb = 0; tb <= 1; tb++) {
      check_gemm(ta, tb, 1.0f, 1.0f, 2, mn, 13);
      check_gemm(ta, tb, 0.5f, 2.0f, 1, n, 13);
    }
  check_gemm(0, 1, 0.5f, 2.0f, 2, mn, 13);
  check_gemm(1, 0, 0.5f, 2.0f, 0, NULL, 13); /* scalar C */
  check_gemm(0, 0, 1.0f, 2.0f, 1, one, 13);
  check_gemm(1, 1, 0.5f, 2.0f, 2, m1, 13); /* column */
  check_gemm(0, 1, 1.0f, 2.0f, 2, r1, 11);
  check_gemm(1, 1, 0.5f, 0.0f, 2, mn, 13);    /* beta 0: dC = 0 */
  check_gemm(1, 0, 0.5f, 1.0f, -1, NULL, 13); /* no C */
}

/* ---- MatMul ---- */

static void check_matmul(const char *label, int ra, const int64_t *da, int rb, const int64_t *db) {
  amd_tensor A = gc_tensor(AMD_FLOAT, ra, da, -1, 1), B = gc_tensor(AMD_FLOAT, rb, db, -1, 1);
  amd_tensor *in[] = {&A, &B};
  char full[128];
  snprintf(full, sizeof full, "MatMul-13 %s", label);
  gradcheck(full, "MatMul", 13, NULL, 0, in, 2, 1, 3u, TOL);
  check_contract(full, "MatMul", 13, NULL, 0, in, 2, 3u);
  amd_tensor_free(&A);
  amd_tensor_free(&B);
}

static void test_matmul(void) {
  const int64_t a2[] = {3, 4}, b2[] = {4, 5}, a4[] = {2, 3, 4, 5}, b56[] = {5, 6}, b3[] = {2, 4, 5};
  const int64_t k4[] = {4}, a_b[] = {2, 1, 3, 4}, b_b[] = {3, 4, 2}, a1b[] = {3, 4};
  check_matmul("[3,4]x[4,5]", 2, a2, 2, b2);
  check_matmul("[2,3,4,5]x[5,6]", 4, a4, 2, b56);
  check_matmul("[3,4]x[2,4,5]", 2, a2, 3, b3);
  check_matmul("[4]x[4,5]", 1, k4, 2, b2);
  check_matmul("[3,4]x[4]", 2, a2, 1, k4);
  check_matmul("[4]x[2,4,5]", 1, k4, 3, b3);
  check_matmul("[4]x[4]", 1, k4, 1, k4);
  check_matmul("[2,1,3,4]x[3,4,2]", 4, a_b, 3, b_b);
  check_matmul("[2,3,4]x[2,4,5]", 3, (const int64_t[]){2, 3, 4}, 3, b3);
  check_matmul("[3,4]x[1,4,5] (B batch of 1)", 2, a1b, 3, (const int64_t[]){1, 4, 5});
}

/* ---- the backward multiplier ---- */

static int bits_equal(const float *a, const float *b, int64_t n, int64_t *where) {
  for (int64_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      *where = i;
      return 0;
    }
  return 1;
}

/* max |a - b| / max |b|: the size of the difference against the gradient's scale. */
static double max_rel_diff(const float *a, const float *b, int64_t n) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (d > worst) worst = d;
    if (fabs((double)b[i]) > scale) scale = fabs((double)b[i]);
  }
  return worst / (scale > 0 ? scale : 1);
}

/* Conv 2-D, groups 2, pad 1, stride 2 (im2col path) and a 1x1 (direct path):
 * dX and dW with bwd_mult = am16 equal naive loops over amd_mult_product in
 * the GEMMs' summation order, and differ from the exact gradients. */
static void check_conv_mult(const amd_mult *am16, int one_by_one) {
  const int64_t N = 2, C = 4, H = 7, Wd = 6, M = 6, G = 2, CG = C / G, MG = M / G;
  const int64_t kh = one_by_one ? 1 : 3, kw = kh, s = one_by_one ? 1 : 2, p = one_by_one ? 0 : 1;
  const int64_t OH = (H + 2 * p - kh) / s + 1, OW = (Wd + 2 * p - kw) / s + 1;
  int64_t xd[] = {N, C, H, Wd}, wd[] = {M, CG, kh, kw}, yd[] = {N, M, OH, OW};
  int64_t st2[] = {s, s}, pads[] = {p, p, p, p};
  const char *label =
      one_by_one ? "Conv 1x1 groups=2 bwd_mult=am16" : "Conv 3x3/2 pad1 groups=2 bwd_mult=am16";
  Onnx__AttributeProto *attrs[] = {gc_attr_int("group", G), gc_attr_ints("strides", 2, st2),
                                   gc_attr_ints("pads", 4, pads)};
  int na = one_by_one ? 1 : 3;
  amd_tensor x = gc_tensor(AMD_FLOAT, 4, xd, -1, 1), w = gc_tensor(AMD_FLOAT, 4, wd, -1, 1);
  amd_tensor dy = gc_tensor(AMD_FLOAT, 4, yd, -1, 1);
  amd_tensor *in[] = {&x, &w};
  amd_tensor exact[8], emul[8], fwd_only[8];
  memset(exact, 0, sizeof exact);
  memset(emul, 0, sizeof emul);
  memset(fwd_only, 0, sizeof fwd_only);
  amd_status st = {{0}};
  gc_node g;
  int ok = gc_bind(&g, "Conv", 11, attrs, na, in, 2, 1, &st) == 0;
  if (!ok) printf("FAIL %s: %s\n", label, st.msg);
  ok = ok && run_backward(&g, in, 2, &dy, 3u, 0, exact) == 0;
  g.node.mult = am16; /* the forward multiplier must not reach backward */
  ok = ok && run_backward(&g, in, 2, &dy, 3u, 0, fwd_only) == 0;
  g.node.mult = NULL;
  g.node.bwd_mult = am16;
  ok = ok && run_backward(&g, in, 2, &dy, 3u, 0, emul) == 0;

  /* The reference, in amd_gemm's order: dW sums over output positions per batch
   * entry (then adds onto dW); dX sums over output channels per (row, position),
   * then adds kernel positions in order. Padding reads are products with 0. */
  const float *X = x.data, *Wt = w.data, *DY = dy.data;
  const int64_t KV = kh * kw, OS = OH * OW;
  float *rdw = calloc((size_t)(M * CG * KV), sizeof(float)),
        *rdx = calloc((size_t)(N * C * H * Wd), sizeof(float));
  for (int64_t n = 0; n < N; n++)
    for (int64_t gi = 0; gi < G; gi++)
      for (int64_t c = 0; c < CG; c++)
        for (int64_t kq = 0; kq < KV; kq++) {
          int64_t ki = kq / kw, kj = kq % kw, row = c * KV + kq, ch = gi * CG + c;
          for (int64_t mm = 0; mm < MG; mm++) { /* dW */
            int64_t m = gi * MG + mm;
            float sum = 0;
            for (int64_t o = 0; o < OS; o++) {
              int64_t ih = (o / OW) * s - p + ki, iw = (o % OW) * s - p + kj;
              float xv =
                  ih >= 0 && ih < H && iw >= 0 && iw < Wd ? X[((n * C + ch) * H + ih) * Wd + iw] : 0.0f;
              sum += amd_mult_product(am16, DY[(n * M + m) * OS + o], xv);
            }
            rdw[m * CG * KV + row] = sum + rdw[m * CG * KV + row];
          }
          for (int64_t o = 0; o < OS; o++) { /* dX */
            float sum = 0;
            for (int64_t mm = 0; mm < MG; mm++) {
              int64_t m = gi * MG + mm;
              sum += amd_mult_product(am16, Wt[m * CG * KV + row], DY[(n * M + m) * OS + o]);
            }
            int64_t ih = (o / OW) * s - p + ki, iw = (o % OW) * s - p + kj;
            if (ih >= 0 && ih < H && iw >= 0 && iw < Wd) rdx[((n * C + ch) * H + ih) * Wd + iw] += sum;
          }
        }
  if (ok) {
    const float *ref[2] = {rdx, rdw};
    const char *names[2] = {"dX", "dW"};
    for (int k = 0; k < 2 && ok; k++) {
      int64_t n = amd_tensor_numel(&emul[k]), at = 0;
      const float *e = emul[k].data, *ex = exact[k].data, *fo = fwd_only[k].data;
      double vs_exact = max_rel_diff(e, ex, n), vs_ref = max_rel_diff(e, ref[k], n);
      if (!bits_equal(e, ref[k], n, &at)) {
        printf("FAIL %s: %s[%lld] = %.9g, naive am16 loop %.9g (max rel diff %.2e)\n", label, names[k],
               (long long)at, e[at], ref[k][at], vs_ref);
        ok = 0;
      } else if (vs_exact < 1e-4) {
        printf("FAIL %s: %s with am16 equals the exact gradient (max rel diff %.2e)\n", label, names[k],
               vs_exact);
        ok = 0;
      } else if (!bits_equal(fo, ex, n, &at)) {
        printf("FAIL %s: %s changed with the forward multiplier (node->mult) [%lld]\n", label, names[k],
               (long long)at);
        ok = 0;
      } else {
        printf("ok   %s: %s bit-identical to the naive am16 loop, max rel diff vs exact %.2e\n", label,
               names[k], vs_exact);
      }
    }
  }
  count(ok);
  free(rdw);
  free(rdx);
  for (int k = 0; k < 8; k++) {
    amd_tensor_free(&exact[k]);
    amd_tensor_free(&emul[k]);
    amd_tensor_free(&fwd_only[k]);
  }
  amd_tensor_free(&x);
  amd_tensor_free(&w);
  amd_tensor_free(&dy);
  gc_attrs_free(attrs, 3);
  free(g.node.attrs);
}

/* Gemm transA=1 transB=1 alpha 0.5, and MatMul batched: with am16 the
 * gradients equal naive am16 loops (alpha applied to the fp32 sum). */
static void check_gemm_mult(const amd_mult *am16) {
  const int64_t M = 7, K = 9, N = 6;
  const float alpha = 0.5f;
  int64_t ad[] = {K, M}, bd[] = {N, K}, yd[] = {M, N};
  amd_tensor A = gc_tensor(AMD_FLOAT, 2, ad, -1, 1), B = gc_tensor(AMD_FLOAT, 2, bd, -1, 1);
  amd_tensor dy = gc_tensor(AMD_FLOAT, 2, yd, -1, 1);
  Onnx__AttributeProto *attrs[] = {gc_attr_int("transA", 1), gc_attr_int("transB", 1),
                                   gc_attr_float("alpha", alpha)};
  amd_tensor *in[] = {&A, &B, NULL};
  amd_tensor exact[8], emul[8];
  memset(exact, 0, sizeof exact);
  memset(emul, 0, sizeof emul);
  amd_status st = {{0}};
  gc_node g;
  const char *label = "Gemm transA=1 transB=1 alpha=0.5 bwd_mult=am16";
  int ok = gc_bind(&g, "Gemm", 13, attrs, 3, in, 3, 1, &st) == 0;
  if (!ok) printf("FAIL %s: %s\n", label, st.msg);
  ok = ok && run_backward(&g, in, 3, &dy, 3u, 0, exact) == 0;
  g.node.bwd_mult = am16;
  ok = ok && run_backward(&g, in, 3, &dy, 3u, 0, emul) == 0;
  const float *a = A.data, *b = B.data, *d = dy.data;
  float *rda = calloc((size_t)(K * M), sizeof(float)), *rdb = calloc((size_t)(N * K), sizeof(float));
  /* dA [K,M] = alpha * op(B) dY^T: op(B)(k,j) = B[j,k]. dB [N,K] = alpha * dY^T op(A): op(A)(i,k) = A[k,i].
   */
  for (int64_t k = 0; k < K; k++)
    for (int64_t i = 0; i < M; i++) {
      float sum = 0;
      for (int64_t j = 0; j < N; j++) sum += amd_mult_product(am16, b[j * K + k], d[i * N + j]);
      rda[k * M + i] = alpha * sum + 1.0f * 0.0f;
    }
  for (int64_t j = 0; j < N; j++)
    for (int64_t k = 0; k < K; k++) {
      float sum = 0;
      for (int64_t i = 0; i < M; i++) sum += amd_mult_product(am16, d[i * N + j], a[k * M + i]);
      rdb[j * K + k] = alpha * sum + 1.0f * 0.0f;
    }
  const float *ref[2] = {rda, rdb};
  for (int k = 0; ok && k < 2; k++) {
    int64_t n = amd_tensor_numel(&emul[k]), at = 0;
    double vs_exact = max_rel_diff(emul[k].data, exact[k].data, n);
    if (!bits_equal(emul[k].data, ref[k], n, &at)) {
      printf("FAIL %s: d%c[%lld] = %.9g, naive am16 loop %.9g\n", label, "AB"[k], (long long)at,
             ((float *)emul[k].data)[at], ref[k][at]);
      ok = 0;
    } else if (vs_exact < 1e-4) {
      printf("FAIL %s: d%c with am16 equals the exact gradient\n", label, "AB"[k]);
      ok = 0;
    } else {
      printf("ok   %s: d%c bit-identical to the naive am16 loop, max rel diff vs exact %.2e\n", label,
             "AB"[k], vs_exact);
    }
  }
  count(ok);
  free(rda);
  free(rdb);
  for (int k = 0; k < 8; k++) {
    amd_tensor_free(&exact[k]);
    amd_tensor_free(&emul[k]);
  }
  amd_tensor_free(&A);
  amd_tensor_free(&B);
  amd_tensor_free(&dy);
  gc_attrs_free(attrs, 3);
  free(g.node.attrs);
}

/* MatMul broadcast [3,4]x[2,4,5] with bwd_mult = am16: both gradients equal,
 * bit for bit, naive loops over amd_mult_product (the broadcast A's gradient
 * summed batch by batch, each batch's k-ordered fp32 sum added to the
 * previous ones), and differ from the exact gradients. */
static void check_matmul_mult(const amd_mult *am16) {
  enum { NB = 2, M = 3, K = 4, N = 5 };
  int64_t ad[] = {M, K}, bd[] = {NB, K, N}, yd[] = {NB, M, N};
  amd_tensor A = gc_tensor(AMD_FLOAT, 2, ad, -1, 1), B = gc_tensor(AMD_FLOAT, 3, bd, -1, 1);
  amd_tensor dy = gc_tensor(AMD_FLOAT, 3, yd, -1, 1);
  amd_tensor *in[] = {&A, &B};
  amd_tensor exact[8], emul[8];
  memset(exact, 0, sizeof exact);
  memset(emul, 0, sizeof emul);
  amd_status st = {{0}};
  gc_node g;
  const char *label = "MatMul [3,4]x[2,4,5] bwd_mult=am16";
  int ok = gc_bind(&g, "MatMul", 13, NULL, 0, in, 2, 1, &st) == 0;
  ok = ok && run_backward(&g, in, 2, &dy, 3u, 0, exact) == 0;
  g.node.bwd_mult = am16;
  ok = ok && run_backward(&g, in, 2, &dy, 3u, 0, emul) == 0;
  const float *a = A.data, *b = B.data, *d = dy.data;
  float rda[M * K] = {0}, rdb[NB * K * N];
  for (int64_t t = 0; t < NB; t++) {
    const float *bt = b + t * K * N, *dt = d + t * M * N;
    for (int64_t i = 0; i < M; i++) /* dA [M,K] += dY_t [M,N] B_t^T */
      for (int64_t k = 0; k < K; k++) {
        float sum = 0;
        for (int64_t j = 0; j < N; j++) sum += amd_mult_product(am16, dt[i * N + j], bt[k * N + j]);
        rda[i * K + k] = sum + rda[i * K + k];
      }
    for (int64_t k = 0; k < K; k++) /* dB_t [K,N] = A^T [K,M] dY_t [M,N] */
      for (int64_t j = 0; j < N; j++) {
        float sum = 0;
        for (int64_t i = 0; i < M; i++) sum += amd_mult_product(am16, a[i * K + k], dt[i * N + j]);
        rdb[t * K * N + k * N + j] = sum;
      }
  }
  const float *ref[2] = {rda, rdb};
  for (int k = 0; ok && k < 2; k++) {
    int64_t n = amd_tensor_numel(&emul[k]), at = 0;
    double diff = max_rel_diff(emul[k].data, exact[k].data, n);
    if (!bits_equal(emul[k].data, ref[k], n, &at)) {
      printf("FAIL %s: d%c[%lld] = %.9g, naive am16 loop %.9g\n", label, "AB"[k], (long long)at,
             ((float *)emul[k].data)[at], ref[k][at]);
      ok = 0;
    } else if (diff < 1e-4 || diff > 0.2) {
      printf("FAIL %s: d%c max rel diff vs exact %.2e (expected a small nonzero difference)\n", label,
             "AB"[k], diff);
      ok = 0;
    } else {
      printf("ok   %s: d%c bit-identical to the naive am16 loop, differs from exact by %.2e\n", label,
             "AB"[k], diff);
    }
  }
  count(ok);
  for (int k = 0; k < 8; k++) {
    amd_tensor_free(&exact[k]);
    amd_tensor_free(&emul[k]);
  }
  amd_tensor_free(&A);
  amd_tensor_free(&B);
  amd_tensor_free(&dy);
  free(g.node.attrs);
}

static void test_bwd_mult(void) {
  amd_mult am16;
  amd_status st = {{0}};
  if (amd_mult_parse("am16", &am16, &st)) {
    printf("FAIL amd_mult_parse(am16): %s\n", st.msg);
    count(0);
    return;
  }
  check_conv_mult(&am16, 0);
  check_conv_mult(&am16, 1);
  check_gemm_mult(&am16);
  check_matmul_mult(&am16);
  amd_mult_free(&am16);
}

int main(void) {
  test_conv();
  test_gemm();
  test_matmul();
  test_bwd_mult();
  return gc_summary();
}
