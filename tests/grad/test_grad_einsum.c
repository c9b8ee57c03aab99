/* Einsum (src/ops/einsum.c): finite-difference checks of the backward in
 * double (h and tolerance of gradcheck.h's double path) for a batched matrix
 * product written as attention (MaxViT's form), a transpose, a trace and a
 * diagonal (a repeated letter, implicit and explicit output), a three-input
 * contraction, an outer product and an ellipsis that broadcasts; its forward
 * against MatMul on the same operands; and bad equations, each a one-line
 * error. */
#include "gradcheck.h"

static void count(int ok) {
  if (ok)
    gc_passed++;
  else
    gc_failed++;
}

static void check(const char *eq, int n_in, const int *ranks, const int64_t (*dims)[4]) {
  amd_tensor t[3];
  amd_tensor *in[3];
  for (int k = 0; k < n_in; k++) {
    t[k] = gc_tensor(AMD_DOUBLE, ranks[k], dims[k], -1, 1);
    in[k] = &t[k];
  }
  Onnx__AttributeProto *a[1] = {gc_attr_string("equation", eq)};
  char label[96];
  snprintf(label, sizeof label, "Einsum-12 \"%s\"", eq);
  gradcheck(label, "Einsum", 12, a, 1, in, n_in, 1, (1u << n_in) - 1, 1e-6);
  gc_attrs_free(a, 1);
  for (int k = 0; k < n_in; k++) amd_tensor_free(&t[k]);
}

/* the forward of "bghid,bghjd->bghij" equals MatMul(q, k^T) computed here in double */
static void check_matmul_form(void) {
  const int64_t qd[5] = {2, 1, 3, 4, 5}, kd[5] = {2, 1, 3, 6, 5};
  amd_tensor q = gc_tensor(AMD_DOUBLE, 5, qd, -1, 1), k = gc_tensor(AMD_DOUBLE, 5, kd, -1, 1), out[GC_MAX_OUT];
  amd_tensor *in[2] = {&q, &k};
  Onnx__AttributeProto *a[1] = {gc_attr_string("equation", "bghid,bghjd->bghij")};
  amd_status st = {{0}};
  gc_node g;
  int ok = gc_bind(&g, "Einsum", 12, a, 1, in, 2, 1, &st) == 0 && gc_forward(&g.node, in, out, NULL, NULL, &st) == 0;
  const int bound = ok;
  double md = 0;
  for (int64_t b = 0; ok && b < 6; b++)
    for (int64_t i = 0; i < 4; i++)
      for (int64_t j = 0; j < 6; j++) {
        double s = 0;
        for (int64_t d = 0; d < 5; d++)
          s += amd_tensor_get_f64(&q, (b * 4 + i) * 5 + d) * amd_tensor_get_f64(&k, (b * 6 + j) * 5 + d);
        double e = fabs(s - amd_tensor_get_f64(&out[0], (b * 4 + i) * 6 + j));
        if (e > md) md = e;
      }
  ok = ok && out[0].rank == 5 && out[0].dims[4] == 6 && md < 1e-12;
  printf("%s Einsum attention form = q k^T: max |diff| %.3g %s\n", ok ? "ok  " : "FAIL", md, st.msg);
  count(ok);
  if (bound) gc_free_outs(out, 1);
  free(g.node.attrs);
  gc_attrs_free(a, 1);
  amd_tensor_free(&q);
  amd_tensor_free(&k);
}

static void check_bad(const char *eq, int n_in, const char *want) {
  const int64_t d[2] = {3, 3};
  amd_tensor x = gc_tensor(AMD_FLOAT, 2, d, -1, 1), z = gc_tensor(AMD_FLOAT, 2, d, -1, 1), y[GC_MAX_OUT] = {{0}};
  amd_tensor *in[2] = {&x, &z};
  Onnx__AttributeProto *a[1] = {gc_attr_string("equation", eq)};
  amd_status st = {{0}};
  gc_node g;
  int rc = gc_bind(&g, "Einsum", 12, a, 1, in, n_in, 1, &st);
  if (rc == 0) rc = g.node.op->infer(&g.node, (const amd_tensor *const *)in, y, &st);
  free(g.node.attrs);
  int ok = rc != 0 && strstr(st.msg, want) && !strchr(st.msg, '\n');
  printf("%s Einsum \"%s\" refused: %s\n", ok ? "ok  " : "FAIL", eq, st.msg);
  count(ok);
  gc_attrs_free(a, 1);
  amd_tensor_free(&x);
  amd_tensor_free(&z);
}

int main(void) {
  static const int r4[2] = {4, 4}, r1[1] = {2}, r3[3] = {2, 2, 2}, r11[2] = {1, 1}, r43[2] = {4, 3};
  static const int64_t qk[2][4] = {{2, 3, 4, 5}, {2, 3, 6, 5}}, av[2][4] = {{2, 3, 4, 6}, {2, 3, 6, 5}};
  static const int64_t tr[1][4] = {{3, 4}}, sq[1][4] = {{4, 4}}, chain[3][4] = {{3, 4}, {4, 5}, {5, 2}};
  static const int64_t outer[2][4] = {{3}, {4}}, ell[2][4] = {{2, 1, 3, 3}, {4, 3, 2}};
  check("bhid,bhjd->bhij", 2, r4, qk);       /* attention scores */
  check("bhij,bhjd->bhid", 2, r4, av);       /* attention times values */
  check("ij->ji", 1, r1, tr);                /* transpose */
  check("ii", 1, r1, sq);                    /* implicit output: the trace */
  check("ii->i", 1, r1, sq);                 /* the diagonal */
  check("ab,bc,cd->ad", 3, r3, chain);       /* three inputs */
  check("i,j", 2, r11, outer);               /* implicit output: the outer product */
  check("...ij,...jk->...ik", 2, r43, ell);  /* the ellipsis broadcasts [2,1] against [4] */
  check_matmul_form();
  check_bad("ij,jk->ik", 1, "input terms");
  check_bad("ij->iq", 1, "appears in no input");
  check_bad("i1->i", 1, "character '1'");
  check_bad("ijk->i", 1, "3 subscripts for an input of rank 2");
  check_bad("ij,jk->ii", 2, "repeated");
  return gc_summary();
}
