/* The training engine: see run.h. */
#include "run.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../data/dataset.h"
#include "../exec/backend.h"
#include "../exec/mode_apply.h"
#include "../onnx/write.h"
#include "../report/plot.h"
#include "../report/profile.h"
#include "batches.h"
#include "checkpoint.h"
#include "dist.h"
#include "optim.h"
#include "step.h"
#include "trainer.h"

#define METRICS_BYTES 65536
#define MAX_BUFFERS 1024

/* Everything the run holds; freed in one place. */
typedef struct run_state {
  amd_train_cfg *cfg;
  const amd_train_hooks *h;
  amd_dist dist;
  amd_graph *g; /* the caller's (amd_train_cfg.graph) */
  amd_dataset ds;
  amd_trainer t;
  amd_optim opt;
  amd_schedule sched;
  amd_augment aug;
  float *opt_state;
  int64_t n_opt;
  int64_t *train_idx, n_train, *val_idx, n_val, *perm;
  float *buffers; /* BN statistics, gathered for checkpoints */
  int buffer_values[MAX_BUFFERS], n_buffers;
  int64_t n_buffer_floats;
  amd_train_state pos;
  char freeze[1024];
  char config[1024];
  char metrics[METRICS_BYTES];
  /* the loop */
  amd_stepper step;
  amd_batches data; /* the training batches */
  int64_t *y;
  int64_t gbatch, batches, total_steps; /* the global batch, batches per epoch, steps of the run */
  double run_start, last_ckpt, step_avg;
  double lr;     /* the rate of the last step taken */
  int saved_any; /* a checkpoint of this run exists */
  double prof_wall; /* --profile: wall time and count of the measured steps */
  int64_t prof_steps;
  int stop_requested; /* a hook asked to stop */
  /* --lookahead: every look_k steps the weights are pulled back to their slow copy (trainer.h), with
   * decay look_d x (step / total_steps)^3; the copy is in opt_state from float look_off */
  int64_t look_k, look_off;
  double look_d;
} run_state;

/* ------------------------------------------------------------------ output */

static void line(const run_state *r, amd_train_line kind, const char *fmt, ...) {
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (r->h->line) r->h->line(r->h->user, kind, text);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile sig_atomic_t stop_signal = 0;
static void on_signal(int sig) {
  if (stop_signal) _exit(128 + sig); /* a second signal: stop now */
  stop_signal = sig;
}

/* ------------------------------------------------------------------ set-up */

/* FNV-1a over the model file: a checkpoint only resumes the model it came from. */
static uint64_t file_hash(const char *path) {
  FILE *f = fopen(path, "rb");
  uint64_t h = 1469598103934665603ull;
  if (!f) return 0;
  int c;
  while ((c = getc(f)) != EOF) h = (h ^ (uint64_t)c) * 1099511628211ull;
  fclose(f);
  return h;
}

/* The options that a resumed run must share with the run that wrote the checkpoint. */
static void config_string(const amd_train_cfg *c, char *buf, size_t n) {
  memset(buf, 0, n);
  snprintf(buf, n, "data=%s batch=%lld optimizer=%s lr=%g momentum=%g nesterov=%d wd=%g schedule=%s warmup=%lld "
           "seed=%lld val=%lld limit=%lld reinit=%d mode=%s map=%s backward=%s augment=%s smoothing=%g freeze=%s shuffle=%d",
           c->data, (long long)(c->batch * c->ranks * (c->accumulate > 1 ? c->accumulate : 1)), c->optimizer, c->lr, c->momentum, c->nesterov, c->wd, c->schedule,
           (long long)c->warmup, (long long)c->seed, (long long)c->val, (long long)c->limit, c->reinit, c->mode, c->mode_map ? c->mode_map : "", c->bmode ? c->bmode : "",
           c->augment ? c->augment : "", c->smoothing, c->freeze ? c->freeze : "", !c->no_shuffle);
  if (c->lookahead) { /* (only when chosen: older checkpoints resume) */
    size_t k = strlen(buf);
    snprintf(buf + k, n - k, " lookahead=%s", c->lookahead);
  }
  /* the table-derived q8 backward (only when chosen: older checkpoints resume) */
  if (c->q8_grad && strcmp(c->q8_grad, "ste") != 0) {
    size_t k = strlen(buf);
    snprintf(buf + k, n - k, " q8grad=%s", c->q8_grad);
  }
  /* the percentile calibration (only when chosen: older checkpoints resume); P as a number, so that
   * "percentile" and "percentile:99.99" are the same run */
  double pct = 0;
  amd_status ignored;
  if (!amd_q8_calib_parse(c->q8_calib, &pct, &ignored) && pct > 0) {
    size_t k = strlen(buf);
    snprintf(buf + k, n - k, " q8calib=percentile:%.10g", pct);
  }
  /* the image options that change the data (only when set: older checkpoints resume) */
  amd_image_opts io = c->img;
  io.workers = 0;
  io.progress = NULL; /* how it is loaded, not what */
  io.progress_user = NULL;
  static const amd_image_opts none = {0};
  if (memcmp(&io, &none, sizeof io)) {
    char d[256];
    size_t k = strlen(buf);
    snprintf(buf + k, n - k, " %s", amd_image_opts_describe(&io, d, sizeof d));
  }
}

/* The optimizer, the schedule, the augmentation, the model and the data. */
static int setup_inputs(run_state *r, amd_status *st) {
  amd_train_cfg *c = r->cfg;
  if (amd_optim_init(c->optimizer, &r->opt, st)) return -1;
  if (r->opt.kind == AMD_OPT_SGD || c->momentum_set) r->opt.momentum = c->momentum;
  r->opt.nesterov = c->nesterov;
  r->opt.weight_decay = c->wd;
  if (amd_optim_check(&r->opt, st)) return -1;
  if (amd_schedule_parse(c->schedule, c->lr, c->warmup, &r->sched, st)) return -1;
  if (amd_augment_parse(c->augment, &r->aug, st)) return -1;
  r->aug.flip_seed = (uint64_t)c->seed * 0x94d049bb133111ebull + 3; /* flip:alt's phases */
  if (c->lookahead && amd_lookahead_parse(c->lookahead, &r->look_k, &r->look_d, st)) return -1;
  /* random resized crops come from the training images kept resized but uncropped */
  c->img.uncropped_train = r->aug.rrc;
  r->g = c->graph;
  if (amd_dataset_load_opts(c->data, &c->img, &r->ds, st)) return -1;
  if (r->ds.note[0]) line(r, AMD_TRAIN_WARNING, "%s", r->ds.note);
  if (c->limit && amd_dataset_limit(&r->ds, c->limit, st)) return -1;
  /* the model's input must be [batch, C, H, W] of the data */
  const amd_value *in = &r->g->values[r->g->inputs[0]];
  int64_t want[3] = {r->ds.c, r->ds.h, r->ds.w};
  if (in->rank >= 0 && in->rank != 4)
    return amd_fail(st, "the model's input '%s' has rank %d; the data gives [batch, %lld, %lld, %lld]", in->name,
                    in->rank, (long long)want[0], (long long)want[1], (long long)want[2]);
  for (int d = 0; in->rank == 4 && d < 3; d++)
    if (in->dims[d + 1] >= 0 && in->dims[d + 1] != want[d])
      return amd_fail(st, "the model's input '%s' expects [%lld, %lld, %lld] per sample; the data has [%lld, %lld, %lld]",
                      in->name, (long long)in->dims[1], (long long)in->dims[2], (long long)in->dims[3],
                      (long long)want[0], (long long)want[1], (long long)want[2]);
  return 0;
}

/* The trainer on its backend. */
static int setup_trainer(run_state *r, amd_status *st) {
  amd_train_cfg *c = r->cfg;
  amd_trainer_opts topts = {0};
  if (c->freeze) {
    snprintf(r->freeze, sizeof r->freeze, "%s", c->freeze);
    for (char *tok = strtok(r->freeze, ","); tok; tok = strtok(NULL, ",")) {
      if (topts.n_freeze == AMD_MAX_FREEZE) return amd_fail(st, "--freeze: at most %d entries", AMD_MAX_FREEZE);
      topts.freeze[topts.n_freeze++] = tok;
    }
  }
  if (amd_trainer_init(&r->t, r->g, &topts, st)) return -1;
  if (r->t.warning[0]) line(r, AMD_TRAIN_WARNING, "%s", r->t.warning);
  if (r->t.n_frozen)
    line(r, AMD_TRAIN_INFO, "--freeze: %d parameter tensors (%lld values) frozen, %d trained (%lld values): %s",
         r->t.n_frozen, (long long)r->t.frozen_floats, r->t.n_params, (long long)r->t.n_floats,
         r->t.frozen_names);
  if (c->reinit)
    line(r, AMD_TRAIN_INFO, "--reinit: %d initializers re-initialised from seed %lld",
         amd_trainer_reinit(&r->t, (uint64_t)c->seed), (long long)c->seed);
  const amd_backend *be;
  /* (--profile on a GPU times with CUDA events on the stream: report/profile.h) */
  /* several ranks: each takes GPU (local rank mod GPU count) unless --device cuda:N names one */
  if (r->h->backend(r->h->user, c, r->dist.local_rank, &be, st)) return -1;
  if (amd_dist_use_device(&r->dist, be, st)) return -1; /* NCCL between GPU ranks */
  if (amd_trainer_set_backend(&r->t, be, st)) return -1;
  r->t.tta = c->tta, r->t.tta_shift = c->tta_shift;
  if (r->h->backend_ready) r->h->backend_ready(r->h->user, r->g, be);
  int64_t n_out;
  if (amd_trainer_n_outputs(&r->t, &r->ds, &n_out, st)) return -1;
  if (r->ds.n_classes > n_out)
    return amd_fail(st, "the data set has %lld classes but the model has %lld outputs", (long long)r->ds.n_classes,
                    (long long)n_out);
  return 0;
}

/* The validation split, the blocks, the initial state. */
static int setup_state(run_state *r, amd_status *st) {
  amd_train_cfg *c = r->cfg;
  int64_t n = r->ds.train.n;
  if (c->val >= n) return amd_fail(st, "--val %lld leaves no training samples (the set has %lld)", (long long)c->val, (long long)n);
  int64_t *split = malloc((size_t)n * sizeof *split);
  r->perm = malloc((size_t)n * sizeof *r->perm);
  r->train_idx = split;
  if (!split || !r->perm) return amd_fail(st, "out of memory");
  if (c->val) {
    if (amd_val_split(n, c->val, (uint64_t)c->seed, split, st)) return -1;
  } else {
    for (int64_t i = 0; i < n; i++) split[i] = i;
  }
  r->n_train = n - c->val;
  r->val_idx = split + r->n_train;
  r->n_val = c->val;
  r->n_opt = (int64_t)amd_optim_state_blocks(&r->opt) * r->t.n_floats;
  r->look_off = r->n_opt; /* the slow copy after the optimizer's blocks */
  if (r->look_k) r->n_opt += amd_trainer_lookahead_floats(&r->t);
  r->opt_state = calloc((size_t)(r->n_opt ? r->n_opt : 1), sizeof(float));
  r->n_buffers = amd_trainer_buffers(&r->t, r->buffer_values, MAX_BUFFERS);
  for (int i = 0; i < r->n_buffers; i++) r->n_buffer_floats += amd_tensor_numel(&r->g->values[r->buffer_values[i]].init);
  r->buffers = calloc((size_t)(r->n_buffer_floats ? r->n_buffer_floats : 1), sizeof(float));
  if (!r->opt_state || !r->buffers) return amd_fail(st, "out of memory");
  config_string(c, r->config, sizeof r->config);
  r->pos.model_hash = file_hash(c->model) ^ (uint64_t)r->t.n_floats;
  /* the two random streams: augmentation (the run's) and dropout (the trainer's) */
  r->pos.aug_rng = (uint64_t)c->seed * 0x9e3779b97f4a7c15ull + 1;
  r->t.ctx.rng = (uint64_t)c->seed * 0xd1b54a32d192ed03ull + 7;
  /* fp16 products underflow small gradients: scale the loss as PyTorch's GradScaler does */
  r->pos.loss_scale = amd_trainer_uses_fp16(&r->t) ? 65536.0 : 1.0;
  snprintf(r->metrics, sizeof r->metrics, "epoch\thours\ttrain_loss\ttrain_acc\ttest_loss\ttest_top1\tlr\timages_per_s%s\n",
           c->val ? "\tval_loss\tval_top1" : "");
  return 0;
}

static void free_state(run_state *r) {
  amd_trainer_free(&r->t);
  amd_dataset_free(&r->ds);
  free(r->opt_state);
  free(r->train_idx);
  free(r->perm);
  free(r->buffers);
  free(r->y);
}

/* -------------------------------------------------------------- checkpoints */

static void gather_buffers(run_state *r, int to_ckpt) {
  float *p = r->buffers;
  for (int i = 0; i < r->n_buffers; i++) {
    amd_tensor *init = &r->g->values[r->buffer_values[i]].init;
    size_t n = (size_t)amd_tensor_numel(init);
    if (to_ckpt) memcpy(p, init->data, n * sizeof *p);
    else memcpy(init->data, p, n * sizeof *p);
    p += n;
  }
}

/* The run's checkpoint buffers; config: where the config string goes. */
static amd_train_ckpt ckpt_of(run_state *r, char *config) {
  return (amd_train_ckpt){r->t.params, r->t.n_floats, r->opt_state, r->n_opt, r->buffers, r->n_buffer_floats,
                          config, sizeof r->config, r->metrics, sizeof r->metrics, r->pos};
}

static int save_checkpoint(run_state *r, amd_status *st) {
  if (r->dist.rank != 0) return 0; /* every rank holds the same state */
  if (amd_trainer_sync_host(&r->t, r->opt_state, r->n_opt, st)) return -1;
  /* pos.aug_rng is the augmentation stream itself (batches draw from it); the
   * dropout stream is the trainer's */
  r->pos.dropout_rng = r->t.ctx.rng;
  gather_buffers(r, 1);
  amd_train_ckpt ck = ckpt_of(r, r->config);
  if (amd_train_ckpt_write(r->cfg->ckpt_dir, &ck, 2, st))
    return amd_fail_prefix(st, "checkpoint not written (the previous ones are intact)");
  return 0;
}

static int load_checkpoint(run_state *r, int *found, amd_status *st) {
  char path[4096], warning[2048] = "";
  *found = 0;
  int rc = amd_ckpt_find_latest(r->cfg->ckpt_dir, path, sizeof path, warning, sizeof warning, st);
  if (warning[0]) line(r, AMD_TRAIN_WARNING, "%s", warning);
  if (rc < 0) return -1;
  if (rc == 1) return 0; /* nothing to resume: start fresh */
  char saved_config[sizeof r->config];
  amd_train_ckpt ck = ckpt_of(r, saved_config);
  if (amd_train_ckpt_read(path, &ck, st)) return -1;
  const amd_train_state *saved = &ck.state;
  if (saved->model_hash != r->pos.model_hash)
    return amd_fail(st, "%s was written for another model (or the model file changed)", path);
  if (strcmp(saved_config, r->config) != 0)
    return amd_fail(st, "%s was written with other options:\n  checkpoint: %s\n  now:        %s", path,
                    saved_config, r->config);
  r->pos = *saved; /* the position, the sums, loss scaling and the augmentation stream */
  gather_buffers(r, 0);
  if (amd_trainer_sync_device(&r->t, r->opt_state, r->n_opt, st)) return -1;
  r->t.ctx.rng = saved->dropout_rng; /* the dropout stream */
  *found = 1;
  line(r, AMD_TRAIN_INFO, "resuming from %s: epoch %lld, batch %lld, step %lld", path, (long long)saved->epoch + 1,
       (long long)saved->batch, (long long)saved->step);
  return 0;
}

/* Several ranks: every rank starts from rank 0's state (its checkpoint when resuming). */
static int share_state(run_state *r, amd_status *st) {
  if (r->dist.size == 1) return 0;
  r->pos.dropout_rng = r->t.ctx.rng;
  gather_buffers(r, 1);
  amd_train_ckpt ck = ckpt_of(r, r->config);
  void *bufs[8];
  size_t sizes[8];
  int n = amd_train_ckpt_parts(&ck, bufs, sizes);
  if (amd_dist_broadcast_all(&r->dist, bufs, sizes, n, st)) return amd_fail_prefix(st, "sharing rank 0's state");
  r->pos = ck.state;
  gather_buffers(r, 0);
  r->t.ctx.rng = r->pos.dropout_rng;
  /* on a GPU the steps read the device copies: bring them up to rank 0's state */
  if (amd_trainer_sync_device(&r->t, r->opt_state, r->n_opt, st))
    return amd_fail_prefix(st, "sharing rank 0's state");
  return 0;
}

/* ------------------------------------------------------------------ reports */

static void write_metrics_file(const run_state *r) {
  if (!r->cfg->metrics || r->dist.rank != 0) return;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", r->cfg->metrics);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    line(r, AMD_TRAIN_WARNING, "cannot write %s", tmp);
    return;
  }
  fputs(r->metrics, f);
  if (fclose(f) == 0) rename(tmp, r->cfg->metrics);
}

static void progress(run_state *r, int64_t done, double t0, int64_t seen0) {
  const amd_train_state *p = &r->pos;
  amd_train_progress pr = {p->epoch, done, r->batches, p->seen, seen0, r->n_train, p->loss_sum, p->top1, now_s() - t0};
  if (r->h->progress && r->h->progress(r->h->user, &pr)) r->stop_requested = 1;
}

static void progress_end(const run_state *r) {
  if (r->h->progress) r->h->progress(r->h->user, NULL);
}

/* Reports a step whose loss or gradients are not finite; the run stops with
 * exit status 4 before the step's update. */
static void report_bad_step(const run_state *r, const amd_step_result *s) {
  line(r, AMD_TRAIN_ERROR, "the %s at epoch %lld, batch %lld (step %lld); stopping before the step%s",
       isfinite(s->loss) && !s->finite ? "gradients overflowed" : isnan(s->loss) ? "loss became NaN" : "loss became Inf",
       (long long)s->epoch + 1, (long long)s->batch + 1, (long long)s->step + 1,
       !r->cfg->ckpt_dir || !r->saved_any
           ? ""
           : ": the checkpoints are intact (if a resume fails again, move the newest away to use the one before)");
}

/* ------------------------------------------------------------------ the loop */

/* Adds a finished deferred step to the epoch's sums: 4 (reported) where its
 * loss or gradients were not finite. */
static int add_finished(run_state *r, const amd_step_result *s) {
  if (!s->ready) return 0;
  if (!isfinite(s->loss) || !s->finite) {
    report_bad_step(r, s);
    return 4;
  }
  r->pos.seen += s->b;
  r->pos.loss_sum += s->bs.loss_sum;
  r->pos.top1 += s->bs.top1;
  return 0;
}

/* --lookahead after optimizer step p->step (counted from 1): every look_k-th pulls the weights back to
 * their slow copy, with a decay that grows as the cube of the run's progress (airbench94's). */
static int lookahead_after_step(run_state *r, amd_status *st) {
  const int64_t s = r->pos.step;
  if (!r->look_k || s % r->look_k) return 0;
  const double f = s < r->total_steps ? (double)s / (double)r->total_steps : 1.0;
  const float decay = (float)(r->look_d * f * f * f);
  return amd_trainer_lookahead(&r->t, AMD_LOOKAHEAD_PULL, decay, r->opt_state, r->n_opt, r->look_off, st);
}

/* Waits for the queued step: 0, 4 (a bad step, reported) or -1. */
static int finish_queued(run_state *r, amd_status *st) {
  amd_step_result s;
  if (amd_step_flush(&r->step, &s, st)) return -1;
  return add_finished(r, &s);
}

/* A synchronous step's results: the NaN policy and loss scaling, then the update. */
static int finish_sync(run_state *r, const amd_step_result *s, amd_status *st) {
  amd_train_state *p = &r->pos;
  /* a NaN/Inf loss, or (without loss scaling, which handles it) an overflowing gradient */
  if (!isfinite(s->loss) || (p->loss_scale == 1.0 && !s->finite)) {
    report_bad_step(r, s);
    return 4;
  }
  r->lr = amd_schedule_lr(&r->sched, p->step, r->batches, r->total_steps);
  if (p->loss_scale != 1.0 && !s->finite) {
    /* an overflowing product: skip the step, halve the scale */
    p->loss_scale = p->loss_scale > 1.0 ? p->loss_scale * 0.5 : 1.0;
    p->scale_good = 0;
    p->skipped++;
  } else {
    if (amd_step_apply(&r->step, r->lr, p->step + 1, p->loss_scale, st)) return -1;
    if (p->loss_scale != 1.0 && ++p->scale_good == 2000) p->loss_scale *= 2, p->scale_good = 0;
    p->step++;
    if (lookahead_after_step(r, st)) return -1;
  }
  p->seen += s->b;
  p->loss_sum += s->bs.loss_sum;
  p->top1 += s->bs.top1;
  return 0;
}

/* One batch of the epoch: assembly and the step. 0, 4 (a bad step) or -1. */
static int train_batch(run_state *r, amd_status *st) {
  amd_train_state *p = &r->pos;
  amd_dist *dist = &r->dist;
  int64_t start = p->batch * r->gbatch, b = r->n_train - start < r->gbatch ? r->n_train - start : r->gbatch;
  amd_step_result res;
  /* this rank's shares of the global batch (one, unless --accumulate), each assembled and computed in turn */
  for (int k = 0; k < dist->parts; k++) {
    double t0 = now_s();
    dist->part = k;
    int64_t own, nb;
    amd_dist_share(dist, b, &own, &nb);
    uint64_t aug_rng = amd_dist_rng_split(dist, &p->aug_rng);
    if (amd_batches_make(&r->data, r->perm + start + own, nb, &r->aug,
                         amd_dist_shares(dist) > 1 ? &aug_rng : &p->aug_rng, r->y, st))
      return -1;
    if (amd_prof_on) amd_prof_part_add(AMD_PROF_DATA, now_s() - t0);
    amd_step_batch in = {&r->data.x, r->y, nb, b, b == r->gbatch, p->epoch, p->batch, p->step, 0, p->loss_scale};
    if (r->step.deferred) { /* (one share) */
      in.lr = r->lr = amd_schedule_lr(&r->sched, p->step, r->batches, r->total_steps);
      p->step++;
      /* (the lookahead's pull is queued after the step) */
      if (amd_step_run(&r->step, &in, &res, st) || lookahead_after_step(r, st)) return -1;
      return add_finished(r, &res);
    }
    if (amd_step_run(&r->step, &in, &res, st)) return -1;
  }
  dist->part = 0;
  return finish_sync(r, &res, st);
}

/* A checkpoint of the finished steps up to the current batch (included). */
static int checkpoint_now(run_state *r, amd_status *st) {
  r->pos.batch++; /* this batch is done */
  int e = save_checkpoint(r, st);
  r->pos.batch--;
  if (e) return -1;
  r->last_ckpt = now_s();
  r->saved_any = 1;
  /* tests: stop this process right after the checkpoint of step N, so
   * that a test can break the folder at a known point, then SIGCONT */
  if (r->cfg->env.faults.pause_after_step == r->pos.step) raise(SIGSTOP);
  return 0;
}

/* After a step: a signal, the walltime, --stop-after or a periodic
 * checkpoint. 0 (go on), 3 (stopped, reported), 4 or -1. */
static int after_step(run_state *r, amd_status *st) {
  amd_train_cfg *c = r->cfg;
  amd_train_state *p = &r->pos;
  /* stop in time: a signal, or the walltime about to run out (leave room for a step and a checkpoint) */
  double elapsed = now_s() - r->run_start;
  int out_of_time = (c->walltime_s > 0 && elapsed + 3 * r->step_avg + 5 > c->walltime_s) ||
                    (c->stop_after && p->step >= c->stop_after);
  int sig = stop_signal ? stop_signal : r->stop_requested ? -1 : 0; /* all ranks stop at the same step */
  if (r->dist.size > 1 && (amd_dist_max_int(&r->dist, sig, &sig, st) ||
                           amd_dist_max_int(&r->dist, out_of_time, &out_of_time, st)))
    return -1;
  int periodic = c->ckpt_dir && ((c->ckpt_minutes > 0 && now_s() - r->last_ckpt > 60.0 * c->ckpt_minutes) ||
                                 (c->ckpt_steps && p->step % c->ckpt_steps == 0));
  if (!sig && !out_of_time && !periodic) return 0;
  int rc = finish_queued(r, st); /* a checkpoint holds finished steps */
  if (rc) return rc;
  if (c->ckpt_dir && checkpoint_now(r, st)) return -1;
  if (!sig && !out_of_time) return 0;
  progress_end(r);
  line(r, AMD_TRAIN_INFO, "stopped by %s at epoch %lld, batch %lld%s",
       sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : sig ? "request" : c->stop_after ? "--stop-after" : "the walltime",
       (long long)p->epoch + 1, (long long)p->batch + 1,
       c->ckpt_dir ? "; checkpoint saved, continue with --resume" : " (no --checkpoint-dir: nothing saved)");
  return 3;
}

/* The epoch's steps. 0, 3, 4 or -1. */
static int train_steps(run_state *r, amd_status *st) {
  amd_train_cfg *c = r->cfg;
  amd_train_state *p = &r->pos;
  /* the epoch's order depends only on the seed and the epoch: a resumed run sees the same */
  for (int64_t i = 0; i < r->n_train; i++) r->perm[i] = r->train_idx[i];
  if (!c->no_shuffle) {
    uint64_t s = (uint64_t)c->seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)p->epoch + 1) * 0xbf58476d1ce4e5b9ull;
    amd_shuffle_i64(r->perm, r->n_train, &s);
  }
  r->aug.epoch = p->epoch; /* flip:alt */
  double epoch_start = now_s();
  int64_t seen_at_start = p->seen;
  int64_t report_every = r->batches / 10 > 0 ? r->batches / 10 : 1;
  for (; p->batch < r->batches; p->batch++) {
    double t0 = now_s();
    amd_prof_on = c->profile != NULL; /* training steps only, not the evaluations */
    int rc = train_batch(r, st);
    if (rc) return rc;
    if (amd_prof_on) {
      r->prof_wall += now_s() - t0;
      r->prof_steps++;
      amd_prof_on = 0;
    }
    double dt = now_s() - t0;
    p->train_seconds += dt;
    r->step_avg = r->step_avg ? 0.9 * r->step_avg + 0.1 * dt : dt;
    if (r->h->progress_every_step || ((p->batch + 1) % report_every == 0 && p->batch + 1 < r->batches))
      progress(r, p->batch + 1, epoch_start, seen_at_start);
    if ((rc = after_step(r, st))) return rc;
  }
  double t_last = now_s(); /* the epoch's last step, counted in its training time */
  int rc = finish_queued(r, st);
  if (rc) return rc;
  /* --lookahead: the run's weights are the slow ones */
  if (r->look_k && p->epoch + 1 == c->epochs &&
      amd_trainer_lookahead(&r->t, AMD_LOOKAHEAD_END, 0, r->opt_state, r->n_opt, r->look_off, st))
    return -1;
  p->train_seconds += now_s() - t_last;
  amd_step_graph_release(&r->step); /* the evaluation uses the device's memory */
  progress_end(r);
  return 0;
}

static void append_metrics(run_state *r, const amd_train_epoch *e) {
  size_t len = strlen(r->metrics);
  if (len + 256 >= sizeof r->metrics) return;
  len += (size_t)snprintf(r->metrics + len, sizeof r->metrics - len, "%lld\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6g\t%.1f",
                          (long long)e->epoch + 1, r->pos.train_seconds / 3600.0, e->train_loss, e->train_acc,
                          e->test_loss, e->test_acc, e->lr, e->images_per_s);
  if (e->has_val)
    len += (size_t)snprintf(r->metrics + len, sizeof r->metrics - len, "\t%.6f\t%.6f", e->val_loss, e->val_acc);
  snprintf(r->metrics + len, sizeof r->metrics - len, "\n");
}

/* End of an epoch: evaluate, report, checkpoint. */
static int end_epoch(run_state *r, double train_time_at_start, int64_t seen_at_start, amd_status *st) {
  amd_train_cfg *c = r->cfg;
  amd_train_state *p = &r->pos;
  amd_dist *dist = &r->dist;
  double train_s = p->train_seconds - train_time_at_start;
  amd_batch_stats test = {0}, val = {0};
  const amd_data_split *ts = &r->ds.test;
  if (amd_dist_eval_split(dist, &r->t, &r->ds, ts, NULL, ts->n, c->batch, &test, st)) return -1;
  if (r->n_val && amd_dist_eval_split(dist, &r->t, &r->ds, &r->ds.train, r->val_idx, r->n_val, c->batch, &val, st))
    return -1;
  amd_train_epoch e = {.epoch = p->epoch, .epochs = c->epochs};
  e.train_loss = p->loss_sum / (double)p->seen, e.train_acc = (double)p->top1 / (double)p->seen;
  e.test_loss = test.n ? test.loss_sum / (double)test.n : 0;
  e.test_acc = test.n ? (double)test.top1 / (double)test.n : 0;
  e.has_val = r->n_val != 0;
  if (e.has_val) e.val_loss = val.loss_sum / (double)val.n, e.val_acc = (double)val.top1 / (double)val.n;
  e.val_top1 = val.top1, e.val_n = val.n;
  e.lr = r->lr;
  e.images_per_s = train_s > 0 ? (double)(p->seen - seen_at_start) / train_s : 0;
  e.train_s = train_s;
  e.loss_scale = p->loss_scale;
  e.skipped = p->skipped;
  if (r->h->epoch && r->h->epoch(r->h->user, &e)) r->stop_requested = 1;
  append_metrics(r, &e);
  write_metrics_file(r);
  if (c->plot && dist->rank == 0 && amd_plot_metrics(r->metrics, c->plot, 1200, 480, st))
    line(r, AMD_TRAIN_WARNING, "%s", st->msg);
  p->batch = 0, p->seen = 0, p->loss_sum = 0, p->top1 = 0;
  if (c->ckpt_dir && ((p->epoch + 1) % c->ckpt_every == 0 || p->epoch + 1 == c->epochs)) {
    p->epoch++;
    int err = save_checkpoint(r, st);
    p->epoch--;
    if (err) return -1;
    r->last_ckpt = now_s();
    r->saved_any = 1;
  }
  return 0;
}

/* The epochs. 0, 3, 4 or -1. */
static int train_epochs(run_state *r, amd_status *st) {
  amd_train_cfg *c = r->cfg;
  r->run_start = now_s(), r->last_ckpt = r->run_start, r->step_avg = 0;
  if (c->profile) amd_prof_start();
  r->saved_any = c->resume;
  const amd_step_opts so = {c->sync_steps, c->no_graph, c->profile != NULL, c->debug_sync, r->pos.loss_scale != 1.0};
  if (amd_step_init(&r->step, &r->t, &r->dist, &r->opt, r->opt_state, r->n_opt, c->smoothing, &so, st)) return -1;
  /* the rate of the last step taken (a run resumed at an epoch's end reports it too) */
  r->lr = r->pos.step ? amd_schedule_lr(&r->sched, r->pos.step - 1, r->batches, r->total_steps) : 0;
  for (; r->pos.epoch < c->epochs; r->pos.epoch++) {
    double train_time_at_start = r->pos.train_seconds;
    int64_t seen_at_start = r->pos.seen;
    int rc = train_steps(r, st);
    if (rc) return rc;
    if (end_epoch(r, train_time_at_start, seen_at_start, st)) return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------ the run */

/* Rank 0's checks, set-up, resume, the state shared between the ranks, the
 * opening lines. */
static int start(run_state *r, amd_status *st) {
  amd_train_cfg *c = r->cfg;
  amd_dist *dist = &r->dist;
  if (dist->rank == 0 && r->h->prepare && r->h->prepare(r->h->user, c, st)) return -1;
  if (setup_inputs(r, st) || setup_trainer(r, st) || setup_state(r, st)) return -1;
  if (c->resume && dist->rank == 0) {
    int found;
    if (load_checkpoint(r, &found, st)) return -1;
    if (!found) line(r, AMD_TRAIN_INFO, "no checkpoint in %s: starting from the model's weights", c->ckpt_dir);
  }
  if (share_state(r, st)) return -1;
  /* --lookahead: a fresh run's slow copy starts as its weights (a resumed one's came with the state) */
  if (r->look_k && r->pos.step == 0 &&
      amd_trainer_lookahead(&r->t, AMD_LOOKAHEAD_START, 0, r->opt_state, r->n_opt, r->look_off, st))
    return -1;
  if (c->sync_bn) amd_dist_sync_bn(dist, &r->t);
  char desc[512];
  line(r, AMD_TRAIN_INFO, "model %s: %d trainable initializers, %lld parameters; %s", c->model, r->t.n_params,
       (long long)r->t.n_floats, amd_dataset_describe(&r->ds, desc, sizeof desc));
  const int q8_table = c->q8_grad && strcmp(c->q8_grad, "table") == 0;
  double q8_pct = 0;
  amd_status ignored;
  char calib[64] = "";
  if (!amd_q8_calib_parse(c->q8_calib, &q8_pct, &ignored) && q8_pct > 0)
    snprintf(calib, sizeof calib, ", q8 data ranges at the %.10g-th percentile", q8_pct);
  line(r, AMD_TRAIN_INFO_FLUSHED, "training %lld epochs, batch %lld, %s lr %g (%s), mode %s%s%s%s%s, %lld training samples%s",
       (long long)c->epochs, (long long)c->batch, amd_optim_name(&r->opt), c->lr, c->schedule, c->mode,
       c->bmode ? ", backward " : "", c->bmode ? c->bmode : "", q8_table ? ", table-derived q8 gradients" : "", calib,
       (long long)r->n_train, c->val ? " (+ validation)" : "");
  r->gbatch = c->batch * amd_dist_shares(dist); /* the global batch */
  r->batches = (r->n_train + r->gbatch - 1) / r->gbatch, r->total_steps = r->batches * c->epochs;
  if (dist->parts > 1)
    line(r, AMD_TRAIN_INFO, "--accumulate %d: global batch %lld = %d rank%s x %d shares x %lld, the shares in turn",
         dist->parts, (long long)r->gbatch, dist->size, dist->size > 1 ? "s" : "", dist->parts, (long long)c->batch);
  else if (dist->size > 1 || dist->reduce_alone) {
    line(r, AMD_TRAIN_INFO, "%d rank%s (%s): global batch %lld = %d x %lld%s", dist->size, dist->size > 1 ? "s" : "",
         dist->ops->name, (long long)r->gbatch, dist->size, (long long)c->batch,
         dist->sync_bn ? ", BatchNormalization synchronised" : "");
    if (dist->sync_bn && r->n_train % r->gbatch && r->n_train % r->gbatch < dist->size)
      return amd_fail(st,
                      "--sync-bn: the last batch of each epoch (%lld samples) leaves ranks without a sample; "
                      "change --batch or --limit",
                      (long long)(r->n_train % r->gbatch));
  }
  r->y = malloc((size_t)c->batch * sizeof *r->y);
  if (!r->y) return amd_fail(st, "out of memory");
  if (amd_batches_open(&r->data, r->t.be, c->host_batches, &r->ds, &r->ds.train, c->batch, "train", st)) return -1;
  if (r->data.note[0]) line(r, AMD_TRAIN_WARNING, "%s", r->data.note);
  return 0;
}

/* After the last epoch: the ranks agree, the model is written. */
static int finish(run_state *r, amd_status *st) {
  amd_dist *dist = &r->dist;
  if (dist->size > 1) {
    uint64_t sum;
    if (amd_dist_check_identical(dist, &r->t, &sum, st)) return -1;
    if (dist->check_every_step)
      line(r, AMD_TRAIN_DEBUG, "rank %d: parameter checksum %016llx", dist->rank, (unsigned long long)sum);
    line(r, AMD_TRAIN_INFO, "parameters identical on all %d ranks (checksum %016llx)", dist->size,
         (unsigned long long)sum);
  }
  if (amd_trainer_sync_host(&r->t, r->opt_state, r->n_opt, st)) return -1;
  if (r->cfg->out) { /* (a caller of the library may write the model itself later) */
    if (dist->rank == 0 && amd_graph_write(r->g, r->cfg->out, 1, st)) return -1;
    line(r, AMD_TRAIN_INFO, "wrote %s (%.1f s of training)", r->cfg->out, r->pos.train_seconds);
  } else {
    line(r, AMD_TRAIN_INFO, "trained (%.1f s of training)", r->pos.train_seconds);
  }
  if (r->t.graph_replays)
    line(r, AMD_TRAIN_INFO, "CUDA graph: %lld training steps replayed", (long long)r->t.graph_replays);
  if (r->t.graph_off) line(r, AMD_TRAIN_INFO, "CUDA graph: none (%s); the steps ran uncaptured", r->t.graph_note);
  if (r->h->finished) r->h->finished(r->h->user, r->t.be);
  return 0;
}

/* SIGTERM and SIGINT stop the run with a checkpoint (c->handle_signals); old: the handlers to put back. */
static void catch_signals(struct sigaction old[2]) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  stop_signal = 0;
  sigaction(SIGTERM, &sa, &old[0]);
  sigaction(SIGINT, &sa, &old[1]);
}

int amd_train_run(amd_train_cfg *c, const amd_train_hooks *h, amd_status *st) {
  if (!c->graph) return amd_fail(st, "amd_train_run: no model");
  run_state *r = calloc(1, sizeof *r); /* large (metrics text) */
  if (!r) return amd_fail(st, "out of memory");
  r->cfg = c, r->h = h;
  amd_ckpt_set_faults(&c->env.faults);
  if (amd_dist_init(&r->dist, &c->env, st)) {
    free(r);
    return -1;
  }
  c->ranks = r->dist.size;
  r->dist.parts = c->accumulate > 1 ? c->accumulate : 1;
  if (r->dist.parts > 1 && c->sync_bn) {
    amd_dist_finalize(&r->dist);
    free(r);
    return amd_fail(st, "--sync-bn cannot go with --accumulate: the shares of one process run one after "
                        "another, so no forward pass sees the statistics of the others");
  }
  struct sigaction old[2];
  if (c->handle_signals) catch_signals(old);
  int rc = start(r, st);
  if (rc == 0) rc = train_epochs(r, st);
  if (rc == 0) rc = finish(r, st);
  if (rc < 0 && r->dist.ops && r->dist.size > 1) {
    line(r, AMD_TRAIN_ERROR, "rank %d of %d failed: %s", r->dist.rank, r->dist.size, st->msg);
    line(r, AMD_TRAIN_ERROR, "rank %d ends the job (all %d ranks)", r->dist.rank, r->dist.size);
    amd_dist_abort(&r->dist); /* does not return */
  }
  if (rc >= 0 && c->profile && r->prof_steps > 0 && r->dist.rank == 0) {
    char *text;
    if (amd_prof_report_text(&text, c->profile, r->prof_wall, r->prof_steps, st) == 0) {
      line(r, AMD_TRAIN_INFO, "%s", text);
      free(text);
    } else {
      rc = -1;
    }
  }
  amd_prof_on = 0;
  amd_status ignored; /* after a stop, NaN or error: the graph holds the weights so far (finish() synced a done run) */
  if (rc != 0 && r->t.g) amd_trainer_sync_host(&r->t, NULL, 0, &ignored);
  amd_batches_close(&r->data);
  free_state(r);
  if (c->plot) amd_plot_release();
  amd_dist_finalize(&r->dist);
  if (c->handle_signals) {
    sigaction(SIGTERM, &old[0], NULL);
    sigaction(SIGINT, &old[1], NULL);
  }
  free(r);
  return rc;
}
