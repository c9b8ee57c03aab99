/* The executor's fusion (src/exec/exec.c, "Add and Relu fused into their
 * producer"): which Relus and Adds run inside the Conv, Add or
 * BatchNormalization before them,
 * that a pass without backward skips them, and so does a training pass
 * (keep = 1) where no backward reads the value fused away, and that the
 * fused pass gives the same bits as the unfused one (a training pass that
 * keeps every value, and a pass watched node by node); the CPU ops with
 * ctx->relu_out and ctx->add_in.
 *
 * usage: test_fusion MODELS_DIR   (reads lenet5.onnx: Conv -> Relu;
 * resnet8.onnx: Conv -> Relu, Conv -> Add -> Relu, and Adds of two Convs;
 * resnet8_train.onnx, where BatchNormalization, which takes in a Relu and
 * no Add, sits between Conv and Relu and between Conv and Add) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../grad/gradcheck.h"
#include "exec/backend.h"
#include "exec_test.h"

static int watched_nodes;
static void watch(void *user, const amd_node *n, const amd_tensor *const *in, const amd_tensor *out) {
  (void)user, (void)n, (void)in, (void)out;
  watched_nodes++;
}

/* One pass (keep 0 or 1, watched or not) on x; output 0 copied into *y. */
static int forward(amd_run *r, const amd_tensor *x, int keep, int watched, amd_tensor *y) {
  amd_ctx ctx = {.inference = 1};
  if (watched) ctx.on_node = watch;
  amd_status st = {0};
  if (amd_run_forward(r, &ctx, x, keep, &st)) {
    printf("forward failed: %s\n", st.msg);
    return -1;
  }
  CHECK(ctx.relu_out == 0, "ctx->relu_out is cleared after the pass");
  const amd_tensor *o = &r->vals[r->g->outputs[0]];
  *y = (amd_tensor){0};
  amd_tensor_set_shape(y, o->dtype, o->rank, o->dims);
  if (amd_tensor_alloc(y, &st)) return -1;
  memcpy(y->data, o->data, (size_t)amd_tensor_numel(o) * sizeof(float));
  return 0;
}

static int same_bits(const amd_tensor *a, const amd_tensor *b) {
  return amd_tensor_numel(a) == amd_tensor_numel(b) &&
         memcmp(a->data, b->data, (size_t)amd_tensor_numel(a) * sizeof(float)) == 0;
}

/* How many nodes the last pass skipped because an earlier node did them. */
static int skipped_nodes(const amd_run *r) {
  int n = 0;
  for (int i = 0; i < r->g->n_nodes; i++) n += r->fused_done[i];
  return n;
}

/* want: how many Relus the Convs take in, the Adds, the BatchNormalizations; how many Adds the Convs */
static void check_model(const char *dir, const char *file, const int want[4]) {
  amd_graph *g;
  amd_run r;
  if (open_model(dir, file, &g, &r)) return;
  int got[4] = {0, 0, 0, 0};
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *p = &g->nodes[i];
    if (r.relu_into[i] >= 0) {
      const amd_node *relu = &g->nodes[r.relu_into[i]];
      CHECK(relu->op->idx == AMD_OP_IDX_Relu && relu->in[0] == p->out[0],
            "%s: '%s' takes in the Relu reading it", file, p->name);
      got[0] += p->op->idx == AMD_OP_IDX_Conv;
      got[1] += p->op->idx == AMD_OP_IDX_Add;
      got[2] += p->op->idx == AMD_OP_IDX_BatchNormalization;
    }
    if (r.add_into[i] >= 0) {
      const amd_node *add = &g->nodes[r.add_into[i]];
      CHECK(p->op->idx == AMD_OP_IDX_Conv && add->op->idx == AMD_OP_IDX_Add &&
                (add->in[0] == p->out[0] || add->in[1] == p->out[0]),
            "%s: Conv '%s' takes in the Add reading it", file, p->name);
      const int other = add->in[add->in[0] == p->out[0] ? 1 : 0], q = g->values[other].producer;
      CHECK(q < i, "%s: the other operand of the Add in '%s' is ready before it runs", file, p->name);
      got[3]++;
    }
  }
  printf("%s: Relus into Conv %d, into Add %d, into BatchNormalization %d; Adds into Conv %d\n", file, got[0],
         got[1], got[2], got[3]);
  CHECK(memcmp(got, want, sizeof got) == 0, "%s: expected %d, %d, %d, %d", file, want[0], want[1], want[2],
        want[3]);
  const int n_fused = want[0] + want[1] + want[2] + want[3];

  amd_tensor x = make_input(g, 4, 1.0f, 7), fused, trained, watched;
  watched_nodes = 0;
  if (forward(&r, &x, 0, 0, &fused) == 0) {
    const int skipped = skipped_nodes(&r);
    CHECK(skipped == n_fused, "%s: the pass skipped %d nodes, expected %d", file, skipped, n_fused);
    for (int i = 0; i < g->n_nodes; i++)
      if (r.fused_done[i] && g->nodes[i].op->idx == AMD_OP_IDX_Relu)
        CHECK(r.vals[g->nodes[i].in[0]].data == NULL && r.vals[g->nodes[i].out[0]].rank > 0,
              "%s: fused Relu '%s': its input was never made, its output was", file, g->nodes[i].name);
    /* training: these models' fused-away values are read by no backward (Conv, BN and Add do not read
     * their output, Relu not its input), so a training pass fuses the same nodes, and each such value
     * keeps its shape for its gradient; a pass that keeps every value (keep_all) fuses nothing */
    if (forward(&r, &x, 1, 0, &trained) == 0) {
      const int skipped1 = skipped_nodes(&r);
      int shaped = 0;
      for (int i = 0; i < g->n_nodes; i++)
        if (r.fused_done[i]) {
          const amd_tensor *v = &r.vals[g->nodes[i].in[0]];
          shaped += v->data == NULL && v->rank == 4 && amd_tensor_numel(v) > 0 && !r.bwd_reads[g->nodes[i].in[0]];
        }
      CHECK(skipped1 == n_fused, "%s: a training pass (keep = 1) skipped %d nodes, expected %d", file, skipped1,
            n_fused);
      CHECK(shaped == n_fused, "%s: %d of %d values fused away in training keep their shape, no data, and are "
            "read by no backward", file, shaped, n_fused);
      CHECK(same_bits(&fused, &trained), "%s: fused pass = fused training pass, bit for bit", file);
      amd_tensor_free(&trained);
    } else {
      failures++;
    }
    r.keep_all = 1;
    if (forward(&r, &x, 1, 0, &trained) == 0) {
      CHECK(skipped_nodes(&r) == 0, "%s: a training pass that keeps every value fuses nothing", file);
      CHECK(same_bits(&fused, &trained), "%s: fused pass = unfused training pass, bit for bit", file);
      amd_tensor_free(&trained);
    } else {
      failures++;
    }
    r.keep_all = 0;
    if (forward(&r, &x, 0, 1, &watched) == 0) {
      CHECK(watched_nodes == g->n_nodes, "%s: a watched pass runs all %d nodes (%d)", file, g->n_nodes,
            watched_nodes);
      CHECK(same_bits(&fused, &watched), "%s: fused pass = watched pass, bit for bit", file);
      amd_tensor_free(&watched);
    } else {
      failures++;
    }
    amd_tensor_free(&fused);
  } else {
    failures++;
  }
  /* a fused node's output pinned (the trainer pins the logits): what reads it stays a node of its own */
  for (int i = 0; i < g->n_nodes; i++)
    if (r.relu_into[i] >= 0 || r.add_into[i] >= 0) {
      r.pinned = g->nodes[i].out[0];
      if (forward(&r, &x, 0, 0, &fused) == 0) {
        const int k = r.relu_into[i] >= 0 ? r.relu_into[i] : r.add_into[i];
        CHECK(!r.fused_done[k] && r.vals[r.pinned].data, "%s: a pinned output is kept, its reader unfused",
              file);
        amd_tensor_free(&fused);
      } else {
        failures++;
      }
      r.pinned = -1;
      break;
    }
  amd_tensor_free(&x);
  amd_run_free(&r);
  amd_graph_free(g);
}

/* One op on the CPU with ctx->relu_out (and ctx->add_in = add, in order first) = the op, then the Add, then
 * Relu's v < 0 ? 0 : v, bit for bit. */
static void check_op(const char *label, const char *op, amd_tensor **in, int n_in, const amd_tensor *add,
                     int first) {
  gc_node g;
  amd_status st = {0};
  amd_tensor plain = {0}, fused = {0};
  amd_ctx ctx = {.inference = 1};
  if (gc_bind(&g, op, 14, NULL, 0, in, n_in, 1, &st) ||
      amd_backend_forward_node(&amd_backend_cpu, &g.node, &ctx, (const amd_tensor *const *)in, &plain, 0,
                               &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    failures++;
    return;
  }
  ctx.relu_out = 1, ctx.add_in = add, ctx.add_in_first = first;
  if (amd_backend_forward_node(&amd_backend_cpu, &g.node, &ctx, (const amd_tensor *const *)in, &fused, 0,
                               &st)) {
    printf("FAIL %s: %s\n", label, st.msg);
    failures++;
  } else {
    float *p = plain.data;
    const float *a = add ? add->data : NULL;
    int negatives = 0;
    for (int64_t i = 0; i < amd_tensor_numel(&plain); i++) {
      if (a) p[i] = first ? a[i] + p[i] : p[i] + a[i];
      negatives += p[i] < 0;
      p[i] = p[i] < 0 ? 0.0f : p[i];
    }
    CHECK(negatives > 0 && same_bits(&plain, &fused), "%s: fused = Relu(op) bit for bit (%d negatives)",
          label, negatives);
    amd_tensor_free(&fused);
  }
  amd_tensor_free(&plain);
  free(g.node.attrs);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODELS_DIR\n", argv[0]);
    return 2;
  }
  check_model(argv[1], "lenet5.onnx", (const int[4]){2, 0, 0, 0});
  check_model(argv[1], "resnet8.onnx", (const int[4]){4, 3, 0, 3});
  check_model(argv[1], "resnet8_train.onnx", (const int[4]){0, 3, 4, 0});
  { /* what the models leave out: a broadcast Add (rows of the walk), a Conv without bias, a NaN and a -0;
       a Conv with an Add, in either order */
    int64_t xd[4] = {2, 3, 4, 5}, cd[4] = {1, 3, 1, 1}, wd[4] = {4, 3, 3, 3}, yd[4] = {2, 4, 2, 3};
    amd_tensor x = gc_tensor(AMD_FLOAT, 4, xd, -1, 1), c = gc_tensor(AMD_FLOAT, 4, cd, -1, 1),
               w = gc_tensor(AMD_FLOAT, 4, wd, -1, 1), res = gc_tensor(AMD_FLOAT, 4, yd, -1, 1);
    ((float *)x.data)[3] = -0.0f, ((float *)c.data)[0] = 0.0f, ((float *)x.data)[70] = (float)NAN;
    amd_tensor *add[2] = {&x, &c}, *conv[2] = {&x, &w};
    check_op("Add [2,3,4,5] + [1,3,1,1]", "Add", add, 2, NULL, 0);
    check_op("Conv 3x3, no bias", "Conv", conv, 2, NULL, 0);
    check_op("Conv 3x3 + residual", "Conv", conv, 2, &res, 0);
    check_op("residual + Conv 3x3", "Conv", conv, 2, &res, 1);
    amd_tensor_free(&x), amd_tensor_free(&c), amd_tensor_free(&w), amd_tensor_free(&res);
  }
  (void)gradcheck, (void)gc_summary, (void)gc_attrs_free; /* gradcheck.h's, unused here */
  return check_summary();
}
