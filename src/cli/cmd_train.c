/* `amdnn-onnx train`: trains a loaded model on a data set (see usage below).
 *
 * The run is a loop over epochs and batches: a seeded permutation per epoch,
 * batch assembly with augmentation, forward + loss + backward (trainer.c),
 * the optimizer over the parameter block, the BN statistics written back, an
 * evaluation on the test split at each epoch's end, a metrics TSV row, and
 * checkpoints. Everything a resumed run needs to continue bit for bit is in
 * the checkpoint: parameters, optimizer state, BN statistics, both RNG
 * states, the position in the epoch, the partial epoch sums and the metrics
 * rows so far. Exit codes: 0 done, 1 error, 2 bad arguments, 3 stopped early
 * (walltime, SIGTERM, SIGINT) with a checkpoint, 4 the loss became NaN/Inf.
 * Under mpirun each rank trains on its share of every global batch and the
 * gradients are summed between the ranks (train/dist.h: MPI between CPU
 * ranks, NCCL between GPU ranks, one GPU per rank); rank 0 alone writes
 * checkpoints, metrics and the model. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../data/dataset.h"
#include "../exec/backend.h"
#include "../onnx/load.h"
#include "../onnx/tensor_proto.h"
#include "../onnx/write.h"
#include "../report/plot.h"
#include "../report/profile.h"
#include "../mult/mode_map.h"
#include "../train/batches.h"
#include "../train/checkpoint.h"
#include "../train/dist.h"
#include "../train/optim.h"
#include "../train/trainer.h"
#include "cli_util.h"
#include "commands.h"

static const char usage[] =
    "usage: amdnn-onnx train MODEL.onnx --data SPEC [options] -o TRAINED.onnx\n"
    "\n"
    "Trains MODEL (its own weights are the starting point) with softmax\n"
    "cross-entropy on its first output. A model that ends in Softmax or\n"
    "LogSoftmax is trained on that node's input (the logits), so the loss is the\n"
    "same cross-entropy either way.\n"
    "\n"
    "data:\n"
    "  --data SPEC            mnist:DIR (IDX, .gz or not; Fashion-MNIST too),\n"
    "                         cifar10:DIR (binary batches, .bin or .bin.gz),\n"
    "                         images:DIR (DIR/train/<class>/*.png, DIR/test/<class>/*.png),\n"
    "                         tensors:X.pb,Y.pb[,XTEST.pb,YTEST.pb]\n"
    "                         Images are normalised per channel with the training\n"
    "                         set's own mean and std.\n"
    "  --augment LIST         comma list of crop:P (pad P and crop back), flip, cutout:S\n"
    "  --val N                hold out N training samples (seeded) as a validation set\n"
    "  --no-shuffle           keep the data order (default: a seeded permutation per epoch)\n"
    "  --limit N              use only the first N samples of each split (quick runs)\n"
    "  --tta                  score the test (and validation) split with test-time\n"
    "                         augmentation: each image also mirrored left-right, the\n"
    "                         mean of the two logits\n"
    "  --host-batches         on a GPU, assemble each batch on the host and upload it\n"
    "                         (default there: the training images are copied to the\n"
    "                         GPU once and each batch is cropped, flipped and\n"
    "                         normalised by a kernel; the batches are the same)\n"
    "  --sync-steps           on a GPU, wait for each step's loss before queuing the\n"
    "                         next (default there: the host queues a step while the\n"
    "                         GPU runs the one before, and a step whose loss or\n"
    "                         gradients are not finite changes nothing; the same\n"
    "                         results; fp16 and several ranks always wait)\n"
    "  --no-graph             on a GPU, launch every step's kernels (default there:\n"
    "                         the second step of an epoch is captured into a CUDA\n"
    "                         graph that the later full batches replay; the same\n"
    "                         results)\n"
    "optimisation:\n"
    "  --epochs N             (default 10)\n"
    "  --batch N              (default 128)\n"
    "  --optimizer NAME       sgd, adam, adamw, rmsprop (default sgd)\n"
    "  --lr LR                (default 0.01)\n"
    "  --momentum M           SGD / RMSprop momentum (default 0.9 for sgd)\n"
    "  --nesterov             Nesterov momentum (SGD)\n"
    "  --wd WD                weight decay (default 0; decoupled for adamw)\n"
    "  --schedule SPEC        learning-rate schedule (default constant):\n"
    "%s"
    "  --warmup N             linear warm-up over N epochs (constant, step, cosine)\n"
    "  --label-smoothing EPS  (default 0)\n"
    "  --freeze LIST          comma list of substrings: initializers whose name\n"
    "                         contains one are not trained\n"
    "  --seed N               data order, augmentation, dropout, --reinit (default 1)\n"
    "  --reinit               start from fresh weights, initialised as PyTorch does by\n"
    "                         default (default: the model's own weights: fine-tuning)\n"
    "multiplier:\n"
    "  --mode MODE            product of every Conv/Gemm/MatMul GEMM, forward and both\n"
    "                         backward GEMMs (default acc32; see `amdnn-onnx --help`)\n"
    "  --mode-map LIST        NAME_OR_OPTYPE=MODE,... overrides --mode for the nodes of\n"
    "                         that name (see `amdnn-onnx info`) or op type (Conv, Gemm,\n"
    "                         MatMul), e.g. the first Conv and the classifier exact\n"
    "  --backward-mode M      'exact' (acc32) or a mode for both backward GEMMs of every\n"
    "                         node (default: each node's forward mode)\n"
    "output:\n"
    "  -o FILE                the trained model: the original graph with the trained\n"
    "                         initializers and BN statistics, for inference\n"
    "  --metrics FILE.tsv     a row per epoch: epoch, hours, train_loss, train_acc,\n"
    "                         test_loss, test_top1, lr, images_per_s (+ val columns)\n"
    "  --plot FILE.png        loss and accuracy curves per epoch, redrawn after each epoch\n"
    "  --profile FILE.tsv     time per stage (im2col, GEMM, backward-data, backward-weights)\n"
    "                         and per op family over the training steps (on a GPU timed with\n"
    "                         CUDA events): a table at the end and the same rows in FILE.tsv\n"
    "  --checkpoint-dir DIR   save checkpoints there (the last two are kept)\n"
    "  --checkpoint-every N   every N epochs (default 1 with --checkpoint-dir)\n"
    "  --checkpoint-minutes M also every M minutes of training\n"
    "  --checkpoint-steps N   also every N optimizer steps\n"
    "  --resume               continue from the newest valid checkpoint in DIR\n"
    "  --walltime T           stop with a checkpoint before T (e.g. 47h30m, 90m, 3600s)\n"
    "                         and exit 3; SIGTERM and SIGINT do the same\n"
    "  --stop-after N         stop after N optimizer steps as --walltime would (tests resuming)\n"
    "  --device DEV           cpu or cuda[:N] (default: cuda when a GPU is present; under\n"
    "                         mpirun each rank takes GPU local-rank mod GPU-count)\n"
    "  --debug-sync           synchronise after every GPU kernel (finds a faulting kernel)\n"
    "several processes (launched by mpirun or srun; see the README): CPU ranks sum\n"
    "their gradients with MPI, GPU ranks (one GPU each) with NCCL; AMD_DIST=mpi,\n"
    "nccl or none overrides the choice\n"
    "  --batch N              is per rank: the global batch is ranks x N\n"
    "  --sync-bn              BatchNormalization statistics over the global batch\n"
    "                         (default: each rank's own batch; running statistics averaged;\n"
    "                         CPU ranks only for now)\n"
    "\n"
    "Exit codes: 0 done, 1 error, 2 bad arguments, 3 stopped early with a\n"
    "checkpoint (resume with --resume), 4 the loss became NaN or Inf.\n";

#define METRICS_BYTES 65536

typedef struct train_cfg {
  const char *model, *data, *out, *metrics, *plot, *profile, *ckpt_dir, *mode, *bmode, *mode_map, *optimizer,
      *schedule, *augment, *freeze, *device;
  int64_t epochs, batch, seed, val, ckpt_every, ckpt_steps, warmup, limit, stop_after;
  float lr, momentum, wd, smoothing, ckpt_minutes;
  double walltime_s;
  int nesterov, tta, no_shuffle, resume, momentum_set, reinit, sync_bn, debug_sync, host_batches, sync_steps, no_graph;
  int ranks; /* processes training together (1 without mpirun) */
} train_cfg;

/* What a checkpoint holds besides the blocks. Plain integers and doubles. */
typedef struct position {
  int64_t epoch;        /* 0-based epoch in progress */
  int64_t batch;        /* next batch index in that epoch */
  int64_t step;         /* optimizer steps done */
  int64_t seen;         /* training samples in the epoch so far */
  double loss_sum;      /* partial epoch sums */
  int64_t top1;
  double train_seconds; /* training time so far (for the hours column) */
  uint64_t aug_rng, dropout_rng;
  uint64_t model_hash;
  double loss_scale;      /* fp16 dynamic loss scaling (1 when unused) */
  int64_t scale_good;     /* finite steps since the scale last changed */
  int64_t skipped;        /* steps skipped for overflowing gradients */
} position;

static volatile sig_atomic_t stop_signal = 0;
static void on_signal(int sig) {
  if (stop_signal) _exit(128 + sig); /* a second signal: stop now */
  stop_signal = sig;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "47h30m", "90m", "3600s", "2h", "3600" -> seconds; -1 on junk. */
static double parse_duration(const char *s) {
  double total = 0;
  int any = 0;
  while (*s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return -1;
    double mul = 1;
    if (*end == 'h') mul = 3600, end++;
    else if (*end == 'm') mul = 60, end++;
    else if (*end == 's') end++;
    else if (*end) return -1;
    total += v * mul;
    any = 1;
    s = end;
  }
  return any ? total : -1;
}

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

static int parse_augment(const char *s, amd_augment *a, char *err, size_t n) {
  memset(a, 0, sizeof *a);
  if (!s) return 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int v;
    if (strcmp(tok, "flip") == 0) a->hflip = 1;
    else if (sscanf(tok, "crop:%d", &v) == 1 && v > 0) a->pad_crop = v;
    else if (sscanf(tok, "cutout:%d", &v) == 1 && v > 0) a->cutout = v;
    else {
      snprintf(err, n, "--augment: unknown item '%s' (valid: crop:P, flip, cutout:S)", tok);
      return -1;
    }
  }
  return 0;
}

/* The options that a resumed run must share with the run that wrote the checkpoint. */
static void config_string(const train_cfg *c, char *buf, size_t n) {
  memset(buf, 0, n);
  snprintf(buf, n, "data=%s batch=%lld optimizer=%s lr=%g momentum=%g nesterov=%d wd=%g schedule=%s warmup=%lld "
           "seed=%lld val=%lld limit=%lld reinit=%d mode=%s map=%s backward=%s augment=%s smoothing=%g freeze=%s shuffle=%d",
           c->data, (long long)(c->batch * c->ranks), c->optimizer, c->lr, c->momentum, c->nesterov, c->wd, c->schedule,
           (long long)c->warmup, (long long)c->seed, (long long)c->val, (long long)c->limit, c->reinit, c->mode, c->mode_map ? c->mode_map : "", c->bmode ? c->bmode : "",
           c->augment ? c->augment : "", c->smoothing, c->freeze ? c->freeze : "", !c->no_shuffle);
}

static int parse_args(int argc, char **argv, train_cfg *c) {
  memset(c, 0, sizeof *c);
  c->epochs = 10, c->batch = 128, c->seed = 1, c->lr = 0.01f, c->momentum = 0.9f;
  c->mode = "acc32", c->optimizer = "sgd", c->schedule = "constant";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
#define OPT(name) (strcmp(a, name) == 0 && v && (++i, 1))
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      printf(usage, amd_schedule_help());
      exit(0);
    } else if (OPT("--data")) c->data = v;
    else if (OPT("-o") || OPT("--output")) c->out = v;
    else if (OPT("--metrics")) c->metrics = v;
    else if (OPT("--plot")) c->plot = v;
    else if (OPT("--profile")) c->profile = v;
    else if (OPT("--checkpoint-dir")) c->ckpt_dir = v;
    else if (OPT("--mode")) c->mode = v;
    else if (OPT("--backward-mode")) c->bmode = v;
    else if (OPT("--mode-map")) c->mode_map = v;
    else if (OPT("--optimizer")) c->optimizer = v;
    else if (OPT("--schedule")) c->schedule = v;
    else if (OPT("--augment")) c->augment = v;
    else if (OPT("--freeze")) c->freeze = v;
    else if (OPT("--device")) c->device = v;
    else if (!strcmp(a, "--debug-sync")) c->debug_sync = 1;
    else if (OPT("--epochs")) bad = amd_parse_i64(v, &c->epochs) || c->epochs < 1;
    else if (OPT("--batch")) bad = amd_parse_i64(v, &c->batch) || c->batch < 1;
    else if (OPT("--seed")) bad = amd_parse_i64(v, &c->seed);
    else if (OPT("--val")) bad = amd_parse_i64(v, &c->val);
    else if (OPT("--warmup")) bad = amd_parse_i64(v, &c->warmup);
    else if (OPT("--limit")) bad = amd_parse_i64(v, &c->limit) || c->limit < 1;
    else if (OPT("--stop-after")) bad = amd_parse_i64(v, &c->stop_after) || c->stop_after < 1;
    else if (OPT("--checkpoint-every")) bad = amd_parse_i64(v, &c->ckpt_every) || c->ckpt_every < 1;
    else if (OPT("--checkpoint-minutes")) bad = amd_parse_float(v, &c->ckpt_minutes) || c->ckpt_minutes <= 0;
    else if (OPT("--checkpoint-steps")) bad = amd_parse_i64(v, &c->ckpt_steps) || c->ckpt_steps < 1;
    else if (OPT("--lr")) bad = amd_parse_float(v, &c->lr) || c->lr < 0;
    else if (OPT("--momentum")) bad = amd_parse_float(v, &c->momentum) || c->momentum < 0, c->momentum_set = 1;
    else if (OPT("--wd")) bad = amd_parse_float(v, &c->wd) || c->wd < 0;
    else if (OPT("--label-smoothing")) bad = amd_parse_float(v, &c->smoothing) || c->smoothing < 0 || c->smoothing >= 1;
    else if (OPT("--walltime")) bad = (c->walltime_s = parse_duration(v)) <= 0;
    else if (!strcmp(a, "--nesterov")) c->nesterov = 1;
    else if (!strcmp(a, "--tta")) c->tta = 1;
    else if (!strcmp(a, "--no-shuffle")) c->no_shuffle = 1;
    else if (!strcmp(a, "--host-batches")) c->host_batches = 1;
    else if (!strcmp(a, "--sync-steps")) c->sync_steps = 1;
    else if (!strcmp(a, "--no-graph")) c->no_graph = 1;
    else if (!strcmp(a, "--resume")) c->resume = 1;
    else if (!strcmp(a, "--reinit")) c->reinit = 1;
    else if (!strcmp(a, "--sync-bn")) c->sync_bn = 1;
    else if (a[0] != '-' && !c->model) c->model = a;
    else {
      fprintf(stderr, "amdnn-onnx train: unknown or incomplete argument '%s' (see --help)\n", a);
      return -1;
    }
#undef OPT
    if (bad) {
      fprintf(stderr, "amdnn-onnx train: bad value '%s' for %s\n", v, a);
      return -1;
    }
  }
  if (!c->model || !c->data || !c->out) {
    fprintf(stderr, "amdnn-onnx train: MODEL, --data and -o are required (see --help)\n");
    return -1;
  }
  if (c->resume && !c->ckpt_dir) {
    fprintf(stderr, "amdnn-onnx train: --resume needs --checkpoint-dir\n");
    return -1;
  }
  if (c->ckpt_dir && !c->ckpt_every) c->ckpt_every = 1;
  if (c->plot && !amd_plot_available()) {
    fprintf(stderr, "amdnn-onnx train: --plot: built without cairo (install libcairo2-dev and rebuild)\n");
    return -1;
  }
  return 0;
}

/* Everything the run holds; freed in one place. */
typedef struct run_state {
  train_cfg cfg;
  amd_dist dist;
  amd_graph *g;
  amd_dataset ds;
  amd_trainer t;
  amd_optim opt;
  amd_schedule sched;
  amd_augment aug;
  amd_mode_set modes;
  float *opt_state;
  int64_t n_opt;
  int64_t *train_idx, n_train, *val_idx, n_val, *perm;
  float *buffers; /* BN statistics, gathered for checkpoints */
  int buffer_values[1024], n_buffers;
  int64_t n_buffer_floats;
  position pos;
  char config[1024];
  char metrics[METRICS_BYTES];
} run_state;

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

static int ckpt_sections(run_state *r, amd_ckpt_section *s) {
  int n = 0;
  s[n++] = (amd_ckpt_section){"params", r->t.params, (size_t)r->t.n_floats * sizeof(float)};
  s[n++] = (amd_ckpt_section){"optimizer", r->opt_state, (size_t)r->n_opt * sizeof(float)};
  s[n++] = (amd_ckpt_section){"bn_statistics", r->buffers, (size_t)r->n_buffer_floats * sizeof(float)};
  s[n++] = (amd_ckpt_section){"position", &r->pos, sizeof r->pos};
  s[n++] = (amd_ckpt_section){"config", r->config, sizeof r->config};
  s[n++] = (amd_ckpt_section){"metrics", r->metrics, sizeof r->metrics};
  return n;
}

static int save_checkpoint(run_state *r, amd_status *st) {
  if (r->dist.rank != 0) return 0; /* every rank holds the same state */
  amd_ckpt_section s[8];
  if (amd_trainer_sync_host(&r->t, r->opt_state, r->n_opt, st)) return -1;
  r->pos.aug_rng = r->pos.aug_rng; /* kept current by the loop */
  r->pos.dropout_rng = r->t.ctx.rng;
  gather_buffers(r, 1);
  int n = ckpt_sections(r, s);
  if (amd_ckpt_write(r->cfg.ckpt_dir, r->pos.step, s, n, 2, st))
    return amd_fail_prefix(st, "checkpoint not written (the previous ones are intact)");
  return 0;
}

static int load_checkpoint(run_state *r, int *found, amd_status *st) {
  char path[4096], warning[2048] = "";
  *found = 0;
  int rc = amd_ckpt_find_latest(r->cfg.ckpt_dir, path, sizeof path, warning, sizeof warning, st);
  if (warning[0]) fprintf(stderr, "amdnn-onnx train: warning: %s\n", warning);
  if (rc < 0) return -1;
  if (rc == 1) return 0; /* nothing to resume: start fresh */
  char saved_config[sizeof r->config];
  position saved;
  amd_ckpt_section s[8];
  int n = ckpt_sections(r, s);
  s[3].data = &saved;
  s[4].data = saved_config;
  if (amd_ckpt_read(path, s, n, st)) return -1;
  if (saved.model_hash != r->pos.model_hash)
    return amd_fail(st, "%s was written for another model (or the model file changed)", path);
  if (strcmp(saved_config, r->config) != 0)
    return amd_fail(st, "%s was written with other options:\n  checkpoint: %s\n  now:        %s", path,
                    saved_config, r->config);
  r->pos = saved;
  gather_buffers(r, 0);
  if (amd_trainer_sync_device(&r->t, r->opt_state, r->n_opt, st)) return -1;
  r->t.ctx.rng = saved.dropout_rng;
  *found = 1;
  printf("resuming from %s: epoch %lld, batch %lld, step %lld\n", path, (long long)saved.epoch + 1,
         (long long)saved.batch, (long long)saved.step);
  return 0;
}

/* Several ranks: every rank starts from rank 0's state (its checkpoint when resuming). */
static int share_state(run_state *r, amd_status *st) {
  if (r->dist.size == 1) return 0;
  amd_ckpt_section s[8];
  r->pos.dropout_rng = r->t.ctx.rng;
  gather_buffers(r, 1);
  int n = ckpt_sections(r, s);
  void *bufs[8];
  size_t sizes[8];
  for (int i = 0; i < n; i++) bufs[i] = s[i].data, sizes[i] = s[i].bytes;
  if (amd_dist_broadcast_all(&r->dist, bufs, sizes, n, st))
    return amd_fail_prefix(st, "sharing rank 0's state");
  gather_buffers(r, 0);
  r->t.ctx.rng = r->pos.dropout_rng;
  /* on a GPU the steps read the device copies: bring them up to rank 0's state */
  if (amd_trainer_sync_device(&r->t, r->opt_state, r->n_opt, st))
    return amd_fail_prefix(st, "sharing rank 0's state");
  return 0;
}

static void write_metrics_file(const run_state *r) {
  if (!r->cfg.metrics || r->dist.rank != 0) return;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", r->cfg.metrics);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "amdnn-onnx train: warning: cannot write %s\n", tmp);
    return;
  }
  fputs(r->metrics, f);
  if (fclose(f) == 0) rename(tmp, r->cfg.metrics);
}

/* One progress report: a bar redrawn in place on a terminal, plain lines otherwise. */
static void progress(const run_state *r, int64_t done, int64_t batches, double t0, int64_t seen0, int tty) {
  const position *p = &r->pos;
  double el = now_s() - t0, rate = el > 0 ? (double)(p->seen - seen0) / el : 0;
  double left = rate > 0 ? (double)(r->n_train - p->seen) / rate : 0;
  double loss = p->seen ? p->loss_sum / (double)p->seen : 0;
  double acc = p->seen ? 100.0 * (double)p->top1 / (double)p->seen : 0;
  if (tty) {
    int width = 24, filled = batches ? (int)(width * done / batches) : width;
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r  epoch %lld [%s] %lld/%lld loss %.4f acc %.2f%% %.0f img/s %.0fs left ",
            (long long)p->epoch + 1, bar, (long long)done, (long long)batches, loss, acc, rate, left);
  } else {
    printf("  epoch %lld batch %lld/%lld loss %.4f acc %.2f%% %.0f img/s %.0fs left\n", (long long)p->epoch + 1,
           (long long)done, (long long)batches, loss, acc, rate, left);
    fflush(stdout);
  }
}

static void progress_clear(int tty) {
  if (tty) fprintf(stderr, "\r%*s\r", 100, "");
}

/* A training step queued without waiting for its loss (see --sync-steps):
 * where it was, to add its sums or name it when it went wrong. */
typedef struct queued_step {
  int active, slot;
  int64_t epoch, batch, step, b; /* step: optimizer steps before it; b: its global batch */
} queued_step;

/* Reports a step whose loss or gradients are not finite; the caller stops
 * with exit status 4 before the step's update. */
static void report_bad_step(const run_state *r, int64_t epoch, int64_t batch, int64_t step, double loss, int finite,
                            int saved_any) {
  fprintf(stderr, "amdnn-onnx train: the %s at epoch %lld, batch %lld (step %lld); stopping before the step%s\n",
          isfinite(loss) && !finite ? "gradients overflowed" : isnan(loss) ? "loss became NaN" : "loss became Inf",
          (long long)epoch + 1, (long long)batch + 1, (long long)step + 1,
          !r->cfg.ckpt_dir || !saved_any
              ? ""
              : ": the checkpoints are intact (if a resume fails again, move the newest away to use the one before)");
}

/* Waits for a queued step: adds its loss and counts to the epoch's sums;
 * 4 (reported) where its loss or gradients were not finite; -1 on error. */
static int finish_queued(run_state *r, queued_step *q, int saved_any, amd_status *st) {
  if (!q->active) return 0;
  q->active = 0;
  double loss;
  int finite;
  amd_batch_stats bs = {0};
  if (amd_trainer_step_collect(&r->t, q->slot, &loss, &bs, &finite, st)) return -1;
  if (!isfinite(loss) || !finite) {
    report_bad_step(r, q->epoch, q->batch, q->step, loss, finite, saved_any);
    return 4;
  }
  r->pos.seen += q->b;
  r->pos.loss_sum += bs.loss_sum;
  r->pos.top1 += bs.top1;
  return 0;
}

static int setup(run_state *r, amd_status *st) {
  train_cfg *c = &r->cfg;
  if (amd_optim_init(c->optimizer, &r->opt, st)) return -1;
  if (r->opt.kind == AMD_OPT_SGD || c->momentum_set) r->opt.momentum = c->momentum;
  r->opt.nesterov = c->nesterov;
  r->opt.weight_decay = c->wd;
  if (amd_optim_check(&r->opt, st)) return -1;
  if (amd_schedule_parse(c->schedule, c->lr, c->warmup, &r->sched, st)) return -1;
  if (parse_augment(c->augment, &r->aug, st->msg, sizeof st->msg)) return -1;
  if (amd_graph_load(c->model, 1, &r->g, st)) return -1;
  if (amd_mode_apply(r->g, c->mode, c->mode_map, c->bmode, &r->modes, st)) return -1;
  if (amd_dataset_load(c->data, &r->ds, st)) return -1;
  if (c->limit) {
    if (r->ds.train.n > c->limit) r->ds.train.n = c->limit;
    if (r->ds.test.n > c->limit) r->ds.test.n = c->limit;
  }
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
  amd_trainer_opts topts = {0};
  if (c->freeze) {
    static char fz[1024];
    snprintf(fz, sizeof fz, "%s", c->freeze);
    for (char *tok = strtok(fz, ","); tok && topts.n_freeze < 16; tok = strtok(NULL, ",")) topts.freeze[topts.n_freeze++] = tok;
  }
  if (amd_trainer_init(&r->t, r->g, &topts, st)) return -1;
  if (r->t.warning[0]) fprintf(stderr, "amdnn-onnx train: warning: %s\n", r->t.warning);
  if (c->reinit) printf("--reinit: %d initializers re-initialised from seed %lld\n", amd_trainer_reinit(&r->t, (uint64_t)c->seed), (long long)c->seed);
  const amd_backend *be;
  /* (--profile on a GPU times with CUDA events on the stream: report/profile.h) */
  /* several ranks: each takes GPU (local rank mod GPU count) unless --device cuda:N names one */
  if (amd_cli_backend_rank(c->device, c->debug_sync, r->dist.local_rank, &be, st)) return -1;
  if (amd_dist_use_device(&r->dist, be, st)) return -1; /* NCCL between GPU ranks */
  if (amd_trainer_set_backend(&r->t, be, st)) return -1;
  r->t.tta = c->tta;
  amd_cli_backend_note("train", r->g, be);
  int64_t n_out;
  if (amd_trainer_n_outputs(&r->t, &r->ds, &n_out, st)) return -1;
  if (r->ds.n_classes > n_out)
    return amd_fail(st, "the data set has %lld classes but the model has %lld outputs", (long long)r->ds.n_classes,
                    (long long)n_out);
  /* split, blocks */
  int64_t n = r->ds.train.n;
  if (c->val >= n) return amd_fail(st, "--val %lld leaves no training samples (the set has %lld)", (long long)c->val, (long long)n);
  int64_t *split = malloc((size_t)n * sizeof *split);
  r->perm = malloc((size_t)n * sizeof *r->perm);
  if (!split || !r->perm) return amd_fail(st, "out of memory");
  if (c->val) {
    if (amd_val_split(n, c->val, (uint64_t)c->seed, split, st)) return -1;
  } else {
    for (int64_t i = 0; i < n; i++) split[i] = i;
  }
  r->train_idx = split;
  r->n_train = n - c->val;
  r->val_idx = split + r->n_train;
  r->n_val = c->val;
  r->n_opt = (int64_t)amd_optim_state_blocks(&r->opt) * r->t.n_floats;
  r->opt_state = calloc((size_t)(r->n_opt ? r->n_opt : 1), sizeof(float));
  r->n_buffers = amd_trainer_buffers(&r->t, r->buffer_values, 1024);
  for (int i = 0; i < r->n_buffers; i++) r->n_buffer_floats += amd_tensor_numel(&r->g->values[r->buffer_values[i]].init);
  r->buffers = calloc((size_t)(r->n_buffer_floats ? r->n_buffer_floats : 1), sizeof(float));
  if (!r->opt_state || !r->buffers) return amd_fail(st, "out of memory");
  config_string(c, r->config, sizeof r->config);
  r->pos.model_hash = file_hash(c->model) ^ (uint64_t)r->t.n_floats;
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
  amd_graph_free(r->g);
  amd_dataset_free(&r->ds);
  amd_mode_set_free(&r->modes);
  free(r->opt_state);
  free(r->train_idx);
  free(r->perm);
  free(r->buffers);
}

int amd_cmd_train(int argc, char **argv) {
  static run_state r; /* large (metrics text); one per process */
  memset(&r, 0, sizeof r);
  if (parse_args(argc, argv, &r.cfg)) return 2;
  train_cfg *c = &r.cfg;
  amd_status st = {{0}};
  int rc = 1;
  double prof_wall = 0; /* --profile: wall time and count of the measured steps */
  int64_t prof_steps = 0;
  amd_batches data = {0}; /* the training batches */
  int64_t *y = NULL;
  amd_dist *dist = &r.dist;
  amd_env env = amd_env_read();
  if (amd_dist_init(dist, &env, &st)) {
    fprintf(stderr, "amdnn-onnx train: %s\n", st.msg);
    return 1;
  }
  c->ranks = dist->size;
  if (dist->rank == 0 && amd_cli_check_writable(c->out, "the model", &st)) goto fail;
  if (dist->rank == 0 && c->profile && amd_cli_check_writable(c->profile, "the --profile table", &st)) goto fail;
  if (c->ckpt_dir && dist->rank == 0) {
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/x", c->ckpt_dir);
    if (amd_make_dir(c->ckpt_dir, st.msg, sizeof st.msg) || amd_cli_check_writable(probe, "into the checkpoint folder", &st))
      goto fail;
  }
  if (setup(&r, &st)) goto fail;
  if (c->resume && dist->rank == 0) {
    int found;
    if (load_checkpoint(&r, &found, &st)) goto fail;
    if (!found) printf("no checkpoint in %s: starting from the model's weights\n", c->ckpt_dir);
  }
  if (share_state(&r, &st)) goto fail;
  if (c->sync_bn) amd_dist_sync_bn(dist, &r.t);
  char desc[256];
  printf("model %s: %d trainable initializers, %lld parameters; %s\n", c->model, r.t.n_params,
         (long long)r.t.n_floats, amd_dataset_describe(&r.ds, desc, sizeof desc));
  printf("training %lld epochs, batch %lld, %s lr %g (%s), mode %s%s%s, %lld training samples%s\n",
         (long long)c->epochs, (long long)c->batch, amd_optim_name(&r.opt), c->lr, c->schedule, c->mode,
         c->bmode ? ", backward " : "", c->bmode ? c->bmode : "", (long long)r.n_train, c->val ? " (+ validation)" : "");
  fflush(stdout);

  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  int tty = isatty(2);
  int64_t gbatch = c->batch * dist->size; /* the global batch */
  int64_t batches = (r.n_train + gbatch - 1) / gbatch, total_steps = batches * c->epochs;
  if (dist->size > 1 || dist->reduce_alone) {
    printf("%d rank%s (%s): global batch %lld = %d x %lld%s\n", dist->size, dist->size > 1 ? "s" : "",
           dist->ops->name, (long long)gbatch, dist->size, (long long)c->batch,
           dist->sync_bn ? ", BatchNormalization synchronised" : "");
    if (dist->sync_bn && r.n_train % gbatch && r.n_train % gbatch < dist->size) {
      amd_fail(&st,
               "--sync-bn: the last batch of each epoch (%lld samples) leaves ranks without a sample; "
               "change --batch or --limit",
               (long long)(r.n_train % gbatch));
      goto fail;
    }
  }
  y = malloc((size_t)c->batch * sizeof *y);
  if (!y) {
    amd_fail(&st, "out of memory");
    goto fail;
  }
  if (amd_batches_open(&data, r.t.be, c->host_batches, &r.ds, &r.ds.train, c->batch, "amdnn-onnx train", &st))
    goto fail;
  double run_start = now_s(), last_ckpt = run_start, step_avg = 0;
  if (c->profile) amd_prof_start();
  int saved_any = c->resume;
  /* steps that do not wait for their loss: one backend rank without loss scaling (--profile
   * times each step's parts, waiting for them anyway) */
  const int defer = !c->sync_steps && !c->profile && amd_trainer_can_defer(&r.t) && dist->size == 1 &&
                    !dist->reduce_alone &&
                    r.pos.loss_scale == 1.0;
  queued_step queued = {0};
  int64_t n_queued = 0;
  /* CUDA graphs of the deferred steps (not while profiling or synchronising every kernel) */
  const int graphs = defer && !c->no_graph && !c->debug_sync;
  int unfinished = 0; /* finish_queued's result: 4 (a step went wrong, reported) or -1 */
  if (defer && amd_trainer_guard_reset(&r.t, &st)) goto fail;
  /* the rate of the last step taken (a run resumed at an epoch's end reports it too) */
  double lr = r.pos.step ? amd_schedule_lr(&r.sched, r.pos.step - 1, batches, total_steps) : 0;
  for (; r.pos.epoch < c->epochs; r.pos.epoch++) {
    position *p = &r.pos;
    /* the epoch's order depends only on the seed and the epoch: a resumed run sees the same */
    for (int64_t i = 0; i < r.n_train; i++) r.perm[i] = r.train_idx[i];
    if (!c->no_shuffle) {
      uint64_t s = (uint64_t)c->seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)p->epoch + 1) * 0xbf58476d1ce4e5b9ull;
      amd_shuffle_i64(r.perm, r.n_train, &s);
    }
    double epoch_start = now_s(), train_time_at_start = p->train_seconds;
    int64_t seen_at_start = p->seen;
    int64_t report_every = batches / 10 > 0 ? batches / 10 : 1;
    for (; p->batch < batches; p->batch++) {
      double t0 = now_s();
      amd_prof_on = c->profile != NULL; /* training steps only, not the evaluations */
      int64_t start = p->batch * gbatch, b = r.n_train - start < gbatch ? r.n_train - start : gbatch;
      int64_t own, nb; /* this rank's share of the global batch */
      amd_dist_share(dist, b, &own, &nb);
      uint64_t aug_rng = amd_dist_rng_split(dist, &r.pos.aug_rng);
      if (amd_batches_make(&data, r.perm + start + own, nb, &r.aug, dist->size > 1 ? &aug_rng : &r.pos.aug_rng, y,
                           &st))
        goto fail;
      if (amd_prof_on) amd_prof_part_add(AMD_PROF_DATA, now_s() - t0);
      if (defer) {
        /* queue this step, then finish the one before (done or nearly by now) */
        const queued_step q = {1, (int)(n_queued++ % AMD_STEP_SLOTS), p->epoch, p->batch, p->step, b};
        lr = amd_schedule_lr(&r.sched, p->step, batches, total_steps);
        p->step++;
        if (amd_trainer_step_deferred(&r.t, &data.x, y, c->smoothing, q.slot, &r.opt, lr, p->step, r.opt_state,
                                      r.n_opt, graphs && b == gbatch, &st))
          goto fail;
        if ((unfinished = finish_queued(&r, &queued, saved_any, &st))) goto unfinished;
        queued = q;
      } else {
        double loss;
        amd_batch_stats bs = {0};
        if (amd_dist_step_grads(dist, &r.t, &data.x, y, nb, b, c->smoothing, (float)p->loss_scale, p->step, &loss,
                                &bs, &st))
          goto fail;
        /* a NaN/Inf loss, or (without loss scaling, which handles it) an overflowing gradient */
        int finite = 1;
        if ((p->loss_scale != 1.0 || isfinite(loss)) && amd_trainer_grads_finite(&r.t, &finite, &st)) goto fail;
        if (!isfinite(loss) || (p->loss_scale == 1.0 && !finite)) {
          report_bad_step(&r, p->epoch, p->batch, p->step, loss, finite, saved_any);
          rc = 4;
          goto done;
        }
        lr = amd_schedule_lr(&r.sched, p->step, batches, total_steps);
        if (p->loss_scale != 1.0 && !finite) {
          /* an overflowing product: skip the step, halve the scale */
          p->loss_scale = p->loss_scale > 1.0 ? p->loss_scale * 0.5 : 1.0;
          p->scale_good = 0;
          p->skipped++;
        } else {
          if (p->loss_scale != 1.0) {
            if (amd_trainer_scale_grads(&r.t, (float)(1.0 / p->loss_scale), &st)) goto fail;
            if (++p->scale_good == 2000) p->loss_scale *= 2, p->scale_good = 0;
          }
          p->step++;
          double t_opt = now_s();
          if (amd_trainer_optim_step(&r.t, &r.opt, lr, p->step, r.opt_state, r.n_opt, 0, &st) ||
              amd_trainer_update_stats(&r.t, &st))
            goto fail;
          if (amd_dist_sync_stats(dist, &r.t, &st)) goto fail;
          if (amd_prof_on) amd_prof_part_add(AMD_PROF_OPTIMIZER, now_s() - t_opt);
        }
        p->seen += b;
        p->loss_sum += bs.loss_sum;
        p->top1 += bs.top1;
      }
      if (amd_prof_on) {
        prof_wall += now_s() - t0;
        prof_steps++;
        amd_prof_on = 0;
      }
      double dt = now_s() - t0;
      p->train_seconds += dt;
      step_avg = step_avg ? 0.9 * step_avg + 0.1 * dt : dt;
      if (tty || ((p->batch + 1) % report_every == 0 && p->batch + 1 < batches))
        progress(&r, p->batch + 1, batches, epoch_start, seen_at_start, tty);
      /* stop in time: a signal, or the walltime about to run out (leave room for a step and a checkpoint) */
      double elapsed = now_s() - run_start;
      int out_of_time = (c->walltime_s > 0 && elapsed + 3 * step_avg + 5 > c->walltime_s) ||
                        (c->stop_after && p->step >= c->stop_after);
      int sig = stop_signal; /* all ranks stop at the same step */
      if (dist->size > 1 && (amd_dist_max_int(dist, sig, &sig, &st) ||
                             amd_dist_max_int(dist, out_of_time, &out_of_time, &st)))
        goto fail;
      int periodic = c->ckpt_dir && ((c->ckpt_minutes > 0 && now_s() - last_ckpt > 60.0 * c->ckpt_minutes) ||
                                     (c->ckpt_steps && p->step % c->ckpt_steps == 0));
      if (sig || out_of_time || periodic) {
        /* a checkpoint holds finished steps */
        if ((unfinished = finish_queued(&r, &queued, saved_any, &st))) goto unfinished;
        p->batch++; /* this batch is done */
        if (c->ckpt_dir) {
          if (save_checkpoint(&r, &st)) goto fail;
          last_ckpt = now_s();
          saved_any = 1;
          /* tests: stop this process right after the checkpoint of step N, so
           * that a test can break the folder at a known point, then SIGCONT */
          const char *pause = getenv("AMD_FAULT_PAUSE_AFTER_STEP");
          if (pause && atoll(pause) == p->step) raise(SIGSTOP);
        }
        p->batch--;
        if (sig || out_of_time) {
          progress_clear(tty);
          printf("stopped by %s at epoch %lld, batch %lld%s\n",
                 sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : c->stop_after ? "--stop-after" : "the walltime",
                 (long long)p->epoch + 1, (long long)p->batch + 1,
                 c->ckpt_dir ? "; checkpoint saved, continue with --resume" : " (no --checkpoint-dir: nothing saved)");
          rc = 3;
          goto done;
        }
      }
    }
    double t_last = now_s(); /* the epoch's last step, counted in its training time */
    if ((unfinished = finish_queued(&r, &queued, saved_any, &st))) goto unfinished;
    p->train_seconds += now_s() - t_last;
    amd_trainer_graph_reset(&r.t); /* the evaluation uses the device's memory */
    progress_clear(tty);
    /* end of epoch: evaluate, report, checkpoint */
    double train_s = p->train_seconds - train_time_at_start;
    double ips = train_s > 0 ? (double)(p->seen - seen_at_start) / train_s : 0;
    amd_batch_stats test = {0}, val = {0};
    const amd_data_split *ts = &r.ds.test;
    if (amd_dist_eval_split(dist, &r.t, &r.ds, ts, NULL, ts->n, c->batch, &test, &st)) goto fail;
    if (r.n_val && amd_dist_eval_split(dist, &r.t, &r.ds, &r.ds.train, r.val_idx, r.n_val, c->batch, &val, &st))
      goto fail;
    double tl = p->loss_sum / (double)p->seen, ta = (double)p->top1 / (double)p->seen;
    double el = test.n ? test.loss_sum / (double)test.n : 0, ea = test.n ? (double)test.top1 / (double)test.n : 0;
    printf("epoch %lld/%lld  train loss %.4f acc %.2f%%  test loss %.4f top1 %.2f%%", (long long)p->epoch + 1,
           (long long)c->epochs, tl, 100 * ta, el, 100 * ea);
    if (r.n_val) printf("  val loss %.4f top1 %.2f%%", val.loss_sum / (double)val.n, 100.0 * (double)val.top1 / (double)val.n);
    printf("  lr %.4g  %.0f img/s  %.1f s", lr, ips, train_s);
    if (p->loss_scale != 1.0) printf("  loss scale %g (%lld steps skipped)", p->loss_scale, (long long)p->skipped);
    printf("\n");
    fflush(stdout);
    size_t len = strlen(r.metrics);
    if (len + 256 < sizeof r.metrics) {
      len += (size_t)snprintf(r.metrics + len, sizeof r.metrics - len, "%lld\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6g\t%.1f",
                              (long long)p->epoch + 1, p->train_seconds / 3600.0, tl, ta, el, ea, lr, ips);
      if (r.n_val)
        len += (size_t)snprintf(r.metrics + len, sizeof r.metrics - len, "\t%.6f\t%.6f", val.loss_sum / (double)val.n,
                                (double)val.top1 / (double)val.n);
      snprintf(r.metrics + len, sizeof r.metrics - len, "\n");
    }
    write_metrics_file(&r);
    if (c->plot && dist->rank == 0 && amd_plot_metrics(r.metrics, c->plot, 1200, 480, &st))
      fprintf(stderr, "amdnn-onnx train: warning: %s\n", st.msg);
    p->batch = 0, p->seen = 0, p->loss_sum = 0, p->top1 = 0;
    if (c->ckpt_dir && ((p->epoch + 1) % c->ckpt_every == 0 || p->epoch + 1 == c->epochs)) {
      p->epoch++;
      int e = save_checkpoint(&r, &st);
      p->epoch--;
      if (e) goto fail;
      last_ckpt = now_s();
      saved_any = 1;
    }
  }
  if (dist->size > 1) {
    uint64_t sum;
    if (amd_dist_check_identical(dist, &r.t, &sum, &st)) goto fail;
    if (dist->check_every_step)
      fprintf(stderr, "rank %d: parameter checksum %016llx\n", dist->rank, (unsigned long long)sum);
    printf("parameters identical on all %d ranks (checksum %016llx)\n", dist->size, (unsigned long long)sum);
  }
  if (amd_trainer_sync_host(&r.t, r.opt_state, r.n_opt, &st)) goto fail;
  if (dist->rank == 0 && amd_graph_write(r.g, c->out, 1, &st)) goto fail;
  printf("wrote %s (%.1f s of training)\n", c->out, r.pos.train_seconds);
  if (r.t.graph_replays) printf("CUDA graph: %lld training steps replayed\n", (long long)r.t.graph_replays);
  if (r.t.graph_off) printf("CUDA graph: none (%s); the steps ran uncaptured\n", r.t.graph_note);
  amd_cli_device_memory_note("train", r.t.be);
  rc = 0;
  goto done;
unfinished:
  if (unfinished > 0) {
    rc = unfinished;
    goto done;
  }
fail:
  amd_dist_fail(dist, "amdnn-onnx train", st.msg);
  rc = 1;
done:
  if (rc != 1 && c->profile && prof_steps > 0 && r.dist.rank == 0 &&
      amd_prof_report(stdout, c->profile, prof_wall, prof_steps, &st)) {
    fprintf(stderr, "amdnn-onnx train: %s\n", st.msg);
    rc = 1;
  }
  amd_prof_on = 0;
  amd_batches_close(&data);
  free(y);
  free_state(&r);
  if (c->plot) amd_plot_release();
  amd_dist_finalize(dist);
  return rc;
}
