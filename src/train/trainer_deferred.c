/* Steps that do not wait for their loss (amd_trainer_step_deferred, see
 * trainer.h), on a backend with a stream: the host queues a step's work
 * (gradients, their check, the guarded optimizer step, the BN statistics)
 * and collects its loss later from the step's slot; the second of a run of
 * same-shaped steps is captured into a CUDA graph that the later ones
 * replay. */
#include "trainer_internal.h"

#include "../exec/backend.h"
#include "loss.h"
#include "optim.h"

#include <stdio.h>
#include <string.h>

int amd_trainer_can_defer(const amd_trainer *t) { return t->be->stream && t->be->stream->step_begin; }

int amd_trainer_guard_reset(amd_trainer *t, amd_status *st) { return t->be->stream->guard_reset(st); }

/* The device work of a deferred step: gradients, their check, the guarded
 * optimizer step, the BN statistics. */
static int deferred_work(amd_trainer *t, const amd_tensor *x, const int64_t *labels, float smoothing,
                         const amd_optim *o, double lr, int64_t step, float *opt_state, int64_t n_opt,
                         amd_status *st) {
  if (amd_tr_step_grads(t, x, labels, smoothing, 1.0f, 1, NULL, NULL, st) ||
      t->be->stream->step_end(t->bgrads, t->n_floats, st) ||
      amd_trainer_optim_step(t, o, lr, step, opt_state, n_opt, 1, st))
    return -1;
  return amd_trainer_update_stats(t, st);
}

void amd_trainer_graph_reset(amd_trainer *t) {
  if (t->graph) t->be->stream->graph_free(t->graph);
  t->graph = NULL;
  t->graph_warm = 0;
}

int amd_trainer_step_deferred(amd_trainer *t, const amd_tensor *x, const int64_t *labels, float smoothing,
                              int slot, const amd_optim *o, double lr, int64_t step, float *opt_state,
                              int64_t n_opt, int graphs, amd_status *st) {
  const amd_stream *sm = t->be->stream;
  const int64_t n = x->rank > 0 ? x->dims[0] : 0;
  if (sm->step_begin(labels, n, slot, st)) return -1;
  amd_optim_coeffs coeffs; /* of this step, for a replayed graph */
  amd_optim_get_coeffs(o, lr, step, &coeffs);
  /* a graph replays one batch shape from one input buffer */
  if (t->graph && (!graphs || n != t->graph_n || x->data != t->graph_x)) amd_trainer_graph_reset(t);
  if (t->graph) {
    if (amd_tr_check_labels(labels, n, t->graph_classes, st) || sm->graph_launch(t->graph, &coeffs, st))
      return -1;
    t->graph_replays++;
  } else if (graphs && sm->graph_begin && !t->graph_off && ++t->graph_warm >= 2) {
    /* the second step of a run of same-shaped ones: every allocation it makes
     * is cached by now, so the capture needs none */
    const uint64_t rng = t->ctx.rng;
    if (sm->graph_begin(st)) return -1;
    amd_status cst, est;
    memset(&cst, 0, sizeof cst);
    memset(&est, 0, sizeof est);
    const int rc = deferred_work(t, x, labels, smoothing, o, lr, step, opt_state, n_opt, &cst);
    void *g = NULL;
    const int erc = sm->graph_end(&g, &est); /* ends the capture whatever happened */
    if (rc == 0 && erc == 0 && t->ctx.rng == rng) {
      t->graph = g;
      t->graph_n = n;
      t->graph_x = x->data;
      t->graph_classes = t->run.vals[t->logits_value].dims[1];
      if (sm->graph_launch(g, &coeffs, st)) return -1;
    } else {
      /* nothing captured ran: the step runs uncaptured; the next one tries
       * again (a first step can leave an allocation to the second), up to
       * three times in a run */
      if (g) sm->graph_free(g);
      t->graph_off = ++t->graph_fails >= 3;
      snprintf(t->graph_note, sizeof t->graph_note, "%.200s",
               rc    ? cst.msg
               : erc ? est.msg
                     : "a node draws random numbers in each step (Dropout, a random op)");
      t->ctx.rng = rng;
      if (deferred_work(t, x, labels, smoothing, o, lr, step, opt_state, n_opt, st)) return -1;
    }
  } else if (deferred_work(t, x, labels, smoothing, o, lr, step, opt_state, n_opt, st)) {
    return -1;
  }
  return sm->step_finish(slot, st);
}

int amd_trainer_step_collect(amd_trainer *t, int slot, double *loss, amd_batch_stats *bs, int *finite,
                             amd_status *st) {
  int64_t n = 0;
  const int64_t *labels = NULL;
  const void *rows = NULL;
  if (t->be->stream->step_collect(slot, &n, &labels, &rows, finite, st)) return -1;
  *loss = n > 0 ? amd_xent_tally(rows, labels, n, NULL, bs) : 0;
  return 0;
}
