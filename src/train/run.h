/* The training engine of `amdnn-onnx train` and amdnn_session_train: one run
 * of a loaded model from a configuration.
 *
 * amd_train_run sets up (data, trainer, backend, optimizer, schedule),
 * resumes from a checkpoint when asked, and loops over epochs and batches: a
 * seeded permutation per epoch, batch assembly with augmentation, a step
 * through the pipeline that step.h chooses (deferred with CUDA graphs where
 * the backend has them, synchronous otherwise), the NaN policy (a step whose
 * loss or gradients are not finite stops the run with 4 before its update),
 * fp16 dynamic loss scaling, an evaluation at each epoch's end, the metrics
 * TSV and plot, checkpoints (every N epochs, minutes or steps; on a signal or
 * the walltime, then 3) and the trained model at the end. Everything a
 * resumed run needs to continue bit for bit is in the checkpoint
 * (checkpoint.h: amd_train_ckpt). Under mpirun each rank trains on its share
 * of every global batch (dist.h); rank 0 alone writes files.
 *
 * What the user sees goes through hooks: progress and epoch results as
 * structs, other lines as text with a kind; the caller prints them. Nothing
 * here prints, except that with several ranks a failing rank ends the job
 * (MPI_Abort) after its hook reported the failure. */
#ifndef AMD_RUN_H
#define AMD_RUN_H

#include <stdint.h>

#include "../core/env.h"
#include "../core/status.h"
#include "../data/dataset.h"

struct amd_graph;

typedef struct amd_train_cfg {
  /* the model, loaded from `model` with its multipliers applied (the strings
   * mode ... q8_calib say which, for the checkpoints' options check); the run
   * trains it in place and leaves it holding the trained weights (on the
   * host); its ModelProto must be attached to write `out` */
  struct amd_graph *graph;
  const char *model, *data, *out, *metrics, *plot, *profile, *ckpt_dir, *mode, *bmode, *mode_map, *optimizer,
      *schedule, *augment, *freeze, *device;
  const char *lookahead; /* NULL or "K[:D]" (optim.h amd_lookahead_parse) */
  const char *q8_grad; /* the q8f nodes' backward: NULL or "ste", "table" (exec/mode_apply.h) */
  const char *q8_calib; /* their data range's calibration: NULL, "minmax", "percentile[:P]" (exec/mode_apply.h) */
  int64_t epochs, batch, seed, val, ckpt_every, ckpt_steps, warmup, limit, stop_after;
  float lr, momentum, wd, smoothing, ckpt_minutes;
  double walltime_s;
  int tta_shift; /* with tta: also the views shifted by this many pixels (trainer.h) */
  int nesterov, tta, no_shuffle, resume, momentum_set, reinit, sync_bn, debug_sync, host_batches, sync_steps, no_graph;
  int handle_signals; /* SIGTERM and SIGINT stop the run with a checkpoint (a command-line tool) */
  int ranks;   /* processes training together (set by amd_train_run) */
  int accumulate; /* shares of the global batch each process computes in turn (dist.h; 0 or 1: one) */
  amd_env env; /* the process's environment (core/env.h: communicator knobs, fault hooks), from the caller */
  amd_image_opts img; /* images: decoding and preprocessing, the normalisation (data/dataset.h) */
} amd_train_cfg;

/* A progress report within an epoch. */
typedef struct amd_train_progress {
  int64_t epoch;           /* 0-based */
  int64_t done, batches;   /* batches done of the epoch's */
  int64_t seen, seen0;     /* training samples of the epoch so far; when the report clock started */
  int64_t n_train;         /* training samples per epoch */
  double loss_sum;         /* the epoch's sums so far */
  int64_t top1;
  double elapsed;          /* seconds since the report clock started (the epoch, or the resumed part) */
} amd_train_progress;

/* An epoch's results. */
typedef struct amd_train_epoch {
  int64_t epoch, epochs;   /* 0-based epoch and the run's count */
  double train_loss, train_acc, test_loss, test_acc;
  int has_val;
  double val_loss, val_acc;
  int64_t val_top1, val_n; /* the validation counts (val_acc = val_top1 / val_n) */
  double lr;               /* the rate of the epoch's last step */
  double images_per_s, train_s;
  double loss_scale;       /* 1: no loss scaling */
  int64_t skipped;         /* steps skipped for overflowing gradients */
} amd_train_epoch;

typedef enum amd_train_line {
  AMD_TRAIN_INFO,         /* a line for stdout */
  AMD_TRAIN_INFO_FLUSHED, /* a line for stdout, to be shown now (stdout flushed) */
  AMD_TRAIN_WARNING, /* a warning (stderr) */
  AMD_TRAIN_ERROR,   /* a message of the run's end, for stderr (a bad step) */
  AMD_TRAIN_DEBUG,   /* a diagnostic line for stderr, printed as it is */
} amd_train_line;

struct amd_backend;
struct amd_graph;

typedef struct amd_train_hooks {
  void *user;
  int progress_every_step; /* a progress report after every step (a terminal): else ten per epoch */
  /* Rank 0, before anything is loaded: checks that the outputs can be written. */
  int (*prepare)(void *user, const amd_train_cfg *c, amd_status *st);
  /* The backend of this process (local_rank: its place among the ranks of its node). */
  int (*backend)(void *user, const amd_train_cfg *c, int local_rank, const struct amd_backend **be, amd_status *st);
  /* Once the backend runs the model (a note on what it runs natively). */
  void (*backend_ready)(void *user, const struct amd_graph *g, const struct amd_backend *be);
  void (*line)(void *user, amd_train_line kind, const char *text);
  /* p: a progress report; NULL: the epoch's steps are over (a redrawn bar
   * goes). Non-zero (and from epoch): stop after the next step as a signal
   * would, with a checkpoint. */
  int (*progress)(void *user, const amd_train_progress *p);
  int (*epoch)(void *user, const amd_train_epoch *e);
  /* After the model was written (rank 0) and the run's last lines. */
  void (*finished)(void *user, const struct amd_backend *be);
} amd_train_hooks;

/* Runs the training of c (c->ranks is set). Returns 0 done, -1 an error (in
 * st), 3 stopped early (walltime, signal, --stop-after, a hook's request)
 * with a checkpoint, 4 the loss became NaN or Inf (both reported through
 * the line hook). With c->handle_signals, SIGTERM and SIGINT are handled
 * during the run (the previous handlers come back at its end). */
int amd_train_run(amd_train_cfg *c, const amd_train_hooks *h, amd_status *st);

#endif
