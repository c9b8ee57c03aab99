/* The random ops (src/ops/random.c, src/ops/random.h) on the CPU:
 *  - the portable ln and cos of Box-Muller against libm;
 *  - moments over 1e5 draws: RandomUniform(Like) float and double (mean,
 *    variance, every value in [low, high)), RandomNormal(Like) (mean,
 *    variance, skewness, kurtosis, the share within one sigma), Bernoulli
 *    (the mean for a constant p and for p = i / n), each within about five
 *    standard errors;
 *  - the stream: the same ctx->rng gives the same tensor, another one a
 *    different tensor; ctx->rng advances by the draws (n, or 2n for a normal
 *    output), as n sequential splitmix64 draws would; element 0 is the first
 *    draw; the seed attribute changes nothing; Dropout's mask still comes from
 *    the same draws;
 *  - Bernoulli: p <= 0 and NaN give 0, p >= 1 gives 1, bool and int64 outputs;
 *  - versions (1 and 22; Bernoulli 15 and 22, not 14) and bad attributes or
 *    inputs failing with a message (high < low, negative scale, dtype as a
 *    string, unsupported dtypes, missing or negative shape, a float attribute
 *    given as an int, Bernoulli on int64, a *Like op on int64 without dtype);
 *  - training with a dropout written as random ops: a two-layer network with
 *    RandomUniformLike -> Less -> Cast -> Mul (the PyTorch dynamo export of
 *    Dropout in train mode; run when this build has a Less op) and with
 *    RandomUniformLike -> Bernoulli -> Mul: two runs with the same seed give
 *    the same losses and weights bit for bit, another seed differs, and a run
 *    stopped after 3 steps and resumed from its parameters, optimizer state and
 *    ctx->rng in a fresh trainer ends bit-identical to the uninterrupted run. */
#include "../grad/gradcheck.h"

#include "../test_check.h"
#include "ops/random.h"
#include "train/optim.h"
#include "train/trainer.h"

enum { N = 100000 };

/* Runs one node (bound at opset) forward with ctx->rng = *rng; out[0] is
 * allocated; returns 0 or -1 with msg set. */
static int run1(const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs, amd_tensor **in,
                int n_in, uint64_t *rng, amd_tensor *out, char *msg) {
  amd_status st = {{0}};
  gc_node g;
  memset(out, 0, 8 * sizeof *out);
  msg[0] = 0;
  int rc = gc_bind(&g, op, opset, attrs, n_attrs, in, n_in, 1, &st);
  amd_ctx ctx = {.training = 1, .rng = *rng};
  if (rc == 0) rc = g.node.op->infer(&g.node, (const amd_tensor *const *)in, out, &st);
  if (rc == 0) rc = amd_tensor_alloc(&out[0], &st);
  if (rc == 0) rc = g.node.op->forward(&g.node, &ctx, (const amd_tensor *const *)in, out, &st);
  *rng = ctx.rng;
  if (rc) {
    snprintf(msg, 256, "%.250s", st.msg);
    amd_tensor_free(&out[0]);
  }
  free(g.node.attrs);
  return rc;
}

typedef struct moments {
  double mean, var, skew, kurt, min, max;
} moments;

static moments moments_of(const amd_tensor *t) {
  moments m = {0, 0, 0, 0, INFINITY, -INFINITY};
  int64_t n = amd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v = amd_tensor_get_f64(t, i);
    m.mean += v;
    m.min = fmin(m.min, v);
    m.max = fmax(m.max, v);
  }
  m.mean /= (double)n;
  double m2 = 0, m3 = 0, m4 = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = amd_tensor_get_f64(t, i) - m.mean;
    m2 += d * d, m3 += d * d * d, m4 += d * d * d * d;
  }
  m.var = m2 / (double)n;
  m.skew = m3 / (double)n / pow(m.var, 1.5);
  m.kurt = m4 / (double)n / (m.var * m.var);
  return m;
}

/* ---------------------------------------------------------------- ln, cos */

static void portable_math(void) {
  double worst_log = 0, worst_cos = 0;
  uint64_t s = 99;
  for (int i = 0; i < 200000; i++) {
    uint64_t z = amd_splitmix_next(&s);
    double x = (double)((z >> 11) + 1) * 0x1.0p-53; /* (0, 1] as Box-Muller's u1 */
    if (i % 4 == 1) x = ldexp(x, -(int)(z & 63));   /* and far smaller ones */
    if (i % 4 == 2) x = 1 + x;                      /* and (1, 2] */
    double l = log(x), e = fabs(amd_rng_log(x) - l) / fmax(fabs(l), 1e-300);
    if (x != 1 && e > worst_log) worst_log = e;
    double t = amd_rng_u01(amd_splitmix_next(&s));
    double c = fabs(amd_rng_cos2pi(t) - cos(2 * M_PI * t));
    if (c > worst_cos) worst_cos = c;
  }
  CHECK(worst_log < 1e-15 && amd_rng_log(1.0) == 0, "ln: worst relative error %.3g", worst_log);
  CHECK(worst_cos < 2e-15, "cos(2 pi t): worst error %.3g", worst_cos);
  /* the quadrant ends */
  CHECK(amd_rng_cos2pi(0) == 1 && amd_rng_cos2pi(0.5) == -1 && fabs(amd_rng_cos2pi(0.25)) < 1e-16 &&
            fabs(amd_rng_cos2pi(0.75)) < 1e-16,
        "cos at 0, 1/4, 1/2, 3/4: %g %g %g %g", amd_rng_cos2pi(0), amd_rng_cos2pi(0.25), amd_rng_cos2pi(0.5),
        amd_rng_cos2pi(0.75));
  printf("ok   portable ln: max rel err %.2e, cos(2 pi t): max abs err %.2e\n", worst_log, worst_cos);
}

/* ---------------------------------------------------------------- moments */

static void uniform_moments(void) {
  char msg[256];
  int64_t d[1] = {N};
  amd_tensor out[8];
  for (int dbl = 0; dbl < 2; dbl++) {
    /* RandomUniformLike of a float input; the double case through dtype 11 */
    amd_tensor x = gc_tensor(AMD_FLOAT, 1, d, 0, 0), *in[1] = {&x};
    Onnx__AttributeProto *a[3] = {gc_attr_float("low", -2), gc_attr_float("high", 3),
                                  gc_attr_int("dtype", 11)};
    uint64_t rng = 1234;
    int rc = run1("RandomUniformLike", 22, a, dbl ? 3 : 2, in, 1, &rng, out, msg);
    CHECK(rc == 0, "RandomUniformLike: %s", msg);
    if (rc == 0) {
      moments m = moments_of(&out[0]);
      double sd = 5 / sqrt(12.0), var = sd * sd;
      CHECK(out[0].dtype == (dbl ? AMD_DOUBLE : AMD_FLOAT), "dtype %s", amd_dtype_name(out[0].dtype));
      CHECK(fabs(m.mean - 0.5) < 5 * sd / sqrt(N), "uniform[-2,3) mean %.5f", m.mean);
      /* var of the sample variance: (m4 - var^2) / n with m4 = 9/5 var^2 */
      CHECK(fabs(m.var - var) < 5 * sqrt(0.8 * var * var / N), "uniform[-2,3) variance %.5f (%.5f)", m.var,
            var);
      CHECK(m.min >= -2 && m.max < 3 && m.min < -1.99 && m.max > 2.99, "range [%.6f, %.6f]", m.min, m.max);
      printf("ok   RandomUniformLike %s: mean %.4f var %.4f range [%.5f, %.5f]\n", dbl ? "double" : "float",
             m.mean, m.var, m.min, m.max);
      amd_tensor_free(&out[0]);
    }
    gc_attrs_free(a, 3);
    amd_tensor_free(&x);
  }
  { /* RandomUniform defaults: [0, 1) float */
    int64_t shape[2] = {250, 400};
    Onnx__AttributeProto *a[1] = {gc_attr_ints("shape", 2, shape)};
    uint64_t rng = 77;
    int rc = run1("RandomUniform", 1, a, 1, NULL, 0, &rng, out, msg);
    CHECK(rc == 0 && out[0].dtype == AMD_FLOAT && out[0].rank == 2 && out[0].dims[0] == 250 &&
              out[0].dims[1] == 400,
          "RandomUniform: %s", msg);
    if (rc == 0) {
      moments m = moments_of(&out[0]);
      CHECK(fabs(m.mean - 0.5) < 5 * sqrt(1 / 12.0 / N) && fabs(m.var - 1 / 12.0) < 5 * sqrt(0.8 / 144 / N) &&
                m.min >= 0 && m.max < 1,
            "uniform[0,1): mean %.5f var %.5f range [%g, %g]", m.mean, m.var, m.min, m.max);
      amd_tensor_free(&out[0]);
    }
    gc_attrs_free(a, 1);
  }
  { /* a single-value range: high == low gives low */
    int64_t shape[1] = {100};
    Onnx__AttributeProto *a[3] = {gc_attr_ints("shape", 1, shape), gc_attr_float("low", 0.25f),
                                  gc_attr_float("high", 0.25f)};
    uint64_t rng = 5;
    int rc = run1("RandomUniform", 22, a, 3, NULL, 0, &rng, out, msg);
    CHECK(rc == 0, "RandomUniform low == high: %s", msg);
    if (rc == 0) {
      moments m = moments_of(&out[0]);
      CHECK(m.min == 0.25 && m.max == 0.25, "low == high: [%g, %g]", m.min, m.max);
      amd_tensor_free(&out[0]);
    }
    gc_attrs_free(a, 3);
  }
}

static void normal_moments(void) {
  char msg[256];
  amd_tensor out[8];
  for (int like = 0; like < 2; like++) {
    int64_t shape[1] = {N};
    amd_tensor x = gc_tensor(AMD_DOUBLE, 1, shape, 0, 0), *in[1] = {&x};
    Onnx__AttributeProto *a[3] = {gc_attr_float("mean", 1.5f), gc_attr_float("scale", 2.0f),
                                  gc_attr_ints("shape", 1, shape)};
    uint64_t rng = 42;
    /* RandomNormal: float (default dtype); RandomNormalLike of a double input: double */
    int rc = like ? run1("RandomNormalLike", 1, a, 2, in, 1, &rng, out, msg)
                  : run1("RandomNormal", 22, a, 3, NULL, 0, &rng, out, msg);
    CHECK(rc == 0, "%s: %s", like ? "RandomNormalLike" : "RandomNormal", msg);
    if (rc == 0) {
      CHECK(out[0].dtype == (like ? AMD_DOUBLE : AMD_FLOAT), "dtype %s", amd_dtype_name(out[0].dtype));
      moments m = moments_of(&out[0]);
      int64_t within = 0;
      for (int64_t i = 0; i < N; i++) within += fabs(amd_tensor_get_f64(&out[0], i) - 1.5) < 2.0;
      double share = (double)within / N, p1 = 0.682689492137;
      CHECK(fabs(m.mean - 1.5) < 5 * 2 / sqrt(N), "normal mean %.5f", m.mean);
      CHECK(fabs(m.var - 4) < 5 * sqrt(2.0 * 16 / N), "normal variance %.5f", m.var);
      CHECK(fabs(m.skew) < 5 * sqrt(6.0 / N), "normal skewness %.5f", m.skew);
      CHECK(fabs(m.kurt - 3) < 5 * sqrt(24.0 / N), "normal kurtosis %.5f", m.kurt);
      CHECK(fabs(share - p1) < 5 * sqrt(p1 * (1 - p1) / N), "share within one sigma %.5f (%.5f)", share, p1);
      printf("ok   %s: mean %.4f var %.4f skew %.4f kurt %.4f within 1 sigma %.4f\n",
             like ? "RandomNormalLike double" : "RandomNormal float", m.mean, m.var, m.skew, m.kurt, share);
      amd_tensor_free(&out[0]);
    }
    gc_attrs_free(a, 3);
    amd_tensor_free(&x);
  }
}

static void bernoulli_moments(void) {
  char msg[256];
  amd_tensor out[8];
  int64_t d[1] = {N};
  for (int varying = 0; varying < 2; varying++) {
    amd_tensor p = gc_tensor(AMD_FLOAT, 1, d, 0.3, 0.3), *in[1] = {&p};
    if (varying)
      for (int64_t i = 0; i < N; i++) ((float *)p.data)[i] = (float)((double)i / N);
    uint64_t rng = 9;
    int rc = run1("Bernoulli", 15, NULL, 0, in, 1, &rng, out, msg);
    CHECK(rc == 0 && out[0].dtype == AMD_FLOAT, "Bernoulli: %s", msg);
    if (rc == 0) {
      moments m = moments_of(&out[0]);
      /* varying p: the count of ones has variance sum p(1-p) = n/6 */
      double want = varying ? 0.5 : 0.3, se = varying ? sqrt(1.0 / 6 / N) : sqrt(0.21 / N);
      int64_t low_ones = 0;
      for (int64_t i = 0; varying && i < N / 10; i++) low_ones += ((float *)out[0].data)[i] != 0;
      CHECK(fabs(m.mean - want) < 5 * se && m.min == 0 && m.max == 1, "Bernoulli mean %.5f (%.2f)", m.mean,
            want);
      /* the first tenth (p < 0.1): about 5% ones, an inverted comparison would give 95% */
      if (varying)
        CHECK(low_ones > N / 200 * 0.8 && low_ones < N / 200 * 1.2, "ones at p < 0.1: %lld",
              (long long)low_ones);
      printf("ok   Bernoulli %s: mean %.4f\n", varying ? "p = i/n" : "p = 0.3", m.mean);
      amd_tensor_free(&out[0]);
    }
    amd_tensor_free(&p);
  }
}

/* ---------------------------------------------------------------- the stream */

static void stream(void) {
  char msg[256];
  amd_tensor a1[8], a2[8], b[8];
  int64_t d[2] = {37, 11}, cnt = 37 * 11;
  amd_tensor x = gc_tensor(AMD_FLOAT, 2, d, -1, 1), *in[1] = {&x};
  const char *ops[4] = {"RandomUniformLike", "RandomNormalLike", "Bernoulli", "RandomUniformLike"};
  for (int k = 0; k < 4; k++) {
    amd_tensor p = gc_tensor(AMD_FLOAT, 2, d, 0.5, 0.5), *pin[1] = {&p};
    amd_tensor **use = k == 2 ? pin : in;
    Onnx__AttributeProto *seed[1] = {gc_attr_float("seed", (float)k + 3)};
    int n_attr = k == 3; /* the last: with a seed attribute, which changes nothing */
    uint64_t r1 = 0xabcdef, r2 = 0xabcdef, r3 = 0xabcdf0;
    int rc = run1(ops[k], 22, seed, n_attr, use, 1, &r1, a1, msg) ||
             run1(ops[k], 22, NULL, 0, use, 1, &r2, a2, msg) ||
             run1(ops[k], 22, seed, n_attr, use, 1, &r3, b, msg);
    CHECK(rc == 0, "%s: %s", ops[k], msg);
    if (rc == 0) {
      size_t bytes = amd_tensor_nbytes(&a1[0]);
      CHECK(memcmp(a1[0].data, a2[0].data, bytes) == 0, "%s: the same rng gives another tensor", ops[k]);
      CHECK(memcmp(a1[0].data, b[0].data, bytes) != 0, "%s: another rng gives the same tensor", ops[k]);
      int64_t draws = k == 1 ? 2 * cnt : cnt;
      uint64_t s = 0xabcdef;
      for (int64_t i = 0; i < draws; i++) amd_splitmix_next(&s);
      CHECK(r1 == s && r2 == s && r1 == amd_splitmix_skip(0xabcdef, draws),
            "%s: rng advanced to %llx, %lld draws give %llx", ops[k], (unsigned long long)r1,
            (long long)draws, (unsigned long long)s);
      /* element 0 from the first sequential draw, element 1 from the second */
      uint64_t q = 0xabcdef;
      double u0 = amd_rng_u01(amd_splitmix_next(&q)), u1 = amd_rng_u01(amd_splitmix_next(&q));
      if (k == 0 || k == 3)
        CHECK(((float *)a1[0].data)[0] == (float)u0 && ((float *)a1[0].data)[1] == (float)u1,
              "uniform elements 0, 1: %.9g %.9g, draws %.9g %.9g", ((float *)a1[0].data)[0],
              ((float *)a1[0].data)[1], u0, u1);
      if (k == 2)
        CHECK(((float *)a1[0].data)[0] == (u0 < 0.5) && ((float *)a1[0].data)[1] == (u1 < 0.5),
              "Bernoulli elements 0, 1: %g %g, draws %g %g", ((float *)a1[0].data)[0],
              ((float *)a1[0].data)[1], u0, u1);
      amd_tensor_free(&a1[0]);
      amd_tensor_free(&a2[0]);
      amd_tensor_free(&b[0]);
    }
    gc_attrs_free(seed, 1);
    amd_tensor_free(&p);
  }
  printf("ok   same rng same tensor, another rng another, rng advances by the draws\n");
  { /* Dropout's masks: draw i for element i, unchanged by the shared random.h */
    amd_tensor ratio = gc_tensor(AMD_FLOAT, 0, NULL, 0.5, 0.5), ones = gc_tensor(AMD_FLOAT, 2, d, 1, 1);
    amd_tensor *din[2] = {&ones, &ratio};
    uint64_t r = 555;
    int rc = run1("Dropout", 13, NULL, 0, din, 2, &r, a1, msg);
    CHECK(rc == 0, "Dropout: %s", msg);
    if (rc == 0) {
      int64_t bad = 0;
      for (int64_t i = 0; i < cnt; i++)
        bad += ((float *)a1[0].data)[i] != (amd_rng_u01(amd_splitmix_at(555, i)) >= 0.5 ? 2.0f : 0.0f);
      CHECK(bad == 0 && r == amd_splitmix_skip(555, cnt), "Dropout: %lld elements differ from the draws",
            (long long)bad);
      amd_tensor_free(&a1[0]);
    }
    amd_tensor_free(&ratio);
    amd_tensor_free(&ones);
  }
  amd_tensor_free(&x);
}

static void bernoulli_edges(void) {
  char msg[256];
  amd_tensor out[8];
  int64_t d[1] = {6};
  amd_tensor p = gc_tensor(AMD_DOUBLE, 1, d, 0, 0), *in[1] = {&p};
  double pv[6] = {-0.5, 0, 1, 1.5, NAN, 1};
  for (int i = 0; i < 6; i++) ((double *)p.data)[i] = pv[i];
  const int want[6] = {0, 0, 1, 1, 0, 1};
  const int dts[3] = {0, AMD_BOOL, AMD_INT64};
  for (int k = 0; k < 3; k++) {
    Onnx__AttributeProto *a[1] = {gc_attr_int("dtype", dts[k])};
    uint64_t rng = 31;
    int rc = run1("Bernoulli", 22, a, k > 0, in, 1, &rng, out, msg);
    CHECK(rc == 0, "Bernoulli dtype %d: %s", dts[k], msg);
    if (rc == 0) {
      int ok = out[0].dtype == (k ? (amd_dtype)dts[k] : AMD_DOUBLE);
      for (int i = 0; i < 6; i++) ok &= amd_tensor_get_i64(&out[0], i) == want[i];
      CHECK(ok, "Bernoulli p = -0.5, 0, 1, 1.5, NaN, 1 as %s: not 0 0 1 1 0 1", amd_dtype_name(out[0].dtype));
      amd_tensor_free(&out[0]);
    }
    gc_attrs_free(a, 1);
  }
  amd_tensor_free(&p);
}

/* ---------------------------------------------------------------- errors */

static void expect_fail(const char *label, const char *op, int opset, Onnx__AttributeProto **a, int n_a,
                        amd_tensor **in, int n_in, const char *needle) {
  char msg[256];
  amd_tensor out[8];
  uint64_t rng = 1;
  int rc = run1(op, opset, a, n_a, in, n_in, &rng, out, msg);
  CHECK(rc != 0 && strstr(msg, needle), "%s: expected an error with '%s', got rc %d '%s'", label, needle, rc,
        msg);
  if (rc == 0)
    amd_tensor_free(&out[0]);
  else
    printf("ok   %s: %s\n", label, msg);
  gc_attrs_free(a, n_a);
}

static void errors(void) {
  int64_t shape[2] = {2, 3}, neg[2] = {2, -1}, d[1] = {4};
  amd_tensor f = gc_tensor(AMD_FLOAT, 1, d, 0.2, 0.8), i64 = {0}, *fin[1] = {&f}, *iin[1] = {&i64};
  amd_status st;
  amd_tensor_set_shape(&i64, AMD_INT64, 1, d);
  AMD_ASSERT(amd_tensor_alloc(&i64, &st) == 0);
  {
    Onnx__AttributeProto *a[3] = {gc_attr_ints("shape", 2, shape), gc_attr_float("low", 2),
                                  gc_attr_float("high", 1)};
    expect_fail("high < low", "RandomUniform", 1, a, 3, NULL, 0, "less than low");
  }
  {
    Onnx__AttributeProto *a[1] = {gc_attr_float("scale", -1)};
    expect_fail("negative scale", "RandomNormalLike", 1, a, 1, fin, 1, "negative");
  }
  {
    Onnx__AttributeProto *a[1] = {gc_attr_string("dtype", "float")};
    expect_fail("dtype as a string", "RandomUniformLike", 1, a, 1, fin, 1, "must be an int");
  }
  {
    Onnx__AttributeProto *a[2] = {gc_attr_ints("shape", 2, shape), gc_attr_int("dtype", AMD_FLOAT16)};
    expect_fail("dtype float16", "RandomNormal", 22, a, 2, NULL, 0, "not supported");
  }
  {
    Onnx__AttributeProto *a[2] = {gc_attr_ints("shape", 2, shape), gc_attr_int("dtype", AMD_INT64)};
    expect_fail("RandomUniform dtype int64", "RandomUniform", 1, a, 2, NULL, 0, "not supported");
  }
  {
    Onnx__AttributeProto *a[1] = {gc_attr_int("dtype", AMD_STRING)};
    expect_fail("Bernoulli dtype string", "Bernoulli", 15, a, 1, fin, 1, "not supported");
  }
  {
    Onnx__AttributeProto *a[1] = {gc_attr_float("low", 0)};
    expect_fail("missing shape", "RandomUniform", 1, a, 1, NULL, 0, "shape");
  }
  {
    Onnx__AttributeProto *a[1] = {gc_attr_ints("shape", 2, neg)};
    expect_fail("negative shape", "RandomNormal", 1, a, 1, NULL, 0, "negative");
  }
  {
    Onnx__AttributeProto *a[1] = {gc_attr_int("high", 2)};
    expect_fail("high as an int", "RandomUniformLike", 22, a, 1, fin, 1, "must be a float");
  }
  expect_fail("Bernoulli on int64", "Bernoulli", 15, NULL, 0, iin, 1, "float or double");
  expect_fail("RandomUniformLike of int64 without dtype", "RandomUniformLike", 1, NULL, 0, iin, 1,
              "not supported");
  expect_fail("Bernoulli at opset 14", "Bernoulli", 14, NULL, 0, fin, 1, "Bernoulli");
  { /* with dtype, an int64 input only gives its shape */
    char msg[256];
    amd_tensor out[8];
    uint64_t rng = 1;
    Onnx__AttributeProto *a[1] = {gc_attr_int("dtype", AMD_FLOAT)};
    int rc = run1("RandomUniformLike", 1, a, 1, iin, 1, &rng, out, msg);
    CHECK(rc == 0 && out[0].dtype == AMD_FLOAT && out[0].dims[0] == 4,
          "RandomUniformLike of int64, dtype float: %s", msg);
    if (rc == 0) amd_tensor_free(&out[0]);
    gc_attrs_free(a, 1);
  }
  /* the descriptors: no gradient, inputs of the *Like ops read for their shape only */
  const amd_op *ul = amd_op_find("RandomUniformLike"), *nl = amd_op_find("RandomNormalLike"),
               *be = amd_op_find("Bernoulli");
  CHECK(ul && nl && be && ul->backward && (ul->nondiff_inputs & 1) && (ul->fwd_unread_in & 1) &&
            (ul->bwd_unread_in & 1) && (nl->fwd_unread_in & 1) && (be->nondiff_inputs & 1) &&
            !(be->fwd_unread_in & 1),
        "descriptor flags");
  amd_tensor_free(&f);
  amd_tensor_free(&i64);
}

/* ---------------------------------------------------------------- training */

/* A two-layer network with a dropout made of random ops, built as an ONNX model:
 *   h = Relu(Gemm(x, W1, b1)); d = h * mask * (1 / 0.75); logits = Gemm(d, W2, b2)
 * mask: variant 1: Cast(Less(RandomUniformLike(h), 0.75)) (the PyTorch export);
 *       variants 0 and 2: Bernoulli(RandomUniformLike(h, low = high = 0.75));
 * variant 2 multiplies by Cast(W2) instead of W2 (a parameter blocked). */
enum { IN = 6, HID = 16, OUT = 4, BATCH = 8 };
typedef struct net {
  Onnx__ModelProto model;
  Onnx__GraphProto graph;
  Onnx__OperatorSetIdProto opset, *opsets[1];
  Onnx__NodeProto nodes[10], *node_ptrs[10];
  char *nin[10][3], *nout[10][1];
  Onnx__AttributeProto attrs[10][2], *attr_ptrs[10][2];
  Onnx__TensorProto inits[8], *init_ptrs[8];
  Onnx__ValueInfoProto vi[2], *vin[1], *vout[1];
  Onnx__TypeProto types[2];
  Onnx__TypeProto__Tensor ttypes[2];
  Onnx__TensorShapeProto shapes[2];
  Onnx__TensorShapeProto__Dimension dims[2][2], *dim_ptrs[2][2];
  float w1[IN * HID], b1[HID], w2[HID * OUT], b2[OUT], thresh, scale;
  int64_t w1d[2], b1d[1], w2d[2], b2d[1];
} net;

static Onnx__NodeProto *net_node(net *m, const char *op, const char *i0, const char *i1, const char *i2,
                                 const char *o) {
  int k = (int)m->graph.n_node++;
  Onnx__NodeProto *n = &m->nodes[k];
  onnx__node_proto__init(n);
  n->op_type = (char *)op;
  n->name = (char *)o;
  n->input = m->nin[k];
  n->output = m->nout[k];
  const char *ins[3] = {i0, i1, i2};
  for (int j = 0; j < 3; j++)
    if (ins[j]) m->nin[k][n->n_input++] = (char *)ins[j];
  m->nout[k][n->n_output++] = (char *)o;
  n->attribute = m->attr_ptrs[k];
  m->node_ptrs[k] = n;
  return n;
}

static Onnx__AttributeProto *net_attr(net *m, Onnx__NodeProto *n, const char *name) {
  int k = (int)(n - m->nodes);
  Onnx__AttributeProto *a = &m->attrs[k][n->n_attribute];
  onnx__attribute_proto__init(a);
  a->name = (char *)name;
  m->attr_ptrs[k][n->n_attribute++] = a;
  return a;
}

static void net_init(net *m, const char *name, float *data, int64_t cnt, int rank, int64_t *dims) {
  int k = (int)m->graph.n_initializer++;
  Onnx__TensorProto *t = &m->inits[k];
  onnx__tensor_proto__init(t);
  t->name = (char *)name;
  t->has_data_type = 1;
  t->data_type = AMD_FLOAT;
  t->n_dims = (size_t)rank;
  t->dims = dims;
  t->n_float_data = (size_t)cnt;
  t->float_data = data;
  m->init_ptrs[k] = t;
}

static void net_value(net *m, int k, const char *name, int64_t cols) {
  Onnx__ValueInfoProto *v = &m->vi[k];
  onnx__value_info_proto__init(v);
  onnx__type_proto__init(&m->types[k]);
  onnx__type_proto__tensor__init(&m->ttypes[k]);
  onnx__tensor_shape_proto__init(&m->shapes[k]);
  v->name = (char *)name;
  v->type = &m->types[k];
  m->types[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  m->types[k].tensor_type = &m->ttypes[k];
  m->ttypes[k].has_elem_type = 1;
  m->ttypes[k].elem_type = AMD_FLOAT;
  m->ttypes[k].shape = &m->shapes[k];
  m->shapes[k].n_dim = 2;
  m->shapes[k].dim = m->dim_ptrs[k];
  for (int i = 0; i < 2; i++) {
    Onnx__TensorShapeProto__Dimension *dm = &m->dims[k][i];
    onnx__tensor_shape_proto__dimension__init(dm);
    dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    dm->dim_value = i == 0 ? BATCH : cols;
    m->dim_ptrs[k][i] = dm;
  }
}

static amd_graph *net_load(int variant, amd_status *st) {
  static net m;
  const int less = variant == 1, cast_w2 = variant == 2;
  memset(&m, 0, sizeof m);
  onnx__model_proto__init(&m.model);
  onnx__graph_proto__init(&m.graph);
  onnx__operator_set_id_proto__init(&m.opset);
  m.model.has_ir_version = 1, m.model.ir_version = 8;
  m.opset.has_version = 1, m.opset.version = 22;
  m.opsets[0] = &m.opset;
  m.model.n_opset_import = 1, m.model.opset_import = m.opsets;
  m.model.graph = &m.graph;
  m.graph.name = (char *)"random_dropout";
  m.graph.node = m.node_ptrs;
  m.graph.initializer = m.init_ptrs;
  net_value(&m, 0, "x", IN);
  net_value(&m, 1, "logits", OUT);
  m.vin[0] = &m.vi[0], m.vout[0] = &m.vi[1];
  m.graph.input = m.vin, m.graph.n_input = 1;
  m.graph.output = m.vout, m.graph.n_output = 1;
  for (int i = 0; i < IN * HID; i++) m.w1[i] = (float)(0.5 * sin(0.7 * i + 0.3));
  for (int i = 0; i < HID; i++) m.b1[i] = (float)(0.1 * cos(1.3 * i));
  for (int i = 0; i < HID * OUT; i++) m.w2[i] = (float)(0.4 * sin(1.1 * i + 1));
  for (int i = 0; i < OUT; i++) m.b2[i] = 0;
  m.w1d[0] = IN, m.w1d[1] = HID, m.b1d[0] = HID, m.w2d[0] = HID, m.w2d[1] = OUT, m.b2d[0] = OUT;
  net_init(&m, "W1", m.w1, IN * HID, 2, m.w1d);
  net_init(&m, "b1", m.b1, HID, 1, m.b1d);
  net_init(&m, "W2", m.w2, HID * OUT, 2, m.w2d);
  net_init(&m, "b2", m.b2, OUT, 1, m.b2d);
  net_node(&m, "Gemm", "x", "W1", "b1", "h0");
  net_node(&m, "Relu", "h0", NULL, NULL, "h");
  Onnx__NodeProto *n;
  if (less) {
    n = net_node(&m, "RandomUniformLike", "h", NULL, NULL, "u");
    Onnx__AttributeProto *a = net_attr(&m, n, "dtype");
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i = 1, a->i = AMD_FLOAT;
    /* the threshold: a Constant (not an initializer, which would be trained) */
    m.thresh = 0.75f;
    n = net_node(&m, "Constant", NULL, NULL, NULL, "keep_p");
    a = net_attr(&m, n, "value_float");
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f = 1, a->f = m.thresh;
    net_node(&m, "Less", "u", "keep_p", NULL, "keep");
    n = net_node(&m, "Cast", "keep", NULL, NULL, "mask");
    a = net_attr(&m, n, "to");
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i = 1, a->i = AMD_FLOAT;
  } else {
    n = net_node(&m, "RandomUniformLike", "h", NULL, NULL, "p");
    Onnx__AttributeProto *a = net_attr(&m, n, "low");
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f = 1, a->f = 0.75f;
    a = net_attr(&m, n, "high");
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f = 1, a->f = 0.75f;
    net_node(&m, "Bernoulli", "p", NULL, NULL, "mask");
  }
  net_node(&m, "Mul", "h", "mask", NULL, "hm");
  n = net_node(&m, "Constant", NULL, NULL, NULL, "inv_keep");
  Onnx__AttributeProto *a = net_attr(&m, n, "value_float");
  a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f = 1, a->f = 1 / 0.75f;
  net_node(&m, "Mul", "hm", "inv_keep", NULL, "d");
  if (cast_w2) { /* W2 reaches the loss only through a node without backward */
    n = net_node(&m, "Cast", "W2", NULL, NULL, "W2c");
    a = net_attr(&m, n, "to");
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i = 1, a->i = AMD_FLOAT;
  }
  net_node(&m, "Gemm", "d", cast_w2 ? "W2c" : "W2", "b2", "logits");
  size_t len = onnx__model_proto__get_packed_size(&m.model);
  uint8_t *buf = malloc(len + 1);
  onnx__model_proto__pack(&m.model, buf);
  amd_graph *g = NULL;
  amd_graph_load_bytes(buf, len, NULL, 0, &g, st);
  free(buf);
  return g;
}

/* A training run state: what a checkpoint would hold. */
typedef struct run_state {
  float *params, *opt;
  int64_t n, n_opt;
  uint64_t rng;
} run_state;

/* Trains `steps` steps from `from` (NULL: the model's initial weights, ctx->rng
 * from seed) with SGD, momentum 0.9; losses[i] gets step i's loss; the state
 * at the end goes to *to (caller frees). Returns 0 or -1 (message printed). */
static int train(int less, uint64_t seed, const run_state *from, int steps, double *losses, run_state *to) {
  amd_status st = {{0}};
  amd_graph *g = net_load(less, &st);
  amd_trainer t;
  if (!g || amd_trainer_init(&t, g, NULL, &st)) {
    printf("FAIL training set-up (%s): %s\n", less ? "Less" : "Bernoulli", st.msg);
    if (g) amd_graph_free(g);
    return -1;
  }
  if (t.warning[0]) {
    printf("FAIL training set-up (%s): trainer warning '%s'\n", less ? "Less" : "Bernoulli", t.warning);
    failures++;
  }
  amd_optim o;
  AMD_ASSERT(amd_optim_init("sgd", &o, &st) == 0);
  o.momentum = 0.9;
  int64_t n_opt = (int64_t)amd_optim_state_blocks(&o) * t.n_floats;
  float *opt = calloc((size_t)n_opt + 1, sizeof(float));
  t.ctx.rng = seed * 0xd1b54a32d192ed03ull + 7; /* as train/run.c seeds it */
  int64_t step0 = 0;
  if (from) {
    memcpy(t.params, from->params, (size_t)t.n_floats * sizeof(float));
    memcpy(opt, from->opt, (size_t)n_opt * sizeof(float));
    t.ctx.rng = from->rng;
    step0 = 3;
  }
  int64_t dims[2] = {BATCH, IN};
  amd_tensor x = {0};
  amd_tensor_set_shape(&x, AMD_FLOAT, 2, dims);
  AMD_ASSERT(amd_tensor_alloc(&x, &st) == 0);
  int64_t labels[BATCH];
  int rc = 0;
  for (int s = 0; s < steps && rc == 0; s++) {
    int64_t step = step0 + s; /* one batch, so that the loss goes down */
    for (int64_t i = 0; i < BATCH * IN; i++) ((float *)x.data)[i] = (float)sin(0.37 * (double)i);
    for (int i = 0; i < BATCH; i++) labels[i] = i % OUT;
    uint64_t before = t.ctx.rng;
    rc = amd_trainer_step_grads(&t, &x, labels, 0.0f, 1.0f, &losses[s], NULL, &st) ||
         amd_trainer_optim_step(&t, &o, 0.1, step + 1, opt, n_opt, 0, &st);
    /* a RandomUniformLike of BATCH x HID elements (and a Bernoulli of as many): that many draws a step */
    const int64_t draws = (less ? 1 : 2) * BATCH * HID;
    if (rc == 0 && t.ctx.rng != amd_splitmix_skip(before, draws)) {
      printf("FAIL training: the step moved ctx->rng by other than %lld draws\n", (long long)draws);
      failures++;
    }
  }
  if (rc) printf("FAIL training step: %s\n", st.msg);
  if (rc == 0 && to) {
    to->n = t.n_floats, to->n_opt = n_opt, to->rng = t.ctx.rng;
    to->params = malloc((size_t)t.n_floats * sizeof(float));
    to->opt = malloc(((size_t)n_opt + 1) * sizeof(float));
    memcpy(to->params, t.params, (size_t)t.n_floats * sizeof(float));
    memcpy(to->opt, opt, (size_t)n_opt * sizeof(float));
  }
  amd_tensor_free(&x);
  free(opt);
  amd_trainer_free(&t);
  amd_graph_free(g);
  return rc ? -1 : 0;
}

static void free_state(run_state *s) {
  free(s->params);
  free(s->opt);
}

static void training(int less) {
  const char *what =
      less ? "RandomUniformLike -> Less -> Cast -> Mul" : "RandomUniformLike -> Bernoulli -> Mul";
  double la[6], lb[6], lc[6], lp[3], lr[3];
  run_state a = {0}, b = {0}, c = {0}, part = {0}, resumed = {0};
  if (train(less, 3, NULL, 6, la, &a) || train(less, 3, NULL, 6, lb, &b) || train(less, 4, NULL, 6, lc, &c) ||
      train(less, 3, NULL, 3, lp, &part) || train(less, 3, &part, 3, lr, &resumed)) {
    failures++;
  } else {
    int same = memcmp(la, lb, sizeof la) == 0 && memcmp(a.params, b.params, (size_t)a.n * sizeof(float)) == 0;
    CHECK(same, "%s: two runs with seed 3 differ (losses %.9g / %.9g)", what, la[5], lb[5]);
    CHECK(memcmp(la, lc, sizeof la) != 0 && memcmp(a.params, c.params, (size_t)a.n * sizeof(float)) != 0,
          "%s: seeds 3 and 4 give the same run", what);
    int resume_ok = memcmp(lp, la, sizeof lp) == 0 && memcmp(lr, la + 3, sizeof lr) == 0 &&
                    resumed.rng == a.rng &&
                    memcmp(resumed.params, a.params, (size_t)a.n * sizeof(float)) == 0 &&
                    memcmp(resumed.opt, a.opt, (size_t)a.n_opt * sizeof(float)) == 0;
    CHECK(resume_ok, "%s: 3 steps + resume + 3 steps differ from 6 steps (last loss %.9g vs %.9g)", what,
          lr[2], la[5]);
    CHECK(la[5] < la[0], "%s: the loss does not go down: %g ... %g", what, la[0], la[5]);
    if (same && resume_ok)
      printf("ok   training with %s: same seed same losses (%.6f ... %.6f) and weights, seed 4 differs "
             "(%.6f), stopped at 3 and resumed: bit-identical\n",
             what, la[0], la[5], lc[5]);
  }
  free_state(&a), free_state(&b), free_state(&c), free_state(&part), free_state(&resumed);
}

/* The trainer's "no backward" warning: not for the Cast of a mask drawn by a
 * random op (nothing trainable flows into it), still for a Cast of a weight. */
static void blocked_warning(void) {
  amd_status st = {{0}};
  amd_graph *g = net_load(2, &st);
  amd_trainer t;
  if (!g || amd_trainer_init(&t, g, NULL, &st)) {
    printf("FAIL set-up with Cast(W2): %s\n", st.msg);
    failures++;
    if (g) amd_graph_free(g);
    return;
  }
  CHECK(strstr(t.warning, "node 'W2c' has no backward") != NULL, "warning '%s'", t.warning);
  printf("ok   a Cast of a weight still warns: %s\n", t.warning);
  amd_trainer_free(&t);
  amd_graph_free(g);
}

int main(void) {
  (void)gradcheck, (void)gc_summary;
  portable_math();
  uniform_moments();
  normal_moments();
  bernoulli_moments();
  stream();
  bernoulli_edges();
  errors();
  training(0);
  blocked_warning();
  if (amd_op_find("Less"))
    training(1);
  else
    printf("SKIP training with RandomUniformLike -> Less -> Cast -> Mul: this build has no Less op\n");
  return check_summary();
}
