/* `amdnn-onnx bench`: the speed of training steps (or of inference) of a model
 * on one random batch of its input shape, with --profile's breakdown. The
 * steps go through the step API of `train` (src/train/step.h), so that they
 * are the steps training runs: on a GPU deferred and replayed from a CUDA
 * graph, synchronous on the CPU, with --profile or --sync-steps. The
 * batch is drawn once from --seed, so the steps do the same work as real data
 * would (no data loading: the steps alone are timed); its labels are spread
 * over the model's classes once the first step has shown how many there are. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../exec/backend.h"
#include "../exec/mode_apply.h"
#include "../onnx/load.h"
#include "../report/profile.h"
#include "../train/loss.h"
#include "../train/optim.h"
#include "../train/step.h"
#include "../train/trainer.h"
#include "cli_util.h"
#include "commands.h"

static const char usage[] =
    "usage: amdnn-onnx bench MODEL.onnx [--batch N] [--steps K] [--warmup W] [--infer]\n"
    "                        [--mode MODE] [--mode-map NAME_OR_OPTYPE=MODE,...]\n"
    "                        [--backward-mode exact|MODE] [--q8-grad ste|table]\n"
    "                        [--q8-calib minmax|percentile[:P]]\n"
    "                        [--profile FILE.tsv] [--seed S]\n"
    "                        [--device cpu|cuda[:N]] [--gemm fast|exact] [--debug-sync]\n"
    "                        [--sync-steps] [--no-graph]\n"
    "\n"
    "Times K training steps (forward, softmax cross-entropy, backward, SGD with\n"
    "momentum 0.9 and lr 0.01; BatchNormalization on batch statistics) after W\n"
    "untimed ones, on one batch of N random inputs (uniform in [-1, 1), from S)\n"
    "of the model's input shape, and prints images/s and ms per step. The steps\n"
    "are the ones `train` runs (the same step code): on a GPU the host queues\n"
    "each step while the GPU runs the one before, and from the second step on\n"
    "the steps replay a CUDA graph (--no-graph: launched kernel by kernel;\n"
    "--sync-steps, --profile: each step waits for its loss); on the CPU each\n"
    "step runs to its end. The clock starts once the untimed steps have\n"
    "finished and stops once the last timed one has. --infer\n"
    "times inference forward passes instead. The batch stays in memory: no data\n"
    "loading is timed. Defaults: --batch 128 --warmup 5 --seed 1, --steps 20 on\n"
    "the CPU and 100 on a GPU (where the first timed step's start-up and the\n"
    "last one's drain would weigh a few percent in 20 short steps).\n"
    "--mode, --mode-map, --backward-mode, --q8-grad and --q8-calib choose the\n"
    "multipliers, the q8 backward and calibration as for train;\n"
    "--profile FILE.tsv prints where the time of the K steps went (per GEMM stage\n"
    "with multiply-accumulates per second, per op family; on a GPU timed with\n"
    "CUDA events) and writes the same rows to FILE.tsv.\n"
    "--device runs it on the CPU or a GPU (default: cuda when a GPU is present);\n"
    "--debug-sync synchronises after every GPU kernel.\n" AMD_CLI_GEMM_HELP;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Parses a positive integer option value; -1 when it is not one. */
static int64_t positive(const char *s) {
  char *end;
  long long v = strtoll(s, &end, 10);
  return *s && !*end && v > 0 && v <= (1ll << 40) ? (int64_t)v : -1;
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

typedef struct bench_args {
  const char *model, *mode, *bmode, *map, *device, *profile, *q8_grad, *q8_calib;
  int64_t batch, steps, warmup, seed;
  int infer, debug_sync, sync_steps, no_graph;
} bench_args;

/* 0, 1 after --help, or 2 after a line on stderr. */
static int parse_args(int argc, char **argv, bench_args *b) {
  *b = (bench_args){.mode = "acc32", .batch = 128, .steps = 0 /* by device */, .warmup = 5, .seed = 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    int64_t *num = !strcmp(a, "--batch")    ? &b->batch
                   : !strcmp(a, "--steps")  ? &b->steps
                   : !strcmp(a, "--warmup") ? &b->warmup
                   : !strcmp(a, "--seed")   ? &b->seed
                                            : NULL;
    const char **str = !strcmp(a, "--mode")            ? &b->mode
                       : !strcmp(a, "--backward-mode") ? &b->bmode
                       : !strcmp(a, "--mode-map")      ? &b->map
                       : !strcmp(a, "--q8-grad")       ? &b->q8_grad
                       : !strcmp(a, "--q8-calib")      ? &b->q8_calib
                       : !strcmp(a, "--device")        ? &b->device
                       : !strcmp(a, "--profile")       ? &b->profile
                                                       : NULL;
    int *flag = !strcmp(a, "--infer")        ? &b->infer
                : !strcmp(a, "--debug-sync") ? &b->debug_sync
                : !strcmp(a, "--sync-steps") ? &b->sync_steps
                : !strcmp(a, "--no-graph")   ? &b->no_graph
                                             : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage, stdout);
      return 1;
    } else if (!strcmp(a, "--gemm") && has) {
      if (amd_cli_gemm_tier("amdnn-onnx bench", argv[++i])) return 2;
    } else if (num && has) {
      *num = strcmp(a, "--warmup") == 0 && strcmp(argv[i + 1], "0") == 0 ? 0 : positive(argv[i + 1]);
      if (*num < 0) {
        fprintf(stderr, "amdnn-onnx bench: %s needs a positive integer (got '%s')\n", a, argv[i + 1]);
        return 2;
      }
      i++;
    } else if (str && has) {
      *str = argv[++i];
    } else if (flag) {
      *flag = 1;
    } else if (a[0] == '-' || b->model) {
      fprintf(stderr, "amdnn-onnx bench: unknown or incomplete argument '%s'\n\n%s", a, usage);
      return 2;
    } else {
      b->model = a;
    }
  }
  if (!b->model) {
    fprintf(stderr, "amdnn-onnx bench: MODEL is required\n\n%s", usage);
    return 2;
  }
  if (amd_cli_check_q8_calib("amdnn-onnx bench", b->q8_calib)) return 2;
  return 0;
}

/* The warm-up and the timed steps: *secs, the last step's loss. Training
 * steps go through the step API of train (src/train/step.h): the pipeline
 * that train would choose for one process, CUDA graphs included. */
static int time_steps(const bench_args *b, amd_trainer *t, const amd_tensor *x, int64_t *labels, double *secs,
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

int amd_cmd_bench(int argc, char **argv) {
  bench_args b;
  int prc = parse_args(argc, argv, &b);
  if (prc) return prc == 1 ? 0 : prc;
  amd_status st = {{0}};
  amd_graph *g = NULL;
  amd_trainer t = {0};
  amd_tensor x = {0}, x_dev = {0}; /* x_dev: x in backend memory (device backends) */
  amd_mode_set modes = {0};
  int64_t *labels = calloc((size_t)b.batch, sizeof *labels); /* class 0 until the first step shows the classes */
  int rc = 1;
  if (!labels) {
    amd_fail(&st, "out of memory");
    goto fail;
  }
  if (amd_graph_load(b.model, 0, &g, &st) || amd_mode_apply(g, b.mode, b.map, b.bmode, &modes, &st) ||
      amd_q8_grad_apply(g, b.q8_grad, &st) || amd_q8_calib_apply(g, b.q8_calib, &st))
    goto fail;
  if (g->n_inputs != 1) {
    amd_fail(&st, "bench needs a model with one input (this one has %d)", g->n_inputs);
    goto fail;
  }
  if (random_input(g, b.batch, (uint64_t)b.seed, &x, &st)) goto fail;
  const amd_trainer_opts infer_opts = {.inference_only = 1}; /* --infer: quantized models too */
  if (amd_trainer_init(&t, g, b.infer ? &infer_opts : NULL, &st)) goto fail;
  if (t.warning[0] && !b.infer) fprintf(stderr, "amdnn-onnx bench: warning: %s\n", t.warning);
  const amd_backend *be;
  if (amd_cli_backend(b.device, b.debug_sync, &be, &st) || amd_trainer_set_backend(&t, be, &st)) goto fail;
  amd_cli_backend_note("bench", g, be);
  if (b.profile && amd_cli_check_writable(b.profile, "the --profile table", &st)) goto fail;
  if (b.steps == 0) b.steps = be->device == AMD_DEVICE_CPU ? 20 : 100;
  /* the batch in backend memory, as train's batches are (made on the device
   * there): a step then copies nothing from the host but its labels, and a
   * CUDA graph can hold it */
  if (be->device != AMD_DEVICE_CPU && x.dtype == AMD_FLOAT) {
    amd_tensor xd = {0};
    if (amd_backend_upload(be, &x, &xd, &st)) goto fail;
    amd_tensor_free(&x);
    x_dev = xd;
  }
  double secs = 0, loss = 0;
  if (time_steps(&b, &t, x_dev.data ? &x_dev : &x, labels, &secs, &loss, &st)) goto fail;
  printf(
      "bench %s: %s, batch %lld, mode %s%s%s, %s: %.0f images/s, %.3f ms/step over %lld steps (%lld untimed "
      "before; last loss %.4g)\n",
      b.model, b.infer ? "inference" : "training", (long long)b.batch, b.mode, b.bmode ? ", backward " : "",
      b.bmode ? b.bmode : "", be->name, (double)(b.batch * b.steps) / secs, 1000.0 * secs / (double)b.steps,
      (long long)b.steps, (long long)b.warmup, loss);
  amd_cli_device_memory_note("bench", be);
  if (b.profile && amd_prof_report(stdout, b.profile, secs, b.steps, &st)) goto fail;
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "amdnn-onnx bench: %s\n", st.msg);
done:
  amd_prof_on = 0;
  if (x_dev.data) t.be->buf->free(&x_dev);
  amd_trainer_free(&t);
  amd_graph_free(g);
  amd_tensor_free(&x);
  amd_mode_set_free(&modes);
  free(labels);
  return rc;
}
