/* What a training step keeps in memory (src/exec/exec.c, src/train/trainer_grads.c),
 * on ResNet-8 (training export: Conv, BatchNormalization, Relu, residual Add)
 * on the CPU backend:
 *  - after the forward pass, every value that some backward reads keeps its
 *    data, and only those: a BatchNormalization output read by a Relu and an
 *    Add output hold none (their Relu is fused into them, or they were freed
 *    after it; their shapes stay), a Conv output (BN's input) and a Relu
 *    output are kept; the logits are kept;
 *  - during the backward walk, before each node's backward, every forward
 *    value whose last backward reader (trainer.h, bwd_last) the walk has
 *    passed has lost its data, and every one it has not passed still has it;
 *  - after the walk, no Conv or Relu output is left, the logits and the
 *    BatchNormalization statistics that the step copies afterwards are; no
 *    gradient of an intermediate value is left (each was freed once its
 *    producer's backward had used it), while the parameter gradients, in
 *    their block, are not all zero;
 *  - the step's loss and parameter gradients equal those of the same step run
 *    with every intermediate kept (amd_run.keep_all, which also fuses
 *    nothing), bit for bit.
 * usage: test_memory MODELS_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_check.h"
#include "onnx/load.h"
#include "train/trainer.h"

/* The op type of the only reader of value v, or NULL if it has none or several. */
static const char *only_reader(const amd_graph *g, int v) {
  const char *op = NULL;
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (g->nodes[i].in[k] == v) op = g->nodes[i].op->name, n++;
  return n == 1 ? op : NULL;
}

/* What a forward pass kept, counted by op (see the file's comment). */
typedef struct kept_counts {
  int bn_relu, bn_relu_freed, add, add_freed, conv, conv_kept, relu, relu_kept;
} kept_counts;

static kept_counts count_kept(const amd_trainer *t) {
  const amd_graph *g = t->g;
  kept_counts c = {0};
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    int v = n->out[0];
    if (v < 0) continue;
    const amd_tensor *tv = &t->run.vals[v];
    const char *r = only_reader(g, v);
    if (!strcmp(n->op->name, "BatchNormalization") && r && !strcmp(r, "Relu")) {
      c.bn_relu++;
      c.bn_relu_freed += tv->data == NULL && amd_tensor_numel(tv) > 0;
    } else if (!strcmp(n->op->name, "Add")) {
      c.add++;
      c.add_freed += tv->data == NULL && amd_tensor_numel(tv) > 0;
    } else if (!strcmp(n->op->name, "Conv")) {
      c.conv++;
      c.conv_kept += tv->data != NULL;
    } else if (!strcmp(n->op->name, "Relu")) {
      c.relu++;
      c.relu_kept += tv->data != NULL;
    }
  }
  return c;
}

/* The walk's progress hook: at its first call, what the forward pass kept;
 * at every call, which forward values hold data against bwd_last. */
typedef struct walk_watch {
  amd_trainer *t;
  int calls, wrong, freed_seen;
  kept_counts after_forward;
} walk_watch;

static int watch_walk(void *user, int i, amd_status *st) {
  (void)st;
  walk_watch *w = user;
  const amd_trainer *t = w->t;
  if (w->calls++ == 0) w->after_forward = count_kept(t);
  const int at = i < 0 ? -1 : i; /* before node i's backward: nodes above i are done; -1: all are */
  for (int v = 0; v < t->g->n_values; v++) {
    if (t->bwd_last[v] < 0 || (!t->run.owned[v] && t->run.vals[v].data)) continue; /* kept, or not the run's */
    const int passed = t->bwd_last[v] > at, has = t->run.vals[v].data != NULL;
    if (passed == has) {
      if (w->wrong++ < 3)
        printf("  value '%s' (last read by node %d) %s data before node %d\n", t->g->values[v].name,
               t->bwd_last[v], has ? "still holds" : "lost its", at);
    }
    w->freed_seen += passed && !has;
  }
  return 0;
}

/* One training step of ResNet-8 on a fixed batch; returns the loss and a copy
 * of the gradient block (caller frees). keep_all: the run is told that every
 * backward reads everything, so nothing is freed. */
static double step(const char *model, int keep_all, float **grads, int64_t *n_grads, int check_liveness) {
  amd_status st = {{0}};
  amd_graph *g = NULL;
  amd_trainer t;
  if (amd_graph_load(model, 0, &g, &st) || amd_trainer_init(&t, g, NULL, &st)) {
    printf("FAIL: %s\n", st.msg);
    exit(1);
  }
  int64_t dims[4] = {4, 3, 32, 32}, labels[4] = {1, 7, 3, 0};
  amd_tensor x = {0};
  amd_tensor_set_shape(&x, AMD_FLOAT, 4, dims);
  if (amd_tensor_alloc(&x, &st)) exit(1);
  float *px = x.data;
  for (int64_t i = 0; i < amd_tensor_numel(&x); i++) px[i] = (float)sin(0.37 * (double)i);
  double loss = 0;
  t.run.keep_all = keep_all;
  walk_watch w = {&t, 0, 0, 0, {0}};
  if (check_liveness) {
    t.backward_progress = watch_walk;
    t.progress_user = &w;
  }
  if (amd_trainer_step_grads(&t, &x, labels, 0.0f, 1.0f, &loss, NULL, &st)) {
    printf("FAIL: step: %s\n", st.msg);
    exit(1);
  }
  if (check_liveness) {
    const kept_counts c = w.after_forward;
    CHECK(c.bn_relu > 0 && c.bn_relu_freed == c.bn_relu, "BN outputs read by a Relu: %d freed of %d",
          c.bn_relu_freed, c.bn_relu);
    CHECK(c.add > 0 && c.add_freed == c.add, "Add outputs: %d freed of %d", c.add_freed, c.add);
    CHECK(c.conv > 0 && c.conv_kept == c.conv, "after the forward pass, Conv outputs: %d kept of %d", c.conv_kept,
          c.conv);
    CHECK(c.relu > 0 && c.relu_kept == c.relu, "after the forward pass, Relu outputs: %d kept of %d", c.relu_kept,
          c.relu);
    CHECK(w.calls == g->n_nodes + 1 && w.wrong == 0 && w.freed_seen > 0,
          "during the walk: %d of %d calls, %d values against bwd_last, %d freed seen", w.calls, g->n_nodes + 1,
          w.wrong, w.freed_seen);
    const kept_counts e = count_kept(&t);
    CHECK(e.conv_kept == 0 && e.relu_kept == 0, "after the walk, Conv outputs %d and Relu outputs %d still held",
          e.conv_kept, e.relu_kept);
    CHECK(t.run.vals[t.logits_value].data != NULL, "the logits are kept");
    int stats_kept = 0;
    for (int i = 0; i < t.n_stats; i++) stats_kept += amd_trainer_stat_computed(&t, i) != NULL;
    CHECK(t.n_stats > 0 && stats_kept == t.n_stats, "BN statistics kept for the copy: %d of %d", stats_kept,
          t.n_stats);
    int left = 0;
    for (int v = 0; v < g->n_values; v++) left += !g->values[v].init_in_block && t.dvals[v].data != NULL;
    CHECK(left == 0, "%d gradients of intermediate values left after the backward walk", left);
  }
  *n_grads = t.n_floats;
  *grads = malloc((size_t)t.n_floats * sizeof(float));
  memcpy(*grads, t.grads, (size_t)t.n_floats * sizeof(float));
  amd_tensor_free(&x);
  amd_trainer_free(&t);
  amd_graph_free(g);
  return loss;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_memory MODELS_DIR\n");
    return 2;
  }
  char model[4096];
  snprintf(model, sizeof model, "%s/resnet8_train.onnx", argv[1]);
  float *g1, *g2;
  int64_t n1, n2;
  double l1 = step(model, 0, &g1, &n1, 1), l2 = step(model, 1, &g2, &n2, 0);
  CHECK(l1 == l2, "loss %.9g with values freed, %.9g with every value kept", l1, l2);
  int64_t differ = 0, nonzero = 0;
  for (int64_t i = 0; i < n1 && n1 == n2; i++)
    differ += memcmp(&g1[i], &g2[i], sizeof(float)) != 0, nonzero += g1[i] != 0;
  CHECK(n1 == n2 && differ == 0, "%lld of %lld parameter gradients differ", (long long)differ, (long long)n1);
  CHECK(nonzero > n1 / 2, "only %lld of %lld parameter gradients are non-zero", (long long)nonzero,
        (long long)n1);
  free(g1);
  free(g2);
  return check_summary();
}
