/* amdnn_session_train: src/train/run.c's run on the session's model, its
 * options from the option table, its reports turned into callbacks. */
#include <stdlib.h>
#include <string.h>

#include "../core/env.h"
#include "../exec/backend.h"
#include "../onnx/load.h"
#include "../report/plot.h"
#include "../train/run.h"
#include "api.h"

/* What the run reports, as the API's callbacks. */
typedef struct train_ctx {
  amdnn_session *s;
  const amdnn_callbacks *cb;
} train_ctx;

static int backend(void *user, const amd_train_cfg *c, int local_rank, const amd_backend **be, amd_status *st) {
  (void)c;
  train_ctx *t = user;
  return api_session_backend(t->s, local_rank, be, st);
}

static void backend_ready(void *user, const amd_graph *g, const amd_backend *be) {
  train_ctx *t = user;
  (void)g, (void)be;
  api_device_note(t->cb, t->s);
}

static void line(void *user, amd_train_line kind, const char *text) {
  train_ctx *t = user;
  static const amdnn_message_kind kinds[] = {
      [AMD_TRAIN_INFO] = AMDNN_MSG_INFO,     [AMD_TRAIN_INFO_FLUSHED] = AMDNN_MSG_INFO,
      [AMD_TRAIN_WARNING] = AMDNN_MSG_WARNING, [AMD_TRAIN_ERROR] = AMDNN_MSG_ERROR,
      [AMD_TRAIN_DEBUG] = AMDNN_MSG_DEBUG,
  };
  api_message(t->cb, kinds[kind], "%s", text);
}

static int progress(void *user, const amd_train_progress *p) {
  train_ctx *t = user;
  if (!p) return 0; /* the epoch's steps are over: nothing to say */
  const double el = p->elapsed, rate = el > 0 ? (double)(p->seen - p->seen0) / el : 0;
  const amdnn_progress a = {
      .stage = "train",
      .epoch = p->epoch,
      .done = p->done,
      .total = p->batches,
      .samples = p->seen,
      .loss = p->seen ? p->loss_sum / (double)p->seen : 0,
      .accuracy = p->seen ? (double)p->top1 / (double)p->seen : 0,
      .elapsed_s = el,
      .images_per_s = rate,
      .eta_s = rate > 0 ? (double)(p->n_train - p->seen) / rate : -1,
  };
  return api_progress(t->cb, &a);
}

static int epoch(void *user, const amd_train_epoch *e) {
  train_ctx *t = user;
  if (!t->cb || !t->cb->epoch) return 0;
  const amdnn_epoch a = {e->epoch, e->epochs, e->train_loss, e->train_acc, e->test_loss, e->test_acc, e->has_val,
                         e->val_loss, e->val_acc, e->lr, e->images_per_s, e->train_s, e->loss_scale, e->skipped};
  return t->cb->epoch(t->cb->user, &a);
}

static void finished(void *user, const amd_backend *be) {
  train_ctx *t = user;
  api_memory_note(t->cb, be);
}

/* The run's configuration from the session and the options. */
static int make_cfg(amdnn_session *s, const amdnn_options *o, amd_train_cfg *c, amd_status *st) {
  memset(c, 0, sizeof *c);
  c->graph = s->g;
  c->model = s->path, c->mode = s->mode, c->mode_map = s->mode_map, c->bmode = s->backward;
  c->q8_grad = s->q8_grad, c->q8_calib = s->q8_calib, c->device = s->device, c->debug_sync = s->debug_sync;
  c->data = api_opt(o, "data"), c->out = api_opt(o, "output"), c->metrics = api_opt(o, "metrics");
  c->plot = api_opt(o, "plot"), c->profile = api_opt(o, "profile"), c->ckpt_dir = api_opt(o, "checkpoint-dir");
  const char *optimizer = api_opt(o, "optimizer"), *schedule = api_opt(o, "schedule");
  c->optimizer = optimizer ? optimizer : "sgd", c->schedule = schedule ? schedule : "constant";
  c->augment = api_opt(o, "augment"), c->freeze = api_opt(o, "freeze");
  c->lookahead = api_opt(o, "lookahead");
  c->epochs = api_opt_i64(o, "epochs", 10), c->batch = api_opt_i64(o, "batch", 128);
  c->seed = api_opt_i64(o, "seed", 1), c->val = api_opt_i64(o, "val", 0);
  c->ckpt_every = api_opt_i64(o, "checkpoint-every", c->ckpt_dir ? 1 : 0);
  c->ckpt_steps = api_opt_i64(o, "checkpoint-steps", 0), c->warmup = api_opt_i64(o, "warmup", 0);
  c->limit = api_opt_i64(o, "limit", 0), c->stop_after = api_opt_i64(o, "stop-after", 0);
  c->accumulate = (int)api_opt_i64(o, "accumulate", 1);
  c->lr = (float)api_opt_f64(o, "lr", 0.01), c->momentum = (float)api_opt_f64(o, "momentum", 0.9);
  c->momentum_set = api_opt(o, "momentum") != NULL;
  c->wd = (float)api_opt_f64(o, "wd", 0), c->smoothing = (float)api_opt_f64(o, "label-smoothing", 0);
  c->ckpt_minutes = (float)api_opt_f64(o, "checkpoint-minutes", 0);
  const char *walltime = api_opt(o, "walltime");
  c->walltime_s = walltime ? api_parse_duration(walltime) : 0;
  c->nesterov = api_opt_flag(o, "nesterov"), c->tta = api_opt_flag(o, "tta");
  c->tta_shift = (int)api_opt_i64(o, "tta-shift", 0);
  c->no_shuffle = api_opt_flag(o, "no-shuffle"), c->resume = api_opt_flag(o, "resume");
  c->reinit = api_opt_flag(o, "reinit"), c->sync_bn = api_opt_flag(o, "sync-bn");
  c->host_batches = api_opt_flag(o, "host-batches"), c->sync_steps = api_opt_flag(o, "sync-steps");
  c->no_graph = api_opt_flag(o, "no-graph");
  c->env = amd_env_read();
  return api_image_opts(o, &c->img, st);
}

/* What is required, before anything is loaded. */
static amdnn_status *check_cfg(const amd_train_cfg *c) {
  if (!c->data) return api_error(AMDNN_ERR_ARGUMENT, "--data is required (mnist:DIR, cifar10:DIR, images:DIR, ...)");
  if (c->resume && !c->ckpt_dir) return api_error(AMDNN_ERR_ARGUMENT, "--resume needs --checkpoint-dir");
  if (c->plot && !amd_plot_available())
    return api_error(AMDNN_ERR_ARGUMENT, "--plot: this build has no cairo (install libcairo2-dev and rebuild)");
  return NULL;
}

/* Rank 0, before the run loads anything: the outputs can be written (ranks on
 * other nodes need not see the output folders). */
static int prepare(void *user, const amd_train_cfg *c, amd_status *st) {
  (void)user;
  return (c->out && api_check_writable(c->out, "the model", st)) ||
                 (c->profile && api_check_writable(c->profile, "the profile table", st)) ||
                 (c->ckpt_dir && api_check_folder(c->ckpt_dir, st))
             ? -1
             : 0;
}

amdnn_status *amdnn_session_train(amdnn_session *s, const amdnn_options *opts, const amdnn_callbacks *cb) {
  if (!s) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_session_train: no session");
  amdnn_status *bad = api_opts_check(opts, AMDNN_FOR_TRAIN, "train");
  if (bad) return bad;
  amd_train_cfg c;
  amd_status st = {{0}};
  if (api_check_tta(opts, &st) || make_cfg(s, opts, &c, &st)) return api_from(&st, AMDNN_ERR_ARGUMENT);
  if ((bad = check_cfg(&c))) return bad;
  /* the writer starts from the ModelProto the session did not keep */
  if (c.out && amd_graph_attach_proto(s->g, &st)) return api_from(&st, AMDNN_ERR_FAILED);
  c.handle_signals = cb && cb->catch_signals;
  train_ctx tc = {s, cb};
  const amd_train_hooks h = {
      .user = &tc,
      .progress_every_step = cb && cb->progress_every_step,
      .prepare = prepare,
      .backend = backend,
      .backend_ready = backend_ready,
      .line = line,
      .progress = progress,
      .epoch = epoch,
      .finished = finished,
  };
  const int rc = amd_train_run(&c, &h, &st);
  s->trained = 1; /* (also a run that stopped: its steps changed the weights) */
  if (rc == 3) return api_error(AMDNN_ERR_STOPPED, "training stopped early%s",
                                c.ckpt_dir ? " with a checkpoint: run again with resume to continue" : "");
  if (rc == 4) return api_error(AMDNN_ERR_DIVERGED, "training stopped: the loss or a gradient became NaN or Inf");
  if (rc) return api_from(&st, AMDNN_ERR_FAILED);
  return NULL;
}
