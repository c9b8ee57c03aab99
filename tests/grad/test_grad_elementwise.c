/* Finite-difference checks of the backward passes in src/ops/elementwise.c,
 * reduce.c, softmax.c and shape.c: Add, Sub, Mul, Div (numpy and legacy
 * broadcasting), ReduceMean / ReduceSum / ReduceMax (attribute and input axes,
 * keepdims 0 and 1), Softmax / LogSoftmax (opset 11 flattened and opset 13
 * single axis), Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Concat,
 * Identity, Dropout (training, regenerated mask), Pad (constant, reflect,
 * edge, wrap) and Gather (negative and repeated indices).
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
  }
  return gc_summary();
}
