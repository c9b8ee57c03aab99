/* The executor's static nodes (src/exec/exec.c): which nodes count as
 * functions of the input shapes alone, and that keeping their outputs from
 * the first pass changes no result, also when the batch changes in between.
 *
 * usage: test_static_nodes MODELS_DIR   (reads lenet5.onnx, whose flatten is
 * Shape -> Gather -> Unsqueeze -> Concat -> Reshape, and tinyformer.onnx) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_test.h"
#include "ops/op.h"

static int node_index(const amd_graph *g, const char *op) {
  for (int i = 0; i < g->n_nodes; i++)
    if (strcmp(g->nodes[i].op->name, op) == 0) return i;
  return -1;
}

/* Runs r on x and copies output 0 into *y (caller frees). */
static int forward(amd_run *r, const amd_tensor *x, amd_tensor *y) {
  amd_ctx ctx = {0};
  amd_status st = {0};
  if (amd_run_forward(r, &ctx, x, 0, &st)) {
    printf("forward failed: %s\n", st.msg);
    return -1;
  }
  const amd_tensor *o = &r->vals[r->g->outputs[0]];
  *y = (amd_tensor){0};
  amd_tensor_set_shape(y, o->dtype, o->rank, o->dims);
  if (amd_tensor_alloc(y, &st)) return -1;
  memcpy(y->data, o->data, (size_t)amd_tensor_numel(o) * sizeof(float));
  return 0;
}

/* The output of a fresh run (nothing kept) on x. */
static int fresh(const amd_graph *g, const amd_tensor *x, amd_tensor *y) {
  amd_run r;
  amd_status st = {0};
  if (amd_run_init(&r, g, &st)) return -1;
  int rc = forward(&r, x, y);
  amd_run_free(&r);
  return rc;
}

static int same(const amd_tensor *a, const amd_tensor *b) {
  if (a->rank != b->rank || amd_tensor_numel(a) != amd_tensor_numel(b)) return 0;
  return memcmp(a->data, b->data, (size_t)amd_tensor_numel(a) * sizeof(float)) == 0;
}

static void check_model(const char *dir, const char *file, int expect_static) {
  amd_graph *g;
  amd_run r;
  if (open_model(dir, file, &g, &r)) return;
  int n_static = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    n_static += r.node_static[i];
    /* nothing that reads the data or the weights is static */
    const int idx = g->nodes[i].op->idx;
    if (idx == AMD_OP_IDX_Conv || idx == AMD_OP_IDX_Gemm || idx == AMD_OP_IDX_MatMul || idx == AMD_OP_IDX_Reshape ||
        idx == AMD_OP_IDX_Relu || idx == AMD_OP_IDX_Softmax || idx == AMD_OP_IDX_Constant)
      CHECK(!r.node_static[i], "%s: node '%s' (%s) marked static", file, g->nodes[i].name, g->nodes[i].op->name);
  }
  if (expect_static) {
    const int shape = node_index(g, "Shape"), concat = node_index(g, "Concat");
    CHECK(shape >= 0 && r.node_static[shape], "%s: the Shape node is static", file);
    CHECK(concat >= 0 && r.node_static[concat], "%s: the Concat of the shape is static", file);
  }
  printf("%s: %d of %d nodes static\n", file, n_static, g->n_nodes);

  amd_tensor x3 = make_input(g, 3, 0.5f, 1), x5 = make_input(g, 5, 0.5f, 2), x3b = make_input(g, 3, 0.5f, 3);
  amd_tensor a, b, c, d, f3, f5 = {0}, f3b;
  if (forward(&r, &x3, &a) || forward(&r, &x3b, &b) || forward(&r, &x5, &c) || forward(&r, &x3, &d) ||
      fresh(g, &x3, &f3) || fresh(g, &x5, &f5) || fresh(g, &x3b, &f3b)) {
    failures++;
  } else {
    CHECK(r.static_filled == 1, "%s: the static outputs are kept after the first pass", file);
    int kept = 0;
    for (int v = 0; v < g->n_values; v++) kept += r.init_owned[v] == 4;
    CHECK(!expect_static || kept > 0, "%s: static outputs kept (%d)", file, kept);
    CHECK(same(&a, &f3), "%s: first pass (batch 3) = a fresh run", file);
    CHECK(same(&b, &f3b), "%s: second pass, other data, kept shapes = a fresh run", file);
    CHECK(same(&c, &f5) && c.dims[0] == 5, "%s: batch 5 after batch 3 = a fresh run of batch 5", file);
    CHECK(same(&d, &f3), "%s: batch 3 again = the first pass", file);
    amd_tensor_free(&a), amd_tensor_free(&b), amd_tensor_free(&c), amd_tensor_free(&d);
    amd_tensor_free(&f3), amd_tensor_free(&f3b);
  }
  /* a probe of batch 1, forgotten: the next pass keeps the outputs of its own shapes */
  amd_tensor x1 = make_input(g, 1, 0.5f, 4), p, q;
  amd_run_forget_static(&r);
  CHECK(r.static_filled == 0, "%s: nothing kept after amd_run_forget_static", file);
  if (forward(&r, &x1, &p) == 0) {
    amd_run_forget_static(&r);
    if (forward(&r, &x5, &q) == 0) {
      CHECK(r.static_filled == 1 && r.static_dims[1] == 5, "%s: after the forgotten probe, batch 5's kept", file);
      CHECK(same(&q, &f5) || !expect_static, "%s: batch 5 after the probe = a fresh run", file);
      amd_tensor_free(&q);
    } else failures++;
    amd_tensor_free(&p);
  } else failures++;
  amd_tensor_free(&x1), amd_tensor_free(&f5);
  amd_tensor_free(&x3), amd_tensor_free(&x5), amd_tensor_free(&x3b);
  amd_run_free(&r);
  amd_graph_free(g);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODELS_DIR\n", argv[0]);
    return 2;
  }
  check_model(argv[1], "lenet5.onnx", 1);
  check_model(argv[1], "lenet5_train.onnx", 1);
  check_model(argv[1], "tinyformer.onnx", 0);
  check_model(argv[1], "resnet8.onnx", 0);
  return check_summary();
}
