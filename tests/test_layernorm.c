/* LayerNormalization's forward (src/ops/layernorm.c) on rows of ViT-B width
 * against a reference written out here in double.
 *
 * X is float [64, 768], normalised over the last axis, Scale and B [768];
 * the reference reads the same float inputs, takes each row's mean and
 * biased variance in double (two passes) and forms (x - mean) /
 * sqrt(var + eps) * scale + b in double. Y (float) must be within 1e-6 of it
 * everywhere (float rounding of |Y| < 4 is below 2.4e-7), Mean and
 * InvStdDev within float rounding (relative 1e-6). Three data sets: centred
 * rows, rows far from zero (mean 1000, spread 1: a one-pass E[x^2] - E[x]^2
 * in float would lose every digit), and rows with a tiny spread (1e-3, where
 * epsilon 1e-5 matters). */
/* tests/grad's header binds and runs one node; this test uses a few of its helpers */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "grad/gradcheck.h"

enum { ROWS = 64, COLS = 768 };

static int check(const char *label, double center, double spread, float eps) {
  int64_t xd[] = {ROWS, COLS}, pd[] = {COLS};
  amd_tensor x = gc_tensor(AMD_FLOAT, 2, xd, center - spread, center + spread);
  amd_tensor s = gc_tensor(AMD_FLOAT, 1, pd, 0.5, 1.5), b = gc_tensor(AMD_FLOAT, 1, pd, -1, 1), out[8];
  amd_tensor *in[] = {&x, &s, &b};
  Onnx__AttributeProto *a[] = {gc_attr_float("epsilon", eps)};
  amd_status st = {{0}};
  gc_node g;
  int bound = gc_bind(&g, "LayerNormalization", 17, a, 1, in, 3, 3, &st) == 0;
  int ok = bound && gc_forward(&g.node, in, out, NULL, NULL, &st) == 0;
  double worst_y = 0, worst_st = 0;
  const float *xf = x.data, *sf = s.data, *bf = b.data;
  for (int r = 0; ok && r < ROWS; r++) {
    const float *xr = xf + (int64_t)r * COLS;
    double sum = 0, q = 0;
    for (int j = 0; j < COLS; j++) sum += xr[j];
    double m = sum / COLS;
    for (int j = 0; j < COLS; j++) q += ((double)xr[j] - m) * ((double)xr[j] - m);
    double inv = 1.0 / sqrt(q / COLS + (double)eps);
    for (int j = 0; j < COLS; j++) {
      double want = ((double)xr[j] - m) * inv * sf[j] + bf[j];
      worst_y = fmax(worst_y, fabs(((const float *)out[0].data)[(int64_t)r * COLS + j] - want));
    }
    worst_st = fmax(worst_st, fabs(((const float *)out[1].data)[r] - m) / fmax(1.0, fabs(m)));
    worst_st = fmax(worst_st, fabs(((const float *)out[2].data)[r] - inv) / inv);
  }
  ok = ok && worst_y <= 1e-6 && worst_st <= 1e-6;
  printf("%s %s: [%d, %d] Y max |diff| %.3g (tol 1e-6), Mean/InvStdDev max rel diff %.3g (tol 1e-6)%s%s\n",
         ok ? "ok  " : "FAIL", label, ROWS, COLS, worst_y, worst_st, st.msg[0] ? ": " : "", st.msg);
  if (bound && out[0].data) gc_free_outs(out, 3);
  if (bound) free(g.node.attrs);
  gc_attrs_free(a, 1);
  amd_tensor_free(&x);
  amd_tensor_free(&s);
  amd_tensor_free(&b);
  return ok;
}

int main(void) {
  int ok = check("LayerNormalization centred rows", 0.0, 2.0, 1e-5f);
  ok &= check("LayerNormalization rows at 1000 +- 1", 1000.0, 1.0, 1e-5f);
  ok &= check("LayerNormalization rows of spread 1e-3", 0.5, 1e-3, 1e-5f);
  printf("%s\n", ok ? "all passed" : "FAILED");
  return ok ? 0 : 1;
}
