/* One training step, the same for `train` and `bench`: the choice of the step
 * pipeline and running a step through it.
 *
 * Pipelines:
 *  - deferred (a backend with step_begin, i.e. a GPU): the whole step
 *    (forward, loss, backward, the finite check, the guarded optimizer step,
 *    the BN statistics) is queued without waiting for its loss, so that the
 *    host queues the next step while the device runs this one; a step whose
 *    loss or gradients are not finite changes nothing. Its results (loss,
 *    sums, finite flag) are collected one step later. With graphs, the second
 *    of a run of same-shaped steps is captured into a CUDA graph that the
 *    later full batches replay (trainer.h: amd_trainer_step_deferred).
 *  - synchronous (the CPU backend; --sync-steps, --profile, fp16 loss
 *    scaling, several ranks or shares): amd_step_run computes the gradients
 *    (summed over the ranks) and returns this step's results at once; the
 *    caller decides (NaN policy, loss scaling) and updates with
 *    amd_step_apply. With shares in turn (dist.h, --accumulate) the caller
 *    runs each share (dist->part = 0 .. parts - 1, each with its own batch)
 *    and the last one's results are the step's.
 *
 * The caller loops:
 *   amd_step_run(s, &batch, &res)      results of a finished step in res (res.ready)
 *   if (!s->deferred) ... amd_step_apply(s, lr, step + 1, loss_scale)
 * and before it reads the step's effects (a checkpoint, an evaluation, the end):
 *   amd_step_flush(s, &res)            the queued step's results, if one is queued
 *   amd_step_graph_release(s)          before anything else uses the device */
#ifndef AMD_STEP_H
#define AMD_STEP_H

#include <stdint.h>

#include "../core/status.h"
#include "../core/tensor.h"
#include "loss.h"

struct amd_trainer;
struct amd_dist;
struct amd_optim;

/* What asks for the synchronous pipeline, or no CUDA graph. */
typedef struct amd_step_opts {
  int sync_steps;   /* --sync-steps: wait for each step's loss */
  int no_graph;     /* --no-graph: launch every kernel of every step */
  int profile;      /* --profile: the steps are timed part by part: synchronous */
  int debug_sync;   /* --debug-sync: no CUDA graph */
  int loss_scaling; /* fp16 dynamic loss scaling is active: synchronous */
} amd_step_opts;

/* One step's input. */
typedef struct amd_step_batch {
  const amd_tensor *x;
  const int64_t *labels;
  int64_t n;         /* this rank's samples (x's batch) */
  int64_t b;         /* the global batch: the samples of every rank */
  int full;          /* a batch of the full size: a CUDA graph may replay it */
  int64_t epoch;     /* where the step is (0-based), to name it in results */
  int64_t batch;
  int64_t step;      /* optimizer steps before this one */
  double lr;         /* deferred: the optimizer's rate (step number step + 1) */
  double loss_scale; /* synchronous: the loss scale of the gradients (1: none) */
} amd_step_batch;

/* A finished step's results. */
typedef struct amd_step_result {
  int ready;                      /* 0: no step finished (the first deferred step) */
  int64_t epoch, batch, step, b;  /* as in its amd_step_batch */
  double loss;                    /* mean loss */
  amd_batch_stats bs;             /* its sums */
  int finite;                     /* its gradients are finite (see amd_step_run) */
} amd_step_result;

typedef struct amd_stepper {
  struct amd_trainer *t;
  struct amd_dist *dist; /* NULL: one process */
  const struct amd_optim *opt;
  float *opt_state;
  int64_t n_opt;
  float smoothing;
  int deferred; /* the pipeline: 1 deferred, 0 synchronous */
  int graphs;   /* deferred steps are captured into CUDA graphs */
  int64_t n_queued;
  int queued_slot;
  amd_step_result queued; /* deferred: the step in flight (queued.ready) */
} amd_stepper;

/* Chooses the pipeline: deferred where the backend can, with one process
 * (dist NULL, or one rank of one share without its own sums) and nothing in opts asking
 * for the synchronous one; graphs with it unless no_graph or debug_sync.
 * Resets the step guard for the deferred pipeline. */
int amd_step_init(amd_stepper *s, struct amd_trainer *t, struct amd_dist *dist, const struct amd_optim *opt,
                  float *opt_state, int64_t n_opt, float smoothing, const amd_step_opts *opts, amd_status *st);
/* Runs one step. Deferred: queues it (optimizer at in->lr, step in->step + 1)
 * and gives the results of the step queued before (res->ready = 0 for the
 * first). Synchronous: the gradients of in->loss_scale * the mean loss and
 * this step's results; finite = the gradients are finite, checked where the
 * loss is finite or the loss is scaled (1 otherwise); the parameters do not
 * change until amd_step_apply. */
int amd_step_run(amd_stepper *s, const amd_step_batch *in, amd_step_result *res, amd_status *st);
/* Synchronous: the update of the step run last: gradients divided by
 * loss_scale (unless 1), the optimizer step (rate lr, 1-based step number
 * step), the BN statistics (averaged over the ranks). Not for the deferred
 * pipeline (its steps update themselves). */
int amd_step_apply(amd_stepper *s, double lr, int64_t step, double loss_scale, amd_status *st);
/* Waits for the queued step (deferred) and gives its results; res->ready = 0
 * when none is queued (always, synchronous). */
int amd_step_flush(amd_stepper *s, amd_step_result *res, amd_status *st);
/* Drops the captured CUDA graph (before an evaluation uses the device). */
void amd_step_graph_release(amd_stepper *s);
/* "deferred, CUDA graphs", "deferred" or "synchronous". */
const char *amd_step_pipeline_name(const amd_stepper *s);

#endif
