/* Checks of src/ops/unary.c, arith.c and constant.c's CastLike, Size and
 * EyeLike.
 *
 * Gradients (finite differences, gradcheck.h) in double (tolerance 1e-6) and
 * float (2e-2) of Elu, Selu, Celu (also a negative alpha), Softplus,
 * Softsign, ThresholdedRelu, Mish, Shrink, Sin ... Atanh (inputs inside each
 * domain: Asin, Acos, Atanh in (-0.9, 0.9), Acosh in [1.2, 3), Tan in
 * (-1.2, 1.2)), and of Sum and Mean (one to three inputs, equal shapes at
 * opset 6, broadcast at 8), Mod (fmod 1, and fmod 0 at 28, broadcast; A / B
 * kept 0.2 away from integers, where Mod jumps). Inputs are kept 0.05 away from the kinks (0 for
 * Elu, Selu and Celu; alpha for ThresholdedRelu; +-lambd for Shrink). Ceil,
 * Floor, Round and Sign must leave the gradient buffer unchanged (zero
 * gradient).
 *
 * Values: every unary op at a few points against the formula written with
 * C's libm in double (within 1e-12), Round's halves, Sign and Shrink on
 * integers, IsNaN and IsInf (each detect flag), Mod (fmod 0 and 1 on
 * integers, fmod 1 on floats, fmod 0 on floats at version 28, division by
 * zero, uint64 beyond int64), BitShift (both directions, amounts at and
 * beyond the width, signed at 28), Sum and Mean values with broadcasting,
 * CastLike, Size, EyeLike (k above, below and outside, dtype attribute).
 *
 * Bad inputs that must fail with a message: Celu with alpha 0, IsInf with
 * detect_positive 2, Mod with fmod 2 and a float Mod-10 with fmod 0,
 * BitShift without or with a bad direction and on int32 at version 11,
 * EyeLike of a 3-D input, Sin of an int32, Sum of mismatched dtypes and of
 * unequal shapes at opset 6. */
#include "gradcheck.h"

#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static double tol_for(amd_dtype dt) { return dt == AMD_DOUBLE ? 1e-6 : 2e-2; }
static const char *dt_name(amd_dtype dt) { return dt == AMD_DOUBLE ? "double" : "float"; }

/* Moves every element at least `gap` away from each kink in k[0..nk). */
static void gc_avoid(amd_tensor *t, const double *k, int nk, double gap) {
  for (int64_t i = 0; i < amd_tensor_numel(t); i++) {
    double v = amd_tensor_get_f64(t, i);
    for (int j = 0; j < nk; j++)
      if (fabs(v - k[j]) < gap) v = v < k[j] ? k[j] - gap : k[j] + gap;
    amd_tensor_set_f64(t, i, v);
  }
}

static void check(int ok, const char *label, const char *msg) {
  if (ok) {
    printf("ok   %s\n", label);
    gc_passed++;
  } else {
    printf("FAIL %s %s\n", label, msg ? msg : "");
    gc_failed++;
  }
}

/* ---- gradients ---- */

static void check_unary(const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs, amd_dtype dt,
                        double lo, double hi, const double *kinks, int nk) {
  int64_t dims[] = {2, 3, 4};
  amd_tensor x = gc_tensor(dt, 3, dims, lo, hi);
  if (nk) gc_avoid(&x, kinks, nk, 0.05);
  amd_tensor *in[] = {&x};
  char label[96];
  snprintf(label, sizeof label, "%s-%d %s", op, opset, dt_name(dt));
  gradcheck(label, op, opset, attrs, n_attrs, in, 1, 1, 1u, tol_for(dt));
  amd_tensor_free(&x);
}

static void test_unary_grads(amd_dtype dt) {
  const double zero[] = {0};
  check_unary("Elu", 6, NULL, 0, dt, -3, 2, zero, 1);
  Onnx__AttributeProto *a[] = {gc_attr_float("alpha", 0.7f)};
  check_unary("Elu", 6, a, 1, dt, -3, 2, zero, 1);
  check_unary("Celu", 12, a, 1, dt, -3, 2, zero, 1);
  gc_attrs_free(a, 1);
  Onnx__AttributeProto *an[] = {gc_attr_float("alpha", -1.5f)};
  check_unary("Celu", 12, an, 1, dt, -3, 2, zero, 1);
  gc_attrs_free(an, 1);
  check_unary("Selu", 6, NULL, 0, dt, -3, 2, zero, 1);
  Onnx__AttributeProto *sg[] = {gc_attr_float("alpha", 2.0f), gc_attr_float("gamma", 3.0f)};
  check_unary("Selu", 6, sg, 2, dt, -3, 2, zero, 1);
  gc_attrs_free(sg, 2);
  check_unary("Softplus", 1, NULL, 0, dt, -5, 5, NULL, 0);
  check_unary("Softsign", 1, NULL, 0, dt, -3, 3, zero, 1);
  const double k08[] = {0.8};
  Onnx__AttributeProto *t[] = {gc_attr_float("alpha", 0.8f)};
  check_unary("ThresholdedRelu", 10, t, 1, dt, -2, 3, k08, 1);
  gc_attrs_free(t, 1);
  check_unary("Mish", 18, NULL, 0, dt, -5, 5, NULL, 0);
  const double ks[] = {-0.6, 0.6};
  Onnx__AttributeProto *sh[] = {gc_attr_float("lambd", 0.6f), gc_attr_float("bias", 0.25f)};
  check_unary("Shrink", 9, sh, 2, dt, -2, 2, ks, 2);
  gc_attrs_free(sh, 2);
  check_unary("Sin", 7, NULL, 0, dt, -4, 4, NULL, 0);
  check_unary("Cos", 7, NULL, 0, dt, -4, 4, NULL, 0);
  check_unary("Tan", 7, NULL, 0, dt, -1.2, 1.2, NULL, 0);
  check_unary("Asin", 7, NULL, 0, dt, -0.9, 0.9, NULL, 0);
  check_unary("Acos", 7, NULL, 0, dt, -0.9, 0.9, NULL, 0);
  check_unary("Atan", 7, NULL, 0, dt, -3, 3, NULL, 0);
  check_unary("Sinh", 9, NULL, 0, dt, -2, 2, NULL, 0);
  check_unary("Cosh", 9, NULL, 0, dt, -2, 2, NULL, 0);
  check_unary("Asinh", 9, NULL, 0, dt, -3, 3, NULL, 0);
  check_unary("Acosh", 9, NULL, 0, dt, 1.2, 3, NULL, 0);
  check_unary("Atanh", 9, NULL, 0, dt, -0.9, 0.9, NULL, 0);
}

/* Ceil, Floor, Round, Sign: the backward adds nothing. */
static void test_zero_grads(void) {
  const char *ops[] = {"Ceil", "Floor", "Round", "Sign"};
  const int vs[] = {13, 13, 11, 9};
  for (int k = 0; k < 4; k++) {
    int64_t d[] = {6};
    amd_tensor x = gc_tensor(AMD_FLOAT, 1, d, -3, 3), dy = gc_tensor(AMD_FLOAT, 1, d, -1, 1),
               dx = gc_tensor(AMD_FLOAT, 1, d, 0.5, 0.5), out[8];
    amd_tensor *in[] = {&x};
    amd_status st = {{0}};
    gc_node g;
    int ok = gc_bind(&g, ops[k], vs[k], NULL, 0, in, 1, 1, &st) == 0 &&
             gc_forward(&g.node, in, out, NULL, NULL, &st) == 0;
    if (ok) {
      const amd_tensor *dout[] = {&dy};
      amd_tensor *din[] = {&dx};
      amd_ctx ctx = {.training = 1};
      ok = g.node.op->backward &&
           g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st) == 0;
      for (int i = 0; ok && i < 6; i++) ok = ((float *)dx.data)[i] == 0.5f;
      gc_free_outs(out, 1);
      free(g.node.attrs);
    }
    char label[64];
    snprintf(label, sizeof label, "%s zero gradient", ops[k]);
    check(ok, label, st.msg);
    amd_tensor_free(&x), amd_tensor_free(&dy), amd_tensor_free(&dx);
  }
}

/* Sum / Mean of n inputs with the given shapes. */
static void check_sum(const char *op, int opset, amd_dtype dt, int n, const int *ranks,
                      const int64_t dims[][4]) {
  amd_tensor x[3], *in[3];
  char label[128];
  int len = snprintf(label, sizeof label, "%s-%d %s", op, opset, dt_name(dt));
  for (int k = 0; k < n; k++) {
    x[k] = gc_tensor(dt, ranks[k], dims[k], -2, 2);
    in[k] = &x[k];
    char s[64];
    len += snprintf(label + len, sizeof label - (size_t)len, " %s", amd_shape_str(&x[k], s, sizeof s));
  }
  gradcheck(label, op, opset, NULL, 0, in, n, 1, (1u << n) - 1, tol_for(dt));
  for (int k = 0; k < n; k++) amd_tensor_free(&x[k]);
}

static void test_sum_grads(amd_dtype dt) {
  const int64_t eq[3][4] = {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}, bc[3][4] = {{2, 3, 4}, {3, 1}, {1, 1, 4}},
                bc2[3][4] = {{3, 1}, {2, 1, 4}, {1}};
  const int r3[] = {3, 3, 3}, rb[] = {3, 2, 3}, rb2[] = {2, 3, 1};
  const char *ops[] = {"Sum", "Mean"};
  for (int k = 0; k < 2; k++) {
    check_sum(ops[k], 6, dt, 1, r3, eq);
    check_sum(ops[k], 6, dt, 2, r3, eq);
    check_sum(ops[k], 6, dt, 3, r3, eq);
    check_sum(ops[k], 8, dt, 2, rb, bc);
    check_sum(ops[k], 8, dt, 3, rb, bc);
    check_sum(ops[k], 13, dt, 3, rb2, bc2);
  }
}

/* ---- values ---- */

/* Runs op on the inputs; returns 0 and fills out, or -1 with st set. */
static int run_op(const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs, amd_tensor **in,
                  int n_in, amd_tensor *out, amd_status *st) {
  gc_node g;
  if (gc_bind(&g, op, opset, attrs, n_attrs, in, n_in, 1, st)) return -1;
  int rc = gc_forward(&g.node, in, out, NULL, NULL, st);
  if (rc) gc_free_outs(out, 1);
  free(g.node.attrs);
  return rc;
}

/* The formula in double with libm (alpha 0.5 for Elu, Celu, ThresholdedRelu; defaults otherwise). */
static double ref_unary(const char *op, double v) {
  if (!strcmp(op, "Elu")) return v < 0 ? 0.5 * (exp(v) - 1) : v;
  /* Selu's default constants as the float attributes hold them */
  const double g = (float)1.0507009873554805, a = (float)1.6732632423543772;
  if (!strcmp(op, "Selu")) return v > 0 ? g * v : g * a * (exp(v) - 1);
  if (!strcmp(op, "Celu")) return fmax(0, v) + fmin(0, 0.5 * (exp(v / 0.5) - 1));
  if (!strcmp(op, "Softplus")) return log(exp(v) + 1);
  if (!strcmp(op, "Softsign")) return v / (1 + fabs(v));
  if (!strcmp(op, "ThresholdedRelu")) return v > 0.5 ? v : 0;
  if (!strcmp(op, "Mish")) return v * tanh(log(1 + exp(v)));
  if (!strcmp(op, "Shrink")) return v < -0.5 || v > 0.5 ? v : 0; /* lambd 0.5, bias 0 */
  if (!strcmp(op, "Ceil")) return ceil(v);
  if (!strcmp(op, "Floor")) return floor(v);
  if (!strcmp(op, "Round")) return nearbyint(v);
  if (!strcmp(op, "Sign")) return v > 0 ? 1 : v < 0 ? -1 : 0;
  if (!strcmp(op, "Sin")) return sin(v);
  if (!strcmp(op, "Cos")) return cos(v);
  if (!strcmp(op, "Tan")) return tan(v);
  if (!strcmp(op, "Asin")) return asin(v);
  if (!strcmp(op, "Acos")) return acos(v);
  if (!strcmp(op, "Atan")) return atan(v);
  if (!strcmp(op, "Sinh")) return sinh(v);
  if (!strcmp(op, "Cosh")) return cosh(v);
  if (!strcmp(op, "Asinh")) return asinh(v);
  if (!strcmp(op, "Acosh")) return acosh(v);
  return atanh(v);
}

static void test_unary_values(void) {
  static const char *ops[] = {"Elu",  "Selu",   "Celu",  "Softplus", "Softsign", "ThresholdedRelu",
                              "Mish", "Shrink", "Ceil",  "Floor",    "Round",    "Sign",
                              "Sin",  "Cos",    "Tan",   "Asin",     "Acos",     "Atan",
                              "Sinh", "Cosh",   "Asinh", "Acosh",    "Atanh"};
  /* points inside every domain except Acosh's (which gets 1 + |x|) */
  static const double xs[] = {-0.93, -0.5, -0.25, 0.0, 0.3, 0.5, 0.77, 2.5, -2.5, 1.5};
  for (int k = 0; k < ARRAY_LEN(ops); k++) {
    int64_t d[] = {ARRAY_LEN(xs)};
    amd_tensor x = gc_tensor(AMD_DOUBLE, 1, d, 0, 1), out[8];
    int acosh = !strcmp(ops[k], "Acosh"),
        bounded = !strcmp(ops[k], "Asin") || !strcmp(ops[k], "Acos") || !strcmp(ops[k], "Atanh");
    for (int i = 0; i < d[0]; i++) {
      double v = acosh ? 1 + fabs(xs[i]) : bounded ? fmod(xs[i], 0.99) : xs[i];
      amd_tensor_set_f64(&x, i, v);
    }
    Onnx__AttributeProto *a[] = {gc_attr_float("alpha", 0.5f)};
    int na = !strcmp(ops[k], "Elu") || !strcmp(ops[k], "Celu") || !strcmp(ops[k], "ThresholdedRelu");
    amd_tensor *in[] = {&x};
    amd_status st = {{0}};
    const amd_op *op = amd_op_find(ops[k]);
    int ok = op && run_op(ops[k], op->since[0] < 6 ? 6 : op->since[0], a, na, in, 1, out, &st) == 0;
    double worst = ok ? 0 : INFINITY;
    for (int i = 0; ok && i < d[0]; i++)
      worst =
          fmax(worst, fabs(amd_tensor_get_f64(&out[0], i) - ref_unary(ops[k], amd_tensor_get_f64(&x, i))));
    if (ok) gc_free_outs(out, 1);
    char label[96];
    snprintf(label, sizeof label, "%s values (double) within 1e-12 of libm: %.2e", ops[k], worst);
    check(ok && worst < 1e-12, label, st.msg);
    gc_attrs_free(a, 1);
    amd_tensor_free(&x);
  }
}

/* A 1-D tensor of dtype dt holding v[0..n). */
static amd_tensor vec(amd_dtype dt, int n, const double *v) {
  int64_t d[] = {n};
  amd_tensor t = gc_tensor(dt, 1, d, 0, 1);
  for (int i = 0; i < n; i++) amd_tensor_set_f64(&t, i, v[i]);
  return t;
}

/* Runs op and compares output 0 with want[0..n) (NaN matches NaN). */
static void expect(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                   amd_tensor **in, int n_in, amd_dtype want_dt, int n, const double *want) {
  amd_tensor out[8];
  amd_status st = {{0}};
  int ok = run_op(op, opset, attrs, n_attrs, in, n_in, out, &st) == 0;
  if (ok) {
    ok = out[0].dtype == want_dt && amd_tensor_numel(&out[0]) == n;
    for (int i = 0; ok && i < n; i++) {
      double g = amd_tensor_get_f64(&out[0], i);
      ok = (isnan(want[i]) && isnan(g)) || g == want[i];
      if (!ok) printf("     element %d: got %.17g, want %.17g\n", i, g, want[i]);
    }
    gc_free_outs(out, 1);
  }
  check(ok, label, st.msg);
}

static void test_special_values(void) {
  { /* Round: halves to even; Ceil / Floor of negative halves */
    const double v[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.3, -2.7, 0.9, INFINITY};
    const double r[] = {0, 2, 2, -0.0, -2, -2, 2, -3, 1, INFINITY},
                 c[] = {1, 2, 3, -0.0, -1, -2, 3, -2, 1, INFINITY};
    amd_tensor x = vec(AMD_FLOAT, 10, v), *in[] = {&x};
    expect("Round halves to even (float)", "Round", 11, NULL, 0, in, 1, AMD_FLOAT, 10, r);
    expect("Ceil (float)", "Ceil", 13, NULL, 0, in, 1, AMD_FLOAT, 10, c);
    amd_tensor_free(&x);
  }
  { /* Sign and Shrink on integers */
    const double v[] = {-7, -1, 0, 1, 9}, s[] = {-1, -1, 0, 1, 1}, sh[] = {-5, 0, 0, 0, 7};
    amd_tensor x = vec(AMD_INT32, 5, v), *in[] = {&x};
    expect("Sign int32", "Sign", 13, NULL, 0, in, 1, AMD_INT32, 5, s);
    Onnx__AttributeProto *a[] = {gc_attr_float("lambd", 1.5f), gc_attr_float("bias", 2.0f)};
    expect("Shrink int32 (lambd 1.5, bias 2)", "Shrink", 9, a, 2, in, 1, AMD_INT32, 5, sh);
    gc_attrs_free(a, 2);
    amd_tensor_free(&x);
    const double u[] = {0, 3, 255}, su[] = {0, 1, 1};
    amd_tensor xu = vec(AMD_UINT8, 3, u), *inu[] = {&xu};
    expect("Sign uint8", "Sign", 13, NULL, 0, inu, 1, AMD_UINT8, 3, su);
    amd_tensor_free(&xu);
  }
  { /* IsNaN, IsInf and its flags */
    const double v[] = {1, NAN, INFINITY, -INFINITY, -0.0};
    const double nan_[] = {0, 1, 0, 0, 0}, inf_[] = {0, 0, 1, 1, 0}, pos[] = {0, 0, 1, 0, 0},
                 neg[] = {0, 0, 0, 1, 0};
    amd_tensor x = vec(AMD_FLOAT, 5, v), *in[] = {&x};
    expect("IsNaN", "IsNaN", 13, NULL, 0, in, 1, AMD_BOOL, 5, nan_);
    expect("IsInf", "IsInf", 10, NULL, 0, in, 1, AMD_BOOL, 5, inf_);
    Onnx__AttributeProto *a[] = {gc_attr_int("detect_negative", 0)},
                         *b[] = {gc_attr_int("detect_positive", 0)};
    expect("IsInf detect_negative 0", "IsInf", 10, a, 1, in, 1, AMD_BOOL, 5, pos);
    expect("IsInf detect_positive 0", "IsInf", 10, b, 1, in, 1, AMD_BOOL, 5, neg);
    gc_attrs_free(a, 1), gc_attrs_free(b, 1);
    amd_tensor_free(&x);
  }
}

static void test_mod_shift(void) {
  const double a[] = {7, -7, 7, -7, 5, 0}, b[] = {3, 3, -3, -3, 0, 4};
  { /* integers: fmod 0 (Python %) and fmod 1 (C %) */
    const double py[] = {1, 2, -2, -1, 0, 0}, c[] = {1, -1, 1, -1, 0, 0};
    amd_tensor x = vec(AMD_INT64, 6, a), y = vec(AMD_INT64, 6, b), *in[] = {&x, &y};
    expect("Mod int64 fmod 0", "Mod", 13, NULL, 0, in, 2, AMD_INT64, 6, py);
    Onnx__AttributeProto *f[] = {gc_attr_int("fmod", 1)};
    expect("Mod int64 fmod 1", "Mod", 13, f, 1, in, 2, AMD_INT64, 6, c);
    amd_tensor xf = vec(AMD_FLOAT, 6, a), yf = vec(AMD_FLOAT, 6, b), *inf[] = {&xf, &yf};
    const double cf[] = {1, -1, 1, -1, NAN, 0}, pf[] = {1, 2, -2, -1, NAN, 0};
    expect("Mod float fmod 1", "Mod", 13, f, 1, inf, 2, AMD_FLOAT, 6, cf);
    expect("Mod-28 float fmod 0", "Mod", 28, NULL, 0, inf, 2, AMD_FLOAT, 6, pf);
    amd_status st = {{0}};
    amd_tensor out[8];
    int rc = run_op("Mod", 13, NULL, 0, inf, 2, out, &st);
    check(rc != 0 && strstr(st.msg, "fmod"), "Mod-13 float fmod 0 fails", st.msg);
    gc_attrs_free(f, 1);
    amd_tensor_free(&x), amd_tensor_free(&y), amd_tensor_free(&xf), amd_tensor_free(&yf);
  }
  { /* uint64 beyond int64, broadcast */
    int64_t d[] = {2}, one[] = {1};
    amd_tensor x = gc_tensor(AMD_UINT64, 1, d, 0, 1), y = gc_tensor(AMD_UINT64, 1, one, 0, 1),
               *in[] = {&x, &y};
    ((uint64_t *)x.data)[0] = 18446744073709551615ull, ((uint64_t *)x.data)[1] = 10;
    ((uint64_t *)y.data)[0] = 10;
    amd_tensor out[8];
    amd_status st = {{0}};
    int ok = run_op("Mod", 13, NULL, 0, in, 2, out, &st) == 0;
    if (ok) {
      ok = ((uint64_t *)out[0].data)[0] == 5 && ((uint64_t *)out[0].data)[1] == 0;
      gc_free_outs(out, 1);
    }
    check(ok, "Mod uint64 beyond int64, broadcast", st.msg);
    amd_tensor_free(&x), amd_tensor_free(&y);
  }
  { /* BitShift */
    const double x8[] = {1, 16, 255, 3}, s8[] = {1, 3, 8, 7}, l8[] = {2, 128, 0, 128}, r8[] = {0, 2, 0, 0};
    amd_tensor x = vec(AMD_UINT8, 4, x8), y = vec(AMD_UINT8, 4, s8), *in[] = {&x, &y};
    Onnx__AttributeProto *l[] = {gc_attr_string("direction", "LEFT")},
                         *r[] = {gc_attr_string("direction", "RIGHT")};
    expect("BitShift uint8 LEFT", "BitShift", 11, l, 1, in, 2, AMD_UINT8, 4, l8);
    expect("BitShift uint8 RIGHT", "BitShift", 11, r, 1, in, 2, AMD_UINT8, 4, r8);
    const double xi[] = {-16, -16, 5, -1}, si[] = {2, 40, 1, -1}, ri[] = {-4, -1, 2, -1},
                 li[] = {-64, 0, 10, 0};
    amd_tensor a32 = vec(AMD_INT32, 4, xi), b32 = vec(AMD_INT32, 4, si), *in32[] = {&a32, &b32};
    expect("BitShift-28 int32 RIGHT (arithmetic, sign fill)", "BitShift", 28, r, 1, in32, 2, AMD_INT32, 4,
           ri);
    expect("BitShift-28 int32 LEFT", "BitShift", 28, l, 1, in32, 2, AMD_INT32, 4, li);
    amd_status st = {{0}};
    amd_tensor out[8];
    int rc = run_op("BitShift", 11, l, 1, in32, 2, out, &st);
    check(rc != 0, "BitShift-11 int32 fails", st.msg);
    Onnx__AttributeProto *bad[] = {gc_attr_string("direction", "UP")};
    st.msg[0] = 0;
    rc = run_op("BitShift", 11, bad, 1, in, 2, out, &st);
    check(rc != 0 && strstr(st.msg, "direction"), "BitShift direction UP fails", st.msg);
    st.msg[0] = 0;
    rc = run_op("BitShift", 11, NULL, 0, in, 2, out, &st);
    check(rc != 0 && strstr(st.msg, "direction"), "BitShift without direction fails", st.msg);
    gc_attrs_free(l, 1), gc_attrs_free(r, 1), gc_attrs_free(bad, 1);
    amd_tensor_free(&x), amd_tensor_free(&y), amd_tensor_free(&a32), amd_tensor_free(&b32);
  }
}

static void test_sum_cast_eye(void) {
  { /* Sum, Mean: [2,1] + [3] + scalar */
    const double a[] = {1, 2}, b[] = {10, 20, 30}, c[] = {0.5};
    amd_tensor x = vec(AMD_FLOAT, 2, a), y = vec(AMD_FLOAT, 3, b), z = vec(AMD_FLOAT, 1, c);
    x.rank = 2, x.dims[0] = 2, x.dims[1] = 1;
    z.rank = 0;
    amd_tensor *in[] = {&x, &y, &z};
    const double s[] = {11.5, 21.5, 31.5, 12.5, 22.5, 32.5},
                 m[] = {11.5 / 3, 21.5 / 3, 31.5 / 3, 12.5 / 3, 22.5 / 3, 32.5 / 3};
    expect("Sum-8 broadcast values", "Sum", 8, NULL, 0, in, 3, AMD_FLOAT, 6, s);
    double mf[6];
    for (int i = 0; i < 6; i++) mf[i] = (float)((float)s[i] / 3.0f);
    (void)m;
    expect("Mean-8 broadcast values", "Mean", 8, NULL, 0, in, 3, AMD_FLOAT, 6, mf);
    amd_status st = {{0}};
    amd_tensor out[8];
    int rc = run_op("Sum", 6, NULL, 0, in, 3, out, &st);
    check(rc != 0, "Sum-6 of unequal shapes fails", st.msg);
    amd_tensor yd = vec(AMD_DOUBLE, 3, b), *in2[] = {&y, &yd};
    st.msg[0] = 0;
    rc = run_op("Mean", 13, NULL, 0, in2, 2, out, &st);
    check(rc != 0, "Mean of float and double fails", st.msg);
    amd_tensor_free(&x), amd_tensor_free(&y), amd_tensor_free(&z), amd_tensor_free(&yd);
  }
  { /* CastLike, Size */
    const double v[] = {1.7, -2.2, 300};
    const double w[] = {1, -2, 300};
    amd_tensor x = vec(AMD_FLOAT, 3, v), like = vec(AMD_INT32, 1, v), *in[] = {&x, &like};
    expect("CastLike float -> int32", "CastLike", 15, NULL, 0, in, 2, AMD_INT32, 3, w);
    const double three[] = {3};
    expect("Size", "Size", 13, NULL, 0, in, 1, AMD_INT64, 1, three);
    amd_tensor_free(&x), amd_tensor_free(&like);
  }
  { /* EyeLike */
    int64_t d[] = {3, 4}, d3[] = {2, 2, 2};
    amd_tensor x = gc_tensor(AMD_FLOAT, 2, d, 0, 1), *in[] = {&x};
    const double k0[] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, k2[] = {0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0},
                 km1[] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0}, none[12] = {0};
    expect("EyeLike", "EyeLike", 9, NULL, 0, in, 1, AMD_FLOAT, 12, k0);
    Onnx__AttributeProto *a[] = {gc_attr_int("k", 2), gc_attr_int("dtype", AMD_INT64)};
    expect("EyeLike k 2 dtype int64", "EyeLike", 9, a, 2, in, 1, AMD_INT64, 12, k2);
    Onnx__AttributeProto *b[] = {gc_attr_int("k", -1)}, *c[] = {gc_attr_int("k", 9)};
    expect("EyeLike k -1", "EyeLike", 9, b, 1, in, 1, AMD_FLOAT, 12, km1);
    expect("EyeLike k 9 (outside)", "EyeLike", 9, c, 1, in, 1, AMD_FLOAT, 12, none);
    amd_tensor x3 = gc_tensor(AMD_FLOAT, 3, d3, 0, 1), *in3[] = {&x3};
    amd_status st = {{0}};
    amd_tensor out[8];
    int rc = run_op("EyeLike", 9, NULL, 0, in3, 1, out, &st);
    check(rc != 0 && strstr(st.msg, "2-D"), "EyeLike of a 3-D input fails", st.msg);
    gc_attrs_free(a, 2), gc_attrs_free(b, 1), gc_attrs_free(c, 1);
    amd_tensor_free(&x), amd_tensor_free(&x3);
  }
}

static void test_bad(void) {
  int64_t d[] = {3};
  amd_tensor x = gc_tensor(AMD_FLOAT, 1, d, 0, 1), xi = gc_tensor(AMD_INT32, 1, d, 0, 1);
  amd_tensor *in[] = {&x, &x}, *ini[] = {&xi};
  amd_tensor out[8];
  amd_status st = {{0}};
  Onnx__AttributeProto *a0[] = {gc_attr_float("alpha", 0.0f)}, *dp[] = {gc_attr_int("detect_positive", 2)},
                       *f2[] = {gc_attr_int("fmod", 2)};
  int rc = run_op("Celu", 12, a0, 1, in, 1, out, &st);
  check(rc != 0 && strstr(st.msg, "alpha"), "Celu alpha 0 fails", st.msg);
  st.msg[0] = 0;
  rc = run_op("IsInf", 10, dp, 1, in, 1, out, &st);
  check(rc != 0 && strstr(st.msg, "detect_positive"), "IsInf detect_positive 2 fails", st.msg);
  st.msg[0] = 0;
  rc = run_op("Mod", 10, f2, 1, in, 2, out, &st);
  check(rc != 0 && strstr(st.msg, "fmod"), "Mod fmod 2 fails", st.msg);
  st.msg[0] = 0;
  rc = run_op("Sin", 7, NULL, 0, ini, 1, out, &st);
  check(rc != 0 && strstr(st.msg, "int32"), "Sin of int32 fails", st.msg);
  gc_attrs_free(a0, 1), gc_attrs_free(dp, 1), gc_attrs_free(f2, 1);
  amd_tensor_free(&x), amd_tensor_free(&xi);
}

/* Mod's gradient (fmod 1 and, at 28, fmod 0) with broadcasting; A / B kept
 * away from integers (where the output jumps): A in [0.2, 0.8) + 2 k B. */
static void test_mod_grads(amd_dtype dt) {
  int64_t da[] = {2, 3, 4}, db[] = {3, 1};
  for (int fm = 0; fm < 2; fm++) {
    amd_tensor a = gc_tensor(dt, 3, da, 0.2, 0.8), b = gc_tensor(dt, 2, db, 1, 2);
    for (int64_t i = 0; i < 24; i++) { /* a = (frac + k) b with k in -2..2, b its broadcast partner */
      double bv = amd_tensor_get_f64(&b, (i / 4) % 3), k = (double)(i % 5) - 2;
      amd_tensor_set_f64(&a, i, (amd_tensor_get_f64(&a, i) + k) * bv);
    }
    amd_tensor *in[] = {&a, &b};
    Onnx__AttributeProto *f[] = {gc_attr_int("fmod", fm)};
    char label[64];
    snprintf(label, sizeof label, "Mod-%d fmod %d %s [2,3,4] [3,1]", fm ? 13 : 28, fm, dt_name(dt));
    gradcheck(label, "Mod", fm ? 13 : 28, f, 1, in, 2, 1, 3u, tol_for(dt));
    gc_attrs_free(f, 1);
    amd_tensor_free(&a), amd_tensor_free(&b);
  }
}

int main(void) {
  (void)gc_attr_ints; /* gradcheck.h's, unused here */
  amd_dtype dts[] = {AMD_DOUBLE, AMD_FLOAT};
  for (int i = 0; i < ARRAY_LEN(dts); i++) {
    test_unary_grads(dts[i]);
    test_sum_grads(dts[i]);
    test_mod_grads(dts[i]);
  }
  test_zero_grads();
  test_unary_values();
  test_special_values();
  test_mod_shift();
  test_sum_cast_eye();
  test_bad();
  return gc_summary();
}
