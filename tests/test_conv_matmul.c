/* Conv, Gemm and MatMul op descriptors against naive double-precision
 * references, on the cases the ONNX node tests do not cover: 1-D and 3-D
 * convolution, groups and depthwise, dilations, asymmetric pads, every
 * auto_pad, 1x1 kernels (the no-im2col path); MatMul with 1-D operands and
 * broadcast batches; Gemm with every C broadcast; and shape errors that infer
 * must reject (and the pooling pads that parse must: as large as the kernel). Each case goes parse -> infer -> forward through the
 * descriptor, as the executor does. Exits non-zero on any mismatch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"

static int failures, cases;
static uint64_t rng = 88172645463325252ull;
static float frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffff) / 32768.0f - 1.0f;
}

/* ---- building nodes ---- */
typedef struct attr_spec {
  const char *name;
  int kind; /* 'i' int, 'l' ints, 's' string, 'f' float */
  int64_t i;
  int64_t ints[16];
  int n;
  const char *s;
  float f;
} attr_spec;

static void make_tensor(amd_tensor *t, int rank, const int64_t *dims) {
  amd_status st;
  memset(t, 0, sizeof *t);
  amd_tensor_set_shape(t, AMD_FLOAT, rank, dims);
  if (amd_tensor_alloc(t, &st)) {
    printf("alloc: %s\n", st.msg);
    exit(2);
  }
  float *d = t->data;
  for (int64_t i = 0; i < amd_tensor_numel(t); i++) d[i] = frand();
}

/* Runs one node; returns 0 and fills out on success, -1 with st set. */
static int run_node(const amd_op *op, int since, const attr_spec *attrs, int n_attrs, amd_tensor **in,
                    int n_in, amd_tensor *out, amd_status *st) {
  amd_attr ap[16];
  for (int i = 0; i < n_attrs; i++) {
    amd_attr a = {.name = attrs[i].name};
    switch (attrs[i].kind) {
    case 'i':
      a.has_i = 1;
      a.i = attrs[i].i;
      break;
    case 'f':
      a.has_f = 1;
      a.f = attrs[i].f;
      break;
    case 'l':
      a.n_ints = (size_t)attrs[i].n;
      a.ints = attrs[i].ints;
      break;
    case 's':
      a.has_s = 1;
      a.s = attrs[i].s;
      a.s_len = strlen(attrs[i].s);
      break;
    }
    ap[i] = a;
  }
  amd_attr_list list = {.a = ap, .n = n_attrs};
  amd_node node;
  memset(&node, 0, sizeof node);
  node.name = "test";
  node.op = op;
  node.opset = since;
  node.since = since;
  node.n_in = n_in;
  node.n_out = 1;
  memset(out, 0, sizeof *out);
  int rc = op->parse ? op->parse(&node, &list, st) : 0;
  if (!rc) rc = op->infer(&node, (const amd_tensor *const *)in, out, st);
  if (!rc) rc = amd_tensor_alloc(out, st);
  amd_ctx ctx = {0};
  if (!rc) rc = op->forward(&node, &ctx, (const amd_tensor *const *)in, out, st);
  free(node.attrs);
  return rc;
}

static void compare(const char *what, const amd_tensor *got, const int64_t *dims, int rank,
                    const double *want, const double *mag) {
  cases++;
  int ok = got->rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = got->dims[i] == dims[i];
  if (!ok) {
    char s[128];
    printf("FAIL %s: output shape %s\n", what, amd_shape_str(got, s, sizeof s));
    failures++;
    return;
  }
  double worst = 0;
  const float *g = got->data;
  for (int64_t i = 0; i < amd_tensor_numel(got); i++) {
    double rel = fabs(g[i] - want[i]) / (mag[i] + 1e-6);
    if (!(rel <= worst)) worst = rel;
  }
  if (!(worst < 1e-5)) {
    printf("FAIL %s: max relative error %.3g\n", what, worst);
    failures++;
  }
}

/* ---- Conv ---- */
typedef struct conv_case {
  const char *name;
  int nsp;
  int64_t n, c, m, group, in[3], k[3], stride[3], dil[3], pads[6];
  const char *auto_pad; /* NULL: NOTSET with pads */
  int bias, give_kernel_shape;
} conv_case;

static void conv_check(const conv_case *cc) {
  int nsp = cc->nsp;
  int64_t xd[5] = {cc->n, cc->c}, wd[5] = {cc->m, cc->c / cc->group}, bd[1] = {cc->m};
  for (int d = 0; d < nsp; d++) {
    xd[2 + d] = cc->in[d];
    wd[2 + d] = cc->k[d];
  }
  amd_tensor X, W, B, Y;
  make_tensor(&X, nsp + 2, xd);
  make_tensor(&W, nsp + 2, wd);
  make_tensor(&B, 1, bd);
  attr_spec at[8];
  int na = 0;
  at[na++] = (attr_spec){.name = "group", .kind = 'i', .i = cc->group};
  attr_spec st_ = {.name = "strides", .kind = 'l', .n = nsp},
            di = {.name = "dilations", .kind = 'l', .n = nsp};
  attr_spec pa = {.name = "pads", .kind = 'l', .n = 2 * nsp},
            ks = {.name = "kernel_shape", .kind = 'l', .n = nsp};
  for (int d = 0; d < nsp; d++) {
    st_.ints[d] = cc->stride[d];
    di.ints[d] = cc->dil[d];
    pa.ints[d] = cc->pads[d];
    pa.ints[nsp + d] = cc->pads[nsp + d];
    ks.ints[d] = cc->k[d];
  }
  at[na++] = st_;
  at[na++] = di;
  if (cc->auto_pad)
    at[na++] = (attr_spec){.name = "auto_pad", .kind = 's', .s = cc->auto_pad};
  else
    at[na++] = pa;
  if (cc->give_kernel_shape) at[na++] = ks;

  /* Reference geometry. */
  int64_t out[3], pad0[3], osize = 1, ydims[5] = {cc->n, cc->m};
  for (int d = 0; d < nsp; d++) {
    int64_t ek = (cc->k[d] - 1) * cc->dil[d] + 1, s = cc->stride[d], in = cc->in[d];
    if (!cc->auto_pad) {
      out[d] = (in + cc->pads[d] + cc->pads[nsp + d] - ek) / s + 1;
      pad0[d] = cc->pads[d];
    } else if (!strcmp(cc->auto_pad, "VALID")) {
      out[d] = (in - ek) / s + 1;
      pad0[d] = 0;
    } else {
      out[d] = (in + s - 1) / s;
      int64_t total = (out[d] - 1) * s + ek - in;
      if (total < 0) total = 0;
      pad0[d] = !strcmp(cc->auto_pad, "SAME_UPPER") ? total / 2 : total - total / 2;
    }
    osize *= out[d];
    ydims[2 + d] = out[d];
  }
  int64_t cg = cc->c / cc->group, mg = cc->m / cc->group, kvol = 1, isize = 1;
  for (int d = 0; d < nsp; d++) kvol *= cc->k[d], isize *= cc->in[d];
  double *want = calloc((size_t)(cc->n * cc->m * osize), sizeof(double));
  double *mag = calloc((size_t)(cc->n * cc->m * osize), sizeof(double));
  const float *x = X.data, *w = W.data, *b = B.data;
  for (int64_t n = 0; n < cc->n; n++)
    for (int64_t m = 0; m < cc->m; m++)
      for (int64_t o = 0; o < osize; o++) {
        int64_t opos[3], r = o;
        for (int d = nsp - 1; d >= 0; d--) opos[d] = r % out[d], r /= out[d];
        double acc = cc->bias ? b[m] : 0, ab = cc->bias ? fabs(b[m]) : 0;
        int64_t g = m / mg;
        for (int64_t c = 0; c < cg; c++)
          for (int64_t kk = 0; kk < kvol; kk++) {
            int64_t kpos[3], q = kk, off = 0, valid = 1;
            for (int d = nsp - 1; d >= 0; d--) kpos[d] = q % cc->k[d], q /= cc->k[d];
            for (int d = 0; d < nsp; d++) {
              int64_t i = opos[d] * cc->stride[d] - pad0[d] + kpos[d] * cc->dil[d];
              if (i < 0 || i >= cc->in[d]) valid = 0;
              off = off * cc->in[d] + i;
            }
            if (!valid) continue;
            double p = (double)x[(n * cc->c + g * cg + c) * isize + off] * w[(m * cg + c) * kvol + kk];
            acc += p;
            ab += fabs(p);
          }
        want[(n * cc->m + m) * osize + o] = acc;
        mag[(n * cc->m + m) * osize + o] = ab;
      }
  amd_tensor *in[3] = {&X, &W, cc->bias ? &B : NULL};
  amd_status st;
  if (run_node(amd_op_find("Conv"), 11, at, na, in, 3, &Y, &st)) {
    printf("FAIL conv %s: %s\n", cc->name, st.msg);
    failures++;
    cases++;
  } else {
    char what[128];
    snprintf(what, sizeof what, "conv %s", cc->name);
    compare(what, &Y, ydims, nsp + 2, want, mag);
  }
  amd_tensor_free(&Y);
  amd_tensor_free(&X);
  amd_tensor_free(&W);
  amd_tensor_free(&B);
  free(want);
  free(mag);
}

/* ---- MatMul / Gemm ---- */
static void matmul_check(const char *name, int ra, const int64_t *da, int rb, const int64_t *db, int ry,
                         const int64_t *dy) {
  amd_tensor A, B, Y;
  make_tensor(&A, ra, da);
  make_tensor(&B, rb, db);
  /* Reference with explicit numpy semantics. */
  int64_t K = da[ra - 1], M = ra >= 2 ? da[ra - 2] : 1, N = rb >= 2 ? db[rb - 1] : 1;
  int br = ry - (ra >= 2) - (rb >= 2); /* batch rank */
  int64_t nb = 1;
  for (int i = 0; i < br; i++) nb *= dy[i];
  double *want = calloc((size_t)(nb * M * N), sizeof(double)),
         *mag = calloc((size_t)(nb * M * N), sizeof(double));
  const float *a = A.data, *b = B.data;
  for (int64_t t = 0; t < nb; t++) {
    /* batch index -> offsets in A and B */
    int64_t idx[8], r = t, oa = 0, ob = 0;
    for (int i = br - 1; i >= 0; i--) idx[i] = r % dy[i], r /= dy[i];
    int bra = ra > 2 ? ra - 2 : 0, brb = rb > 2 ? rb - 2 : 0;
    for (int i = 0; i < bra; i++) {
      int64_t d = da[i];
      oa = oa * d + (d == 1 ? 0 : idx[br - bra + i]);
    }
    for (int i = 0; i < brb; i++) {
      int64_t d = db[i];
      ob = ob * d + (d == 1 ? 0 : idx[br - brb + i]);
    }
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0, m = 0;
        for (int64_t k = 0; k < K; k++) {
          double p = (double)a[oa * M * K + i * K + k] * b[ob * K * N + k * N + j];
          s += p;
          m += fabs(p);
        }
        want[t * M * N + i * N + j] = s;
        mag[t * M * N + i * N + j] = m;
      }
  }
  amd_tensor *in[2] = {&A, &B};
  amd_status st;
  if (run_node(amd_op_find("MatMul"), 13, NULL, 0, in, 2, &Y, &st)) {
    printf("FAIL matmul %s: %s\n", name, st.msg);
    failures++;
    cases++;
  } else {
    char what[128];
    snprintf(what, sizeof what, "matmul %s", name);
    compare(what, &Y, dy, ry, want, mag);
  }
  amd_tensor_free(&Y);
  amd_tensor_free(&A);
  amd_tensor_free(&B);
  free(want);
  free(mag);
}

static void gemm_check(const char *name, int ta, int tb, float alpha, float beta, int64_t M, int64_t N,
                       int64_t K, int rc, const int64_t *dc) {
  int64_t da[2] = {ta ? K : M, ta ? M : K}, db[2] = {tb ? N : K, tb ? K : N}, dy[2] = {M, N};
  amd_tensor A, B, C, Y;
  make_tensor(&A, 2, da);
  make_tensor(&B, 2, db);
  if (rc >= 0) make_tensor(&C, rc, dc);
  double *want = calloc((size_t)(M * N), sizeof(double)), *mag = calloc((size_t)(M * N), sizeof(double));
  const float *a = A.data, *b = B.data;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double s = 0, m = 0;
      for (int64_t k = 0; k < K; k++) {
        double p = (double)(ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]);
        s += p;
        m += fabs(p);
      }
      s *= alpha;
      m *= fabs(alpha);
      if (rc >= 0) {
        int64_t ci = rc == 2 ? (dc[0] == 1 ? 0 : i) : 0, cj = rc >= 1 ? (dc[rc - 1] == 1 ? 0 : j) : 0;
        int64_t ncol = rc >= 1 ? dc[rc - 1] : 1;
        double cv = ((const float *)C.data)[ci * ncol + cj];
        s += beta * cv;
        m += fabs(beta * cv);
      }
      want[i * N + j] = s;
      mag[i * N + j] = m;
    }
  attr_spec at[4] = {{.name = "alpha", .kind = 'f', .f = alpha},
                     {.name = "beta", .kind = 'f', .f = beta},
                     {.name = "transA", .kind = 'i', .i = ta},
                     {.name = "transB", .kind = 'i', .i = tb}};
  amd_tensor *in[3] = {&A, &B, rc >= 0 ? &C : NULL};
  amd_status st;
  if (run_node(amd_op_find("Gemm"), 13, at, 4, in, 3, &Y, &st)) {
    printf("FAIL gemm %s: %s\n", name, st.msg);
    failures++;
    cases++;
  } else {
    char what[128];
    snprintf(what, sizeof what, "gemm %s", name);
    compare(what, &Y, dy, 2, want, mag);
  }
  amd_tensor_free(&Y);
  amd_tensor_free(&A);
  amd_tensor_free(&B);
  if (rc >= 0) amd_tensor_free(&C);
  free(want);
  free(mag);
}

/* A case infer must reject (message printed for the record). */
static void expect_error(const char *name, const amd_op *op, int since, const attr_spec *at, int na,
                         amd_tensor **in, int n_in) {
  amd_tensor Y;
  amd_status st = {{0}};
  cases++;
  if (!run_node(op, since, at, na, in, n_in, &Y, &st)) {
    printf("FAIL %s: accepted\n", name);
    failures++;
    amd_tensor_free(&Y);
  } else {
    printf("ok   %s rejected: %s\n", name, st.msg);
  }
}

int main(void) {
  static const conv_case convs[] = {
      {"1d group2 stride2 dil2 pads", 1, 2, 4, 6, 2, {11}, {3}, {2}, {2}, {1, 2}, NULL, 1, 0},
      {"1d same_lower", 1, 1, 3, 5, 1, {10}, {4}, {3}, {1}, {0}, "SAME_LOWER", 0, 1},
      {"2d asym pads dil", 1, 1, 3, 4, 1, {7, 9}, {3, 2}, {2, 1}, {1, 2}, {1, 0, 2, 1}, NULL, 1, 1},
      {"2d depthwise same_upper s2", 1, 2, 8, 8, 8, {6, 7}, {3, 3}, {2, 2}, {1, 1}, {0}, "SAME_UPPER", 1, 0},
      {"2d depthwise x2 same_lower", 1, 1, 4, 8, 4, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {0}, "SAME_LOWER", 0, 0},
      {"2d valid s3", 1, 2, 5, 3, 1, {10, 11}, {3, 4}, {3, 2}, {1, 1}, {0}, "VALID", 1, 0},
      {"2d 1x1 direct", 1, 2, 16, 8, 1, {5, 6}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, NULL, 1, 0},
      {"2d 1x1 stride2", 1, 2, 16, 8, 2, {5, 6}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}, NULL, 0, 0},
      {"2d 1x1 pad end", 1, 1, 3, 2, 1, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 1, 1}, NULL, 0, 0},
      {"2d big pads", 1, 1, 2, 3, 1, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {3, 2, 1, 4}, NULL, 1, 0},
      {"2d resnet-ish", 1, 2, 32, 64, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, 1, 0},
      {"3d", 1, 1, 2, 3, 1, {5, 6, 4}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 0}, NULL, 1, 1},
      {"3d group same_upper",
       1,
       2,
       4,
       4,
       2,
       {4, 5, 3},
       {3, 3, 3},
       {2, 1, 2},
       {1, 1, 1},
       {0},
       "SAME_UPPER",
       1,
       0},
  };
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
    conv_case cc = convs[i];
    for (int d = 0; d < cc.nsp; d++) { /* fill defaults left as 0 */
      if (!cc.stride[d]) cc.stride[d] = 1;
      if (!cc.dil[d]) cc.dil[d] = 1;
    }
    conv_check(&cc);
  }

  {
    int64_t a1[] = {5}, b1[] = {5}, y0[1] = {0};
    matmul_check("1d x 1d", 1, a1, 1, b1, 0, y0);
  }
  {
    int64_t a[] = {3}, b[] = {3, 4}, y[] = {4};
    matmul_check("1d x 2d", 1, a, 2, b, 1, y);
  }
  {
    int64_t a[] = {2, 3}, b[] = {3}, y[] = {2};
    matmul_check("2d x 1d", 2, a, 1, b, 1, y);
  }
  {
    int64_t a[] = {3}, b[] = {2, 3, 4}, y[] = {2, 4};
    matmul_check("1d x 3d", 1, a, 3, b, 2, y);
  }
  {
    int64_t a[] = {2, 5, 3}, b[] = {3}, y[] = {2, 5};
    matmul_check("3d x 1d", 3, a, 1, b, 2, y);
  }
  {
    int64_t a[] = {2, 1, 3, 4}, b[] = {5, 4, 6}, y[] = {2, 5, 3, 6};
    matmul_check("broadcast batch", 4, a, 3, b, 4, y);
  }
  {
    int64_t a[] = {4, 3}, b[] = {2, 3, 5}, y[] = {2, 4, 5};
    matmul_check("2d x 3d", 2, a, 3, b, 3, y);
  }
  {
    int64_t a[] = {2, 3, 7, 4}, b[] = {1, 1, 4, 5}, y[] = {2, 3, 7, 5};
    matmul_check("tall (B shared)", 4, a, 4, b, 4, y);
  }
  {
    int64_t a[] = {1, 7, 4}, b[] = {3, 4, 5}, y[] = {3, 7, 5};
    matmul_check("A broadcast", 3, a, 3, b, 3, y);
  }
  {
    int64_t a[] = {2, 0, 4}, b[] = {4, 5}, y[] = {2, 0, 5};
    matmul_check("empty M", 3, a, 2, b, 3, y);
  }
  {
    int64_t a[] = {3, 0}, b[] = {0, 2}, y[] = {3, 2};
    matmul_check("K = 0", 2, a, 2, b, 2, y);
  }

  {
    int64_t c0[1] = {0}, c1[] = {6}, c11[] = {1}, cm1[] = {5, 1}, c1n[] = {1, 6}, cmn[] = {5, 6};
    gemm_check("no C", 0, 0, 1, 1, 5, 6, 7, -1, c0);
    gemm_check("scalar C", 1, 0, 0.5f, 2, 5, 6, 7, 0, c0);
    gemm_check("vector C", 0, 1, 1, -1, 5, 6, 7, 1, c1);
    gemm_check("one-element C", 1, 1, 2, 0.25f, 5, 6, 7, 1, c11);
    gemm_check("column C", 0, 0, 1, 1, 5, 6, 7, 2, cm1);
    gemm_check("row C", 1, 0, 1, 1, 5, 6, 7, 2, c1n);
    gemm_check("matrix C", 0, 1, -1, 3, 5, 6, 7, 2, cmn);
    gemm_check("beta 0", 0, 0, 1, 0, 5, 6, 7, 2, cmn);
  }

  /* Errors infer must report. */
  {
    int64_t xd[] = {1, 4, 5, 5}, wd[] = {6, 3, 3, 3}, w1[] = {6, 4, 3}, bd[] = {5};
    amd_tensor X, W, W1, B;
    make_tensor(&X, 4, xd);
    make_tensor(&W, 4, wd);
    make_tensor(&W1, 3, w1);
    make_tensor(&B, 1, bd);
    amd_tensor *in1[3] = {&X, &W, NULL}, *in2[3] = {&X, &W1, NULL};
    expect_error("conv channel mismatch", amd_op_find("Conv"), 11, NULL, 0, in1, 3);
    expect_error("conv rank mismatch", amd_op_find("Conv"), 11, NULL, 0, in2, 3);
    attr_spec g2 = {.name = "group", .kind = 'i', .i = 2};
    int64_t wd2[] = {5, 2, 3, 3};
    amd_tensor W2;
    make_tensor(&W2, 4, wd2);
    amd_tensor *in3[3] = {&X, &W2, NULL};
    expect_error("conv M not divisible by group", amd_op_find("Conv"), 11, &g2, 1, in3, 3);
    int64_t wd3[] = {6, 4, 3, 3};
    amd_tensor W3;
    make_tensor(&W3, 4, wd3);
    amd_tensor *in4[3] = {&X, &W3, &B};
    expect_error("conv bias size", amd_op_find("Conv"), 11, NULL, 0, in4, 3);
    attr_spec ks = {.name = "kernel_shape", .kind = 'l', .n = 2, .ints = {2, 2}};
    amd_tensor *in5[3] = {&X, &W3, NULL};
    expect_error("conv kernel_shape vs W", amd_op_find("Conv"), 11, &ks, 1, in5, 3);
    int64_t wd4[] = {6, 4, 7, 3};
    amd_tensor W4;
    make_tensor(&W4, 4, wd4);
    amd_tensor *in6[3] = {&X, &W4, NULL};
    expect_error("conv kernel larger than input", amd_op_find("Conv"), 11, NULL, 0, in6, 3);
    attr_spec ap = {.name = "auto_pad", .kind = 's', .s = "SAME"};
    expect_error("conv bad auto_pad", amd_op_find("Conv"), 11, &ap, 1, in5, 3);

    int64_t ma[] = {2, 3}, mb[] = {4, 5}, mc[] = {3, 4};
    amd_tensor MA, MB, MC;
    make_tensor(&MA, 2, ma);
    make_tensor(&MB, 2, mb);
    make_tensor(&MC, 2, mc);
    amd_tensor *m1[2] = {&MA, &MB};
    expect_error("matmul inner mismatch", amd_op_find("MatMul"), 13, NULL, 0, m1, 2);
    amd_tensor *g1[3] = {&MA, &MC, &MA};
    expect_error("gemm C not broadcastable", amd_op_find("Gemm"), 13, NULL, 0, g1, 3);
    amd_tensor *g3[3] = {&MA, &MC, NULL};
    expect_error("gemm C missing before opset 11", amd_op_find("Gemm"), 9, NULL, 0, g3, 3);
    amd_tensor *g4[3] = {&MA, &MB, NULL};
    expect_error("gemm inner mismatch", amd_op_find("Gemm"), 13, NULL, 0, g4, 3);
    /* pooling: a pad as large as the kernel is refused (as ONNX Runtime does), one below it runs */
    attr_spec pool_big[2] = {{.name = "kernel_shape", .kind = 'l', .n = 2, .ints = {3, 3}},
                             {.name = "pads", .kind = 'l', .n = 4, .ints = {0, 2, 0, 3}}};
    amd_tensor *px[1] = {&X};
    expect_error("maxpool pad >= kernel", amd_op_find("MaxPool"), 12, pool_big, 2, px, 1);
    expect_error("averagepool pad >= kernel", amd_op_find("AveragePool"), 11, pool_big, 2, px, 1);
    attr_spec pool_ok[2] = {{.name = "kernel_shape", .kind = 'l', .n = 2, .ints = {3, 3}},
                            {.name = "pads", .kind = 'l', .n = 4, .ints = {0, 2, 0, 2}}};
    amd_tensor PY;
    amd_status pst = {{0}};
    cases++;
    if (run_node(amd_op_find("MaxPool"), 12, pool_ok, 2, px, 1, &PY, &pst) || PY.rank != 4 || PY.dims[2] != 3 ||
        PY.dims[3] != 7) {
      printf("FAIL maxpool pads 2 on a 3x3 kernel: %s\n", pst.msg);
      failures++;
    } else {
      printf("ok   maxpool pads 2 on a 3x3 kernel: output 3x7\n");
      amd_tensor_free(&PY);
    }
    amd_tensor_free(&X), amd_tensor_free(&W), amd_tensor_free(&W1), amd_tensor_free(&B);
    amd_tensor_free(&W2), amd_tensor_free(&W3), amd_tensor_free(&W4);
    amd_tensor_free(&MA), amd_tensor_free(&MB), amd_tensor_free(&MC);
  }

  printf("test_conv_matmul: %d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
