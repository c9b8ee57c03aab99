/* One training step for `train` and `bench`: see step.h. */
#include "step.h"

#include <math.h>
#include <string.h>

#include "../exec/backend.h"
#include "../report/profile.h"
#include "dist.h"
#include "optim.h"
#include "trainer.h"

int amd_step_init(amd_stepper *s, amd_trainer *t, amd_dist *dist, const amd_optim *opt, float *opt_state,
                  int64_t n_opt, float smoothing, const amd_step_opts *opts, amd_status *st) {
  memset(s, 0, sizeof *s);
  s->t = t;
  s->dist = dist;
  s->opt = opt;
  s->opt_state = opt_state;
  s->n_opt = n_opt;
  s->smoothing = smoothing;
  const int one_process = !dist || (amd_dist_shares(dist) == 1 && !dist->reduce_alone);
  /* steps that do not wait for their loss: one backend rank without loss
   * scaling (--profile times each step's parts, waiting for them anyway) */
  s->deferred = !opts->sync_steps && !opts->profile && !opts->loss_scaling && amd_trainer_can_defer(t) && one_process;
  /* CUDA graphs of the deferred steps (not while synchronising every kernel) */
  s->graphs = s->deferred && !opts->no_graph && !opts->debug_sync;
  if (s->deferred && amd_trainer_guard_reset(t, st)) return -1;
  return 0;
}

const char *amd_step_pipeline_name(const amd_stepper *s) {
  return !s->deferred ? "synchronous" : s->graphs ? "deferred, CUDA graphs" : "deferred";
}

/* Waits for the queued step and gives its results. */
static int collect(amd_stepper *s, amd_step_result *res, amd_status *st) {
  memset(res, 0, sizeof *res);
  if (!s->queued.ready) return 0;
  *res = s->queued;
  s->queued.ready = 0;
  return amd_trainer_step_collect(s->t, s->queued_slot, &res->loss, &res->bs, &res->finite, st);
}

static int run_deferred(amd_stepper *s, const amd_step_batch *in, amd_step_result *res, amd_status *st) {
  /* queue this step, then finish the one before (done or nearly by now) */
  const int slot = (int)(s->n_queued++ % AMD_STEP_SLOTS);
  if (amd_trainer_step_deferred(s->t, in->x, in->labels, s->smoothing, slot, s->opt, in->lr, in->step + 1,
                                s->opt_state, s->n_opt, s->graphs && in->full, st))
    return -1;
  if (collect(s, res, st)) return -1;
  s->queued = (amd_step_result){.ready = 1, .epoch = in->epoch, .batch = in->batch, .step = in->step, .b = in->b};
  s->queued_slot = slot;
  return 0;
}

static int run_sync(amd_stepper *s, const amd_step_batch *in, amd_step_result *res, amd_status *st) {
  *res = (amd_step_result){.ready = 1, .epoch = in->epoch, .batch = in->batch, .step = in->step, .b = in->b,
                           .finite = 1};
  const float scale = (float)in->loss_scale;
  if (s->dist ? amd_dist_step_grads(s->dist, s->t, in->x, in->labels, in->n, in->b, s->smoothing, scale, in->step,
                                    &res->loss, &res->bs, st)
              : amd_trainer_step_grads(s->t, in->x, in->labels, s->smoothing, scale, &res->loss, &res->bs, st))
    return -1;
  if (s->dist && s->dist->part < s->dist->parts - 1) return 0; /* a share before the last: no step yet */
  /* a NaN/Inf loss needs no look at the gradients, unless they are scaled */
  if ((in->loss_scale != 1.0 || isfinite(res->loss)) && amd_trainer_grads_finite(s->t, &res->finite, st)) return -1;
  return 0;
}

int amd_step_run(amd_stepper *s, const amd_step_batch *in, amd_step_result *res, amd_status *st) {
  return s->deferred ? run_deferred(s, in, res, st) : run_sync(s, in, res, st);
}

int amd_step_apply(amd_stepper *s, double lr, int64_t step, double loss_scale, amd_status *st) {
  if (s->deferred) return amd_fail(st, "amd_step_apply: a deferred step updates itself");
  if (loss_scale != 1.0 && amd_trainer_scale_grads(s->t, (float)(1.0 / loss_scale), st)) return -1;
  double t0 = AMD_PROF_T0;
  if (amd_trainer_optim_step(s->t, s->opt, lr, step, s->opt_state, s->n_opt, 0, st) ||
      amd_trainer_update_stats(s->t, st))
    return -1;
  if (s->dist && amd_dist_sync_stats(s->dist, s->t, st)) return -1;
  if (amd_prof_on) amd_prof_part_add(AMD_PROF_OPTIMIZER, amd_prof_clock() - t0);
  return 0;
}

int amd_step_flush(amd_stepper *s, amd_step_result *res, amd_status *st) { return collect(s, res, st); }

void amd_step_graph_release(amd_stepper *s) { amd_trainer_graph_reset(s->t); }
