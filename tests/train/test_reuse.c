/* One graph, several trainers one after another (init -> free -> init), as a
 * session of the public API uses them: train, evaluate, train with other
 * options. On the MobileNetV3 block (models/mbv3block_train.onnx: Conv,
 * BatchNormalization, HardSigmoid, SE, residual Add, Gemm), CPU backend:
 *  - trainer A trains one Adam step and is freed: the graph keeps the values
 *    A gave its initializers (parameters and BN running statistics), and
 *    its nodes and values are again those it was loaded with;
 *  - trainer B (inference_only) on the same graph evaluates a batch to the
 *    logits, loss and predictions of an evaluation on a freshly loaded
 *    graph given A's values, bit for bit (and not to those of the weights
 *    as loaded);
 *  - trainer C (--freeze "stem." and "Gemm": another parameter set) takes
 *    one Adam step equal, bit for bit, to the same step on a freshly loaded
 *    graph given A's values: loss, parameters chosen, gradients, updated
 *    parameters, BN statistics; while C lives, the nodes' outputs and the
 *    values are those of the fresh graph's trainer and of A (no duplicate
 *    BN outputs);
 *  - after C, a plain forward (no trainer: BN follows the model) equals that
 *    of a freshly loaded graph given C's values.
 * Twice: as exported (every BN node already has its running-statistics
 * outputs) and with the BN nodes cut to their first output after loading, as
 * in an inference export that keeps BN, where the trainer adds the outputs
 * (and must take them away again: at opset 13 a BN node with them uses batch
 * statistics outside training).
 * usage: test_reuse MODELS_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_check.h"
#include "onnx/load.h"
#include "train/optim.h"
#include "train/trainer.h"

#define N 4

static const char *model_path;

static void die(const char *what, const amd_status *st) {
  printf("FAIL: %s: %s\n", what, st->msg);
  exit(1);
}

static int is_bn(const amd_node *n) { return strcmp(n->op->name, "BatchNormalization") == 0; }

/* Loads the model; cut: every BN node keeps only its output Y (the others'
 * values stay in the table, produced by nobody and read by nobody). */
static amd_graph *load(int cut) {
  amd_status st = {{0}};
  amd_graph *g = NULL;
  if (amd_graph_load(model_path, 0, &g, &st)) die("load", &st);
  for (int i = 0; cut && i < g->n_nodes; i++) {
    amd_node *n = &g->nodes[i];
    if (!is_bn(n)) continue;
    for (int o = 1; o < n->n_out; o++)
      if (n->out[o] >= 0) g->values[n->out[o]].producer = -1;
    n->n_out = 1;
  }
  return g;
}

/* dst's float initializers := src's (two loads of one model: the same values in the same order). */
static void copy_inits(amd_graph *dst, const amd_graph *src) {
  AMD_ASSERT(dst->n_values <= src->n_values);
  for (int v = 0; v < dst->n_values; v++) {
    amd_value *d = &dst->values[v];
    const amd_value *s = &src->values[v];
    if (!d->is_initializer || d->init.dtype != AMD_FLOAT) continue;
    AMD_ASSERT(strcmp(d->name, s->name) == 0 && amd_tensor_nbytes(&d->init) == amd_tensor_nbytes(&s->init));
    memcpy(d->init.data, s->init.data, amd_tensor_nbytes(&d->init));
  }
}

/* Every float initializer of g, one after the other (caller frees); *n: their count. */
static float *snapshot(const amd_graph *g, int64_t *n) {
  *n = 0;
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].is_initializer && g->values[v].init.dtype == AMD_FLOAT)
      *n += amd_tensor_numel(&g->values[v].init);
  float *s = malloc((size_t)(*n ? *n : 1) * sizeof *s), *p = s;
  AMD_ASSERT(s);
  for (int v = 0; v < g->n_values; v++) {
    const amd_tensor *t = &g->values[v].init;
    if (!g->values[v].is_initializer || t->dtype != AMD_FLOAT) continue;
    memcpy(p, t->data, amd_tensor_nbytes(t));
    p += amd_tensor_numel(t);
  }
  return s;
}

static int64_t differing(const float *a, const float *b, int64_t n) {
  int64_t d = 0;
  for (int64_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], sizeof *a) != 0;
  return d;
}

/* The nodes' outputs and the value count, to compare two graphs' structure. */
#define MAX_NODES 64
typedef struct shape_of_graph {
  int n_values, n_nodes, n_out[MAX_NODES], out[MAX_NODES][8];
  unsigned char bn[MAX_NODES];
} shape_of_graph;

static shape_of_graph graph_shape(const amd_graph *g) {
  shape_of_graph s;
  memset(&s, 0, sizeof s);
  AMD_ASSERT(g->n_nodes <= MAX_NODES);
  s.n_values = g->n_values;
  s.n_nodes = g->n_nodes;
  for (int i = 0; i < g->n_nodes; i++) {
    s.bn[i] = (unsigned char)is_bn(&g->nodes[i]);
    s.n_out[i] = g->nodes[i].n_out;
    for (int o = 0; o < g->nodes[i].n_out && o < 8; o++) s.out[i][o] = g->nodes[i].out[o];
  }
  return s;
}

static int same_shape(const shape_of_graph *a, const shape_of_graph *b) {
  return memcmp(a, b, sizeof *a) == 0;
}

static amd_tensor batch(double phase) {
  amd_status st = {{0}};
  int64_t dims[4] = {N, 3, 16, 16};
  amd_tensor x = {0};
  amd_tensor_set_shape(&x, AMD_FLOAT, 4, dims);
  if (amd_tensor_alloc(&x, &st)) die("batch", &st);
  float *p = x.data;
  for (int64_t i = 0; i < amd_tensor_numel(&x); i++) p[i] = (float)sin(0.37 * (double)i + phase);
  return x;
}

static const int64_t labels[N] = {1, 7, 3, 0};

/* What a training step left: loss, the parameter values chosen, gradients, parameters after the step and
 * the BN statistics. */
typedef struct step_result {
  double loss;
  int n_params;
  int param_value[64];
  int64_t n_floats;
  float *grads, *params, *stats;
  int64_t n_stats_floats;
} step_result;

static void step_result_free(step_result *r) {
  free(r->grads);
  free(r->params);
  free(r->stats);
}

/* Initializes a training trainer on g with freeze list fr (n_fr entries), takes one Adam step on x, records
 * it (and in *during the graph's structure while the trainer lives) and frees the trainer. */
static step_result train_step(amd_graph *g, const char *const *fr, int n_fr, const amd_tensor *x,
                              shape_of_graph *during) {
  amd_status st = {{0}};
  amd_trainer_opts o;
  memset(&o, 0, sizeof o);
  for (int i = 0; i < n_fr; i++) o.freeze[i] = fr[i];
  o.n_freeze = n_fr;
  amd_trainer t;
  if (amd_trainer_init(&t, g, &o, &st)) die("training trainer", &st);
  *during = graph_shape(g);
  amd_optim opt;
  if (amd_optim_init("adam", &opt, &st)) die("adam", &st);
  const int64_t n_opt = amd_optim_state_blocks(&opt) * t.n_floats;
  float *state = calloc((size_t)n_opt, sizeof *state);
  step_result r;
  memset(&r, 0, sizeof r);
  if (amd_trainer_step_grads(&t, x, labels, 0.0f, 1.0f, &r.loss, NULL, &st) ||
      amd_trainer_optim_step(&t, &opt, 1e-2, 1, state, n_opt, 0, &st) || amd_trainer_update_stats(&t, &st))
    die("step", &st);
  AMD_ASSERT(t.n_params <= 64);
  r.n_params = t.n_params;
  memcpy(r.param_value, t.param_value, (size_t)t.n_params * sizeof *t.param_value);
  r.n_floats = t.n_floats;
  r.grads = malloc((size_t)t.n_floats * sizeof *r.grads);
  r.params = malloc((size_t)t.n_floats * sizeof *r.params);
  AMD_ASSERT(r.grads && r.params);
  memcpy(r.grads, t.grads, (size_t)t.n_floats * sizeof *r.grads);
  memcpy(r.params, t.params, (size_t)t.n_floats * sizeof *r.params);
  for (int i = 0; i < t.n_stats; i++) r.n_stats_floats += amd_tensor_numel(amd_trainer_stat(&t, i));
  r.stats = malloc((size_t)(r.n_stats_floats ? r.n_stats_floats : 1) * sizeof *r.stats);
  AMD_ASSERT(r.stats);
  float *p = r.stats;
  for (int i = 0; i < t.n_stats; i++) {
    const amd_tensor *s = amd_trainer_stat(&t, i);
    memcpy(p, s->data, amd_tensor_nbytes(s));
    p += amd_tensor_numel(s);
  }
  free(state);
  amd_trainer_free(&t);
  return r;
}

/* What an evaluation gave: the logits, loss sum and predictions. */
typedef struct eval_result {
  float logits[N * 10];
  amd_batch_stats bs;
  int64_t pred[N];
} eval_result;

static eval_result evaluate(amd_graph *g, const amd_tensor *x) {
  amd_status st = {{0}};
  amd_trainer_opts o;
  memset(&o, 0, sizeof o);
  o.inference_only = 1;
  amd_trainer t;
  if (amd_trainer_init(&t, g, &o, &st)) die("inference trainer", &st);
  eval_result r;
  memset(&r, 0, sizeof r);
  if (amd_trainer_eval(&t, x, labels, &r.bs, r.pred, &st)) die("eval", &st);
  const amd_tensor *z = &t.run.vals[t.logits_value];
  AMD_ASSERT(amd_tensor_numel(z) == N * 10);
  memcpy(r.logits, z->data, sizeof r.logits);
  amd_trainer_free(&t);
  return r;
}

static int same_eval(const eval_result *a, const eval_result *b) {
  return memcmp(a->logits, b->logits, sizeof a->logits) == 0 &&
         memcmp(&a->bs.loss_sum, &b->bs.loss_sum, sizeof a->bs.loss_sum) == 0 && a->bs.top1 == b->bs.top1 &&
         memcmp(a->pred, b->pred, sizeof a->pred) == 0;
}

/* A forward without a trainer (BN as the model says): the logits. */
static void plain_forward(const amd_graph *g, const amd_tensor *x, float *logits) {
  amd_status st = {{0}};
  amd_run r;
  amd_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  if (amd_run_init(&r, g, &st) || amd_run_forward(&r, &ctx, x, 0, &st)) die("plain forward", &st);
  const amd_tensor *z = &r.vals[g->outputs[0]];
  AMD_ASSERT(amd_tensor_numel(z) == N * 10);
  memcpy(logits, z->data, N * 10 * sizeof *logits);
  amd_run_free(&r);
}

static void compare_steps(const char *tag, const step_result *c, const step_result *f) {
  CHECK(memcmp(&c->loss, &f->loss, sizeof c->loss) == 0,
        "%s: loss %.9g on the reused graph, %.9g on a fresh one", tag, c->loss, f->loss);
  CHECK(c->n_params == f->n_params && c->n_floats == f->n_floats &&
            memcmp(c->param_value, f->param_value, (size_t)c->n_params * sizeof *c->param_value) == 0,
        "%s: parameters %d (%lld floats) on the reused graph, %d (%lld) on a fresh one", tag, c->n_params,
        (long long)c->n_floats, f->n_params, (long long)f->n_floats);
  if (c->n_floats != f->n_floats) return;
  CHECK(differing(c->grads, f->grads, c->n_floats) == 0, "%s: %lld of %lld gradients differ", tag,
        (long long)differing(c->grads, f->grads, c->n_floats), (long long)c->n_floats);
  CHECK(differing(c->params, f->params, c->n_floats) == 0, "%s: %lld of %lld updated parameters differ", tag,
        (long long)differing(c->params, f->params, c->n_floats), (long long)c->n_floats);
  CHECK(c->n_stats_floats == f->n_stats_floats && differing(c->stats, f->stats, c->n_stats_floats) == 0,
        "%s: BN statistics differ (%lld and %lld floats)", tag, (long long)c->n_stats_floats,
        (long long)f->n_stats_floats);
}

static void scenario(int cut) {
  const char *tag = cut ? "BN cut to Y" : "as exported";
  static const char *const freeze[] = {"stem.", "Gemm"};
  amd_tensor x1 = batch(0.0), x2 = batch(1.0);

  /* on freshly loaded graphs: the structure, the structure with a trainer, the evaluation of the weights
   * as loaded */
  amd_graph *g0 = load(cut);
  const shape_of_graph loaded = graph_shape(g0);
  amd_graph_free(g0);
  g0 = load(cut);
  const eval_result as_loaded = evaluate(g0, &x2);
  amd_graph_free(g0);
  int n_bn = 0;
  for (int i = 0; i < loaded.n_nodes; i++) n_bn += loaded.bn[i];

  /* A: one step, freed */
  amd_graph *g = load(cut);
  int64_t n_init, n_a;
  float *before = snapshot(g, &n_init);
  shape_of_graph during_a;
  step_result a = train_step(g, NULL, 0, &x1, &during_a);
  CHECK(n_bn == 4 && during_a.n_values == loaded.n_values + (cut ? 2 * n_bn : 0),
        "%s: %d BN nodes; %d values with trainer A, %d loaded", tag, n_bn, during_a.n_values,
        loaded.n_values);
  const shape_of_graph after_a = graph_shape(g);
  CHECK(same_shape(&after_a, &loaded), "%s: after A is freed: %d values (%d loaded), or other node outputs",
        tag, after_a.n_values, loaded.n_values);
  float *after = snapshot(g, &n_a);
  CHECK(n_a == n_init && differing(before, after, n_init) > n_init / 2,
        "%s: trainer A changed %lld of %lld initializer floats", tag,
        (long long)differing(before, after, n_init), (long long)n_init);
  /* the parameters hold what A's step made of them (laid out in the order of a.param_value) */
  int64_t off = 0, kept = 0;
  for (int p = 0; p < a.n_params; p++) {
    const amd_tensor *t = &g->values[a.param_value[p]].init;
    kept += differing(a.params + off, t->data, amd_tensor_numel(t)) == 0;
    off += amd_tensor_numel(t);
  }
  CHECK(a.n_params > 0 && kept == a.n_params && off == a.n_floats,
        "%s: %lld of A's %d parameters hold A's trained values after A is freed", tag, (long long)kept,
        a.n_params);

  /* B: evaluation with A's weights */
  const eval_result b = evaluate(g, &x2);
  amd_graph *gb = load(cut);
  copy_inits(gb, g);
  const eval_result fresh_b = evaluate(gb, &x2);
  amd_graph_free(gb);
  CHECK(same_eval(&b, &fresh_b), "%s: trainer B's evaluation differs from a fresh graph's with A's weights",
        tag);
  CHECK(!same_eval(&b, &as_loaded), "%s: trainer B evaluates as the weights as loaded (A's step is lost)",
        tag);

  /* C: another parameter set; the reference is a fresh graph given A's values */
  amd_graph *gc = load(cut);
  copy_inits(gc, g);
  shape_of_graph during_c, during_fresh_c;
  step_result c = train_step(g, freeze, 2, &x1, &during_c);
  step_result fresh_c = train_step(gc, freeze, 2, &x1, &during_fresh_c);
  CHECK(same_shape(&during_c, &during_fresh_c) && same_shape(&during_c, &during_a),
        "%s: with C: %d values (fresh graph %d, with A %d), or other node outputs", tag, during_c.n_values,
        during_fresh_c.n_values, during_a.n_values);
  CHECK(c.n_params > 0 && c.n_params < a.n_params, "%s: C trains %d parameters, A %d", tag, c.n_params,
        a.n_params);
  compare_steps(tag, &c, &fresh_c);

  /* no trainer: a plain forward as on a fresh graph with C's values */
  amd_graph *gp = load(cut);
  copy_inits(gp, g);
  float lg[N * 10], lp[N * 10];
  plain_forward(g, &x2, lg);
  plain_forward(gp, &x2, lp);
  CHECK(differing(lg, lp, N * 10) == 0,
        "%s: plain forward after the trainers: %lld of %d logits differ from a fresh graph's", tag,
        (long long)differing(lg, lp, N * 10), N * 10);
  printf("%s: A loss %.6f, B loss %.6f, C loss %.6f (%d of %d parameters), %d BN nodes, %d values\n", tag,
         a.loss, b.bs.loss_sum / N, c.loss, c.n_params, a.n_params, n_bn, during_c.n_values);

  amd_graph_free(gp);
  amd_graph_free(gc);
  free(before);
  free(after);
  step_result_free(&a);
  step_result_free(&c);
  step_result_free(&fresh_c);
  amd_tensor_free(&x1);
  amd_tensor_free(&x2);
  amd_graph_free(g);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_reuse MODELS_DIR\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/mbv3block_train.onnx", argv[1]);
  model_path = path;
  scenario(0);
  scenario(1);
  return check_summary();
}
