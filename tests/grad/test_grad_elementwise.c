/* Finite-difference checks of the backward passes in src/ops/elementwise.c,
 * reduce.c, softmax.c and shape.c: Add, Sub, Mul, Div (numpy and legacy
 * broadcasting), ReduceMean / ReduceSum / ReduceMax (attribute and input axes,
 * keepdims 0 and 1), Softmax / LogSoftmax (opset 11 flattened and opset 13
 * single axis), Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Concat,
 * Identity, Dropout (training, regenerated mask), Pad (constant, reflect,
 * edge, wrap), Gather (negative and repeated indices), Pow (both inputs,
 * positive bases, broadcast either way, legacy broadcast, an int64
 * exponent), Min / Max (one to three inputs, broadcast, opset 6 equal
 * shapes) and Where (X / Y broadcast with the condition).
 *
 * Then values: the comparisons and logic ops with broadcasting (NaN, int64
 * beyond 2^53), Where on int64, Min / Max with NaN, Range (negative delta,
 * empty result, every dtype), ConstantOfShape, Pow's gradients at x = 0 and
 * e = 0 (PyTorch's convention) and on integers, Min / Max ties (the first
 * input gets the gradient); and bad inputs that must fail with a message
 * (shapes that do not broadcast, a non-bool Where condition or logic input,
 * Range with delta 0 or non-scalar inputs, a negative ConstantOfShape dim,
 * Pow's gradient into an int64 exponent).
 *
 * Each check runs in double (tolerance 1e-6) and in float (h = 1e-2,
 * tolerance 2e-2). Inputs of ReduceMax are a shuffled grid (distinct values
 * at least 0.1 apart, so a step of h never changes the argmax); divisors are
 * kept in [1, 2). Shape-like inputs (int64 shapes, axes, pads, indices,
 * Dropout's ratio and training_mode) are never checked. */
#include "gradcheck.h"

#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static double tol_for(amd_dtype dt) { return dt == AMD_DOUBLE ? 1e-6 : 2e-2; }
static const char *dt_name(amd_dtype dt) { return dt == AMD_DOUBLE ? "double" : "float"; }

/* A string attribute (Pad's mode); the value is not copied. */
static Onnx__AttributeProto *gc_attr_str(const char *name, const char *v) {
  Onnx__AttributeProto *a = gc_attr_new(name);
  a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  a->has_s = 1, a->s.len = strlen(v), a->s.data = (uint8_t *)v;
  return a;
}

/* A 1-D integer tensor (int64 unless dt says otherwise) holding v[0..n). */
static amd_tensor gc_ints(amd_dtype dt, int n, const int64_t *v) {
  int64_t dims[1] = {n};
  amd_tensor t = gc_tensor(dt, 1, dims, 0, 1);
  for (int i = 0; i < n; i++) amd_tensor_set_i64(&t, i, v[i]);
  return t;
}

/* A scalar tensor of dtype dt holding v. */
static amd_tensor gc_scalar(amd_dtype dt, double v) {
  amd_tensor t = gc_tensor(dt, 0, NULL, 0, 1);
  amd_tensor_set_f64(&t, 0, v);
  return t;
}

/* A tensor whose elements are a shuffled grid lo, lo + step, ...: all distinct. */
static amd_tensor gc_grid(amd_dtype dt, int rank, const int64_t *dims, double lo, double step) {
  amd_tensor t = gc_tensor(dt, rank, dims, 0, 1);
  int64_t n = amd_tensor_numel(&t);
  for (int64_t i = 0; i < n; i++) amd_tensor_set_f64(&t, i, lo + step * (double)i);
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(gc_uniform() * (double)(i + 1));
    double a = amd_tensor_get_f64(&t, i), b = amd_tensor_get_f64(&t, j);
    amd_tensor_set_f64(&t, i, b);
    amd_tensor_set_f64(&t, j, a);
  }
  return t;
}

/* ---- Add, Sub, Mul, Div ---- */

static void check_binary(const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs, amd_dtype dt,
                         int ra, const int64_t *da, int rb, const int64_t *db, double blo, double bhi) {
  amd_tensor a = gc_tensor(dt, ra, da, -2, 2), b = gc_tensor(dt, rb, db, blo, bhi);
  amd_tensor *in[] = {&a, &b};
  char label[128], sa[64], sb[64];
  snprintf(label, sizeof label, "%s-%d %s %s %s", op, opset, dt_name(dt), amd_shape_str(&a, sa, sizeof sa),
           amd_shape_str(&b, sb, sizeof sb));
  gradcheck(label, op, opset, attrs, n_attrs, in, 2, 1, 3u, tol_for(dt));
  amd_tensor_free(&a);
  amd_tensor_free(&b);
}

static void test_binary(amd_dtype dt) {
  const int64_t s234[] = {2, 3, 4}, s31[] = {3, 1}, s4[] = {4}, s1[] = {1}, s214[] = {2, 1, 4},
                s131[] = {1, 3, 1}, s3[] = {3}, s2345[] = {2, 3, 4, 5}, s1311[] = {1, 3, 1, 1};
  const char *ops[] = {"Add", "Sub", "Mul", "Div"};
  for (int k = 0; k < 4; k++) {
    int div = k == 3;
    double lo = div ? 1 : -2, hi = 2;
    check_binary(ops[k], 14, NULL, 0, dt, 3, s234, 2, s31, lo, hi);   /* B broadcast */
    check_binary(ops[k], 14, NULL, 0, dt, 2, s31, 3, s234, lo, hi);    /* A broadcast */
    check_binary(ops[k], 14, NULL, 0, dt, 3, s214, 3, s131, lo, hi);  /* both broadcast */
    check_binary(ops[k], 14, NULL, 0, dt, 3, s234, 3, s234, lo, hi);  /* equal shapes */
    check_binary(ops[k], 14, NULL, 0, dt, 3, s234, 1, s1, lo, hi);    /* [1] operand */
    check_binary(ops[k], 13, NULL, 0, dt, 4, s2345, 4, s1311, lo, hi); /* per-channel */
  }
  check_binary("Mul", 14, NULL, 0, dt, 3, s234, 1, s4, -2, 2);
  /* legacy broadcast: B [3] aligned at axis 1 of A [2,3,4] */
  Onnx__AttributeProto *at[] = {gc_attr_int("broadcast", 1), gc_attr_int("axis", 1)};
  check_binary("Div", 6, at, 2, dt, 3, s234, 1, s3, 1, 2);
  check_binary("Sub", 6, at, 2, dt, 3, s234, 1, s3, -2, 2);
  gc_attrs_free(at, 2);
}

/* ---- ReduceMean, ReduceSum, ReduceMax ---- */

/* axes: n_axes values as the attribute (axes_input 0) or as input 1; n_axes < 0: none. */
static void check_reduce(const char *op, int opset, amd_dtype dt, int n_axes, const int64_t *axes,
                         int axes_input, int keepdims, int noop) {
  const int64_t dims[] = {2, 3, 4, 5};
  int is_max = strcmp(op, "ReduceMax") == 0;
  amd_tensor x = is_max ? gc_grid(dt, 4, dims, -6, 0.1) : gc_tensor(dt, 4, dims, -2, 2), ax = {0};
  Onnx__AttributeProto *at[3];
  int na = 0;
  at[na++] = gc_attr_int("keepdims", keepdims);
  if (noop) at[na++] = gc_attr_int("noop_with_empty_axes", 1);
  if (n_axes >= 0 && !axes_input) at[na++] = gc_attr_ints("axes", n_axes, axes);
  int n_in = 1;
  if (n_axes >= 0 && axes_input) {
    ax = gc_ints(AMD_INT64, n_axes, axes);
    n_in = 2;
  }
  amd_tensor *in[] = {&x, &ax};
  char label[128];
  int len = snprintf(label, sizeof label, "%s-%d %s axes{", op, opset, dt_name(dt));
  for (int i = 0; i < n_axes; i++) len += snprintf(label + len, sizeof label - (size_t)len, i ? ",%lld" : "%lld", (long long)axes[i]);
  snprintf(label + len, sizeof label - (size_t)len, "}%s keepdims %d%s", axes_input ? " (input)" : "", keepdims,
           noop ? " noop" : "");
  gradcheck(label, op, opset, at, na, in, n_in, 1, 1u, tol_for(dt));
  gc_attrs_free(at, na);
  amd_tensor_free(&x);
  amd_tensor_free(&ax);
}

static void test_reduce(amd_dtype dt) {
  const int64_t a13[] = {1, 3}, am1[] = {-1}, a02[] = {0, 2}, a1[] = {1};
  const char *ops[] = {"ReduceMean", "ReduceSum", "ReduceMax"};
  for (int k = 0; k < 3; k++) {
    int sum = k == 1;
    check_reduce(ops[k], sum ? 11 : 13, dt, 2, a13, 0, 0, 0);
    check_reduce(ops[k], sum ? 11 : 13, dt, 2, a13, 0, 1, 0);
    check_reduce(ops[k], sum ? 11 : 13, dt, -1, NULL, 0, 1, 0); /* all axes */
    check_reduce(ops[k], sum ? 13 : 18, dt, 2, a13, 1, 1, 0);
    check_reduce(ops[k], sum ? 13 : 18, dt, 1, am1, 1, 0, 0);
    check_reduce(ops[k], sum ? 13 : 18, dt, 2, a02, 1, 0, 0);
    check_reduce(ops[k], sum ? 13 : 18, dt, -1, NULL, 1, 0, 1); /* no axes + noop: identity */
  }
  check_reduce("ReduceMax", 20, dt, 1, a1, 1, 1, 0);
}

/* ---- Softmax, LogSoftmax ---- */

static void check_softmax(const char *op, int opset, amd_dtype dt, int has_axis, int64_t axis) {
  const int64_t dims[] = {2, 3, 4};
  amd_tensor x = gc_tensor(dt, 3, dims, -3, 3);
  Onnx__AttributeProto *at[] = {gc_attr_int("axis", axis)};
  amd_tensor *in[] = {&x};
  char label[96];
  snprintf(label, sizeof label, "%s-%d %s axis %s%lld", op, opset, dt_name(dt), has_axis ? "" : "default ",
           (long long)(has_axis ? axis : opset >= 13 ? -1 : 1));
  gradcheck(label, op, opset, at, has_axis, in, 1, 1, 1u, tol_for(dt));
  gc_attrs_free(at, 1);
  amd_tensor_free(&x);
}

static void test_softmax(amd_dtype dt) {
  const char *ops[] = {"Softmax", "LogSoftmax"};
  for (int k = 0; k < 2; k++) {
    check_softmax(ops[k], 11, dt, 1, 1);  /* [2, 12] rows */
    check_softmax(ops[k], 11, dt, 1, 0);  /* one row of 24 */
    check_softmax(ops[k], 1, dt, 0, 0);   /* default axis 1 */
    check_softmax(ops[k], 13, dt, 1, -1);
    check_softmax(ops[k], 13, dt, 1, 1);  /* inner = 4 */
    check_softmax(ops[k], 13, dt, 0, 0);  /* default axis -1 */
  }
}

/* ---- shape ops ---- */

/* One differentiable input x of shape dims, plus optional int64 input 1. */
static void check_shape_op(const char *label0, const char *op, int opset, Onnx__AttributeProto **at, int na,
                           amd_dtype dt, int rank, const int64_t *dims, int n_ints, const int64_t *ints) {
  amd_tensor x = gc_tensor(dt, rank, dims, -2, 2), s = {0};
  if (n_ints >= 0) s = gc_ints(AMD_INT64, n_ints, ints);
  amd_tensor *in[] = {&x, &s};
  char label[128];
  snprintf(label, sizeof label, "%s-%d %s %s", op, opset, dt_name(dt), label0);
  gradcheck(label, op, opset, at, na, in, n_ints >= 0 ? 2 : 1, 1, 1u, tol_for(dt));
  amd_tensor_free(&x);
  amd_tensor_free(&s);
}

static void test_reshapes(amd_dtype dt) {
  const int64_t s234[] = {2, 3, 4}, s214[] = {2, 1, 4}, shape[] = {4, -1}, shape0[] = {0, 12}, ax1[] = {1},
                ax03[] = {0, 3}, perm[] = {2, 0, 1}, s2345[] = {2, 3, 4, 5}, perm4[] = {1, 3, 0, 2};
  Onnx__AttributeProto *fl[] = {gc_attr_int("axis", 2)};
  check_shape_op("axis 2", "Flatten", 13, fl, 1, dt, 3, s234, -1, NULL);
  gc_attrs_free(fl, 1);
  check_shape_op("shape [4,-1]", "Reshape", 14, NULL, 0, dt, 3, s234, 2, shape);
  check_shape_op("shape [0,12]", "Reshape", 14, NULL, 0, dt, 3, s234, 2, shape0);
  Onnx__AttributeProto *tp[] = {gc_attr_ints("perm", 3, perm)};
  check_shape_op("perm {2,0,1}", "Transpose", 13, tp, 1, dt, 3, s234, -1, NULL);
  gc_attrs_free(tp, 1);
  Onnx__AttributeProto *tp4[] = {gc_attr_ints("perm", 4, perm4)};
  check_shape_op("perm {1,3,0,2}", "Transpose", 13, tp4, 1, dt, 4, s2345, -1, NULL);
  gc_attrs_free(tp4, 1);
  check_shape_op("default perm", "Transpose", 13, NULL, 0, dt, 3, s234, -1, NULL);
  check_shape_op("axes [1] (input)", "Squeeze", 13, NULL, 0, dt, 3, s214, 1, ax1);
  Onnx__AttributeProto *sq[] = {gc_attr_ints("axes", 1, ax1)};
  check_shape_op("axes {1}", "Squeeze", 11, sq, 1, dt, 3, s214, -1, NULL);
  gc_attrs_free(sq, 1);
  check_shape_op("axes [0,3] (input)", "Unsqueeze", 13, NULL, 0, dt, 3, s234, 2, ax03);
  check_shape_op("", "Identity", 16, NULL, 0, dt, 3, s234, -1, NULL);
}

static void test_concat(amd_dtype dt) {
  const int64_t d0[] = {2, 1, 3}, d1[] = {2, 2, 3}, d2[] = {2, 3, 3};
  amd_tensor a = gc_tensor(dt, 3, d0, -2, 2), b = gc_tensor(dt, 3, d1, -2, 2), c = gc_tensor(dt, 3, d2, -2, 2);
  amd_tensor *in[] = {&a, &b, &c};
  Onnx__AttributeProto *at[] = {gc_attr_int("axis", 1)};
  char label[64];
  snprintf(label, sizeof label, "Concat-13 %s axis 1, three inputs", dt_name(dt));
  gradcheck(label, "Concat", 13, at, 1, in, 3, 1, 7u, tol_for(dt));
  /* axis -1, only the middle input's gradient wanted */
  const int64_t e0[] = {2, 3, 1}, e1[] = {2, 3, 2};
  amd_tensor p = gc_tensor(dt, 3, e0, -2, 2), q = gc_tensor(dt, 3, e1, -2, 2), r = gc_tensor(dt, 3, e0, -2, 2);
  amd_tensor *in2[] = {&p, &q, &r};
  Onnx__AttributeProto *at2[] = {gc_attr_int("axis", -1)};
  snprintf(label, sizeof label, "Concat-13 %s axis -1, input 1 only", dt_name(dt));
  gradcheck(label, "Concat", 13, at2, 1, in2, 3, 1, 2u, tol_for(dt));
  gc_attrs_free(at, 1);
  gc_attrs_free(at2, 1);
  amd_tensor *all[] = {&a, &b, &c, &p, &q, &r};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

static void test_dropout(amd_dtype dt) {
  const int64_t dims[] = {4, 5, 6};
  amd_tensor x = gc_tensor(dt, 3, dims, -2, 2), ratio = gc_scalar(AMD_FLOAT, 0.3), train = gc_scalar(AMD_BOOL, 1);
  char label[96];
  amd_tensor *in[] = {&x, &ratio, &train};
  snprintf(label, sizeof label, "Dropout-13 %s training ratio 0.3 (+mask output)", dt_name(dt));
  gradcheck(label, "Dropout", 13, NULL, 0, in, 3, 2, 1u, tol_for(dt));
  snprintf(label, sizeof label, "Dropout-13 %s training ratio 0.3", dt_name(dt));
  gradcheck(label, "Dropout", 13, NULL, 0, in, 3, 1, 1u, tol_for(dt));
  /* ratio 0: pass-through */
  amd_tensor zero = gc_scalar(AMD_FLOAT, 0);
  amd_tensor *in0[] = {&x, &zero, &train};
  snprintf(label, sizeof label, "Dropout-13 %s ratio 0", dt_name(dt));
  gradcheck(label, "Dropout", 13, NULL, 0, in0, 3, 1, 1u, tol_for(dt));
  /* opset 7: ratio attribute, training from the context */
  Onnx__AttributeProto *at[] = {gc_attr_float("ratio", 0.5f)};
  snprintf(label, sizeof label, "Dropout-7 %s training ratio 0.5 (attribute)", dt_name(dt));
  gradcheck(label, "Dropout", 7, at, 1, in, 1, 1, 1u, tol_for(dt));
  gc_attrs_free(at, 1);
  amd_tensor_free(&x);
  amd_tensor_free(&ratio);
  amd_tensor_free(&train);
  amd_tensor_free(&zero);
}

static void check_pad(const char *mode, int opset, amd_dtype dt, int n_pads, const int64_t *pads, int n_axes,
                      const int64_t *axes) {
  const int64_t dims[] = {2, 3, 4};
  amd_tensor x = gc_tensor(dt, 3, dims, -2, 2), p = gc_ints(AMD_INT64, n_pads, pads), v = gc_scalar(dt, 0.5),
             ax = {0};
  if (n_axes > 0) ax = gc_ints(AMD_INT64, n_axes, axes);
  Onnx__AttributeProto *at[] = {gc_attr_str("mode", mode)};
  amd_tensor *in[] = {&x, &p, &v, n_axes > 0 ? &ax : NULL};
  char label[128];
  int len = snprintf(label, sizeof label, "Pad-%d %s %s pads [", opset, dt_name(dt), mode);
  for (int i = 0; i < n_pads; i++) len += snprintf(label + len, sizeof label - (size_t)len, i ? ",%lld" : "%lld", (long long)pads[i]);
  snprintf(label + len, sizeof label - (size_t)len, "]%s", n_axes > 0 ? " with axes" : "");
  gradcheck(label, "Pad", opset, at, 1, in, n_axes > 0 ? 4 : 3, 1, 1u, tol_for(dt));
  gc_attrs_free(at, 1);
  amd_tensor_free(&x);
  amd_tensor_free(&p);
  amd_tensor_free(&v);
  amd_tensor_free(&ax);
}

static void test_pad(amd_dtype dt) {
  const int64_t p1[] = {0, 1, 2, 1, 2, 3}, pcrop[] = {1, -1, 2, 0, 1, -2}, p18[] = {2, 3, 3, 2}, a18[] = {1, -1};
  check_pad("constant", 13, dt, 6, p1, 0, NULL);
  check_pad("constant", 13, dt, 6, pcrop, 0, NULL);
  check_pad("reflect", 13, dt, 6, p1, 0, NULL);
  check_pad("reflect", 13, dt, 6, pcrop, 0, NULL);
  check_pad("edge", 13, dt, 6, p1, 0, NULL);
  check_pad("reflect", 18, dt, 4, p18, 2, a18); /* reflect wider than the axis */
  check_pad("wrap", 19, dt, 4, p18, 2, a18);
}

static void test_gather(amd_dtype dt) {
  const int64_t dims[] = {2, 4, 3}, idims[] = {2, 2}, iv[] = {-1, 0, 2, -1}, iv0[] = {1, 1, 0};
  amd_tensor x = gc_tensor(dt, 3, dims, -2, 2), idx = gc_tensor(AMD_INT64, 2, idims, 0, 1);
  for (int i = 0; i < 4; i++) amd_tensor_set_i64(&idx, i, iv[i]);
  Onnx__AttributeProto *at[] = {gc_attr_int("axis", 1)};
  amd_tensor *in[] = {&x, &idx};
  char label[96];
  snprintf(label, sizeof label, "Gather-13 %s axis 1, indices [[-1,0],[2,-1]]", dt_name(dt));
  gradcheck(label, "Gather", 13, at, 1, in, 2, 1, 1u, tol_for(dt));
  amd_tensor idx0 = gc_ints(AMD_INT32, 3, iv0);
  amd_tensor *in0[] = {&x, &idx0};
  snprintf(label, sizeof label, "Gather-13 %s axis 0, int32 indices [1,1,0]", dt_name(dt));
  gradcheck(label, "Gather", 13, NULL, 0, in0, 2, 1, 1u, tol_for(dt));
  gc_attrs_free(at, 1);
  amd_tensor_free(&x);
  amd_tensor_free(&idx);
  amd_tensor_free(&idx0);
}

/* ---- Pow, Min, Max, Where ---- */

/* Pow: positive bases in [0.5, 2), exponents in [-2, 2); both gradients, or
 * only the base's for an integer exponent. */
static void check_pow(int opset, Onnx__AttributeProto **at, int na, amd_dtype dt, amd_dtype et, int ra,
                      const int64_t *da, int rb, const int64_t *db) {
  amd_tensor a = gc_tensor(dt, ra, da, 0.5, 2), b = gc_tensor(et, rb, db, -2, 2);
  if (et == AMD_INT64)
    for (int64_t i = 0; i < amd_tensor_numel(&b); i++) amd_tensor_set_i64(&b, i, (int64_t)(gc_uniform() * 7) - 3);
  amd_tensor *in[] = {&a, &b};
  char label[128], sa[64], sb[64];
  snprintf(label, sizeof label, "Pow-%d %s %s ^ %s %s", opset, dt_name(dt), amd_shape_str(&a, sa, sizeof sa),
           amd_dtype_name(et), amd_shape_str(&b, sb, sizeof sb));
  gradcheck(label, "Pow", opset, at, na, in, 2, 1, et == AMD_INT64 ? 1u : 3u, tol_for(dt));
  amd_tensor_free(&a);
  amd_tensor_free(&b);
}

/* Min / Max of n inputs: shuffled grids offset from each other (0, 0.05,
 * 0.025) so no two inputs come within 0.025 of each other anywhere. */
static void check_minmax(const char *op, int opset, amd_dtype dt, int n, const int *ranks,
                         const int64_t *const *dims) {
  amd_tensor t[3], *in[3];
  const double off[3] = {0, 0.05, 0.025};
  char label[160];
  int len = snprintf(label, sizeof label, "%s-%d %s", op, opset, dt_name(dt));
  for (int k = 0; k < n; k++) {
    char s[64];
    t[k] = gc_grid(dt, ranks[k], dims[k], -3 + off[k], 0.1);
    in[k] = &t[k];
    len += snprintf(label + len, sizeof label - (size_t)len, " %s", amd_shape_str(&t[k], s, sizeof s));
  }
  gradcheck(label, op, opset, NULL, 0, in, n, 1, (1u << n) - 1, tol_for(dt));
  for (int k = 0; k < n; k++) amd_tensor_free(&t[k]);
}

/* A bool tensor, each element true with probability 1/2. */
static amd_tensor gc_bools(int rank, const int64_t *dims) {
  amd_tensor t = gc_tensor(AMD_BOOL, rank, dims, 0, 1);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) amd_tensor_set_i64(&t, i, gc_uniform() < 0.5);
  return t;
}

static void check_where(amd_dtype dt, int rc, const int64_t *dc, int rx, const int64_t *dx, int ry,
                        const int64_t *dy) {
  amd_tensor c = gc_bools(rc, dc), x = gc_tensor(dt, rx, dx, -2, 2), y = gc_tensor(dt, ry, dy, -2, 2);
  amd_tensor *in[] = {&c, &x, &y};
  char label[160], s0[64], s1[64], s2[64];
  snprintf(label, sizeof label, "Where-16 %s cond %s X %s Y %s", dt_name(dt), amd_shape_str(&c, s0, sizeof s0),
           amd_shape_str(&x, s1, sizeof s1), amd_shape_str(&y, s2, sizeof s2));
  gradcheck(label, "Where", 16, NULL, 0, in, 3, 1, 6u, tol_for(dt));
  amd_tensor_free(&c);
  amd_tensor_free(&x);
  amd_tensor_free(&y);
}

static void test_pow_minmax_where(amd_dtype dt) {
  const int64_t s234[] = {2, 3, 4}, s31[] = {3, 1}, s214[] = {2, 1, 4}, s131[] = {1, 3, 1}, s4[] = {4},
                s3[] = {3};
  check_pow(15, NULL, 0, dt, dt, 3, s234, 3, s234);
  check_pow(15, NULL, 0, dt, dt, 3, s234, 2, s31);   /* exponent broadcast */
  check_pow(13, NULL, 0, dt, dt, 2, s31, 3, s234);   /* base broadcast */
  check_pow(12, NULL, 0, dt, dt, 3, s214, 3, s131);  /* both */
  check_pow(7, NULL, 0, dt, dt, 3, s234, 0, NULL);   /* scalar exponent */
  check_pow(15, NULL, 0, dt, AMD_INT64, 3, s234, 1, s4);
  Onnx__AttributeProto *at[] = {gc_attr_int("broadcast", 1), gc_attr_int("axis", 1)};
  check_pow(1, at, 2, dt, dt, 3, s234, 1, s3); /* legacy broadcast at axis 1 */
  gc_attrs_free(at, 2);

  const char *mm[] = {"Min", "Max"};
  for (int k = 0; k < 2; k++) {
    const int64_t *same[] = {s234, s234}, *bc[] = {s234, s31}, *three[] = {s214, s131, s4};
    const int r_same[] = {3, 3}, r_bc[] = {3, 2}, r_three[] = {3, 3, 1};
    check_minmax(mm[k], 6, dt, 2, r_same, same);
    check_minmax(mm[k], 13, dt, 2, r_bc, bc);
    check_minmax(mm[k], 13, dt, 3, r_three, three);
    check_minmax(mm[k], 13, dt, 1, r_same, same);
  }

  check_where(dt, 3, s234, 3, s234, 3, s234);
  check_where(dt, 3, s214, 2, s31, 1, s4);  /* all three broadcast */
  check_where(dt, 2, s31, 3, s234, 0, NULL); /* scalar Y */
}

/* ---- values and clean failures ---- */

static int vc_passed, vc_failed;

static void vc_report(const char *label, int ok, const char *why) {
  printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", label, ok ? "" : ": ", ok ? "" : why);
  ok ? vc_passed++ : vc_failed++;
}

/* Runs one node forward; returns 0 and fills out (caller frees), or -1 with st set. */
static int run_node(const char *op, int opset, Onnx__AttributeProto **at, int na, amd_tensor **in, int n_in,
                    amd_tensor *out, amd_status *st) {
  gc_node g;
  if (gc_bind(&g, op, opset, at, na, in, n_in, 1, st)) return -1;
  int rc = gc_forward(&g.node, in, out, NULL, NULL, st);
  free(g.node.attrs);
  if (rc) gc_free_outs(out, 1);
  return rc;
}

/* A tensor of dtype dt, shape dims, values v (as double). */
static amd_tensor vt(amd_dtype dt, int rank, const int64_t *dims, const double *v) {
  amd_tensor t = gc_tensor(dt, rank, dims, 0, 1);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) amd_tensor_set_f64(&t, i, v[i]);
  return t;
}

/* out must have dtype dt, shape dims and the values want (exactly, or within tol). */
static void expect(const char *label, const amd_tensor *out, amd_dtype dt, int rank, const int64_t *dims,
                   const double *want, double tol) {
  amd_tensor ref = {0};
  amd_tensor_set_shape(&ref, dt, rank, dims);
  char why[256] = "";
  if (out->dtype != dt || !amd_same_shape(out, &ref)) {
    char s0[64], s1[64];
    snprintf(why, sizeof why, "got %s %s, expected %s %s", amd_dtype_name(out->dtype),
             amd_shape_str(out, s0, sizeof s0), amd_dtype_name(dt), amd_shape_str(&ref, s1, sizeof s1));
  } else {
    for (int64_t i = 0; i < amd_tensor_numel(out); i++) {
      double v = amd_tensor_get_f64(out, i);
      if (!(v == want[i] || fabs(v - want[i]) <= tol) && !(isnan(v) && isnan(want[i]))) {
        snprintf(why, sizeof why, "element %lld is %.9g, expected %.9g", (long long)i, v, want[i]);
        break;
      }
    }
  }
  vc_report(label, why[0] == 0, why);
}

static void value_case(const char *label, const char *op, int opset, amd_tensor **in, int n_in, amd_dtype dt,
                       int rank, const int64_t *dims, const double *want, double tol) {
  amd_status st = {{0}};
  amd_tensor out[8];
  if (run_node(op, opset, NULL, 0, in, n_in, out, &st)) {
    vc_report(label, 0, st.msg);
    return;
  }
  expect(label, &out[0], dt, rank, dims, want, tol);
  gc_free_outs(out, 1);
}

static void test_compare_values(void) {
  const int64_t d23[] = {2, 3}, d3[] = {3}, d21[] = {2, 1};
  const double av[] = {1, 2, 3, -1, NAN, 5}, bv[] = {2, 2, 2};
  amd_tensor a = vt(AMD_FLOAT, 2, d23, av), b = vt(AMD_FLOAT, 1, d3, bv), *in[] = {&a, &b};
  const double lt[] = {1, 0, 0, 1, 0, 0}, gt[] = {0, 0, 1, 0, 0, 1}, eq[] = {0, 1, 0, 0, 0, 0},
               le[] = {1, 1, 0, 1, 0, 0}, ge[] = {0, 1, 1, 0, 0, 1};
  value_case("Less [2,3] < [3] (NaN false)", "Less", 13, in, 2, AMD_BOOL, 2, d23, lt, 0);
  value_case("Greater [2,3] > [3]", "Greater", 13, in, 2, AMD_BOOL, 2, d23, gt, 0);
  value_case("Equal [2,3] == [3]", "Equal", 13, in, 2, AMD_BOOL, 2, d23, eq, 0);
  value_case("LessOrEqual [2,3] <= [3]", "LessOrEqual", 16, in, 2, AMD_BOOL, 2, d23, le, 0);
  value_case("GreaterOrEqual [2,3] >= [3]", "GreaterOrEqual", 16, in, 2, AMD_BOOL, 2, d23, ge, 0);
  amd_tensor_free(&a);
  amd_tensor_free(&b);
  /* int64 exactly, beyond double's 53 bits: 2^60 + 1 vs 2^60 */
  amd_tensor p = gc_tensor(AMD_INT64, 2, d21, 0, 1), q = gc_tensor(AMD_INT64, 1, d3, 0, 1), *in2[] = {&p, &q};
  int64_t *P = p.data, *Q = q.data;
  P[0] = ((int64_t)1 << 60) + 1, P[1] = -4;
  Q[0] = (int64_t)1 << 60, Q[1] = ((int64_t)1 << 60) + 1, Q[2] = -4;
  const double e2[] = {0, 1, 0, 0, 0, 1}, g2[] = {1, 0, 1, 0, 0, 0};
  value_case("Equal int64 [2,1] == [3] (2^60 + 1)", "Equal", 11, in2, 2, AMD_BOOL, 2, d23, e2, 0);
  value_case("Greater int64 [2,1] > [3]", "Greater", 9, in2, 2, AMD_BOOL, 2, d23, g2, 0);
  amd_tensor_free(&p);
  amd_tensor_free(&q);
  /* logic, with broadcasting */
  const double x1[] = {0, 1, 1, 0, 0, 1}, y1[] = {1, 1, 0};
  amd_tensor x = vt(AMD_BOOL, 2, d23, x1), y = vt(AMD_BOOL, 1, d3, y1), *in3[] = {&x, &y};
  const double andv[] = {0, 1, 0, 0, 0, 0}, orv[] = {1, 1, 1, 1, 1, 1}, xorv[] = {1, 0, 1, 1, 1, 1},
               notv[] = {1, 0, 0, 1, 1, 0};
  value_case("And [2,3] [3]", "And", 7, in3, 2, AMD_BOOL, 2, d23, andv, 0);
  value_case("Or [2,3] [3]", "Or", 7, in3, 2, AMD_BOOL, 2, d23, orv, 0);
  value_case("Xor [2,3] [3]", "Xor", 7, in3, 2, AMD_BOOL, 2, d23, xorv, 0);
  value_case("Not [2,3]", "Not", 1, in3, 1, AMD_BOOL, 2, d23, notv, 0);
  amd_tensor_free(&x);
  amd_tensor_free(&y);
  /* Where on int64 data, cond broadcast */
  const double c1[] = {1, 0}, xv[] = {10, 11, 12}, yv[] = {-1};
  amd_tensor c = vt(AMD_BOOL, 2, d21, c1), wx = vt(AMD_INT64, 1, d3, xv), wy = vt(AMD_INT64, 0, NULL, yv),
             *in4[] = {&c, &wx, &wy};
  const double wv[] = {10, 11, 12, -1, -1, -1};
  value_case("Where int64 cond [2,1] X [3] Y []", "Where", 9, in4, 3, AMD_INT64, 2, d23, wv, 0);
  amd_tensor_free(&c);
  amd_tensor_free(&wx);
  amd_tensor_free(&wy);
  /* Min / Max: three inputs with broadcasting, NaN propagates */
  const double m0[] = {1, 5, NAN}, m1[] = {3, 2}, m2[] = {4};
  amd_tensor u0 = vt(AMD_FLOAT, 1, d3, m0), u1 = vt(AMD_FLOAT, 2, d21, m1), u2 = vt(AMD_FLOAT, 0, NULL, m2),
             *in5[] = {&u0, &u1, &u2};
  const double mx[] = {4, 5, NAN, 4, 5, NAN}, mn[] = {1, 3, NAN, 1, 2, NAN};
  value_case("Max [3] [2,1] [] (NaN)", "Max", 13, in5, 3, AMD_FLOAT, 2, d23, mx, 0);
  value_case("Min [3] [2,1] [] (NaN)", "Min", 13, in5, 3, AMD_FLOAT, 2, d23, mn, 0);
  amd_tensor_free(&u0);
  amd_tensor_free(&u1);
  amd_tensor_free(&u2);
}

static void test_range_values(void) {
  const double s[] = {10}, l[] = {4}, d[] = {-3}, l2[] = {11}, d1[] = {0.5};
  const amd_dtype types[] = {AMD_INT32, AMD_INT64, AMD_FLOAT, AMD_DOUBLE};
  for (int k = 0; k < 4; k++) {
    amd_tensor a = vt(types[k], 0, NULL, s), b = vt(types[k], 0, NULL, l), c = vt(types[k], 0, NULL, d),
               *in[] = {&a, &b, &c};
    char label[96];
    const int64_t n2[] = {2}, n0[] = {0};
    const double want[] = {10, 7};
    snprintf(label, sizeof label, "Range %s 10, 4, -3 -> [10, 7]", amd_dtype_name(types[k]));
    value_case(label, "Range", 11, in, 3, types[k], 1, n2, want, 0);
    amd_tensor b2 = vt(types[k], 0, NULL, l2), *in2[] = {&a, &b2, &c};
    snprintf(label, sizeof label, "Range %s 10, 11, -3 -> empty", amd_dtype_name(types[k]));
    value_case(label, "Range", 11, in2, 3, types[k], 1, n0, NULL, 0);
    amd_tensor_free(&a);
    amd_tensor_free(&b);
    amd_tensor_free(&c);
    amd_tensor_free(&b2);
  }
  amd_tensor a = vt(AMD_FLOAT, 0, NULL, l), b = vt(AMD_FLOAT, 0, NULL, s), c = vt(AMD_FLOAT, 0, NULL, d1),
             *in[] = {&a, &b, &c};
  const int64_t n12[] = {12};
  const double want[] = {4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 8.5, 9, 9.5};
  value_case("Range float 4, 10, 0.5", "Range", 11, in, 3, AMD_FLOAT, 1, n12, want, 0);
  amd_tensor_free(&a);
  amd_tensor_free(&b);
  amd_tensor_free(&c);
  /* ConstantOfShape: default float 0, an int64 value, an empty shape (scalar) */
  const int64_t sv[] = {2, 3}, d23[] = {2, 3};
  amd_tensor shp = gc_ints(AMD_INT64, 2, sv), *ins[] = {&shp};
  const double z[6] = {0}, sev[] = {7, 7, 7, 7, 7, 7};
  value_case("ConstantOfShape [2,3] default", "ConstantOfShape", 9, ins, 1, AMD_FLOAT, 2, d23, z, 0);
  Onnx__AttributeProto *at = gc_attr_new("value");
  Onnx__TensorProto tp;
  onnx__tensor_proto__init(&tp);
  int64_t one = 1, seven = 7;
  tp.n_dims = 1, tp.dims = &one, tp.has_data_type = 1, tp.data_type = AMD_INT64, tp.n_int64_data = 1,
  tp.int64_data = &seven;
  at->has_type = 1, at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR, at->t = &tp;
  amd_status st = {{0}};
  amd_tensor out[8];
  if (run_node("ConstantOfShape", 20, &at, 1, ins, 1, out, &st)) {
    vc_report("ConstantOfShape [2,3] int64 7", 0, st.msg);
  } else {
    expect("ConstantOfShape [2,3] int64 7", &out[0], AMD_INT64, 2, d23, sev, 0);
    gc_free_outs(out, 1);
  }
  free(at);
  amd_tensor_free(&shp);
  amd_tensor empty = gc_ints(AMD_INT64, 0, NULL), *ine[] = {&empty};
  value_case("ConstantOfShape [] (scalar)", "ConstantOfShape", 9, ine, 1, AMD_FLOAT, 0, NULL, z, 0);
  amd_tensor_free(&empty);
}

/* Pow's gradients at the edges, PyTorch's convention: dX = 0 where e == 0,
 * dE = 0 where x == 0 and e >= 0; and its integer forward. */
static void test_pow_values(void) {
  const int64_t d5[] = {5};
  const double xv[] = {0, 0, 0, 2, 3}, ev[] = {2, 0, 0.5, 0, 3};
  amd_tensor x = vt(AMD_DOUBLE, 1, d5, xv), e = vt(AMD_DOUBLE, 1, d5, ev), *in[] = {&x, &e};
  const double yv[] = {0, 1, 0, 1, 27};
  value_case("Pow double edges", "Pow", 15, in, 2, AMD_DOUBLE, 1, d5, yv, 1e-12);
  amd_status st = {{0}};
  gc_node g;
  memset(&g, 0, sizeof g);
  amd_tensor out[8] = {{0}}, gx = vt(AMD_DOUBLE, 1, d5, (const double[]){0, 0, 0, 0, 0}),
                     ge = vt(AMD_DOUBLE, 1, d5, (const double[]){0, 0, 0, 0, 0}),
                     gy = vt(AMD_DOUBLE, 1, d5, (const double[]){1, 1, 1, 1, 1});
  amd_tensor *din[8] = {&gx, &ge};
  const amd_tensor *dout[8] = {&gy};
  amd_ctx ctx = {0};
  if (gc_bind(&g, "Pow", 15, NULL, 0, in, 2, 1, &st) || gc_forward(&g.node, in, out, NULL, NULL, &st) ||
      g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st)) {
    vc_report("Pow gradients at x = 0 and e = 0", 0, st.msg);
  } else {
    /* dX: 2*0, 0 (e == 0), 0.5 * 0^-0.5 = inf, 0 (e == 0), 3 * 3^2; dE: 0, 0, 0 (x == 0), ln 2, 27 ln 3 */
    const double wx[] = {0, 0, INFINITY, 0, 27}, we[] = {0, 0, 0, log(2.0), 27 * log(3.0)};
    expect("Pow dX (0 where e == 0, inf at x = 0, e = 0.5)", &gx, AMD_DOUBLE, 1, d5, wx, 1e-12);
    expect("Pow dE (0 where x == 0, e >= 0)", &ge, AMD_DOUBLE, 1, d5, we, 1e-12);
  }
  gc_free_outs(out, 1);
  free(g.node.attrs);
  amd_tensor_free(&gx);
  amd_tensor_free(&ge);
  amd_tensor_free(&gy);
  amd_tensor_free(&x);
  amd_tensor_free(&e);
  /* integers: exact powers, a negative exponent, a float exponent truncated */
  const double bi[] = {2, 3, -2, 1, 5}, ei[] = {10, 3, 3, -4, -1}, ef[] = {0.5, 2, 3, 1, 1.5};
  amd_tensor ib = vt(AMD_INT64, 1, d5, bi), ie = vt(AMD_INT64, 1, d5, ei), fe = vt(AMD_FLOAT, 1, d5, ef);
  amd_tensor *in1[] = {&ib, &ie}, *in2[] = {&ib, &fe};
  const double w1[] = {1024, 27, -8, 1, 0}, w2[] = {1, 9, -8, 1, 11};
  value_case("Pow int64 ^ int64", "Pow", 15, in1, 2, AMD_INT64, 1, d5, w1, 0);
  value_case("Pow int64 ^ float (truncated)", "Pow", 15, in2, 2, AMD_INT64, 1, d5, w2, 0);
  amd_tensor_free(&ib);
  amd_tensor_free(&ie);
  amd_tensor_free(&fe);
}

/* Ties of Min / Max send the gradient to the first tied input. */
static void test_minmax_ties(void) {
  const int64_t d3[] = {3};
  const double av[] = {1, 2, 3}, bv[] = {1, 5, 3};
  const char *ops[] = {"Max", "Min"};
  for (int k = 0; k < 2; k++) {
    amd_tensor a = vt(AMD_FLOAT, 1, d3, av), b = vt(AMD_FLOAT, 1, d3, bv), *in[] = {&a, &b};
    amd_tensor ga = vt(AMD_FLOAT, 1, d3, (const double[]){0, 0, 0}), gb = vt(AMD_FLOAT, 1, d3, (const double[]){0, 0, 0}),
               gy = vt(AMD_FLOAT, 1, d3, (const double[]){1, 2, 4});
    amd_tensor *din[8] = {&ga, &gb};
    const amd_tensor *dout[8] = {&gy};
    amd_status st = {{0}};
    gc_node g;
    memset(&g, 0, sizeof g);
    amd_tensor out[8] = {{0}};
    amd_ctx ctx = {0};
    char label[64];
    snprintf(label, sizeof label, "%s ties go to the first input", ops[k]);
    if (gc_bind(&g, ops[k], 13, NULL, 0, in, 2, 1, &st) || gc_forward(&g.node, in, out, NULL, NULL, &st) ||
        g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st)) {
      vc_report(label, 0, st.msg);
    } else {
      const double wa[] = {1, k ? 2 : 0, 4}, wb[] = {0, k ? 0 : 2, 0};
      expect(label, &ga, AMD_FLOAT, 1, d3, wa, 0);
      expect(label, &gb, AMD_FLOAT, 1, d3, wb, 0);
    }
    gc_free_outs(out, 1);
    free(g.node.attrs);
    amd_tensor *all[] = {&a, &b, &ga, &gb, &gy};
    for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
  }
}

/* A node that must fail with a message (at infer or forward), never crash. */
static void expect_fail(const char *label, const char *op, int opset, amd_tensor **in, int n_in) {
  amd_status st = {{0}};
  amd_tensor out[8];
  if (run_node(op, opset, NULL, 0, in, n_in, out, &st) == 0) {
    gc_free_outs(out, 1);
    vc_report(label, 0, "succeeded");
    return;
  }
  printf("ok   %s: fails with \"%s\"\n", label, st.msg);
  vc_passed++;
}

static void test_bad_inputs(void) {
  const int64_t d23[] = {2, 3}, d4[] = {4}, d3[] = {3}, d2[] = {2};
  amd_tensor f23 = gc_tensor(AMD_FLOAT, 2, d23, 0.5, 2), f4 = gc_tensor(AMD_FLOAT, 1, d4, 0.5, 2),
             f3 = gc_tensor(AMD_FLOAT, 1, d3, 0.5, 2), b23 = gc_bools(2, d23), b4 = gc_bools(1, d4),
             i3 = gc_tensor(AMD_INT64, 1, d3, 0, 5);
  amd_tensor *pow_bad[] = {&f23, &f4}, *min6[] = {&f23, &f3}, *eq_bad[] = {&f23, &f4}, *eq_types[] = {&f3, &i3},
             *where_fc[] = {&f23, &f23, &f23}, *where_sh[] = {&b4, &f23, &f23}, *where_ty[] = {&b23, &f3, &i3},
             *and_f[] = {&f3, &f3}, *not_f[] = {&f3}, *and_sh[] = {&b23, &b4};
  expect_fail("Pow [2,3] ^ [4]", "Pow", 15, pow_bad, 2);
  expect_fail("Max [2,3] [4]", "Max", 13, pow_bad, 2);
  expect_fail("Min-6 [2,3] [3] (no broadcasting before opset 8)", "Min", 6, min6, 2);
  expect_fail("Equal [2,3] [4]", "Equal", 13, eq_bad, 2);
  expect_fail("Less float vs int64", "Less", 13, eq_types, 2);
  expect_fail("Where with a float condition", "Where", 16, where_fc, 3);
  expect_fail("Where cond [4] X [2,3]", "Where", 16, where_sh, 3);
  expect_fail("Where X float, Y int64", "Where", 16, where_ty, 3);
  expect_fail("And of floats", "And", 7, and_f, 2);
  expect_fail("And [2,3] [4]", "And", 7, and_sh, 2);
  expect_fail("Not of a float", "Not", 1, not_f, 1);
  const double one[] = {1}, zero[] = {0}, ten[] = {10}, two[] = {1, 2};
  const amd_dtype types[] = {AMD_INT64, AMD_FLOAT};
  for (int k = 0; k < 2; k++) {
    amd_tensor s = vt(types[k], 0, NULL, one), l = vt(types[k], 0, NULL, ten), d0 = vt(types[k], 0, NULL, zero),
               v2 = vt(types[k], 1, d2, two), *r0[] = {&s, &l, &d0}, *r2[] = {&s, &v2, &s};
    char label[64];
    snprintf(label, sizeof label, "Range %s with delta 0", amd_dtype_name(types[k]));
    expect_fail(label, "Range", 11, r0, 3);
    snprintf(label, sizeof label, "Range %s with a 2-element limit", amd_dtype_name(types[k]));
    expect_fail(label, "Range", 11, r2, 3);
    amd_tensor_free(&s), amd_tensor_free(&l), amd_tensor_free(&d0), amd_tensor_free(&v2);
  }
  amd_tensor s1 = vt(AMD_INT64, 0, NULL, one), lf = vt(AMD_FLOAT, 0, NULL, ten), *rmix[] = {&s1, &lf, &s1};
  expect_fail("Range int64 start, float limit", "Range", 11, rmix, 3);
  amd_tensor fnan = vt(AMD_FLOAT, 0, NULL, (const double[]){NAN}), *rnan[] = {&fnan, &lf, &lf};
  expect_fail("Range float start NaN", "Range", 11, rnan, 3);
  const int64_t neg[] = {2, -1};
  amd_tensor shp = gc_ints(AMD_INT64, 2, neg), *cs[] = {&shp}, *csf[] = {&f3};
  expect_fail("ConstantOfShape [2,-1]", "ConstantOfShape", 9, cs, 1);
  expect_fail("ConstantOfShape of a float shape", "ConstantOfShape", 9, csf, 1);
  /* Pow's exponent gradient needs a float exponent */
  amd_tensor *pin[] = {&f3, &i3}, out[8] = {{0}}, gx = gc_tensor(AMD_FLOAT, 1, d3, 0, 0),
             ge = gc_tensor(AMD_INT64, 1, d3, 0, 0), gy = gc_tensor(AMD_FLOAT, 1, d3, 1, 1);
  amd_tensor *din[8] = {&gx, &ge};
  const amd_tensor *dout[8] = {&gy};
  amd_status st = {{0}};
  gc_node g;
  memset(&g, 0, sizeof g);
  amd_ctx ctx = {0};
  int ok = gc_bind(&g, "Pow", 15, NULL, 0, pin, 2, 1, &st) == 0 && gc_forward(&g.node, pin, out, NULL, NULL, &st) == 0;
  ok = ok && g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)pin, out, dout, din, &st) != 0;
  vc_report("Pow backward into an int64 exponent fails", ok, st.msg);
  gc_free_outs(out, 1);
  free(g.node.attrs);
  amd_tensor *all[] = {&f23, &f4, &f3, &b23, &b4, &i3, &s1, &lf, &fnan, &shp, &gx, &ge, &gy};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

int main(void) {
  const amd_dtype dts[] = {AMD_DOUBLE, AMD_FLOAT};
  for (int i = 0; i < ARRAY_LEN(dts); i++) {
    test_binary(dts[i]);
    test_reduce(dts[i]);
    test_softmax(dts[i]);
    test_reshapes(dts[i]);
    test_concat(dts[i]);
    test_dropout(dts[i]);
    test_pad(dts[i]);
    test_gather(dts[i]);
    test_pow_minmax_where(dts[i]);
  }
  test_compare_values();
  test_range_values();
  test_pow_values();
  test_minmax_ties();
  test_bad_inputs();
  printf("values and failures: %d passed, %d failed\n", vc_passed, vc_failed);
  return gc_summary() || vc_failed;
}
