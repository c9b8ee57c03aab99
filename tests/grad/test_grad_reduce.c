/* Checks of src/ops/reduce.c, argmax.c, softmax.c's Hardmax and CumSum and
 * instnorm.c.
 *
 * Gradients (finite differences, gradcheck.h) of every reduction (axes as
 * attribute and as input, keepdims=0, negative axes, empty axes with
 * noop_with_empty_axes), CumSum (exclusive and reverse), InstanceNormalization,
 * MeanVarianceNormalization and LpNormalization (p = 1, 2), in double
 * (tolerance 1e-6) and once in float (2e-2). Inputs of L1 stay away from its
 * kink at 0, those of Max / Min are distinct (no ties), those of LogSum
 * positive.
 *
 * Values: ReduceMax / ReduceMin send the gradient to the first extremum on
 * ties; ReduceL2 of an all-zero row has gradient 0; ReduceProd with one and
 * two zeros; the empty-set results (a zero-size reduced dim); noop forms;
 * integer forward; ArgMax / ArgMin with keepdims, negative axis and
 * select_last_index; Hardmax's zero gradient; bad axes refused cleanly; every
 * backward accumulates into pre-filled gradient buffers. */
#include "gradcheck.h"

#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static double tol_for(amd_dtype dt) { return dt == AMD_DOUBLE ? 1e-6 : 2e-2; }
static const char *dt_name(amd_dtype dt) { return dt == AMD_DOUBLE ? "double" : "float"; }

static void count(int ok, const char *label, const char *msg) {
  if (ok) {
    printf("ok   %s\n", label);
    gc_passed++;
  } else {
    printf("FAIL %s: %s\n", label, msg);
    gc_failed++;
  }
}

/* A shuffled grid lo, lo + step, ...: distinct values. */
static amd_tensor grid(amd_dtype dt, int rank, const int64_t *dims, double lo, double step) {
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

static amd_tensor i64s(int n, const int64_t *v) {
  int64_t d[1] = {n};
  amd_tensor t = gc_tensor(AMD_INT64, 1, d, 0, 0);
  for (int i = 0; i < n; i++) amd_tensor_set_i64(&t, i, v[i]);
  return t;
}

/* ---- gradients of the reductions ---- */

static const char *reductions[] = {"ReduceSum",       "ReduceMean",     "ReduceMax", "ReduceMin",
                                   "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
                                   "ReduceLogSumExp", "ReduceSumSquare"};

static amd_tensor reduce_input(const char *op, amd_dtype dt, int rank, const int64_t *dims) {
  if (strcmp(op, "ReduceLogSum") == 0) return gc_tensor(dt, rank, dims, 0.5, 2.0);
  if (strcmp(op, "ReduceProd") == 0) return gc_tensor(dt, rank, dims, 0.6, 1.4);
  /* distinct, at least 0.07 away from 0 (L1's kink) and from each other */
  amd_tensor t = grid(dt, rank, dims, -2.0, 0.07);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) {
    double v = amd_tensor_get_f64(&t, i);
    if (fabs(v) < 0.035) amd_tensor_set_f64(&t, i, v < 0 ? v - 0.035 : v + 0.035);
  }
  return t;
}

static void test_reduce_grads(amd_dtype dt) {
  int64_t dims[] = {2, 3, 4}, ax1[] = {1}, axn[] = {-1, 0};
  for (int r = 0; r < ARRAY_LEN(reductions); r++) {
    const char *op = reductions[r];
    int in_form = strcmp(op, "ReduceSum") == 0 ? 13 : 18; /* axes as input since */
    amd_tensor x = reduce_input(op, dt, 3, dims);
    char label[128];
    /* opset 13 (attribute; for ReduceSum 11), axes [1], keepdims 1 */
    Onnx__AttributeProto *a[] = {gc_attr_ints("axes", 1, ax1)};
    amd_tensor *in1[] = {&x};
    snprintf(label, sizeof label, "%s-%d axes [1] %s", op, in_form == 13 ? 11 : 13, dt_name(dt));
    gradcheck(label, op, in_form == 13 ? 11 : 13, a, 1, in1, 1, 1, 1u, tol_for(dt));
    gc_attrs_free(a, 1);
    /* all axes (no attribute), keepdims 0 */
    Onnx__AttributeProto *k0[] = {gc_attr_int("keepdims", 0)};
    snprintf(label, sizeof label, "%s all axes keepdims=0 %s", op, dt_name(dt));
    gradcheck(label, op, in_form == 13 ? 11 : 13, k0, 1, in1, 1, 1, 1u, tol_for(dt));
    /* axes input [-1, 0], keepdims 0 */
    amd_tensor axes = i64s(2, axn), *in2[] = {&x, &axes};
    snprintf(label, sizeof label, "%s-%d axes input [-1,0] keepdims=0 %s", op, in_form, dt_name(dt));
    gradcheck(label, op, in_form, k0, 1, in2, 2, 1, 1u, tol_for(dt));
    gc_attrs_free(k0, 1);
    /* empty axes input with noop_with_empty_axes=1: each element alone */
    amd_tensor none = i64s(0, NULL), *in3[] = {&x, &none};
    Onnx__AttributeProto *noop[] = {gc_attr_int("noop_with_empty_axes", 1)};
    snprintf(label, sizeof label, "%s-%d empty axes noop %s", op, in_form, dt_name(dt));
    gradcheck(label, op, in_form, noop, 1, in3, 2, 1, 1u, tol_for(dt));
    gc_attrs_free(noop, 1);
    amd_tensor_free(&x);
    amd_tensor_free(&axes);
    amd_tensor_free(&none);
  }
}

/* ---- forward + backward at chosen points ---- */

typedef struct {
  gc_node g;
  amd_tensor out[8];
  int ok;
  amd_status st;
} fwd_run;

static void fwd(fwd_run *r, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                amd_tensor **in, int n_in, int n_out) {
  memset(&r->st, 0, sizeof r->st);
  r->ok = gc_bind(&r->g, op, opset, attrs, n_attrs, in, n_in, n_out, &r->st) == 0 &&
          gc_forward(&r->g.node, in, r->out, NULL, NULL, &r->st) == 0;
}
static void fwd_free(fwd_run *r) {
  if (r->ok) {
    gc_free_outs(r->out, r->g.node.n_out);
    free(r->g.node.attrs);
  }
}

/* dX of op over x (backward with dY = 1), into dx (allocated here). */
static int grad_of(fwd_run *r, amd_tensor **in, amd_tensor *dx) {
  amd_tensor w = gc_tensor(r->out[0].dtype, r->out[0].rank, r->out[0].dims, 1, 1);
  amd_tensor_set_shape(dx, in[0]->dtype, in[0]->rank, in[0]->dims);
  AMD_ASSERT(amd_tensor_alloc(dx, &r->st) == 0);
  const amd_tensor *dout[8] = {&w};
  amd_tensor *din[8] = {dx};
  amd_ctx ctx = {.training = 1};
  int rc = r->g.node.op->backward(&r->g.node, &ctx, (const amd_tensor *const *)in, r->out, dout, din, &r->st);
  amd_tensor_free(&w);
  return rc;
}

static int same(const amd_tensor *t, const double *want, int n) {
  if (amd_tensor_numel(t) != n) return 0;
  for (int i = 0; i < n; i++) {
    double v = amd_tensor_get_f64(t, i);
    if (!(v == want[i] || fabs(v - want[i]) <= 1e-6 * (1 + fabs(want[i])) || (isnan(v) && isnan(want[i]))))
      return 0;
  }
  return 1;
}

static void check_values(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs,
                         int n_attrs, amd_tensor **in, int n_in, const double *want_y, int ny,
                         const double *want_dx) {
  fwd_run r;
  fwd(&r, op, opset, attrs, n_attrs, in, n_in, 1);
  int ok = r.ok && same(&r.out[0], want_y, ny);
  if (ok && want_dx) {
    amd_tensor dx = {0};
    ok = grad_of(&r, in, &dx) == 0 && same(&dx, want_dx, (int)amd_tensor_numel(in[0]));
    amd_tensor_free(&dx);
  }
  count(ok, label, r.ok ? "values differ" : r.st.msg);
  fwd_free(&r);
}

static amd_tensor vals(amd_dtype dt, int rank, const int64_t *dims, const double *v) {
  amd_tensor t = gc_tensor(dt, rank, dims, 0, 0);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) amd_tensor_set_f64(&t, i, v[i]);
  return t;
}

static void test_reduce_values(void) {
  int64_t d23[] = {2, 3}, ax1[] = {1};
  Onnx__AttributeProto *a1[] = {gc_attr_ints("axes", 1, ax1), gc_attr_int("keepdims", 0)};
  /* ties: the first extremum takes the gradient */
  double xt[] = {3, 1, 3, 2, 2, 0};
  amd_tensor x = vals(AMD_DOUBLE, 2, d23, xt), *in[] = {&x};
  double ymax[] = {3, 2}, dmax[] = {1, 0, 0, 1, 0, 0};
  check_values("ReduceMax-13 ties: gradient to the first maximum", "ReduceMax", 13, a1, 2, in, 1, ymax, 2,
               dmax);
  double xm[] = {1, 5, 1, 0, 0, 4};
  amd_tensor xmn = vals(AMD_FLOAT, 2, d23, xm), *inm[] = {&xmn};
  double ymn[] = {1, 0}, dmn[] = {1, 0, 0, 1, 0, 0};
  check_values("ReduceMin-13 ties (float): gradient to the first minimum", "ReduceMin", 13, a1, 2, inm, 1,
               ymn, 2, dmn);
  /* L2 of an all-zero row: 0, gradient 0 */
  double xz[] = {0, 0, 0, 3, 0, 4}, yl2[] = {0, 5}, dl2[] = {0, 0, 0, 0.6, 0, 0.8};
  amd_tensor x0 = vals(AMD_DOUBLE, 2, d23, xz), *in0[] = {&x0};
  check_values("ReduceL2-13 zero row: gradient 0", "ReduceL2", 13, a1, 2, in0, 1, yl2, 2, dl2);
  /* Prod with one zero in row 0 and two in row 1 */
  double xp[] = {2, 0, 3, 0, 5, 0}, yp[] = {0, 0}, dp[] = {0, 6, 0, 0, 0, 0};
  amd_tensor xpr = vals(AMD_DOUBLE, 2, d23, xp), *inp[] = {&xpr};
  check_values("ReduceProd-13 with zeros", "ReduceProd", 13, a1, 2, inp, 1, yp, 2, dp);
  double xq[] = {2, -1, 3, 1, 5, 0.5}, yq[] = {-6, 2.5}, dq[] = {-3, 6, -2, 2.5, 0.5, 5};
  amd_tensor xpq = vals(AMD_DOUBLE, 2, d23, xq), *inq[] = {&xpq};
  check_values("ReduceProd-13 no zeros", "ReduceProd", 13, a1, 2, inq, 1, yq, 2, dq);
  /* LogSumExp of large values (no overflow) */
  double xl[] = {1000, 1000, 1000, -1000, -1000, -1000};
  double yl[] = {1000 + log(3.0), -1000 + log(3.0)},
         dlse[] = {1 / 3.0, 1 / 3.0, 1 / 3.0, 1 / 3.0, 1 / 3.0, 1 / 3.0};
  amd_tensor xls = vals(AMD_DOUBLE, 2, d23, xl), *inl[] = {&xls};
  check_values("ReduceLogSumExp-13 at +-1000", "ReduceLogSumExp", 13, a1, 2, inl, 1, yl, 2, dlse);
  gc_attrs_free(a1, 2);

  /* empty set: a zero-size reduced dim */
  int64_t d203[] = {2, 0, 3}, ax1b[] = {1};
  amd_tensor e = gc_tensor(AMD_FLOAT, 3, d203, 0, 1), axes = i64s(1, ax1b), *ine[] = {&e, &axes};
  static const struct {
    const char *op;
    double v;
  } empty[] = {{"ReduceMin", INFINITY},
               {"ReduceMax", -INFINITY},
               {"ReduceProd", 1},
               {"ReduceSum", 0},
               {"ReduceL1", 0},
               {"ReduceL2", 0},
               {"ReduceSumSquare", 0},
               {"ReduceLogSum", -INFINITY},
               {"ReduceLogSumExp", -INFINITY},
               {"ReduceMean", NAN}};
  for (int i = 0; i < ARRAY_LEN(empty); i++) {
    double want[6];
    for (int k = 0; k < 6; k++) want[k] = empty[i].v;
    char label[96];
    snprintf(label, sizeof label, "%s-18 over an empty dim = %g", empty[i].op, empty[i].v);
    check_values(label, empty[i].op, 18, NULL, 0, ine, 2, want, 6, NULL);
  }
  amd_tensor_free(&e);
  amd_tensor_free(&axes);

  /* noop forms: the per-element transform */
  double xn[] = {-2, 1, 3, -1, 0.5, 2}, ysq[] = {4, 1, 9, 1, 0.25, 4}, dsq[] = {-4, 2, 6, -2, 1, 4};
  double yabs[] = {2, 1, 3, 1, 0.5, 2};
  amd_tensor xno = vals(AMD_DOUBLE, 2, d23, xn), none = i64s(0, NULL), *inn[] = {&xno, &none};
  Onnx__AttributeProto *noop[] = {gc_attr_int("noop_with_empty_axes", 1)};
  check_values("ReduceSumSquare-18 noop: x^2", "ReduceSumSquare", 18, noop, 1, inn, 2, ysq, 6, dsq);
  check_values("ReduceL1-18 noop: |x|", "ReduceL1", 18, noop, 1, inn, 2, yabs, 6, NULL);
  check_values("ReduceMin-18 noop: x", "ReduceMin", 18, noop, 1, inn, 2, xn, 6, NULL);
  check_values("ReduceSum-13 noop: x", "ReduceSum", 13, noop, 1, inn, 2, xn, 6, NULL);
  /* empty axes without noop: every dim */
  double all_sq[] = {19.25};
  check_values("ReduceSumSquare-18 empty axes, no noop: all dims", "ReduceSumSquare", 18, NULL, 0, inn, 2,
               all_sq, 1, NULL);
  gc_attrs_free(noop, 1);

  /* integer forward */
  double xi[] = {-2, 1, 3, -1, 4, 2};
  amd_tensor x32 = vals(AMD_INT32, 2, d23, xi), x64 = vals(AMD_INT64, 2, d23, xi), *i32[] = {&x32},
             *i64[] = {&x64};
  int64_t ax0[] = {0};
  Onnx__AttributeProto *a0[] = {gc_attr_ints("axes", 1, ax0), gc_attr_int("keepdims", 0)};
  double imin[] = {-2, 1, 2}, iprod[] = {2, 4, 6}, il1[] = {3, 5, 5}, isq[] = {5, 17, 13}, il2[] = {2, 4, 3};
  check_values("ReduceMin-13 int32", "ReduceMin", 13, a0, 2, i32, 1, imin, 3, NULL);
  check_values("ReduceProd-13 int64", "ReduceProd", 13, a0, 2, i64, 1, iprod, 3, NULL);
  check_values("ReduceL1-13 int32", "ReduceL1", 13, a0, 2, i32, 1, il1, 3, NULL);
  check_values("ReduceSumSquare-13 int64", "ReduceSumSquare", 13, a0, 2, i64, 1, isq, 3, NULL);
  check_values("ReduceL2-13 int32 (truncated)", "ReduceL2", 13, a0, 2, i32, 1, il2, 3, NULL);
  double xb[] = {1, 0, 1, 1, 1, 1}, bmin[] = {1, 0, 1}, bmax[] = {1, 1, 1};
  amd_tensor xbo = vals(AMD_BOOL, 2, d23, xb), axb = i64s(1, ax0), *ib[] = {&xbo, &axb};
  check_values("ReduceMin-20 bool", "ReduceMin", 20, a0 + 1, 1, ib, 2, bmin, 3, NULL);
  check_values("ReduceMax-20 bool", "ReduceMax", 20, a0 + 1, 1, ib, 2, bmax, 3, NULL);
  amd_tensor_free(&xbo);
  amd_tensor_free(&axb);
  gc_attrs_free(a0, 2);

  /* bad axes fail cleanly */
  static const int64_t bad[][2] = {{3, 0}, {-3, 0}, {1, 1}, {1, -1}};
  static const int nbad[] = {1, 1, 2, 2};
  for (int i = 0; i < 4; i++) {
    Onnx__AttributeProto *b[] = {gc_attr_ints("axes", nbad[i], bad[i])};
    fwd_run r;
    fwd(&r, "ReduceL2", 13, b, 1, in, 1, 1);
    char label[96];
    snprintf(label, sizeof label, "ReduceL2-13 bad axes #%d refused", i);
    count(!r.ok && r.st.msg[0], label, "accepted");
    if (r.ok)
      fwd_free(&r);
    else
      free(r.g.node.attrs);
    amd_tensor bi = i64s(nbad[i], bad[i]), *inb[] = {&x, &bi};
    fwd(&r, "ReduceLogSumExp", 18, NULL, 0, inb, 2, 1);
    snprintf(label, sizeof label, "ReduceLogSumExp-18 bad axes input #%d refused", i);
    count(!r.ok && r.st.msg[0], label, "accepted");
    if (r.ok)
      fwd_free(&r);
    else
      free(r.g.node.attrs);
    amd_tensor_free(&bi);
    gc_attrs_free(b, 1);
  }
  amd_tensor *all[] = {&x, &xmn, &x0, &xpr, &xpq, &xls, &xno, &none, &x32, &x64};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* ---- ArgMax, ArgMin ---- */
static void test_arg(void) {
  int64_t d23[] = {2, 3};
  double xv[] = {2, 7, 7, 1, 1, 0};
  amd_tensor x = vals(AMD_FLOAT, 2, d23, xv), *in[] = {&x};
  static const struct {
    const char *op;
    int opset, axis, keep, last, ny;
    double want[3];
  } c[] = {
      {"ArgMax", 13, 1, 1, 0, 2, {1, 0}},   {"ArgMax", 13, 1, 1, 1, 2, {2, 1}},
      {"ArgMax", 13, -1, 0, 0, 2, {1, 0}},  {"ArgMax", 11, 0, 0, 0, 3, {0, 0, 0}},
      {"ArgMin", 12, 1, 0, 1, 2, {0, 2}},   {"ArgMin", 12, 1, 1, 0, 2, {0, 2}},
      {"ArgMin", 1, 0, 1, 0, 3, {1, 1, 1}}, {"ArgMin", 13, -2, 0, 1, 3, {1, 1, 1}},
  };
  for (int i = 0; i < ARRAY_LEN(c); i++) {
    Onnx__AttributeProto *a[] = {gc_attr_int("axis", c[i].axis), gc_attr_int("keepdims", c[i].keep),
                                 gc_attr_int("select_last_index", c[i].last)};
    char label[128];
    snprintf(label, sizeof label, "%s-%d axis %d keepdims %d select_last_index %d", c[i].op, c[i].opset,
             c[i].axis, c[i].keep, c[i].last);
    fwd_run r;
    fwd(&r, c[i].op, c[i].opset, a, c[i].opset >= 12 ? 3 : 2, in, 1, 1);
    int ok = r.ok && r.out[0].dtype == AMD_INT64 && r.out[0].rank == (c[i].keep ? 2 : 1) &&
             same(&r.out[0], c[i].want, c[i].ny);
    count(ok, label, r.ok ? "values differ" : r.st.msg);
    fwd_free(&r);
    gc_attrs_free(a, 3);
  }
  Onnx__AttributeProto *b[] = {gc_attr_int("axis", 2)};
  fwd_run r;
  fwd(&r, "ArgMax", 13, b, 1, in, 1, 1);
  count(!r.ok && r.st.msg[0], "ArgMax-13 axis 2 of rank 2 refused", "accepted");
  if (r.ok)
    fwd_free(&r);
  else
    free(r.g.node.attrs);
  gc_attrs_free(b, 1);
  amd_tensor_free(&x);
}

/* ---- Hardmax, CumSum ---- */
static void test_hardmax_cumsum(amd_dtype dt) {
  int64_t d[] = {2, 3, 4};
  char label[128];
  amd_tensor x = grid(dt, 3, d, -1, 0.1), *in[] = {&x};
  fwd_run r;
  fwd(&r, "Hardmax", 13, NULL, 0, in, 1, 1);
  amd_tensor dx = {0};
  int ok = r.ok && grad_of(&r, in, &dx) == 0;
  for (int64_t i = 0; ok && i < amd_tensor_numel(&dx); i++) ok = amd_tensor_get_f64(&dx, i) == 0;
  snprintf(label, sizeof label, "Hardmax-13 backward adds zero %s", dt_name(dt));
  count(ok, label, r.st.msg);
  amd_tensor_free(&dx);
  fwd_free(&r);
  /* CumSum gradients: axis 1, -1, each exclusive / reverse combination */
  for (int k = 0; k < 8; k++) {
    int64_t axv = (k & 4) ? -1 : 1;
    amd_tensor ax = i64s(1, &axv);
    ax.rank = 0; /* a scalar */
    amd_tensor *in2[] = {&x, &ax};
    Onnx__AttributeProto *a[] = {gc_attr_int("exclusive", k & 1), gc_attr_int("reverse", (k >> 1) & 1)};
    snprintf(label, sizeof label, "CumSum-14 axis %lld exclusive %d reverse %d %s", (long long)axv, k & 1,
             (k >> 1) & 1, dt_name(dt));
    gradcheck(label, "CumSum", 14, a, 2, in2, 2, 1, 1u, tol_for(dt));
    gc_attrs_free(a, 2);
    amd_tensor_free(&ax);
  }
  amd_tensor_free(&x);
}

static void test_cumsum_values(void) {
  int64_t d[] = {5};
  double xv[] = {1, 2, 3, 4, 5};
  double want[4][5] = {{1, 3, 6, 10, 15}, {0, 1, 3, 6, 10}, {15, 14, 12, 9, 5}, {14, 12, 9, 5, 0}};
  amd_tensor x = vals(AMD_INT32, 1, d, xv);
  int64_t zero = 0;
  amd_tensor ax = i64s(1, &zero), *in[] = {&x, &ax};
  for (int k = 0; k < 4; k++) {
    Onnx__AttributeProto *a[] = {gc_attr_int("exclusive", k & 1), gc_attr_int("reverse", k >> 1)};
    char label[96];
    snprintf(label, sizeof label, "CumSum-11 int32 exclusive %d reverse %d", k & 1, k >> 1);
    check_values(label, "CumSum", 11, a, 2, in, 2, want[k], 5, NULL);
    gc_attrs_free(a, 2);
  }
  int64_t bad = 1;
  amd_tensor bx = i64s(1, &bad), *inb[] = {&x, &bx};
  fwd_run r;
  fwd(&r, "CumSum", 11, NULL, 0, inb, 2, 1);
  count(!r.ok && r.st.msg[0], "CumSum-11 axis 1 of rank 1 refused", "accepted");
  if (r.ok)
    fwd_free(&r);
  else
    free(r.g.node.attrs);
  amd_tensor_free(&x);
  amd_tensor_free(&ax);
  amd_tensor_free(&bx);
}

/* ---- InstanceNormalization, MVN, LpNormalization ---- */
static void test_norms(amd_dtype dt) {
  int64_t d[] = {2, 3, 4, 5}, c[] = {3};
  char label[128];
  amd_tensor x = gc_tensor(dt, 4, d, -1, 3), s = gc_tensor(dt, 1, c, 0.5, 1.5),
             b = gc_tensor(dt, 1, c, -1, 1);
  amd_tensor *in[] = {&x, &s, &b};
  Onnx__AttributeProto *eps[] = {gc_attr_float("epsilon", 1e-3f)};
  snprintf(label, sizeof label, "InstanceNormalization-6 %s", dt_name(dt));
  gradcheck(label, "InstanceNormalization", 6, eps, 1, in, 3, 1, 7u, tol_for(dt));
  snprintf(label, sizeof label, "InstanceNormalization-22 default epsilon %s", dt_name(dt));
  gradcheck(label, "InstanceNormalization", 22, NULL, 0, in, 3, 1, 7u, tol_for(dt));
  gc_attrs_free(eps, 1);
  int64_t d3[] = {2, 3, 7};
  amd_tensor x3 = gc_tensor(dt, 3, d3, -1, 3), *in3[] = {&x3, &s, &b};
  snprintf(label, sizeof label, "InstanceNormalization-1 rank 3 %s", dt_name(dt));
  gradcheck(label, "InstanceNormalization", 1, NULL, 0, in3, 3, 1, 7u, tol_for(dt));
  amd_tensor *in1[] = {&x};
  snprintf(label, sizeof label, "MeanVarianceNormalization-13 default axes %s", dt_name(dt));
  gradcheck(label, "MeanVarianceNormalization", 13, NULL, 0, in1, 1, 1, 1u, tol_for(dt));
  int64_t axes[] = {-1, 1};
  Onnx__AttributeProto *ma[] = {gc_attr_ints("axes", 2, axes)};
  snprintf(label, sizeof label, "MeanVarianceNormalization-9 axes [-1,1] %s", dt_name(dt));
  gradcheck(label, "MeanVarianceNormalization", 9, ma, 1, in1, 1, 1, 1u, tol_for(dt));
  gc_attrs_free(ma, 1);
  amd_tensor xl = reduce_input("ReduceL1", dt, 4, d), *inl[] = {&xl};
  for (int p = 1; p <= 2; p++)
    for (int ax = -1; ax <= 1; ax += 2) {
      Onnx__AttributeProto *la[] = {gc_attr_int("p", p), gc_attr_int("axis", ax)};
      snprintf(label, sizeof label, "LpNormalization-%d p %d axis %d %s", ax < 0 ? 22 : 1, p, ax,
               dt_name(dt));
      gradcheck(label, "LpNormalization", ax < 0 ? 22 : 1, la, 2, inl, 1, 1, 1u, tol_for(dt));
      gc_attrs_free(la, 2);
    }
  amd_tensor *all[] = {&x, &s, &b, &x3, &xl};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

static void test_norm_values(void) {
  int64_t d[] = {1, 1, 4}, c[] = {1};
  double xv[] = {1, 2, 3, 6}, one = 1, zero = 0;
  amd_tensor x = vals(AMD_DOUBLE, 3, d, xv), s = vals(AMD_DOUBLE, 1, c, &one),
             b = vals(AMD_DOUBLE, 1, c, &zero);
  amd_tensor *in[] = {&x, &s, &b}, *in1[] = {&x};
  /* mean 3, variance 3.5 */
  double sd = sqrt(3.5), yi[] = {-2 / sd, -1 / sd, 0, 3 / sd};
  Onnx__AttributeProto *e0[] = {gc_attr_float("epsilon", 0)};
  check_values("InstanceNormalization-6 values (epsilon 0)", "InstanceNormalization", 6, e0, 1, in, 3, yi, 4,
               NULL);
  gc_attrs_free(e0, 1);
  int64_t ax[] = {2};
  Onnx__AttributeProto *m[] = {gc_attr_ints("axes", 1, ax)};
  double ym[] = {-2 / (sd + 1e-9), -1 / (sd + 1e-9), 0, 3 / (sd + 1e-9)};
  check_values("MeanVarianceNormalization-13 values", "MeanVarianceNormalization", 13, m, 1, in1, 1, ym, 4,
               NULL);
  gc_attrs_free(m, 1);
  double yl1[] = {1 / 12.0, 2 / 12.0, 3 / 12.0, 6 / 12.0}, n2 = sqrt(50.0);
  double yl2[] = {1 / n2, 2 / n2, 3 / n2, 6 / n2};
  Onnx__AttributeProto *p1[] = {gc_attr_int("p", 1)}, *p3[] = {gc_attr_int("p", 3)};
  check_values("LpNormalization-1 p 1 values", "LpNormalization", 1, p1, 1, in1, 1, yl1, 4, NULL);
  check_values("LpNormalization-22 p 2 values", "LpNormalization", 22, NULL, 0, in1, 1, yl2, 4, NULL);
  fwd_run r;
  fwd(&r, "LpNormalization", 22, p3, 1, in1, 1, 1);
  count(!r.ok && r.st.msg[0], "LpNormalization-22 p 3 refused", "accepted");
  if (r.ok)
    fwd_free(&r);
  else
    free(r.g.node.attrs);
  double z[] = {0, 0, 0, 0};
  amd_tensor x0 = vals(AMD_DOUBLE, 3, d, z), *in0[] = {&x0};
  check_values("LpNormalization-22 zero vector: 0, gradient 0", "LpNormalization", 22, NULL, 0, in0, 1, z, 4,
               z);
  gc_attrs_free(p1, 1);
  gc_attrs_free(p3, 1);
  amd_tensor *all[] = {&x, &s, &b, &x0};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* ---- backward accumulates: din pre-filled with 0.25 ends at gradient + 0.25 ---- */
static void check_acc(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                      amd_tensor **in, int n_in, unsigned mask) {
  fwd_run r;
  fwd(&r, op, opset, attrs, n_attrs, in, n_in, 1);
  int ok = r.ok;
  amd_tensor w = {0}, g0[3], g1[3];
  memset(g0, 0, sizeof g0);
  memset(g1, 0, sizeof g1);
  if (ok) w = gc_tensor(r.out[0].dtype, r.out[0].rank, r.out[0].dims, -1, 1);
  for (int pass = 0; ok && pass < 2; pass++) {
    amd_tensor *din[8] = {0}, *g = pass ? g1 : g0;
    for (int k = 0; k < n_in && k < 3; k++) {
      if (!((mask >> k) & 1)) continue;
      amd_tensor_set_shape(&g[k], in[k]->dtype, in[k]->rank, in[k]->dims);
      AMD_ASSERT(amd_tensor_alloc(&g[k], &r.st) == 0);
      for (int64_t i = 0; pass && i < amd_tensor_numel(&g[k]); i++) amd_tensor_set_f64(&g[k], i, 0.25);
      din[k] = &g[k];
    }
    const amd_tensor *dout[8] = {&w};
    amd_ctx ctx = {.training = 1};
    ok = r.g.node.op->backward(&r.g.node, &ctx, (const amd_tensor *const *)in, r.out, dout, din, &r.st) == 0;
  }
  for (int k = 0; ok && k < n_in && k < 3; k++)
    for (int64_t i = 0; ok && (mask >> k) & 1 && i < amd_tensor_numel(&g0[k]); i++)
      ok = fabs(amd_tensor_get_f64(&g1[k], i) - amd_tensor_get_f64(&g0[k], i) - 0.25) < 1e-9;
  count(ok, label, r.st.msg[0] ? r.st.msg : "does not accumulate");
  for (int k = 0; k < 3; k++) {
    amd_tensor_free(&g0[k]);
    amd_tensor_free(&g1[k]);
  }
  amd_tensor_free(&w);
  fwd_free(&r);
}

static void test_accumulation(void) {
  int64_t d[] = {2, 3, 4}, c[] = {3}, ax1[] = {1};
  amd_tensor x = reduce_input("ReduceL1", AMD_DOUBLE, 3, d),
             xp = reduce_input("ReduceProd", AMD_DOUBLE, 3, d);
  amd_tensor s = gc_tensor(AMD_DOUBLE, 1, c, 0.5, 1.5), b = gc_tensor(AMD_DOUBLE, 1, c, -1, 1);
  amd_tensor *in1[] = {&x}, *inp[] = {&xp}, *in3[] = {&x, &s, &b};
  Onnx__AttributeProto *a[] = {gc_attr_ints("axes", 1, ax1)};
  for (int r = 0; r < ARRAY_LEN(reductions); r++) {
    char label[96];
    snprintf(label, sizeof label, "%s-13 backward accumulates", reductions[r]);
    int logsum = strcmp(reductions[r], "ReduceLogSum") == 0 || strcmp(reductions[r], "ReduceProd") == 0;
    check_acc(label, reductions[r], 13, a, 1, logsum ? inp : in1, 1, 1u);
  }
  gc_attrs_free(a, 1);
  int64_t one = 1;
  amd_tensor ax = i64s(1, &one), *inc[] = {&x, &ax};
  check_acc("CumSum-14 backward accumulates", "CumSum", 14, NULL, 0, inc, 2, 1u);
  check_acc("InstanceNormalization-6 backward accumulates", "InstanceNormalization", 6, NULL, 0, in3, 3, 7u);
  int64_t axes[] = {0, 2};
  Onnx__AttributeProto *m[] = {gc_attr_ints("axes", 2, axes)};
  check_acc("MeanVarianceNormalization-13 backward accumulates", "MeanVarianceNormalization", 13, m, 1, in1,
            1, 1u);
  gc_attrs_free(m, 1);
  check_acc("LpNormalization-22 backward accumulates", "LpNormalization", 22, NULL, 0, in1, 1, 1u);
  amd_tensor *all[] = {&x, &xp, &s, &b, &ax};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

int main(void) {
  amd_dtype dts[] = {AMD_DOUBLE, AMD_FLOAT};
  for (int i = 0; i < ARRAY_LEN(dts); i++) {
    test_reduce_grads(dts[i]);
    test_hardmax_cumsum(dts[i]);
    test_norms(dts[i]);
  }
  test_reduce_values();
  test_arg();
  test_cumsum_values();
  test_norm_values();
  test_accumulation();
  return gc_summary();
}
