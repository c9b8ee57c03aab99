/* `amdnn-onnx train`: trains a loaded model on a data set (see the usage in
 * train_args.c). The run itself is src/train/run.c (the epoch loop, the step
 * pipeline of src/train/step.c, checkpoints, the NaN policy, loss scaling,
 * walltime and signals); this file parses the arguments and prints what the
 * run reports. Exit codes: 0 done, 1 error, 2 bad arguments, 3 stopped early
 * (walltime, SIGTERM, SIGINT) with a checkpoint, 4 the loss became NaN/Inf. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../core/status.h"
#include "../exec/backend.h"
#include "../train/run.h"
#include "cli_util.h"
#include "commands.h"
#include "train_args.h"

#define PROG "amdnn-onnx train"

typedef struct printer {
  int tty; /* stderr is a terminal: a progress bar redrawn in place */
} printer;

/* Rank 0, before the run loads anything: the outputs can be written. */
static int prepare(void *user, const amd_train_cfg *c, amd_status *st) {
  (void)user;
  if (amd_cli_check_writable(c->out, "the model", st)) return -1;
  if (c->profile && amd_cli_check_writable(c->profile, "the --profile table", st)) return -1;
  if (c->ckpt_dir) {
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/x", c->ckpt_dir);
    if (amd_make_dir(c->ckpt_dir, st->msg, sizeof st->msg) || amd_cli_check_writable(probe, "into the checkpoint folder", st))
      return -1;
  }
  return 0;
}

static int backend(void *user, const amd_train_cfg *c, int local_rank, const amd_backend **be, amd_status *st) {
  (void)user;
  return amd_cli_backend_rank(c->device, c->debug_sync, local_rank, be, st);
}

static void backend_ready(void *user, const amd_graph *g, const amd_backend *be) {
  (void)user;
  amd_cli_backend_note("train", g, be);
}

static void line(void *user, amd_train_line kind, const char *text) {
  (void)user;
  switch (kind) {
  case AMD_TRAIN_INFO:
  case AMD_TRAIN_INFO_FLUSHED:
    printf("%s\n", text);
    if (kind == AMD_TRAIN_INFO_FLUSHED) fflush(stdout);
    break;
  case AMD_TRAIN_WARNING:
    fprintf(stderr, "%s: warning: %s\n", PROG, text);
    break;
  case AMD_TRAIN_ERROR:
    fprintf(stderr, "%s: %s\n", PROG, text);
    break;
  case AMD_TRAIN_DEBUG:
    fprintf(stderr, "%s\n", text);
    break;
  }
}

/* One progress report: a bar redrawn in place on a terminal, plain lines
 * otherwise; NULL: the epoch's steps are over (the bar goes). */
static void progress(void *user, const amd_train_progress *p) {
  const printer *pr = user;
  if (!p) {
    if (pr->tty) fprintf(stderr, "\r%*s\r", 100, "");
    return;
  }
  double el = p->elapsed, rate = el > 0 ? (double)(p->seen - p->seen0) / el : 0;
  double left = rate > 0 ? (double)(p->n_train - p->seen) / rate : 0;
  double loss = p->seen ? p->loss_sum / (double)p->seen : 0;
  double acc = p->seen ? 100.0 * (double)p->top1 / (double)p->seen : 0;
  if (pr->tty) {
    int width = 24, filled = p->batches ? (int)(width * p->done / p->batches) : width;
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r  epoch %lld [%s] %lld/%lld loss %.4f acc %.2f%% %.0f img/s %.0fs left ",
            (long long)p->epoch + 1, bar, (long long)p->done, (long long)p->batches, loss, acc, rate, left);
  } else {
    printf("  epoch %lld batch %lld/%lld loss %.4f acc %.2f%% %.0f img/s %.0fs left\n", (long long)p->epoch + 1,
           (long long)p->done, (long long)p->batches, loss, acc, rate, left);
    fflush(stdout);
  }
}

static void epoch(void *user, const amd_train_epoch *e) {
  (void)user;
  printf("epoch %lld/%lld  train loss %.4f acc %.2f%%  test loss %.4f top1 %.2f%%", (long long)e->epoch + 1,
         (long long)e->epochs, e->train_loss, 100 * e->train_acc, e->test_loss, 100 * e->test_acc);
  if (e->has_val)
    printf("  val loss %.4f top1 %.2f%%", e->val_loss, 100.0 * (double)e->val_top1 / (double)e->val_n);
  printf("  lr %.4g  %.0f img/s  %.1f s", e->lr, e->images_per_s, e->train_s);
  if (e->loss_scale != 1.0) printf("  loss scale %g (%lld steps skipped)", e->loss_scale, (long long)e->skipped);
  printf("\n");
  fflush(stdout);
}

static void finished(void *user, const amd_backend *be) {
  (void)user;
  amd_cli_device_memory_note("train", be);
}

int amd_cmd_train(int argc, char **argv) {
  amd_train_cfg c;
  if (amd_train_parse_args(argc, argv, &c)) return 2;
  c.env = *amd_cli_env();
  printer pr = {isatty(2)};
  const amd_train_hooks h = {
      .user = &pr,
      .progress_every_step = pr.tty,
      .prepare = prepare,
      .backend = backend,
      .backend_ready = backend_ready,
      .line = line,
      .progress = progress,
      .epoch = epoch,
      .finished = finished,
  };
  return amd_train_run(&c, &h, PROG);
}
