/* Checks of src/ops/index.c (GatherND, GatherElements, ScatterElements,
 * Scatter, OneHot, Trilu, DepthToSpace, SpaceToDepth, NonZero, TopK) and
 * src/ops/loss.c (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss):
 * - finite differences of each backward (gradcheck.h; SCE's log_prob output
 *   weighted too), in double (tolerance 1e-6) and float (2e-2): negative and
 *   repeated indices, batch_dims, every loss reduction with weights and
 *   ignore_index, N-D losses;
 * - backward accumulates (a second pass doubles the gradient);
 * - values worked out by hand: GatherND with batch_dims and negative
 *   indices, GatherElements with negative indices, ScatterElements with each
 *   reduction, OneHot with out-of-range and negative indices, Trilu with k and
 *   upper = 0, DepthToSpace DCR / CRD, SpaceToDepth (and its CRD mode of 28),
 *   NonZero, TopK ties and smallest, the losses' reductions and ignore_index;
 * - bad inputs fail with a message, never crash: indices out of range, bad
 *   shapes, targets outside the classes, bad attributes, backward of
 *   ScatterElements mul. */
#include "gradcheck.h"

#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static double tol_for(amd_dtype dt) { return dt == AMD_DOUBLE ? 1e-6 : 2e-2; }
static const char *dt_name(amd_dtype dt) { return dt == AMD_DOUBLE ? "double" : "float"; }

static void count(int ok) { ok ? gc_passed++ : gc_failed++; }

/* A tensor of dtype dt and shape dims holding v. */
static amd_tensor vals(amd_dtype dt, int rank, const int64_t *dims, const double *v) {
  amd_tensor t = gc_tensor(dt, rank, dims, 0, 0);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) amd_tensor_set_f64(&t, i, v[i]);
  return t;
}
static amd_tensor ivals(int rank, const int64_t *dims, const int64_t *v) {
  amd_tensor t = gc_tensor(AMD_INT64, rank, dims, 0, 0);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) amd_tensor_set_i64(&t, i, v[i]);
  return t;
}
static amd_tensor iota(amd_dtype dt, int rank, const int64_t *dims) {
  amd_tensor t = gc_tensor(dt, rank, dims, 0, 0);
  for (int64_t i = 0; i < amd_tensor_numel(&t); i++) amd_tensor_set_f64(&t, i, (double)i);
  return t;
}

static int run_node(gc_node *g, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                    amd_tensor **in, int n_in, int n_out, amd_tensor *out, amd_status *st) {
  memset(out, 0, 8 * sizeof *out);
  if (gc_bind(g, op, opset, attrs, n_attrs, in, n_in, n_out, st)) return -1;
  return gc_forward(&g->node, in, out, NULL, NULL, st);
}

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
      printf("FAIL %s: output %d [%lld] = %.17g, expected %.17g\n", label, k, (long long)i, amd_tensor_get_f64(t, i),
             want[i]);
      return 0;
    }
  return 1;
}

/* Output k of the node against shape and values. */
static void expect_k(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                     amd_tensor **in, int n_in, int n_out, int k, int rank, const int64_t *dims, const double *want) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8];
  int ok = run_node(&g, op, opset, attrs, n_attrs, in, n_in, n_out, out, &st) == 0;
  if (!ok) printf("FAIL %s: %s\n", label, st.msg);
  ok = ok && check_out(label, out, k, rank, dims, want);
  if (ok) printf("ok   %s\n", label);
  count(ok);
  gc_free_outs(out, n_out);
  free(g.node.attrs);
}
static void expect(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs, int n_attrs,
                   amd_tensor **in, int n_in, int rank, const int64_t *dims, const double *want) {
  expect_k(label, op, opset, attrs, n_attrs, in, n_in, 1, 0, rank, dims, want);
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

/* L = sum_k sum w_k * out_k over every output; d L / d in[0] against central
 * differences (SoftmaxCrossEntropyLoss with its log_prob output). */
static void check_all_outputs(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs,
                              int n_attrs, amd_tensor **in, int n_in, int n_out) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8], w[8], dx = {0};
  memset(w, 0, sizeof w);
  if (run_node(&g, op, opset, attrs, n_attrs, in, n_in, n_out, out, &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    count(0);
    free(g.node.attrs);
    return;
  }
  const amd_tensor *dout[8] = {0};
  for (int k = 0; k < n_out; k++) {
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
        for (int64_t j = 0; j < amd_tensor_numel(&out[k]); j++)
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

/* ---- finite differences ---- */

static void check_gather_grads(amd_dtype dt) {
  char label[96];
  int64_t xd[3] = {3, 4, 2};
  amd_tensor x = gc_tensor(dt, 3, xd, -1, 1);
  /* GatherND k = 2 with a repeated and a negative tuple */
  int64_t id[2] = {4, 2}, iv[8] = {0, 1, 2, -1, 0, 1, -3, 0};
  amd_tensor idx = ivals(2, id, iv), *in[2] = {&x, &idx};
  snprintf(label, sizeof label, "GatherND-11 k = 2, repeated and negative tuples %s", dt_name(dt));
  gradcheck(label, "GatherND", 11, NULL, 0, in, 2, 1, 1u, tol_for(dt));
  /* batch_dims 1: indices [3, 2, 1] */
  int64_t bd[3] = {3, 2, 1}, bv[6] = {3, 3, -1, 0, 2, 1};
  amd_tensor bidx = ivals(3, bd, bv), *bin[2] = {&x, &bidx};
  Onnx__AttributeProto *a[1] = {gc_attr_int("batch_dims", 1)};
  snprintf(label, sizeof label, "GatherND-12 batch_dims 1, repeated tuple %s", dt_name(dt));
  gradcheck(label, "GatherND", 12, a, 1, bin, 2, 1, 1u, tol_for(dt));
  gc_attrs_free(a, 1);
  /* GatherElements along axis 1 (negative, repeated), indices smaller than data */
  int64_t ed[3] = {2, 5, 2}, ev[20] = {0, 3, -1, 3, 1, 1, 2, 0, -4, 0, 3, 3, 0, 1, 2, 2, 1, -1, 0, 0};
  amd_tensor eidx = ivals(3, ed, ev), *ein[2] = {&x, &eidx};
  Onnx__AttributeProto *b[1] = {gc_attr_int("axis", -2)};
  snprintf(label, sizeof label, "GatherElements-13 axis -2, repeated indices %s", dt_name(dt));
  gradcheck(label, "GatherElements", 13, b, 1, ein, 2, 1, 1u, tol_for(dt));
  /* ScatterElements none (repeated: the last wins) and add; Scatter-9 */
  amd_tensor u = gc_tensor(dt, 3, ed, -1, 1), *sin[3] = {&x, &eidx, &u};
  snprintf(label, sizeof label, "ScatterElements-13 none, repeated indices %s", dt_name(dt));
  gradcheck(label, "ScatterElements", 13, b, 1, sin, 3, 1, 5u, tol_for(dt));
  snprintf(label, sizeof label, "Scatter-9 repeated indices %s", dt_name(dt));
  gradcheck(label, "Scatter", 9, b, 1, sin, 3, 1, 5u, tol_for(dt));
  Onnx__AttributeProto *c[2] = {gc_attr_int("axis", 1), gc_attr_string("reduction", "add")};
  snprintf(label, sizeof label, "ScatterElements-18 add, repeated indices %s", dt_name(dt));
  gradcheck(label, "ScatterElements", 18, c, 2, sin, 3, 1, 5u, tol_for(dt));
  gc_attrs_free(b, 1);
  gc_attrs_free(c, 2);
  amd_tensor *all[] = {&x, &idx, &bidx, &eidx, &u};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

static void check_move_grads(amd_dtype dt) {
  char label[96];
  /* Trilu on [2, 3, 4]: upper with k = 1, lower with k = -1, default */
  int64_t td[3] = {2, 3, 4}, kk[2] = {1, -1}, one[1] = {1};
  amd_tensor x = gc_tensor(dt, 3, td, -1, 1), k1 = ivals(0, NULL, kk), km = ivals(1, one, kk + 1);
  amd_tensor *in1[2] = {&x, &k1}, *inm[2] = {&x, &km};
  snprintf(label, sizeof label, "Trilu-14 upper k = 1 %s", dt_name(dt));
  gradcheck(label, "Trilu", 14, NULL, 0, in1, 2, 1, 1u, tol_for(dt));
  Onnx__AttributeProto *lo[1] = {gc_attr_int("upper", 0)};
  snprintf(label, sizeof label, "Trilu-14 lower k = -1 %s", dt_name(dt));
  gradcheck(label, "Trilu", 14, lo, 1, inm, 2, 1, 1u, tol_for(dt));
  snprintf(label, sizeof label, "Trilu-14 lower, no k %s", dt_name(dt));
  gradcheck(label, "Trilu", 14, lo, 1, in1, 1, 1, 1u, tol_for(dt));
  gc_attrs_free(lo, 1);
  /* DepthToSpace DCR / CRD, SpaceToDepth (and CRD from 28) */
  int64_t dd[4] = {2, 8, 2, 3}, sd[4] = {2, 2, 4, 6};
  amd_tensor d = gc_tensor(dt, 4, dd, -1, 1), s = gc_tensor(dt, 4, sd, -1, 1), *din[1] = {&d}, *sin[1] = {&s};
  Onnx__AttributeProto *dcr[1] = {gc_attr_int("blocksize", 2)},
                       *crd[2] = {gc_attr_int("blocksize", 2), gc_attr_string("mode", "CRD")};
  snprintf(label, sizeof label, "DepthToSpace-13 DCR %s", dt_name(dt));
  gradcheck(label, "DepthToSpace", 13, dcr, 1, din, 1, 1, 1u, tol_for(dt));
  snprintf(label, sizeof label, "DepthToSpace-11 CRD %s", dt_name(dt));
  gradcheck(label, "DepthToSpace", 11, crd, 2, din, 1, 1, 1u, tol_for(dt));
  snprintf(label, sizeof label, "SpaceToDepth-13 %s", dt_name(dt));
  gradcheck(label, "SpaceToDepth", 13, dcr, 1, sin, 1, 1, 1u, tol_for(dt));
  snprintf(label, sizeof label, "SpaceToDepth-28 CRD %s", dt_name(dt));
  gradcheck(label, "SpaceToDepth", 28, crd, 2, sin, 1, 1, 1u, tol_for(dt));
  gc_attrs_free(dcr, 1);
  gc_attrs_free(crd, 2);
  /* TopK: axis 1, largest and smallest, k from the attribute (1) and the input */
  int64_t xd[3] = {2, 6, 3}, kv[1] = {4};
  amd_tensor t = gc_tensor(dt, 3, xd, -1, 1), kt = ivals(1, one, kv), *tin[2] = {&t, &kt};
  Onnx__AttributeProto *ta[2] = {gc_attr_int("axis", 1), gc_attr_int("largest", 0)},
                       *t1[2] = {gc_attr_int("axis", 1), gc_attr_int("k", 3)};
  snprintf(label, sizeof label, "TopK-11 axis 1 k 4 smallest %s", dt_name(dt));
  gradcheck(label, "TopK", 11, ta, 2, tin, 2, 2, 1u, tol_for(dt));
  snprintf(label, sizeof label, "TopK-10 axis 1 k 4, values output only %s", dt_name(dt));
  gradcheck(label, "TopK", 10, ta, 1, tin, 2, 1, 1u, tol_for(dt));
  snprintf(label, sizeof label, "TopK-1 axis 1 k 3 %s", dt_name(dt));
  gradcheck(label, "TopK", 1, t1, 2, tin, 1, 2, 1u, tol_for(dt));
  gc_attrs_free(ta, 2);
  gc_attrs_free(t1, 2);
  amd_tensor *all[] = {&x, &k1, &km, &d, &s, &t, &kt};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

static void check_loss_grads(amd_dtype dt) {
  char label[128];
  static const char *const reds[3] = {"none", "sum", "mean"};
  /* [N, C, d1, d2] = [2, 4, 3, 2] with ignore_index 2 (some targets hit it) and weights */
  int64_t xd[4] = {2, 4, 3, 2}, td[3] = {2, 3, 2}, wd[1] = {4};
  int64_t tv[12] = {0, 3, 2, 1, 1, 0, 2, 3, 3, 0, 1, 2};
  amd_tensor x = gc_tensor(dt, 4, xd, -2, 2), t = ivals(3, td, tv), w = gc_tensor(dt, 1, wd, 0.5, 2);
  amd_tensor *in3[3] = {&x, &t, &w}, *in2[2] = {&x, &t};
  for (int r = 0; r < 3; r++) {
    Onnx__AttributeProto *a[2] = {gc_attr_string("reduction", reds[r]), gc_attr_int("ignore_index", 2)};
    snprintf(label, sizeof label, "NegativeLogLikelihoodLoss-13 %s, weight, ignore_index [2,4,3,2] %s", reds[r],
             dt_name(dt));
    gradcheck(label, "NegativeLogLikelihoodLoss", 13, a, 2, in3, 3, 1, 1u, tol_for(dt));
    snprintf(label, sizeof label, "NegativeLogLikelihoodLoss-12 %s, no weight %s", reds[r], dt_name(dt));
    gradcheck(label, "NegativeLogLikelihoodLoss", 12, a, 1, in2, 2, 1, 1u, tol_for(dt));
    snprintf(label, sizeof label, "SoftmaxCrossEntropyLoss-13 %s, weight, ignore_index [2,4,3,2] %s", reds[r],
             dt_name(dt));
    gradcheck(label, "SoftmaxCrossEntropyLoss", 13, a, 2, in3, 3, 1, 1u, tol_for(dt));
    snprintf(label, sizeof label, "SoftmaxCrossEntropyLoss-12 %s, no weight %s", reds[r], dt_name(dt));
    gradcheck(label, "SoftmaxCrossEntropyLoss", 12, a, 1, in2, 2, 1, 1u, tol_for(dt));
    snprintf(label, sizeof label, "SoftmaxCrossEntropyLoss-13 %s with log_prob, both weighted %s", reds[r],
             dt_name(dt));
    check_all_outputs(label, "SoftmaxCrossEntropyLoss", 13, a, 2, in3, 3, 2);
    gc_attrs_free(a, 2);
  }
  /* [N, C] */
  int64_t x2[2] = {5, 3}, t2[1] = {5}, tv2[5] = {2, 0, 1, 1, 0};
  amd_tensor y = gc_tensor(dt, 2, x2, -2, 2), ty = ivals(1, t2, tv2), *iny[2] = {&y, &ty};
  snprintf(label, sizeof label, "SoftmaxCrossEntropyLoss-13 [N, C] mean %s", dt_name(dt));
  gradcheck(label, "SoftmaxCrossEntropyLoss", 13, NULL, 0, iny, 2, 1, 1u, tol_for(dt));
  snprintf(label, sizeof label, "NegativeLogLikelihoodLoss-13 [N, C] mean %s", dt_name(dt));
  gradcheck(label, "NegativeLogLikelihoodLoss", 13, NULL, 0, iny, 2, 1, 1u, tol_for(dt));
  amd_tensor *all[] = {&x, &t, &w, &y, &ty};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* Backward adds: two passes into one buffer give twice one pass. */
static void check_accumulates(const char *label, const char *op, int opset, Onnx__AttributeProto **attrs,
                              int n_attrs, amd_tensor **in, int n_in, int n_out) {
  amd_status st = {{0}};
  gc_node g;
  amd_tensor out[8], once = {0}, twice = {0};
  int ok = run_node(&g, op, opset, attrs, n_attrs, in, n_in, n_out, out, &st) == 0;
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
  else printf("FAIL %s: %s\n", label, st.msg[0] ? st.msg : "");
  count(ok);
  gc_free_outs(out, n_out);
  amd_tensor_free(&w);
  amd_tensor_free(&once);
  amd_tensor_free(&twice);
  free(g.node.attrs);
}

static void test_accumulation(void) {
  int64_t xd[4] = {2, 4, 2, 2}, id[2] = {3, 2}, iv[6] = {0, 1, 0, 1, 1, -1}, td[3] = {2, 2, 2};
  int64_t tv[8] = {0, 1, 3, 3, 2, 0, 1, 1};
  amd_tensor x = gc_tensor(AMD_DOUBLE, 4, xd, -1, 1), idx = ivals(2, id, iv), t = ivals(3, td, tv);
  amd_tensor *gin[2] = {&x, &idx}, *lin[2] = {&x, &t}, *one[1] = {&x};
  check_accumulates("GatherND-13", "GatherND", 13, NULL, 0, gin, 2, 1);
  check_accumulates("SoftmaxCrossEntropyLoss-13", "SoftmaxCrossEntropyLoss", 13, NULL, 0, lin, 2, 1);
  check_accumulates("NegativeLogLikelihoodLoss-13", "NegativeLogLikelihoodLoss", 13, NULL, 0, lin, 2, 1);
  check_accumulates("Trilu-14", "Trilu", 14, NULL, 0, one, 1, 1);
  Onnx__AttributeProto *b[1] = {gc_attr_int("blocksize", 2)}, *k[1] = {gc_attr_int("k", 2)};
  check_accumulates("SpaceToDepth-13", "SpaceToDepth", 13, b, 1, one, 1, 1);
  check_accumulates("TopK-1", "TopK", 1, k, 1, one, 1, 2);
  gc_attrs_free(b, 1);
  gc_attrs_free(k, 1);
  amd_tensor *all[] = {&x, &idx, &t};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* ---- values ---- */

static void test_gather_values(void) {
  /* GatherND batch_dims 1 (the spec's example) and a negative index */
  int64_t xd[3] = {2, 2, 2}, id[2] = {2, 1}, iv[2] = {1, 0}, od[2] = {2, 2};
  amd_tensor x = iota(AMD_FLOAT, 3, xd), idx = ivals(2, id, iv), *in[2] = {&x, &idx};
  Onnx__AttributeProto *a[1] = {gc_attr_int("batch_dims", 1)};
  expect("GatherND-12 batch_dims 1", "GatherND", 12, a, 1, in, 2, 2, od, (const double[]){2, 3, 4, 5});
  gc_attrs_free(a, 1);
  int64_t nd[2] = {2, 3}, nv[6] = {-1, 0, 1, 0, -1, -2}, o2[1] = {2};
  amd_tensor nidx = ivals(2, nd, nv), *nin[2] = {&x, &nidx};
  expect("GatherND-13 k = 3, negative indices", "GatherND", 13, NULL, 0, nin, 2, 1, o2, (const double[]){5, 2});
  /* GatherElements axis 1 with a negative index */
  int64_t m[2] = {2, 2}, ev[4] = {0, 0, -1, 0};
  amd_tensor mx = vals(AMD_FLOAT, 2, m, (const double[]){1, 2, 3, 4}), eidx = ivals(2, m, ev), *ein[2] = {&mx, &eidx};
  Onnx__AttributeProto *ax[1] = {gc_attr_int("axis", 1)};
  expect("GatherElements-13 axis 1, index -1", "GatherElements", 13, ax, 1, ein, 2, 2, m,
         (const double[]){1, 1, 4, 3});
  /* ScatterElements: each reduction on [1, 5] with index 1 repeated */
  int64_t rd[2] = {1, 5}, ud[2] = {1, 3}, uv[3] = {1, 3, 1};
  amd_tensor r = vals(AMD_DOUBLE, 2, rd, (const double[]){1, 2, 3, 4, 5}), ri = ivals(2, ud, uv),
             ru = vals(AMD_DOUBLE, 2, ud, (const double[]){0.5, 2.5, 4.5}), *rin[3] = {&r, &ri, &ru};
  static const char *const reds[5] = {"none", "add", "mul", "max", "min"};
  static const double want[5][5] = {
      {1, 4.5, 3, 2.5, 5}, {1, 7, 3, 6.5, 5}, {1, 4.5, 3, 10, 5}, {1, 4.5, 3, 4, 5}, {1, 0.5, 3, 2.5, 5}};
  for (int k = 0; k < 5; k++) {
    char label[96];
    Onnx__AttributeProto *b[2] = {gc_attr_int("axis", -1), gc_attr_string("reduction", reds[k])};
    snprintf(label, sizeof label, "ScatterElements-18 reduction %s, index 1 twice", reds[k]);
    expect(label, "ScatterElements", 18, b, 2, rin, 3, 2, rd, want[k]);
    gc_attrs_free(b, 2);
  }
  amd_tensor ir = ivals(2, rd, (const int64_t[]){1, 2, 3, 4, 5}), iu = ivals(2, ud, (const int64_t[]){10, 20, 30}),
             *iin[3] = {&ir, &ri, &iu};
  Onnx__AttributeProto *b[2] = {gc_attr_int("axis", 1), gc_attr_string("reduction", "add")};
  expect("ScatterElements-16 add, int64", "ScatterElements", 16, b, 2, iin, 3, 2, rd, (const double[]){1, 42, 3, 24, 5});
  gc_attrs_free(b, 2);
  expect("Scatter-11 (none), int64", "Scatter", 11, ax, 1, iin, 3, 2, rd, (const double[]){1, 30, 3, 20, 5});
  gc_attrs_free(ax, 1);
  amd_tensor *all[] = {&x, &idx, &nidx, &mx, &eidx, &r, &ri, &ru, &ir, &iu};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

static void test_misc_values(void) {
  /* OneHot: -1 is the last class, 5 and -4 are out of range (all off) */
  int64_t id[1] = {5}, two[1] = {2};
  amd_tensor idx = ivals(1, id, (const int64_t[]){0, -1, 5, 2, -4}), depth = ivals(0, NULL, (const int64_t[]){3}),
             v = vals(AMD_FLOAT, 1, two, (const double[]){-1, 7}), *in[3] = {&idx, &depth, &v};
  int64_t o1[2] = {5, 3}, o0[2] = {3, 5};
  expect("OneHot-11 axis -1, negative and out-of-range indices", "OneHot", 11, NULL, 0, in, 3, 2, o1,
         (const double[]){7, -1, -1, -1, -1, 7, -1, -1, -1, -1, -1, 7, -1, -1, -1});
  Onnx__AttributeProto *a0[1] = {gc_attr_int("axis", 0)};
  expect("OneHot-9 axis 0", "OneHot", 9, a0, 1, in, 3, 2, o0,
         (const double[]){7, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 7, -1, 7, -1});
  gc_attrs_free(a0, 1);
  /* Trilu on 1..12 as [3, 4] */
  int64_t td[2] = {3, 4};
  amd_tensor x = gc_tensor(AMD_FLOAT, 2, td, 0, 0);
  for (int i = 0; i < 12; i++) amd_tensor_set_f64(&x, i, i + 1);
  amd_tensor k1 = ivals(0, NULL, (const int64_t[]){1}), km = ivals(0, NULL, (const int64_t[]){-1});
  amd_tensor *t1[2] = {&x, &k1}, *tm[2] = {&x, &km};
  expect("Trilu-14 upper k = 1", "Trilu", 14, NULL, 0, t1, 2, 2, td, (const double[]){0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  expect("Trilu-14 upper, no k", "Trilu", 14, NULL, 0, t1, 1, 2, td,
         (const double[]){1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  Onnx__AttributeProto *lo[1] = {gc_attr_int("upper", 0)};
  expect("Trilu-14 upper = 0, k = -1", "Trilu", 14, lo, 1, tm, 2, 2, td,
         (const double[]){0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  gc_attrs_free(lo, 1);
  /* DepthToSpace / SpaceToDepth with blocksize 2 */
  int64_t dd[4] = {1, 8, 1, 1}, dod[4] = {1, 2, 2, 2};
  amd_tensor d = iota(AMD_FLOAT, 4, dd), s = iota(AMD_FLOAT, 4, dod), *din[1] = {&d}, *sin[1] = {&s};
  Onnx__AttributeProto *dcr[1] = {gc_attr_int("blocksize", 2)},
                       *crd[2] = {gc_attr_int("blocksize", 2), gc_attr_string("mode", "CRD")};
  expect("DepthToSpace-13 DCR", "DepthToSpace", 13, dcr, 1, din, 1, 4, dod, (const double[]){0, 2, 4, 6, 1, 3, 5, 7});
  expect("DepthToSpace-1 (DCR)", "DepthToSpace", 1, dcr, 1, din, 1, 4, dod, (const double[]){0, 2, 4, 6, 1, 3, 5, 7});
  expect("DepthToSpace-13 CRD", "DepthToSpace", 13, crd, 2, din, 1, 4, dod, (const double[]){0, 1, 2, 3, 4, 5, 6, 7});
  expect("SpaceToDepth-13", "SpaceToDepth", 13, dcr, 1, sin, 1, 4, dd, (const double[]){0, 4, 1, 5, 2, 6, 3, 7});
  expect("SpaceToDepth-28 CRD", "SpaceToDepth", 28, crd, 2, sin, 1, 4, dd, (const double[]){0, 1, 2, 3, 4, 5, 6, 7});
  gc_attrs_free(dcr, 1);
  gc_attrs_free(crd, 2);
  /* NonZero */
  amd_tensor nz = vals(AMD_FLOAT, 2, (const int64_t[]){2, 2}, (const double[]){0, 2, 3, 0});
  amd_tensor *nin[1] = {&nz};
  expect("NonZero-13 [[0, 2], [3, 0]]", "NonZero", 13, NULL, 0, nin, 1, 2, (const int64_t[]){2, 2},
         (const double[]){0, 1, 1, 0});
  /* TopK: ties keep the lower index first */
  int64_t kd[1] = {4};
  amd_tensor tk = vals(AMD_FLOAT, 1, kd, (const double[]){3, 1, 3, 2}), kk = ivals(1, (const int64_t[]){1}, (const int64_t[]){2});
  amd_tensor *kin[2] = {&tk, &kk};
  expect_k("TopK-11 largest k 2: values", "TopK", 11, NULL, 0, kin, 2, 2, 0, 1, two, (const double[]){3, 3});
  expect_k("TopK-11 largest k 2: indices (tie: lower first)", "TopK", 11, NULL, 0, kin, 2, 2, 1, 1, two,
           (const double[]){0, 2});
  Onnx__AttributeProto *sm[1] = {gc_attr_int("largest", 0)};
  expect_k("TopK-11 smallest k 2: indices", "TopK", 11, sm, 1, kin, 2, 2, 1, 1, two, (const double[]){1, 3});
  gc_attrs_free(sm, 1);
  amd_tensor *all[] = {&idx, &depth, &v, &x, &k1, &km, &d, &s, &nz, &tk, &kk};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

static void test_loss_values(void) {
  int64_t xd[2] = {2, 3}, nd[1] = {2}, wd[1] = {3};
  amd_tensor x = vals(AMD_DOUBLE, 2, xd, (const double[]){-1, -2, -3, -4, -5, -6});
  amd_tensor t = ivals(1, nd, (const int64_t[]){1, 2}), w = vals(AMD_DOUBLE, 1, wd, (const double[]){1, 2, 3});
  amd_tensor *in[3] = {&x, &t, &w};
  Onnx__AttributeProto *none[1] = {gc_attr_string("reduction", "none")}, *sum[1] = {gc_attr_string("reduction", "sum")};
  expect("NLL-13 none, weight", "NegativeLogLikelihoodLoss", 13, none, 1, in, 3, 1, nd, (const double[]){4, 18});
  expect("NLL-13 sum, weight", "NegativeLogLikelihoodLoss", 13, sum, 1, in, 3, 0, NULL, (const double[]){22});
  expect("NLL-13 mean (default), weight: 22 / 5", "NegativeLogLikelihoodLoss", 13, NULL, 0, in, 3, 0, NULL,
         (const double[]){22.0 / 5});
  expect("NLL-12 mean, no weight: 8 / 2", "NegativeLogLikelihoodLoss", 12, NULL, 0, in, 2, 0, NULL,
         (const double[]){4});
  Onnx__AttributeProto *ii[2] = {gc_attr_int("ignore_index", 2), gc_attr_string("reduction", "none")};
  expect("NLL-13 none, ignore_index 2 (set)", "NegativeLogLikelihoodLoss", 13, ii, 2, in, 3, 1, nd,
         (const double[]){4, 0});
  expect("NLL-13 mean, ignore_index 2: 4 / 2", "NegativeLogLikelihoodLoss", 13, ii, 1, in, 3, 0, NULL,
         (const double[]){2});
  /* SCE of equal scores: log 3 everywhere; ignore_index -1 on the second label */
  amd_tensor z = vals(AMD_DOUBLE, 2, xd, (const double[]){0, 0, 0, 0, 0, 0});
  amd_tensor zt = ivals(1, nd, (const int64_t[]){0, -1}), *zin[2] = {&z, &zt};
  Onnx__AttributeProto *zi[2] = {gc_attr_int("ignore_index", -1), gc_attr_string("reduction", "sum")};
  expect("SCE-13 sum, ignore_index -1: log 3", "SoftmaxCrossEntropyLoss", 13, zi, 2, zin, 2, 0, NULL,
         (const double[]){log(3.0)});
  expect("SCE-13 mean, ignore_index -1: log 3", "SoftmaxCrossEntropyLoss", 13, zi, 1, zin, 2, 0, NULL,
         (const double[]){log(3.0)});
  expect_k("SCE-13 log_prob output", "SoftmaxCrossEntropyLoss", 13, zi, 1, zin, 2, 2, 1, 2, xd,
           (const double[]){-log(3.0), -log(3.0), -log(3.0), -log(3.0), -log(3.0), -log(3.0)});
  gc_attrs_free(none, 1);
  gc_attrs_free(sum, 1);
  gc_attrs_free(ii, 2);
  gc_attrs_free(zi, 2);
  amd_tensor *all[] = {&x, &t, &w, &z, &zt};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

/* ---- bad inputs ---- */

static void test_bad_inputs(void) {
  int64_t xd[3] = {2, 3, 4}, id[2] = {1, 2};
  amd_tensor x = gc_tensor(AMD_FLOAT, 3, xd, -1, 1);
  amd_tensor big = ivals(2, id, (const int64_t[]){0, 3}), neg = ivals(2, id, (const int64_t[]){-3, 0});
  amd_tensor *b1[2] = {&x, &big}, *b2[2] = {&x, &neg};
  expect_fail("GatherND index 3 on an axis of 3", "GatherND", 13, NULL, 0, b1, 2, 1, 0);
  expect_fail("GatherND index -3 on an axis of 2", "GatherND", 13, NULL, 0, b2, 2, 1, 0);
  int64_t kd[2] = {1, 4};
  amd_tensor k4 = ivals(2, kd, (const int64_t[]){0, 0, 0, 0}), *b3[2] = {&x, &k4};
  expect_fail("GatherND tuples longer than data's rank", "GatherND", 13, NULL, 0, b3, 2, 1, 0);
  Onnx__AttributeProto *bd[1] = {gc_attr_int("batch_dims", 1)};
  expect_fail("GatherND batch axis 2 against 1", "GatherND", 13, bd, 1, b1, 2, 1, 0);
  gc_attrs_free(bd, 1);
  int64_t ed[3] = {1, 1, 1};
  amd_tensor e4 = ivals(3, ed, (const int64_t[]){2}), e2 = ivals(2, id, (const int64_t[]){0, 1});
  amd_tensor *g1[2] = {&x, &e4}, *g2[2] = {&x, &e2};
  expect_fail("GatherElements index 2 on an axis of 2", "GatherElements", 13, NULL, 0, g1, 2, 1, 0);
  expect_fail("GatherElements indices of another rank", "GatherElements", 13, NULL, 0, g2, 2, 1, 0);
  amd_tensor u = gc_tensor(AMD_FLOAT, 2, id, -1, 1), *s1[3] = {&x, &e4, &u};
  expect_fail("ScatterElements updates of another shape", "ScatterElements", 13, NULL, 0, s1, 3, 1, 0);
  amd_tensor e0 = ivals(3, ed, (const int64_t[]){1}), u1 = gc_tensor(AMD_FLOAT, 3, ed, -1, 1), *s2[3] = {&x, &e0, &u1};
  Onnx__AttributeProto *mul[1] = {gc_attr_string("reduction", "mul")}, *bad[1] = {gc_attr_string("reduction", "max")};
  expect_fail("ScatterElements mul: no backward", "ScatterElements", 16, mul, 1, s2, 3, 1, 1);
  expect_fail("ScatterElements-16 reduction max (18 on)", "ScatterElements", 16, bad, 1, s2, 3, 1, 0);
  gc_attrs_free(mul, 1);
  gc_attrs_free(bad, 1);
  amd_tensor u3 = ivals(3, ed, (const int64_t[]){5}), *s3[3] = {&x, &e0, &u3};
  expect_fail("ScatterElements int64 updates into float", "ScatterElements", 13, NULL, 0, s3, 3, 1, 0);
  /* OneHot */
  int64_t three[1] = {3};
  amd_tensor oi = ivals(1, three, (const int64_t[]){0, 1, 2}), d0 = ivals(0, NULL, (const int64_t[]){0}),
             d3 = ivals(0, NULL, (const int64_t[]){3}), v3 = gc_tensor(AMD_FLOAT, 1, three, 0, 1);
  amd_tensor *o1[3] = {&oi, &d0, &v3}, *o2[3] = {&oi, &d3, &v3};
  expect_fail("OneHot depth 0", "OneHot", 11, NULL, 0, o1, 3, 1, 0);
  expect_fail("OneHot three values", "OneHot", 11, NULL, 0, o2, 3, 1, 0);
  /* Trilu, DepthToSpace, SpaceToDepth */
  amd_tensor *t1[1] = {&v3};
  expect_fail("Trilu of rank 1", "Trilu", 14, NULL, 0, t1, 1, 1, 0);
  amd_tensor kk = ivals(1, (const int64_t[]){2}, (const int64_t[]){0, 1}), *t2[2] = {&x, &kk};
  expect_fail("Trilu k with two values", "Trilu", 14, NULL, 0, t2, 2, 1, 0);
  int64_t sd[4] = {1, 3, 4, 5};
  amd_tensor s = gc_tensor(AMD_FLOAT, 4, sd, -1, 1), *sp[1] = {&s}, *x3[1] = {&x};
  Onnx__AttributeProto *bs2[1] = {gc_attr_int("blocksize", 2)}, *b0[1] = {gc_attr_int("blocksize", 0)},
                       *m[2] = {gc_attr_int("blocksize", 2), gc_attr_string("mode", "XYZ")};
  expect_fail("DepthToSpace 3 channels, blocksize 2", "DepthToSpace", 13, bs2, 1, sp, 1, 1, 0);
  expect_fail("SpaceToDepth width 5, blocksize 2", "SpaceToDepth", 13, bs2, 1, sp, 1, 1, 0);
  expect_fail("SpaceToDepth of rank 3", "SpaceToDepth", 13, bs2, 1, x3, 1, 1, 0);
  expect_fail("DepthToSpace blocksize 0", "DepthToSpace", 13, b0, 1, sp, 1, 1, 0);
  expect_fail("DepthToSpace mode XYZ", "DepthToSpace", 13, m, 2, sp, 1, 1, 0);
  gc_attrs_free(bs2, 1);
  gc_attrs_free(b0, 1);
  gc_attrs_free(m, 2);
  /* TopK */
  amd_tensor k9 = ivals(1, (const int64_t[]){1}, (const int64_t[]){9}), *k1[2] = {&x, &k9};
  expect_fail("TopK k 9 over an axis of 4", "TopK", 11, NULL, 0, k1, 2, 2, 0);
  expect_fail("TopK-10 without K", "TopK", 10, NULL, 0, k1, 1, 2, 0);
  /* losses */
  int64_t ld[2] = {2, 3}, nd[1] = {2};
  amd_tensor lx = gc_tensor(AMD_FLOAT, 2, ld, -1, 1), t3 = ivals(1, nd, (const int64_t[]){0, 3}),
             tn = ivals(1, nd, (const int64_t[]){-1, 0}), tw = ivals(2, ld, (const int64_t[]){0, 0, 0, 0, 0, 0}),
             w2 = gc_tensor(AMD_FLOAT, 1, nd, 0, 1);
  amd_tensor *l1[2] = {&lx, &t3}, *l2[2] = {&lx, &tn}, *l3[2] = {&lx, &tw}, *l4[3] = {&lx, &tn, &w2};
  expect_fail("NLL target 3 with 3 classes", "NegativeLogLikelihoodLoss", 13, NULL, 0, l1, 2, 1, 0);
  expect_fail("SCE target -1 without ignore_index", "SoftmaxCrossEntropyLoss", 13, NULL, 0, l2, 2, 1, 0);
  expect_fail("SCE target of the input's shape", "SoftmaxCrossEntropyLoss", 13, NULL, 0, l3, 2, 1, 0);
  Onnx__AttributeProto *ii[1] = {gc_attr_int("ignore_index", -1)}, *r[1] = {gc_attr_string("reduction", "avg")};
  expect_fail("NLL weight of 2 for 3 classes", "NegativeLogLikelihoodLoss", 13, ii, 1, l4, 3, 1, 0);
  expect_fail("SCE reduction avg", "SoftmaxCrossEntropyLoss", 13, r, 1, l2, 2, 1, 0);
  gc_attrs_free(ii, 1);
  gc_attrs_free(r, 1);
  amd_tensor *all[] = {&x, &big, &neg, &k4, &e4, &e2, &u, &e0, &u1, &u3, &oi, &d0, &d3, &v3, &kk, &s, &k9,
                       &lx, &t3, &tn, &tw, &w2};
  for (int i = 0; i < ARRAY_LEN(all); i++) amd_tensor_free(all[i]);
}

int main(void) {
  (void)gc_attr_ints, (void)gc_attr_float; /* gradcheck.h helpers these ops have no use for */
  amd_dtype dts[2] = {AMD_DOUBLE, AMD_FLOAT};
  for (int i = 0; i < 2; i++) {
    check_gather_grads(dts[i]);
    check_move_grads(dts[i]);
    check_loss_grads(dts[i]);
  }
  test_accumulation();
  test_gather_values();
  test_misc_values();
  test_loss_values();
  test_bad_inputs();
  return gc_summary();
}
