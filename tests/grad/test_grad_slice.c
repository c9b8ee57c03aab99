/* Checks of src/ops/slice.c (Slice, Split) and src/ops/expand.c (Expand,
 * Tile, ScatterND):
 * - finite differences of each backward (gradcheck.h for one output; Split's
 *   outputs all weighted in the loss, one of them without a gradient), in
 *   double (tolerance 1e-6) and float (h = 1e-2, tolerance 2e-2);
 * - backward accumulates (a second pass doubles the gradient);
 * - values worked out by hand: negative starts, steps -1 and 2, clamped
 *   ends, INT64_MIN / INT64_MAX bounds, axes omitted, Slice-1's attributes,
 *   Split's sizes (num_outputs 3 over 7: 3, 3, 1), Expand both ways, Tile,
 *   ScatterND with each reduction (float and int64), and int64 / bool data;
 * - bad inputs fail with a message, never crash: a zero step, starts and
 *   ends of different lengths, repeated axes, splits that do not add up,
 *   ScatterND indices out of range or of the wrong shape, Expand to an
 *   incompatible shape, negative repeats, ScatterND backward with mul. */
#include "gradcheck.h"

#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static double tol_for(amd_dtype dt) { return dt == AMD_DOUBLE ? 1e-6 : 2e-2; }
static const char *dt_name(amd_dtype dt) { return dt == AMD_DOUBLE ? "double" : "float"; }

static void count(int ok) { ok ? gc_passed++ : gc_failed++; }

/* A 1-D tensor of dtype dt holding v[0..n). */
static amd_tensor ints(amd_dtype dt, int n, const int64_t *v) {
  int64_t dims[1] = {n};
  amd_tensor t = gc_tensor(dt, 1, dims, 0, 0);
  for (int i = 0; i < n; i++) amd_tensor_set_i64(&t, i, v[i]);
  return t;
}

/* A tensor of dtype dt and the given shape holding 0, 1, 2, ... */
static amd_tensor iota(amd_dtype dt, int rank, const int64_t *dims) {
  amd_tensor t = gc_tensor(dt, rank, dims, 0, 0);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) amd_tensor_set_i64(&t, i, i);
  return t;
}

/* Binds and runs one node (infer, forward) into out; 0 or -1 with st set.
 * The caller frees out (n_out tensors) and g->node.attrs. */
static int run_node(gc_node *g, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                    amd_tensor **in, int n_in, int n_out, amd_tensor *out, amd_status *st) {
  memset(out, 0, 8 * sizeof *out);
  if (gc_bind(g, op, opset, attrs, n_attrs, in, n_in, n_out, st)) return -1;
  return gc_forward(&g->node, in, out, NULL, NULL, st);
}

/* Output k has the shape dims (rank) and the values want. */
static int check_out(const char *label, const amd_tensor *out, int k, int rank, const int64_t *dims,
                     const double *want) {
  const amd_tensor *t = &out[k];
  int ok = t->rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = t->dims[i] == dims[i];
  if (!ok) {
    char sb[128];
    printf("FAIL %s: output %d has shape %s\n", label, k, amd_shape_str(t, sb, sizeof sb));
    return 0;
  }
  for (int64_t i = 0; i < amd_tensor_numel(t); i++)
    if (amd_tensor_get_f64(t, i) != want[i]) {
      printf("FAIL %s: output %d [%lld] = %g, expected %g\n", label, k, (long long)i, amd_tensor_get_f64(t, i),
             want[i]);
      return 0;
    }
  return 1;
}

/* One node's single output against shape and values. */
static void expect(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                   amd_tensor **in, int n_in, int rank, const int64_t *dims, const double *want) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8];
  int ok = run_node(&g, op, opset, attrs, n_attrs, in, n_in, 1, out, &st) == 0;
  if (!ok) printf("FAIL %s: %s\n", label, st.msg);
  ok = ok && check_out(label, out, 0, rank, dims, want);
  if (ok) printf("ok   %s\n", label);
  count(ok);
  gc_free_outs(out, 1);
  free(g.node.attrs);
}

/* The node must fail (bind, infer, forward, or backward when bwd) with a message. */
static void expect_fail(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                        amd_tensor **in, int n_in, int n_out, int bwd) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8];
  int rc = run_node(&g, op, opset, attrs, n_attrs, in, n_in, n_out, out, &st);
  if (rc == 0 && bwd) {
    amd_tensor d = {0}, *din[8] = {&d};
    amd_tensor_set_shape(&d, in[0]->dtype, in[0]->rank, in[0]->dims);
    AMD_ASSERT(amd_tensor_alloc(&d, &st) == 0);
    const amd_tensor *dout[8] = {&out[0]};
    amd_ctx ctx = {.training = 1};
    rc = g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st);
    amd_tensor_free(&d);
  }
  int ok = rc != 0 && st.msg[0];
  if (ok)
    printf("ok   %s: fails: %s\n", label, st.msg);
  else
    printf("FAIL %s: %s\n", label, rc ? "failed without a message" : "did not fail");
  count(ok);
  gc_free_outs(out, n_out);
  free(g.node.attrs);
}

/* ---- finite differences ---- */

static void check_slice_grads(amd_dtype dt) {
  char label[96];
  int64_t xd[4] = {3, 4, 5, 6};
  amd_tensor x = gc_tensor(dt, 4, xd, -1, 1);
  /* steps -1, 2, -2, a clamped end and negative starts */
  int64_t s[3] = {-1, 1, 4}, e[3] = {INT64_MIN, 100, 0}, ax[3] = {1, 3, -2}, st[3] = {-1, 2, -2};
  amd_tensor ts = ints(AMD_INT64, 3, s), te = ints(AMD_INT64, 3, e), ta = ints(AMD_INT64, 3, ax),
             tp = ints(AMD_INT64, 3, st), *in[5] = {&x, &ts, &te, &ta, &tp};
  snprintf(label, sizeof label, "Slice-13 steps -1, 2, -2 %s", dt_name(dt));
  gradcheck(label, "Slice", 13, NULL, 0, in, 5, 1, 1u, tol_for(dt));
  /* axes and steps omitted */
  int64_t s2[2] = {1, -3}, e2[2] = {3, -1};
  amd_tensor u = ints(AMD_INT32, 2, s2), v = ints(AMD_INT32, 2, e2), *in2[3] = {&x, &u, &v};
  snprintf(label, sizeof label, "Slice-10 axes omitted, int32 %s", dt_name(dt));
  gradcheck(label, "Slice", 10, NULL, 0, in2, 3, 1, 1u, tol_for(dt));
  /* version 1: attributes */
  Onnx__AttributeProto *a[3] = {gc_attr_ints("starts", 2, s2), gc_attr_ints("ends", 2, e2),
                                gc_attr_ints("axes", 2, (int64_t[]){0, 2})};
  snprintf(label, sizeof label, "Slice-1 attributes %s", dt_name(dt));
  gradcheck(label, "Slice", 1, a, 3, in, 1, 1, 1u, tol_for(dt));
  gc_attrs_free(a, 3);
  amd_tensor *all[] = {&x, &ts, &te, &ta, &tp, &u, &v};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* Split: L = sum_k sum w_k * out_k over the outputs in wmask; outputs not in
 * it get no gradient (dout NULL). dX against central differences. */
static void check_split(const char *label, int opset, Onnx__AttributeProto **attrs, int n_attrs, amd_tensor **in,
                        int n_in, int n_out, unsigned wmask) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8], w[8], dx = {0};
  memset(w, 0, sizeof w);
  if (run_node(&g, "Split", opset, attrs, n_attrs, in, n_in, n_out, out, &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    count(0);
    free(g.node.attrs);
    return;
  }
  const amd_tensor *dout[8] = {0};
  for (int k = 0; k < n_out; k++)
    if ((wmask >> k) & 1) {
      w[k] = gc_tensor(out[k].dtype, out[k].rank, out[k].dims, -1, 1);
      dout[k] = &w[k];
    }
  amd_tensor *x = in[0], *din[8] = {&dx};
  amd_tensor_set_shape(&dx, x->dtype, x->rank, x->dims);
  AMD_ASSERT(amd_tensor_alloc(&dx, &st) == 0);
  amd_ctx ctx = {.training = 1};
  int ok = g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st) == 0;
  if (!ok) printf("FAIL %s: backward: %s\n", label, st.msg);
  gc_free_outs(out, n_out);
  double h = x->dtype == AMD_DOUBLE ? 1e-5 : 1e-2, worst = 0;
  for (int64_t i = 0; ok && i < amd_tensor_numel(x); i++) {
    double x0 = amd_tensor_get_f64(x, i), l[2];
    for (int side = 0; side < 2; side++) {
      amd_tensor_set_f64(x, i, side ? x0 - h : x0 + h);
      AMD_ASSERT(gc_forward(&g.node, in, out, NULL, NULL, &st) == 0);
      l[side] = 0;
      for (int k = 0; k < n_out; k++)
        for (int64_t j = 0; dout[k] && j < amd_tensor_numel(&out[k]); j++)
          l[side] += amd_tensor_get_f64(&w[k], j) * amd_tensor_get_f64(&out[k], j);
      gc_free_outs(out, n_out);
    }
    amd_tensor_set_f64(x, i, x0);
    double num = (l[0] - l[1]) / (2 * h), ana = amd_tensor_get_f64(&dx, i);
    double err = fabs(num - ana) / (1 + fabs(num));
    worst = fmax(worst, err);
    if (err > tol_for(x->dtype)) {
      printf("FAIL %s: dX[%lld]: backward %.6g, finite difference %.6g\n", label, (long long)i, ana, num);
      ok = 0;
    }
  }
  if (ok) printf("ok   %s: %lld elements, max rel err %.2e\n", label, (long long)amd_tensor_numel(x), worst);
  count(ok);
  for (int k = 0; k < 8; k++) amd_tensor_free(&w[k]);
  amd_tensor_free(&dx);
  free(g.node.attrs);
}

static void check_split_grads(amd_dtype dt) {
  char label[96];
  int64_t xd[3] = {2, 7, 3};
  amd_tensor x = gc_tensor(dt, 3, xd, -1, 1), *in1[1] = {&x};
  Onnx__AttributeProto *a[2] = {gc_attr_int("axis", -2), gc_attr_int("num_outputs", 3)};
  snprintf(label, sizeof label, "Split-18 num_outputs 3 over 7, all outputs %s", dt_name(dt));
  check_split(label, 18, a, 2, in1, 1, 3, 7u);
  snprintf(label, sizeof label, "Split-18 num_outputs 3, no gradient for output 1 %s", dt_name(dt));
  check_split(label, 18, a, 2, in1, 1, 3, 5u);
  gc_attrs_free(a, 2);
  int64_t parts[3] = {1, 0, 6};
  amd_tensor sp = ints(AMD_INT64, 3, parts), *in2[2] = {&x, &sp};
  Onnx__AttributeProto *b[1] = {gc_attr_int("axis", 1)};
  snprintf(label, sizeof label, "Split-13 split 1, 0, 6 (input) %s", dt_name(dt));
  check_split(label, 13, b, 1, in2, 2, 3, 7u);
  gc_attrs_free(b, 1);
  Onnx__AttributeProto *c[2] = {gc_attr_int("axis", 1), gc_attr_ints("split", 2, (int64_t[]){4, 3})};
  snprintf(label, sizeof label, "Split-11 split 4, 3 (attribute) %s", dt_name(dt));
  check_split(label, 11, c, 2, in1, 1, 2, 3u);
  snprintf(label, sizeof label, "Split-2 split 4, 3 (attribute) %s", dt_name(dt));
  check_split(label, 2, c, 2, in1, 1, 2, 3u);
  gc_attrs_free(c, 2);
  amd_tensor_free(&x);
  amd_tensor_free(&sp);
}

static void check_bcast_grads(amd_dtype dt) {
  char label[96];
  /* Expand both ways: [3,1,4] with shape [2,1,5,1] -> [2,3,5,4] */
  int64_t xd[3] = {3, 1, 4}, shp[4] = {2, 1, 5, 1};
  amd_tensor x = gc_tensor(dt, 3, xd, -1, 1), s = ints(AMD_INT64, 4, shp), *in[2] = {&x, &s};
  snprintf(label, sizeof label, "Expand-13 [3,1,4] by [2,1,5,1] %s", dt_name(dt));
  gradcheck(label, "Expand", 13, NULL, 0, in, 2, 1, 1u, tol_for(dt));
  snprintf(label, sizeof label, "Expand-8 [3,1,4] by [2,1,5,1] %s", dt_name(dt));
  gradcheck(label, "Expand", 8, NULL, 0, in, 2, 1, 1u, tol_for(dt));
  int64_t same[1] = {4};
  amd_tensor s1 = ints(AMD_INT64, 1, same), *in1[2] = {&x, &s1};
  snprintf(label, sizeof label, "Expand-13 to its own shape %s", dt_name(dt));
  gradcheck(label, "Expand", 13, NULL, 0, in1, 2, 1, 1u, tol_for(dt));
  /* a scalar expanded to [2,3] */
  int64_t shp23[2] = {2, 3};
  amd_tensor sc = gc_tensor(dt, 0, NULL, -1, 1), s23 = ints(AMD_INT64, 2, shp23), *scin[2] = {&sc, &s23};
  snprintf(label, sizeof label, "Expand-13 scalar to [2,3] %s", dt_name(dt));
  gradcheck(label, "Expand", 13, NULL, 0, scin, 2, 1, 1u, tol_for(dt));
  amd_tensor_free(&sc);
  amd_tensor_free(&s23);
  /* Tile [3,1,4] by [2,3,1] and a 1-D tile */
  int64_t reps[3] = {2, 3, 1}, r1[1] = {3}, vd[1] = {5};
  amd_tensor r = ints(AMD_INT64, 3, reps), *tin[2] = {&x, &r};
  snprintf(label, sizeof label, "Tile-13 [3,1,4] by 2, 3, 1 %s", dt_name(dt));
  gradcheck(label, "Tile", 13, NULL, 0, tin, 2, 1, 1u, tol_for(dt));
  amd_tensor v = gc_tensor(dt, 1, vd, -1, 1), rr = ints(AMD_INT64, 1, r1), *vin[2] = {&v, &rr};
  snprintf(label, sizeof label, "Tile-6 [5] by 3 %s", dt_name(dt));
  gradcheck(label, "Tile", 6, NULL, 0, vin, 2, 1, 1u, tol_for(dt));
  amd_tensor *all[] = {&x, &s, &s1, &r, &v, &rr};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

static void check_scatternd_grads(amd_dtype dt) {
  char label[96];
  int64_t xd[3] = {4, 3, 2};
  amd_tensor x = gc_tensor(dt, 3, xd, -1, 1);
  /* slices data[i] (k = 1): indices 2, -1, 0 */
  int64_t idd[2] = {3, 1}, iv[3] = {2, -1, 0}, ud[3] = {3, 3, 2};
  amd_tensor idx = gc_tensor(AMD_INT64, 2, idd, 0, 0), u = gc_tensor(dt, 3, ud, -1, 1);
  for (int i = 0; i < 3; i++) amd_tensor_set_i64(&idx, i, iv[i]);
  amd_tensor *in[3] = {&x, &idx, &u};
  snprintf(label, sizeof label, "ScatterND-11 slices %s", dt_name(dt));
  gradcheck(label, "ScatterND", 11, NULL, 0, in, 3, 1, 5u, tol_for(dt));
  /* elements (k = 3) with a repeated index: last one wins (none), both add (add) */
  int64_t ed[2] = {3, 3}, ev[9] = {1, 2, 0, 3, 0, 1, 1, 2, 0}, ud1[1] = {3};
  amd_tensor eidx = gc_tensor(AMD_INT64, 2, ed, 0, 0), eu = gc_tensor(dt, 1, ud1, -1, 1);
  for (int i = 0; i < 9; i++) amd_tensor_set_i64(&eidx, i, ev[i]);
  amd_tensor *ein[3] = {&x, &eidx, &eu};
  snprintf(label, sizeof label, "ScatterND-13 elements, repeated index %s", dt_name(dt));
  gradcheck(label, "ScatterND", 13, NULL, 0, ein, 3, 1, 5u, tol_for(dt));
  Onnx__AttributeProto *a[1] = {gc_attr_string("reduction", "add")};
  snprintf(label, sizeof label, "ScatterND-16 add, repeated index %s", dt_name(dt));
  gradcheck(label, "ScatterND", 16, a, 1, ein, 3, 1, 5u, tol_for(dt));
  snprintf(label, sizeof label, "ScatterND-18 add slices %s", dt_name(dt));
  gradcheck(label, "ScatterND", 18, a, 1, in, 3, 1, 5u, tol_for(dt));
  gc_attrs_free(a, 1);
  amd_tensor *all[] = {&x, &idx, &u, &eidx, &eu};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* Backward adds: two passes into one buffer give twice one pass. */
static void check_accumulates(const char *label, const char *op, int opset, amd_tensor **in, int n_in) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8], once = {0}, twice = {0};
  int ok = run_node(&g, op, opset, NULL, 0, in, n_in, 1, out, &st) == 0;
  amd_tensor w = gc_tensor(out[0].dtype, out[0].rank, out[0].dims, -1, 1);
  const amd_tensor *dout[8] = {&w};
  amd_ctx ctx = {.training = 1};
  for (int pass = 1; ok && pass <= 2; pass++) {
    amd_tensor *t = pass == 1 ? &once : &twice, *din[8] = {t};
    amd_tensor_set_shape(t, in[0]->dtype, in[0]->rank, in[0]->dims);
    AMD_ASSERT(amd_tensor_alloc(t, &st) == 0);
    for (int rep = 0; ok && rep < pass; rep++)
      ok = g.node.op->backward(&g.node, &ctx, (const amd_tensor *const *)in, out, dout, din, &st) == 0;
  }
  for (int64_t i = 0; ok && i < amd_tensor_numel(&once); i++)
    if (amd_tensor_get_f64(&twice, i) != 2 * amd_tensor_get_f64(&once, i)) {
      printf("FAIL %s: [%lld] %g after two passes, %g after one\n", label, (long long)i,
             amd_tensor_get_f64(&twice, i), amd_tensor_get_f64(&once, i));
      ok = 0;
    }
  if (ok) printf("ok   %s: accumulates\n", label);
  else if (!st.msg[0]) printf("FAIL %s\n", label);
  else printf("FAIL %s: %s\n", label, st.msg);
  count(ok);
  gc_free_outs(out, 1);
  amd_tensor_free(&w);
  amd_tensor_free(&once);
  amd_tensor_free(&twice);
  free(g.node.attrs);
}

static void test_accumulation(void) {
  int64_t xd[3] = {3, 1, 4}, s[2] = {-2, 0}, e[2] = {INT64_MAX, 3}, shp[4] = {2, 3, 5, 4}, reps[3] = {2, 2, 1};
  amd_tensor x = gc_tensor(AMD_DOUBLE, 3, xd, -1, 1), ts = ints(AMD_INT64, 2, s), te = ints(AMD_INT64, 2, e);
  amd_tensor sh = ints(AMD_INT64, 4, shp), rp = ints(AMD_INT64, 3, reps);
  amd_tensor *sl[3] = {&x, &ts, &te}, *ex[2] = {&x, &sh}, *ti[2] = {&x, &rp};
  check_accumulates("Slice-13", "Slice", 13, sl, 3);
  check_accumulates("Expand-13", "Expand", 13, ex, 2);
  check_accumulates("Tile-13", "Tile", 13, ti, 2);
  amd_tensor *all[] = {&x, &ts, &te, &sh, &rp};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* ---- values ---- */

static void test_slice_values(void) {
  int64_t d[1] = {10}, d2[2] = {3, 4};
  amd_tensor x = iota(AMD_FLOAT, 1, d), m = iota(AMD_FLOAT, 2, d2);
  struct {
    const char *label;
    int64_t start, end, step;
    int n;
    double want[10];
  } c[] = {
      {"Slice-13 start -3 (negative)", -3, 10, 1, 3, {7, 8, 9}},
      {"Slice-13 step -1 from the end to INT64_MIN", -1, INT64_MIN, -1, 10, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {"Slice-13 step 2, end 100 clamped", 1, 100, 2, 5, {1, 3, 5, 7, 9}},
      {"Slice-13 step -3, start 100 clamped", 100, -100, -3, 4, {9, 6, 3, 0}},
      {"Slice-13 start -100 clamped, end INT64_MAX", -100, INT64_MAX, 4, 3, {0, 4, 8}},
      {"Slice-13 empty (start after end)", 7, 3, 1, 0, {0}},
      {"Slice-13 step -1, end -1 + 10 = 9: empty", 5, -1, -1, 0, {0}},
      {"Slice-13 step INT64_MAX", 2, 10, INT64_MAX, 1, {2}},
      {"Slice-13 step INT64_MIN", 8, INT64_MIN, INT64_MIN, 1, {8}},
  };
  for (int i = 0; i < ARRAY_LEN(c); i++) {
    amd_tensor s = ints(AMD_INT64, 1, &c[i].start), e = ints(AMD_INT64, 1, &c[i].end),
               a = ints(AMD_INT64, 1, (int64_t[]){0}), p = ints(AMD_INT64, 1, &c[i].step);
    amd_tensor *in[5] = {&x, &s, &e, &a, &p};
    int64_t od[1] = {c[i].n};
    expect(c[i].label, "Slice", 13, NULL, 0, in, 5, 1, od, c[i].want);
    amd_tensor *all[] = {&s, &e, &a, &p};
    for (int k = 0; k < 4; k++) amd_tensor_free(all[k]);
  }
  /* axes omitted, 2-D: rows 1.., columns -3..-1 */
  {
    int64_t s[2] = {1, -3}, e[2] = {INT64_MAX, -1}, od[2] = {2, 2};
    amd_tensor ts = ints(AMD_INT64, 2, s), te = ints(AMD_INT64, 2, e), *in[3] = {&m, &ts, &te};
    const double want[4] = {5, 6, 9, 10};
    expect("Slice-10 axes omitted [3,4]", "Slice", 10, NULL, 0, in, 3, 2, od, want);
    /* Slice-1: the same from attributes, negative axis (-1 only: columns) */
    Onnx__AttributeProto *a[3] = {gc_attr_ints("starts", 1, (int64_t[]){-3}),
                                  gc_attr_ints("ends", 1, (int64_t[]){-1}), gc_attr_ints("axes", 1, (int64_t[]){1})};
    int64_t od1[2] = {3, 2};
    const double w1[6] = {1, 2, 5, 6, 9, 10};
    expect("Slice-1 attributes, columns 1..2", "Slice", 1, a, 3, in, 1, 2, od1, w1);
    gc_attrs_free(a, 3);
    /* negative axis and step -2 on both axes */
    int64_t s2[2] = {-1, 3}, e2[2] = {-100, -100}, ax[2] = {-1, 0}, st2[2] = {-2, -2}, od2[2] = {2, 2};
    amd_tensor u = ints(AMD_INT64, 2, s2), v = ints(AMD_INT64, 2, e2), w = ints(AMD_INT64, 2, ax),
               q = ints(AMD_INT64, 2, st2), *in4[5] = {&m, &u, &v, &w, &q};
    const double w2[4] = {11, 9, 3, 1};
    expect("Slice-11 axes -1, 0 with steps -2 (rows clamp to 2)", "Slice", 11, NULL, 0, in4, 5, 2, od2, w2);
    amd_tensor *all[] = {&ts, &te, &u, &v, &w, &q};
    for (int k = 0; k < ARRAY_LEN(all); k++) amd_tensor_free(all[k]);
  }
  /* int64 and bool data (shape tensors): forward on the host */
  {
    int64_t sh[4] = {8, 3, 224, 224}, s = -2, e = INT64_MAX, od[1] = {2};
    amd_tensor t = ints(AMD_INT64, 4, sh), ts = ints(AMD_INT64, 1, &s), te = ints(AMD_INT64, 1, &e);
    amd_tensor *in[3] = {&t, &ts, &te};
    const double want[2] = {224, 224};
    expect("Slice-13 int64 shape [-2:]", "Slice", 13, NULL, 0, in, 3, 1, od, want);
    int64_t bv[4] = {1, 0, 0, 1};
    amd_tensor b = ints(AMD_BOOL, 4, bv), *inb[3] = {&b, &ts, &te};
    const double wb[2] = {0, 1};
    expect("Slice-13 bool [-2:]", "Slice", 13, NULL, 0, inb, 3, 1, od, wb);
    amd_tensor *all[] = {&t, &ts, &te, &b};
    for (int k = 0; k < ARRAY_LEN(all); k++) amd_tensor_free(all[k]);
  }
  amd_tensor_free(&x);
  amd_tensor_free(&m);
}

static void test_split_values(void) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8];
  int64_t d[1] = {7};
  amd_tensor x = iota(AMD_FLOAT, 1, d), *in[1] = {&x};
  Onnx__AttributeProto *a[1] = {gc_attr_int("num_outputs", 3)};
  int ok = run_node(&g, "Split", 18, a, 1, in, 1, 3, out, &st) == 0;
  if (!ok) printf("FAIL Split-18 num_outputs 3 over 7: %s\n", st.msg);
  const double w0[3] = {0, 1, 2}, w1[3] = {3, 4, 5}, w2[1] = {6};
  int64_t three[1] = {3}, one[1] = {1};
  ok = ok && check_out("Split-18 num_outputs 3 over 7", out, 0, 1, three, w0) &&
       check_out("Split-18 num_outputs 3 over 7", out, 1, 1, three, w1) &&
       check_out("Split-18 num_outputs 3 over 7", out, 2, 1, one, w2);
  if (ok) printf("ok   Split-18 num_outputs 3 over 7: 3, 3, 1\n");
  count(ok);
  gc_free_outs(out, 3);
  free(g.node.attrs);
  gc_attrs_free(a, 1);
  /* version 18 without num_outputs or split: as many parts as outputs, the last smaller */
  ok = run_node(&g, "Split", 18, NULL, 0, in, 1, 2, out, &st) == 0;
  int64_t four[1] = {4};
  const double v0[4] = {0, 1, 2, 3}, v1[3] = {4, 5, 6};
  ok = ok && check_out("Split-18 two outputs over 7", out, 0, 1, four, v0) &&
       check_out("Split-18 two outputs over 7", out, 1, 1, three, v1);
  if (ok) printf("ok   Split-18 two outputs over 7: 4, 3\n");
  else if (st.msg[0]) printf("FAIL Split-18 two outputs over 7: %s\n", st.msg);
  count(ok);
  gc_free_outs(out, 2);
  free(g.node.attrs);
  /* version 1: split as the second input; int64 data */
  int64_t sh[3] = {10, 20, 30}, parts[2] = {1, 2};
  amd_tensor t = ints(AMD_INT64, 3, sh), p = ints(AMD_INT64, 2, parts), *in2[2] = {&t, &p};
  ok = run_node(&g, "Split", 1, NULL, 0, in2, 2, 2, out, &st) == 0;
  int64_t two[1] = {2};
  const double s0[1] = {10}, s1[2] = {20, 30};
  ok = ok && check_out("Split-1 split input, int64", out, 0, 1, one, s0) &&
       check_out("Split-1 split input, int64", out, 1, 1, two, s1);
  if (ok) printf("ok   Split-1 split input, int64: [10], [20, 30]\n");
  else if (st.msg[0]) printf("FAIL Split-1 split input, int64: %s\n", st.msg);
  count(ok);
  gc_free_outs(out, 2);
  free(g.node.attrs);
  amd_tensor_free(&x);
  amd_tensor_free(&t);
  amd_tensor_free(&p);
}

static void test_bcast_values(void) {
  /* Expand [3,1] by [2,1,4]: rows repeated along the new axes */
  int64_t xd[2] = {3, 1}, shp[3] = {2, 1, 4}, od[3] = {2, 3, 4};
  amd_tensor x = iota(AMD_FLOAT, 2, xd), s = ints(AMD_INT64, 3, shp), *in[2] = {&x, &s};
  double want[24];
  for (int i = 0; i < 24; i++) want[i] = (i / 4) % 3;
  expect("Expand-13 [3,1] by [2,1,4]", "Expand", 13, NULL, 0, in, 2, 3, od, want);
  /* a shape shorter than the input, with a 1 where the input is larger */
  int64_t shp2[1] = {1}, od2[2] = {3, 1};
  amd_tensor s2 = ints(AMD_INT64, 1, shp2), *in2[2] = {&x, &s2};
  const double w2[3] = {0, 1, 2};
  expect("Expand-8 [3,1] by [1] (keeps the input)", "Expand", 8, NULL, 0, in2, 2, 2, od2, w2);
  /* int64 data */
  int64_t v[2] = {5, 7}, shp3[2] = {2, 2}, od3[2] = {2, 2};
  amd_tensor t = ints(AMD_INT64, 2, v), s3 = ints(AMD_INT64, 2, shp3), *in3[2] = {&t, &s3};
  const double w3[4] = {5, 7, 5, 7};
  expect("Expand-13 int64 [2] by [2,2]", "Expand", 13, NULL, 0, in3, 2, 2, od3, w3);
  /* Tile [2,3] by [2,2] */
  int64_t td[2] = {2, 3}, reps[2] = {2, 2}, od4[2] = {4, 6};
  amd_tensor m = iota(AMD_FLOAT, 2, td), r = ints(AMD_INT64, 2, reps), *in4[2] = {&m, &r};
  const double w4[24] = {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5};
  expect("Tile-13 [2,3] by 2, 2", "Tile", 13, NULL, 0, in4, 2, 2, od4, w4);
  /* Tile bool by 0 along one axis: empty */
  int64_t bv[3] = {1, 0, 1}, reps0[1] = {0}, od5[1] = {0};
  amd_tensor b = ints(AMD_BOOL, 3, bv), r0 = ints(AMD_INT64, 1, reps0), *in5[2] = {&b, &r0};
  expect("Tile-6 bool by 0: empty", "Tile", 6, NULL, 0, in5, 2, 1, od5, NULL);
  int64_t reps2[1] = {2}, od6[1] = {6};
  amd_tensor r2 = ints(AMD_INT64, 1, reps2), *in6[2] = {&b, &r2};
  const double w6[6] = {1, 0, 1, 1, 0, 1};
  expect("Tile-6 bool by 2", "Tile", 6, NULL, 0, in6, 2, 1, od6, w6);
  amd_tensor *all[] = {&x, &s, &s2, &t, &s3, &m, &r, &b, &r0, &r2};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

static void test_scatternd_values(void) {
  /* data [4,2] = 0..7, indices [[1],[3],[1]], updates [[10,-1],[20,30],[-5,40]] */
  int64_t dd[2] = {4, 2}, id[2] = {3, 1}, iv[3] = {1, 3, 1}, ud[2] = {3, 2};
  const double uv[6] = {10, -1, 20, 30, -5, 40};
  static const struct {
    const char *red;
    int opset;
    double want[8];
  } c[] = {
      {"add", 16, {0, 1, 7, 42, 4, 5, 26, 37}},
      {"mul", 16, {0, 1, -100, -120, 4, 5, 120, 210}},
      {"max", 18, {0, 1, 10, 40, 4, 5, 20, 30}},
      {"min", 18, {0, 1, -5, -1, 4, 5, 6, 7}},
  };
  amd_dtype dts[2] = {AMD_FLOAT, AMD_INT64};
  for (int t = 0; t < 2; t++) {
    amd_tensor x = iota(dts[t], 2, dd), idx = iota(AMD_INT64, 2, id), u = iota(dts[t], 2, ud);
    for (int i = 0; i < 3; i++) amd_tensor_set_i64(&idx, i, iv[i]);
    for (int i = 0; i < 6; i++) amd_tensor_set_f64(&u, i, uv[i]);
    amd_tensor *in[3] = {&x, &idx, &u};
    for (int k = 0; k < ARRAY_LEN(c); k++) {
      char label[96];
      snprintf(label, sizeof label, "ScatterND-%d %s %s", c[k].opset, c[k].red, amd_dtype_name(dts[t]));
      Onnx__AttributeProto *a[1] = {gc_attr_string("reduction", c[k].red)};
      expect(label, "ScatterND", c[k].opset, a, 1, in, 3, 2, dd, c[k].want);
      gc_attrs_free(a, 1);
    }
    /* none, no repeats: indices [[-1],[0]] */
    amd_tensor i2 = iota(AMD_INT64, 2, (int64_t[]){2, 1}), u2 = iota(dts[t], 2, (int64_t[]){2, 2});
    amd_tensor_set_i64(&i2, 0, -1);
    amd_tensor_set_i64(&i2, 1, 0);
    amd_tensor *in2[3] = {&x, &i2, &u2};
    const double w[8] = {2, 3, 2, 3, 4, 5, 0, 1};
    char label[96];
    snprintf(label, sizeof label, "ScatterND-11 none, index -1 %s", amd_dtype_name(dts[t]));
    expect(label, "ScatterND", 11, NULL, 0, in2, 3, 2, dd, w);
    amd_tensor *all[] = {&x, &idx, &u, &i2, &u2};
    for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
  }
  /* bool data, element indices (k = 2) */
  int64_t bd[2] = {2, 2}, bi[2] = {1, 2}, bvals[4] = {0, 0, 0, 0}, one[1] = {1};
  amd_tensor b = ints(AMD_BOOL, 4, bvals), bidx = ints(AMD_INT64, 2, bi), bu = ints(AMD_BOOL, 1, one);
  amd_tensor_set_shape(&b, AMD_BOOL, 2, bd);
  amd_tensor_set_shape(&bidx, AMD_INT64, 2, (int64_t[]){1, 2});
  amd_tensor_set_i64(&bidx, 0, 1);
  amd_tensor_set_i64(&bidx, 1, 0);
  amd_tensor *bin[3] = {&b, &bidx, &bu};
  const double wb[4] = {0, 0, 1, 0};
  expect("ScatterND-13 bool element [1,0]", "ScatterND", 13, NULL, 0, bin, 3, 2, bd, wb);
  amd_tensor_free(&b);
  amd_tensor_free(&bidx);
  amd_tensor_free(&bu);
}

/* ---- bad inputs ---- */

static void test_bad_inputs(void) {
  int64_t xd[2] = {3, 4};
  amd_tensor x = gc_tensor(AMD_FLOAT, 2, xd, -1, 1);
  int64_t z[1] = {0}, one[1] = {1}, two[2] = {0, 1}, three[1] = {3}, rep[2] = {0, 0};
  amd_tensor t0 = ints(AMD_INT64, 1, z), t1 = ints(AMD_INT64, 1, one), t2 = ints(AMD_INT64, 2, two),
             t3 = ints(AMD_INT64, 1, three), rr = ints(AMD_INT64, 2, rep);
  { /* Slice */
    amd_tensor *zs[5] = {&x, &t0, &t3, &t0, &t0};
    expect_fail("Slice-13 step 0", "Slice", 13, NULL, 0, zs, 5, 1, 0);
    amd_tensor *ml[3] = {&x, &t0, &t2};
    expect_fail("Slice-13 starts of 1, ends of 2", "Slice", 13, NULL, 0, ml, 3, 1, 0);
    amd_tensor *ra[4] = {&x, &t2, &t2, &rr};
    expect_fail("Slice-13 axis 0 repeated", "Slice", 13, NULL, 0, ra, 4, 1, 0);
    int64_t ax5[1] = {5};
    amd_tensor t5 = ints(AMD_INT64, 1, ax5), *ba[4] = {&x, &t0, &t1, &t5};
    expect_fail("Slice-13 axis 5 of rank 2", "Slice", 13, NULL, 0, ba, 4, 1, 0);
    amd_tensor_free(&t5);
    amd_tensor s3 = ints(AMD_INT64, 3, (int64_t[]){0, 0, 0}), *many[3] = {&x, &s3, &s3};
    expect_fail("Slice-13 three starts, axes omitted, rank 2", "Slice", 13, NULL, 0, many, 3, 1, 0);
    amd_tensor_free(&s3);
    amd_tensor *miss[2] = {&x, &t0};
    expect_fail("Slice-13 without ends", "Slice", 13, NULL, 0, miss, 2, 1, 0);
    Onnx__AttributeProto *a[1] = {gc_attr_ints("starts", 1, z)};
    expect_fail("Slice-1 without ends attribute", "Slice", 1, a, 1, miss, 1, 1, 0);
    gc_attrs_free(a, 1);
    amd_tensor fs = gc_tensor(AMD_FLOAT, 1, one, 0, 1), *fl[3] = {&x, &fs, &fs};
    expect_fail("Slice-13 float starts", "Slice", 13, NULL, 0, fl, 3, 1, 0);
    amd_tensor_free(&fs);
  }
  { /* Split */
    amd_tensor *in1[1] = {&x};
    Onnx__AttributeProto *a[1] = {gc_attr_int("axis", 0)};
    expect_fail("Split-13 axis of 3 into 2 equal parts", "Split", 13, a, 1, in1, 1, 2, 0);
    gc_attrs_free(a, 1);
    amd_tensor sp = ints(AMD_INT64, 2, (int64_t[]){1, 1}), *in2[2] = {&x, &sp};
    expect_fail("Split-13 split 1, 1 over 3", "Split", 13, NULL, 0, in2, 2, 2, 0);
    amd_tensor_free(&sp);
    amd_tensor sn = ints(AMD_INT64, 2, (int64_t[]){5, -1}), *in3[2] = {&x, &sn};
    Onnx__AttributeProto *ax1[1] = {gc_attr_int("axis", 1)};
    expect_fail("Split-13 split 5, -1 over 4", "Split", 13, ax1, 1, in3, 2, 2, 0);
    gc_attrs_free(ax1, 1);
    amd_tensor_free(&sn);
    Onnx__AttributeProto *b[1] = {gc_attr_int("num_outputs", 3)};
    expect_fail("Split-18 num_outputs 3 on a 2-output node", "Split", 18, b, 1, in1, 1, 2, 0);
    gc_attrs_free(b, 1);
    Onnx__AttributeProto *c[1] = {gc_attr_int("num_outputs", 4)};
    amd_tensor five = gc_tensor(AMD_FLOAT, 1, (int64_t[]){5}, 0, 1), *in5[1] = {&five};
    expect_fail("Split-18 5 into 4 parts of 2 (the last -1)", "Split", 18, c, 1, in5, 1, 4, 0);
    gc_attrs_free(c, 1);
    amd_tensor_free(&five);
    Onnx__AttributeProto *d[1] = {gc_attr_int("axis", 2)};
    expect_fail("Split-13 axis 2 of rank 2", "Split", 13, d, 1, in1, 1, 2, 0);
    gc_attrs_free(d, 1);
  }
  { /* Expand, Tile */
    amd_tensor s = ints(AMD_INT64, 2, (int64_t[]){2, 3}), *in[2] = {&x, &s};
    expect_fail("Expand-13 [3,4] to [2,3]", "Expand", 13, NULL, 0, in, 2, 1, 0);
    amd_tensor_free(&s);
    amd_tensor n = ints(AMD_INT64, 1, (int64_t[]){-1}), *inn[2] = {&x, &n};
    expect_fail("Expand-13 shape -1", "Expand", 13, NULL, 0, inn, 2, 1, 0);
    amd_tensor_free(&n);
    amd_tensor r = ints(AMD_INT64, 2, (int64_t[]){2, -1}), *tin[2] = {&x, &r};
    expect_fail("Tile-13 repeats -1", "Tile", 13, NULL, 0, tin, 2, 1, 0);
    amd_tensor *tin1[2] = {&x, &t1};
    expect_fail("Tile-13 one repeat for rank 2", "Tile", 13, NULL, 0, tin1, 2, 1, 0);
    amd_tensor_free(&r);
    amd_tensor big = ints(AMD_INT64, 2, (int64_t[]){INT64_MAX / 2, INT64_MAX / 2}), *tb[2] = {&x, &big};
    expect_fail("Tile-13 repeats too large", "Tile", 13, NULL, 0, tb, 2, 1, 0);
    amd_tensor_free(&big);
  }
  { /* ScatterND */
    int64_t id[2] = {1, 1}, ud[2] = {1, 4};
    amd_tensor idx = ints(AMD_INT64, 1, three), u = gc_tensor(AMD_FLOAT, 2, ud, 0, 1);
    amd_tensor_set_shape(&idx, AMD_INT64, 2, id);
    amd_tensor *in[3] = {&x, &idx, &u};
    expect_fail("ScatterND-11 index 3 of an axis of 3", "ScatterND", 11, NULL, 0, in, 3, 1, 0);
    amd_tensor_set_i64(&idx, 0, -4);
    expect_fail("ScatterND-11 index -4 of an axis of 3", "ScatterND", 11, NULL, 0, in, 3, 1, 0);
    amd_tensor_set_i64(&idx, 0, 1);
    amd_tensor u3 = gc_tensor(AMD_FLOAT, 2, (int64_t[]){1, 3}, 0, 1), *in3[3] = {&x, &idx, &u3};
    expect_fail("ScatterND-11 updates [1,3] for slices of 4", "ScatterND", 11, NULL, 0, in3, 3, 1, 0);
    amd_tensor i3 = ints(AMD_INT64, 3, (int64_t[]){0, 0, 0}), *ink[3] = {&x, &i3, &u};
    amd_tensor_set_shape(&i3, AMD_INT64, 2, (int64_t[]){1, 3});
    expect_fail("ScatterND-11 index tuples of 3 for rank 2", "ScatterND", 11, NULL, 0, ink, 3, 1, 0);
    amd_tensor ui = ints(AMD_INT64, 4, (int64_t[]){1, 2, 3, 4}), *inu[3] = {&x, &idx, &ui};
    amd_tensor_set_shape(&ui, AMD_INT64, 2, ud);
    expect_fail("ScatterND-11 int64 updates into float data", "ScatterND", 11, NULL, 0, inu, 3, 1, 0);
    Onnx__AttributeProto *a[1] = {gc_attr_string("reduction", "mul")};
    expect_fail("ScatterND-16 mul backward", "ScatterND", 16, a, 1, in, 3, 1, 1);
    gc_attrs_free(a, 1);
    Onnx__AttributeProto *b[1] = {gc_attr_string("reduction", "max")};
    expect_fail("ScatterND-16 reduction max (version 18's)", "ScatterND", 16, b, 1, in, 3, 1, 0);
    expect_fail("ScatterND-18 max backward", "ScatterND", 18, b, 1, in, 3, 1, 1);
    gc_attrs_free(b, 1);
    amd_tensor *all[] = {&idx, &u, &u3, &i3, &ui};
    for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
  }
  amd_tensor *all[] = {&x, &t0, &t1, &t2, &t3, &rr};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

int main(void) {
  (void)gc_attr_float;
  amd_dtype dts[] = {AMD_DOUBLE, AMD_FLOAT};
  for (int i = 0; i < ARRAY_LEN(dts); i++) {
    check_slice_grads(dts[i]);
    check_split_grads(dts[i]);
    check_bcast_grads(dts[i]);
    check_scatternd_grads(dts[i]);
  }
  test_accumulation();
  test_slice_values();
  test_split_values();
  test_bcast_values();
  test_scatternd_values();
  test_bad_inputs();
  return gc_summary();
}
