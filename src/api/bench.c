/* amdnn_session_bench: the speed of training steps (or of inference) of a
 * model on one random batch of its input shape, on a copy of the model that
 * the session's settings load from its file (the steps change the weights:
 * the session's own stay as they are). The steps go through the
 * step API of training (src/train/step.h), so that they are the steps
 * training runs: on a GPU deferred and replayed from a CUDA graph,
 * synchronous on the CPU, with a profile or sync-steps. The batch is drawn
 * once from the seed, so the steps do the same work as real data would (no
 * data loading: the steps alone are timed); its labels are spread over the
 * model's classes once the first step has shown how many there are. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../exec/backend.h"
#include "../onnx/load.h"
#include "../report/profile.h"
#include "../train/optim.h"
#include "../train/step.h"
#include "../train/trainer.h"
#include "api.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The model's input shape with the batch dimension set to n (random values,
 * uniform in [-1, 1), from seed). */
static int random_input(const amd_graph *g, int64_t n, uint64_t seed, amd_tensor *x, amd_status *st) {
  const amd_value *v = &g->values[g->inputs[0]];
  if (v->rank < 1 || v->dtype != AMD_FLOAT)
    return amd_fail(st, "input '%s': bench needs a float input with a batch dimension", v->name);
  int64_t dims[AMD_MAX_RANK];
  for (int i = 0; i < v->rank; i++) {
    dims[i] = i == 0 ? n : v->dims[i];
    if (dims[i] < 0)
      return amd_fail(st, "input '%s': dimension %d (%s) has no fixed size", v->name, i,
                      v->dim_param[i] ? v->dim_param[i] : "?");
  }
  amd_tensor_set_shape(x, AMD_FLOAT, v->rank, dims);
  if (amd_tensor_alloc(x, st)) return -1;
  float *p = x->data;
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0, k = amd_tensor_numel(x); i < k; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17; /* xorshift64 */
    p[i] = (float)((double)(s >> 11) / 4503599627370496.0 - 1.0);
  }
  return 0;
}

typedef struct bench_cfg {
  int64_t batch, steps, warmup, seed;
  int infer, sync_steps, no_graph, debug_sync;
  const char *profile;
} bench_cfg;

/* The warm-up and the timed steps: *secs, the last step's loss. Training
 * steps go through the step API of train (src/train/step.h): the pipeline
 * that train would choose for one process, CUDA graphs included. */
static int time_steps(const bench_cfg *b, amd_trainer *t, const amd_tensor *x, int64_t *labels, double *secs,
                      double *loss, amd_status *st) {
  amd_optim opt;
  if (amd_optim_init("sgd", &opt, st)) return -1;
  opt.momentum = 0.9;
  float *opt_state = calloc((size_t)(t->n_floats ? t->n_floats : 1), sizeof *opt_state);
  if (!opt_state) return amd_fail(st, "out of memory");
  const amd_step_opts so = {b->sync_steps, b->no_graph, b->profile != NULL, b->debug_sync, 0};
  amd_stepper sp;
  amd_step_result res = {0};
  int rc = -1;
  double t0 = 0;
  if (!b->infer && amd_step_init(&sp, t, NULL, &opt, opt_state, t->n_floats, 0.0f, &so, st)) goto out;
  for (int64_t s = 0; s < b->warmup + b->steps; s++) {
    if (s == b->warmup) {
      if (!b->infer && amd_step_flush(&sp, &res, st)) goto out; /* the untimed steps are over */
      if (b->profile) amd_prof_start(); /* the timed steps only */
      t0 = now_s();
    }
    amd_batch_stats bs = {0};
    if (b->infer) {
      if (amd_trainer_eval(t, x, labels, &bs, NULL, st)) goto out; /* reads the loss back: synchronises */
      *loss = bs.loss_sum / (double)b->batch;
    } else {
      const amd_step_batch in = {x, labels, b->batch, b->batch, 1, 0, s, s, 0.01, 1.0};
      if (amd_step_run(&sp, &in, &res, st) || (!sp.deferred && amd_step_apply(&sp, 0.01, s + 1, 1.0, st))) goto out;
      if (res.ready) *loss = res.loss;
    }
    if (s == 0) { /* now the logits' shape gives the classes: labels spread over them */
      const amd_tensor *z = &t->run.vals[t->logits_value];
      int64_t classes = z->rank >= 2 && z->dims[1] > 0 ? z->dims[1] : 1;
      for (int64_t i = 0; i < b->batch; i++) labels[i] = (i * 7 + b->seed) % classes;
    }
  }
  if (!b->infer && amd_step_flush(&sp, &res, st)) goto out; /* the last step */
  if (res.ready) *loss = res.loss;
  if (amd_trainer_sync_host(t, NULL, 0, st)) goto out; /* drains the device's queue */
  *secs = now_s() - t0;
  rc = 0;
out:
  free(opt_state);
  return rc;
}

/* The set-up and the timing, after which the caller frees t, x and x_dev. */
static int bench(amdnn_session *s, amd_graph *g, const bench_cfg *b, const amdnn_callbacks *cb, amd_trainer *t,
                 amd_tensor *x, amd_tensor *x_dev, int64_t *labels, amdnn_bench_result *out, amd_status *st) {
  if (g->n_inputs != 1) return amd_fail(st, "bench needs a model with one input (this one has %d)", g->n_inputs);
  if (random_input(g, b->batch, (uint64_t)b->seed, x, st)) return -1;
  const amd_trainer_opts infer_opts = {.inference_only = 1}; /* infer: quantized models too */
  if (amd_trainer_init(t, g, b->infer ? &infer_opts : NULL, st)) return -1;
  if (t->warning[0] && !b->infer) api_message(cb, AMDNN_MSG_WARNING, "%s", t->warning);
  const amd_backend *be;
  if (api_session_backend(s, 0, &be, st) || amd_trainer_set_backend(t, be, st)) return -1;
  api_device_note(cb, s);
  if (b->profile && api_check_writable(b->profile, "the profile table", st)) return -1;
  bench_cfg bc = *b;
  if (bc.steps == 0) bc.steps = be->device == AMD_DEVICE_CPU ? 20 : 100;
  /* the batch in backend memory, as train's batches are (made on the device
   * there): a step then copies nothing from the host but its labels, and a
   * CUDA graph can hold it */
  if (be->device != AMD_DEVICE_CPU && x->dtype == AMD_FLOAT) {
    if (amd_backend_upload(be, x, x_dev, st)) return -1;
    amd_tensor_free(x);
  }
  double secs = 0, loss = 0;
  if (time_steps(&bc, t, x_dev->data ? x_dev : x, labels, &secs, &loss, st)) return -1;
  *out = (amdnn_bench_result){bc.batch, bc.steps, secs, (double)(bc.batch * bc.steps) / secs,
                              1000.0 * secs / (double)bc.steps, bc.infer};
  api_message(cb, AMDNN_MSG_INFO,
              "bench %s: %s, batch %lld, mode %s%s%s, %s: %.0f images/s, %.3f ms/step over %lld steps (%lld "
              "untimed before; last loss %.4g)",
              s->path, bc.infer ? "inference" : "training", (long long)bc.batch, s->mode,
              s->backward ? ", backward " : "", s->backward ? s->backward : "", be->name, out->images_per_s,
              out->ms_per_step, (long long)bc.steps, (long long)bc.warmup, loss);
  api_memory_note(cb, be);
  if (b->profile && api_profile_report(cb, b->profile, secs, bc.steps, st)) return -1;
  return 0;
}

amdnn_status *amdnn_session_bench(amdnn_session *s, const amdnn_options *opts, const amdnn_callbacks *cb,
                                  amdnn_bench_result *out) {
  if (!s || !out) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_bench: session or out is NULL");
  amdnn_status *bad = api_opts_check(opts, AMDNN_FOR_BENCH, "bench");
  if (bad) return bad;
  const bench_cfg b = {
      .batch = api_opt_i64(opts, "batch", 128),
      .steps = api_opt_i64(opts, "steps", 0), /* by device */
      .warmup = api_opt_i64(opts, "warmup-steps", 5),
      .seed = api_opt_i64(opts, "seed", 1),
      .infer = api_opt_flag(opts, "infer"),
      .sync_steps = api_opt_flag(opts, "sync-steps"),
      .no_graph = api_opt_flag(opts, "no-graph"),
      .debug_sync = s->debug_sync,
      .profile = api_opt(opts, "profile"),
  };
  amd_status st = {{0}};
  amd_trainer t = {0};
  amd_tensor x = {0}, x_dev = {0}; /* x_dev: x in backend memory (device backends) */
  int64_t *labels = calloc((size_t)b.batch, sizeof *labels); /* class 0 until the first step shows the classes */
  amd_graph *g = NULL;
  amd_mode_set modes = {0};
  int rc = labels ? api_session_load(s, &g, &modes, &st) : amd_fail(&st, "out of memory");
  if (rc == 0) rc = bench(s, g, &b, cb, &t, &x, &x_dev, labels, out, &st);
  amd_prof_on = 0;
  if (x_dev.data) t.be->buf->free(&x_dev);
  amd_trainer_free(&t);
  amd_graph_free(g);
  amd_mode_set_free(&modes);
  amd_tensor_free(&x);
  free(labels);
  return rc ? api_from(&st, AMDNN_ERR_FAILED) : NULL;
}
