/* The calibration of the float nodes quantized on the fly (Conv[q8f],
 * Gemm[q8f], MatMul[q8f]; --q8-calib, src/ops/qlinear.c and q8f.h):
 *  - amd_q8f_percentile_range on 1..10000 plus two outliers: at P = 99 the
 *    upper edge is the top of the bin that holds the ceil(0.99 n)-th smallest
 *    value (within one bin width above it), the lower edge the bottom of the
 *    bin of the ceil(0.99 n)-th largest; the outliers are cut off; P = 100
 *    gives the min and max exactly; the order of the values and NaNs among
 *    them change nothing; one value, infinities and no value at all;
 *  - a Gemm[q8f] node over 4 calibrating calls and one more: the default
 *    (min / max) state is the data's min and max with 0, byte for byte as
 *    before; percentile:100 the same bytes; percentile:99 the min of the
 *    calls' lower and the max of their upper edges (with 0), frozen after
 *    the fourth call, its outputs different from min / max's;
 *  - amd_q8_calib_parse: minmax, percentile, percentile:P, and bad values. */
#pragma GCC diagnostic ignored "-Wunused-function" /* gradcheck.h helpers this test does not use */
#include "../grad/gradcheck.h"

#include "../test_check.h"
#include "exec/mode_apply.h"
#include "mult/mult.h"
#include "ops/q8f.h"
#include "ops/quant.h"

static int cmp_float(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* ---------------------------------------------------------------- the percentile rule */

static void percentile_rule(void) {
  enum { N = 10000 };
  const int n = N + 2;
  float *x = malloc(sizeof(float) * (size_t)(n + 3)), *sorted = malloc(sizeof(float) * (size_t)n);
  AMD_ASSERT(x && sorted);
  for (int i = 0; i < N; i++) x[i] = (float)(i + 1);
  x[N] = -50000.0f, x[N + 1] = 100000.0f; /* the outliers */
  const double mn = -50000.0, mx = 100000.0, width = (mx - mn) / AMD_Q8F_BINS;
  static const double pcts[2] = {99, 99.9};
  for (int pi = 0; pi < 2; pi++) {
    const double p = pcts[pi];
    double lo = 0, hi = 0;
    const int64_t count = amd_q8f_percentile_range(x, n, p / 100, &lo, &hi);
    CHECK(count == n, "count %lld", (long long)count);
    /* the k-th smallest and the k-th largest value, k = ceil(q n) */
    memcpy(sorted, x, sizeof(float) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_float);
    const int k = (int)ceil(p / 100 * n);
    const double want_hi = sorted[k - 1], want_lo = sorted[n - k];
    printf("P %g: [%.6f, %.6f], the %d-th smallest %g, largest %g, bin width %.4f\n", p, lo, hi, k, want_hi,
           want_lo, width);
    CHECK(hi >= want_hi && hi < want_hi + width, "P %g: hi %.9g against value %g", p, hi, want_hi);
    CHECK(lo <= want_lo && lo > want_lo - width, "P %g: lo %.9g against value %g", p, lo, want_lo);
    /* edges on the grid of the bins */
    const double jh = (hi - mn) / width, jl = (lo - mn) / width;
    CHECK(fabs(jh - rint(jh)) < 1e-9 && fabs(jl - rint(jl)) < 1e-9, "P %g: edges off the grid (%.12g, %.12g)",
          p, jh, jl);
    /* the order of the values and NaNs among them change nothing */
    float *y = malloc(sizeof(float) * (size_t)(n + 3));
    AMD_ASSERT(y);
    for (int i = 0; i < n; i++) y[i] = x[(int64_t)i * 7919 % n]; /* 7919 prime, coprime to n */
    y[n] = y[0], y[0] = NAN, y[n + 1] = NAN;
    double lo2 = 0, hi2 = 0;
    const int64_t c2 = amd_q8f_percentile_range(y, n + 2, p / 100, &lo2, &hi2);
    CHECK(c2 == n && lo2 == lo && hi2 == hi, "P %g: reordered with NaN: %lld [%.9g, %.9g]", p, (long long)c2,
          lo2, hi2);
    free(y);
  }
  double lo = 0, hi = 0;
  amd_q8f_percentile_range(x, n, 1.0, &lo, &hi);
  CHECK(lo == mn && hi == mx, "P 100: [%.9g, %.9g] is not the min and max", lo, hi);
  /* one value; infinities: the min and max; no value: untouched */
  float one[3] = {2.5f, NAN, 2.5f};
  CHECK(amd_q8f_percentile_range(one, 3, 0.99, &lo, &hi) == 2 && lo == 2.5 && hi == 2.5,
        "one value: [%g, %g]", lo, hi);
  float inf[3] = {1.0f, INFINITY, -3.0f};
  CHECK(amd_q8f_percentile_range(inf, 3, 0.99, &lo, &hi) == 3 && lo == -3.0 && isinf(hi) && hi > 0,
        "infinity: [%g, %g]", lo, hi);
  float nan[2] = {NAN, NAN};
  lo = -7, hi = 7;
  CHECK(amd_q8f_percentile_range(nan, 2, 0.99, &lo, &hi) == 0 && lo == -7 && hi == 7, "all NaN: [%g, %g]", lo,
        hi);
  free(x);
  free(sorted);
}

/* ---------------------------------------------------------------- a node's calibration */

#define CALLS 5

/* A Gemm[q8f] (A [6, 300], B [300, 4]) in q8u:exact under calibration pct, run on the CALLS data batches:
 * its states after each call and its last output (kept by the caller). */
static int run_gemm(amd_tensor *data, amd_tensor *b, double pct, amd_q8f_state *states, amd_tensor *last) {
  amd_status st = {{0}};
  amd_mult m;
  gc_node g;
  amd_tensor *in[2] = {&data[0], b}, out[GC_MAX_OUT];
  int rc = amd_mult_parse("q8u:exact", &m, &st);
  if (rc == 0) rc = gc_bind(&g, "Gemm", 13, NULL, 0, in, 2, 1, &st);
  if (rc == 0) {
    g.node.mult = &m;
    rc = amd_q8_float_node(&g.node, &st);
    if (rc == 0 && amd_q8_float_set_calib(&g.node, pct) != 1) rc = amd_fail(&st, "not a q8f node");
    for (int c = 0; rc == 0 && c < CALLS; c++) {
      in[0] = &data[c];
      rc = gc_forward(&g.node, in, out, NULL, NULL, &st);
      amd_q8f_get_state(&g.node, &states[c]);
      if (rc) break;
      if (c == CALLS - 1)
        *last = out[0];
      else
        gc_free_outs(out, 1);
    }
    free(g.node.attrs);
  }
  if (rc) printf("FAIL gemm under percentile %g: %s\n", pct, st.msg);
  amd_mult_free(&m);
  return rc;
}

static void node_calibration(void) {
  const int64_t ad[2] = {6, 300}, bd[2] = {300, 4};
  amd_tensor data[CALLS], b = gc_tensor(AMD_FLOAT, 2, bd, -1, 1);
  for (int c = 0; c < CALLS; c++) {
    const double r = 1.0 + 0.5 * c;
    data[c] = gc_tensor(AMD_FLOAT, 2, ad, -r, r);
    float *x = data[c].data;
    x[17] = (float)(25 * r), x[211] = (float)(-40 * r); /* outliers */
    if (c == 2) x[5] = NAN;
  }
  amd_q8f_state mm[CALLS], p100[CALLS], p99[CALLS];
  amd_tensor out_mm = {0}, out_100 = {0}, out_99 = {0};
  if (run_gemm(data, &b, 0, mm, &out_mm) || run_gemm(data, &b, 100, p100, &out_100) ||
      run_gemm(data, &b, 99, p99, &out_99)) {
    failures++;
    return;
  }
  /* min / max: the data's own, with 0, over the first 4 calls */
  double lo = 0, hi = 0, plo = 0, phi = 0;
  for (int c = 0; c < CALLS; c++) {
    const float *x = data[c].data;
    if (c < 4) {
      for (int64_t i = 0; i < amd_tensor_numel(&data[c]); i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
      }
      double clo, chi;
      AMD_ASSERT(amd_q8f_percentile_range(x, amd_tensor_numel(&data[c]), 0.99, &clo, &chi) > 0);
      plo = clo < plo ? clo : plo, phi = chi > phi ? chi : phi;
    }
    const int calls = c < 4 ? c + 1 : 4;
    CHECK(mm[c].calls == calls && memcmp(&mm[c].lo, &lo, sizeof lo) == 0 &&
              memcmp(&mm[c].hi, &hi, sizeof hi) == 0,
          "call %d: min / max state (%d, %.9g, %.9g), want (%d, %.9g, %.9g)", c, mm[c].calls, mm[c].lo,
          mm[c].hi, calls, lo, hi);
    CHECK(memcmp(&p100[c], &mm[c], sizeof mm[c]) == 0,
          "call %d: percentile:100 (%.9g, %.9g) is not min / max's", c, p100[c].lo, p100[c].hi);
    CHECK(p99[c].calls == calls && p99[c].lo == plo && p99[c].hi == phi,
          "call %d: percentile:99 state (%d, %.9g, %.9g), want (%d, %.9g, %.9g)", c, p99[c].calls, p99[c].lo,
          p99[c].hi, calls, plo, phi);
  }
  printf("min / max range [%.6f, %.6f], percentile:99 [%.6f, %.6f]\n", lo, hi, plo, phi);
  CHECK(plo > lo / 10 && phi < hi / 10, "percentile:99 did not cut the outliers off: [%g, %g]", plo, phi);
  CHECK(memcmp(out_mm.data, out_100.data, amd_tensor_nbytes(&out_mm)) == 0, "percentile:100 output differs");
  CHECK(memcmp(out_mm.data, out_99.data, amd_tensor_nbytes(&out_mm)) != 0,
        "percentile:99 output = min / max's");
  amd_tensor_free(&out_mm), amd_tensor_free(&out_100), amd_tensor_free(&out_99), amd_tensor_free(&b);
  for (int c = 0; c < CALLS; c++) amd_tensor_free(&data[c]);
}

/* ---------------------------------------------------------------- the option's values */

static void parse(void) {
  static const struct {
    const char *s;
    double pct; /* -1: an error */
  } cases[] = {{NULL, 0},
               {"minmax", 0},
               {"percentile", 99.99},
               {"percentile:99.9", 99.9},
               {"percentile:100", 100},
               {"percentile:50.5", 50.5},
               {"percentile:50", -1},
               {"percentile:100.01", -1},
               {"percentile:", -1},
               {"percentile:abc", -1},
               {"percentile:99x", -1},
               {"percentile:nan", -1},
               {"percentile:-99", -1},
               {"percentile99", -1},
               {"max", -1},
               {"", -1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    amd_status st = {{0}};
    double pct = -5;
    const int rc = amd_q8_calib_parse(cases[i].s, &pct, &st);
    if (cases[i].pct < 0)
      CHECK(rc != 0 && strstr(st.msg, "expected minmax or percentile[:P] with 50 < P <= 100"),
            "'%s' accepted (%s)", cases[i].s, st.msg);
    else
      CHECK(rc == 0 && pct == cases[i].pct, "'%s': rc %d, pct %g (%s)", cases[i].s ? cases[i].s : "(null)",
            rc, pct, st.msg);
  }
}

int main(void) {
  (void)gradcheck, (void)gc_summary;
  percentile_rule();
  node_calibration();
  parse();
  return check_summary();
}
