/* One step's gradients (amd_trainer_step_grads, see trainer.h): the
 * training-mode forward (keeping the values some backward reads), the
 * softmax cross-entropy on the logits, then every node's backward in reverse
 * order; and the checks and scaling of the gradient block that loss scaling
 * uses.
 *
 * Gradient convention: dvals[v] holds d(loss)/d(value v) for this step. Ops'
 * backward functions ACCUMULATE into it (+=), so every buffer is zeroed once
 * per step before the backward walk; parameter gradients live in t->grads
 * (one block, zeroed with one memset). The walk frees a node's output
 * gradients once the node's backward has used them: every reader of a value
 * comes after its producer, so the gradient is complete and nobody else needs
 * it (at most the gradients of a few layers are alive at a time). It frees
 * the forward values as it goes too: each once the last backward that reads
 * it has run (t->bwd_last), so that the saved activations of the layers
 * behind the walk are gone while the layers ahead take their gradients
 * (ResNet-50's peak otherwise holds all of both). */
#include "trainer_internal.h"

#include "../exec/backend.h"
#include "../report/profile.h"

#include <string.h>

/* The gradient buffer of value v for this step, allocated on first use:
 * zeroed, or where the backend's backward functions can write over a buffer
 * (bwd_overwrite) left unzeroed and marked fresh, so that its first writer
 * writes over it (or zeroes it first: see first_writes). */
static amd_tensor *grad_of(amd_trainer *t, int v, amd_status *st) {
  amd_tensor *d = &t->dvals[v];
  if (d->data) return d;
  const amd_tensor *x = &t->run.vals[v];
  amd_tensor_set_shape(d, x->dtype, x->rank, x->dims);
  const int raw = t->be->buf->alloc_out && t->be->compute->bwd_overwrite;
  if ((raw ? t->be->buf->alloc_out : t->be->buf->alloc)(d, st)) return NULL;
  t->dfresh[v] = (unsigned char)raw;
  return d;
}

/* Before node n's backward: the inputs whose fresh gradient buffer it writes
 * over (the mask for ctx.bwd_overwrite); every other fresh one is zeroed
 * now, for the backward to add to (also one that two inputs share). */
static int first_writes(amd_trainer *t, const amd_node *n, const amd_tensor *const *in,
                        amd_tensor *const *din, unsigned *mask, amd_status *st) {
  const unsigned can = t->be->compute->bwd_overwrite ? t->be->compute->bwd_overwrite(n, in) : 0;
  *mask = 0;
  for (int k = 0; k < n->n_in; k++) {
    if (!din[k] || !t->dfresh[n->in[k]]) continue;
    int shared = 0;
    for (int j = 0; j < n->n_in; j++) shared |= j != k && din[j] == din[k];
    if (((can >> k) & 1u) && !shared && k < 32) {
      *mask |= 1u << k;
    } else {
      if (t->be->buf->mem_zero(din[k]->data, amd_tensor_nbytes(din[k]), st)) return -1;
    }
    t->dfresh[n->in[k]] = 0; /* written by this backward either way */
  }
  return 0;
}

int amd_tr_plan_backward_frees(amd_trainer *t, amd_status *st) {
  const amd_graph *g = t->g;
  t->bwd_last = malloc(((size_t)g->n_values + 1) * sizeof *t->bwd_last);
  if (!t->bwd_last) return amd_fail(st, "out of memory");
  for (int v = 0; v < g->n_values; v++) t->bwd_last[v] = -1;
  /* from the last node to the first, so that the earliest reader is the one that stays (the walk
   * reaches it last) */
  for (int i = g->n_nodes - 1; i >= 0; i--) {
    const amd_node *n = &g->nodes[i];
    if (!n->op->backward) continue;
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] >= 0 && amd_op_bwd_reads_in(n->op, k)) t->bwd_last[n->in[k]] = i;
    for (int o = 0; o < n->n_out; o++)
      if (n->out[o] >= 0 && amd_op_bwd_reads_out(n->op, o)) t->bwd_last[n->out[o]] = i;
  }
  /* read after the walk: the logits (the deferred loss, the graph's class count), the statistics that
   * amd_trainer_update_stats copies, the graph's outputs */
  if (t->logits_value >= 0) t->bwd_last[t->logits_value] = -1;
  for (int i = 0; i < t->n_stats; i++) t->bwd_last[t->stats[i][0]] = -1;
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].is_graph_output) t->bwd_last[v] = -1;
  return 0;
}

/* After node i's place in the walk (its backward run or skipped): frees the
 * node's output gradients, and the forward values whose last backward reader
 * it is (only a node's own inputs and outputs can be). */
static void release_after(amd_trainer *t, int i) {
  const amd_node *n = &t->g->nodes[i];
  for (int o = 0; o < n->n_out; o++)
    if (n->out[o] >= 0 && !t->g->values[n->out[o]].init_in_block) amd_tr_free_dval(t, &t->dvals[n->out[o]]);
  for (int k = 0; k < n->n_in; k++)
    if (n->in[k] >= 0 && t->bwd_last[n->in[k]] == i) amd_run_release(&t->run, n->in[k]);
  for (int o = 0; o < n->n_out; o++)
    if (n->out[o] >= 0 && t->bwd_last[n->out[o]] == i) amd_run_release(&t->run, n->out[o]);
}

/* Node i's backward, when an output has a gradient and an input wants one. */
static int backward_node(amd_trainer *t, int i, amd_status *st) {
  const amd_node *n_ = &t->g->nodes[i];
  const amd_tensor *dout[16];
  amd_tensor *din[64], outs[16];
  const amd_tensor *in[64];
  if (!n_->op->backward) return 0;
  int any_out = 0, any_in = 0;
  for (int o = 0; o < n_->n_out; o++) {
    int v = n_->out[o];
    dout[o] = v >= 0 && t->dvals[v].data ? &t->dvals[v] : NULL;
    if (v >= 0)
      outs[o] = t->run.vals[v];
    else
      memset(&outs[o], 0, sizeof outs[o]);
    any_out |= dout[o] != NULL;
  }
  if (!any_out) return 0;
  memset(in, 0, sizeof in);
  memset(din, 0, sizeof din);
  for (int k = 0; k < n_->n_in; k++) {
    int v = n_->in[k];
    in[k] = v >= 0 ? &t->run.vals[v] : NULL;
    din[k] = NULL;
    if (v >= 0 && t->needs_grad[v] && !((n_->op->nondiff_inputs >> k) & 1)) {
      if (!(din[k] = grad_of(t, v, st))) return -1;
      any_in = 1;
    }
  }
  if (!any_in) return 0;
  t->ctx.rng = t->run.node_rng[i];
  double t0 = AMD_PROF_T0;
  if (first_writes(t, n_, in, din, &t->ctx.bwd_overwrite, st)) return -1;
  const int rc = amd_backend_backward_node(t->be, n_, &t->ctx, in, outs, dout, din, st);
  t->ctx.bwd_overwrite = 0;
  if (rc) return amd_fail_prefix(st, "backward of node '%s' (%s)", n_->name, n_->op->name);
  if (amd_prof_on) amd_prof_op_add(n_->op->name, n_->op->is_gemm, 1, amd_prof_clock() - t0);
  return 0;
}

int amd_tr_logits_shape(const amd_tensor *z, int64_t *n, int64_t *c, amd_status *st) {
  if (z->dtype != AMD_FLOAT || z->rank < 2)
    return amd_fail(st, "the model's output must be float [batch, classes]");
  for (int i = 2; i < z->rank; i++)
    if (z->dims[i] != 1)
      return amd_fail(st, "the model's output must be [batch, classes] (trailing dims of 1 allowed)");
  *n = z->dims[0];
  *c = z->dims[1];
  return 0;
}

int amd_tr_check_labels(const int64_t *labels, int64_t n, int64_t c, amd_status *st) {
  for (int64_t i = 0; i < n; i++)
    if (labels[i] < 0 || labels[i] >= c)
      return amd_fail(st, "label %lld out of range for a model with %lld outputs", (long long)labels[i],
                      (long long)c);
  return 0;
}

int amd_tr_step_grads(amd_trainer *t, const amd_tensor *x, const int64_t *labels, float smoothing,
                      float loss_scale, int deferred, double *loss, amd_batch_stats *bs, amd_status *st) {
  amd_graph *g = t->g;
  const amd_backend *be = t->be;
  if (be->buf->mem_zero(t->bgrads, (size_t)t->n_floats * sizeof(float), st)) return -1;
  for (int v = 0; v < g->n_values; v++)
    if (!g->values[v].init_in_block) amd_tr_free_dval(t, &t->dvals[v]);
  t->ctx.training = 1;
  t->ctx.inference = 0;
  if (amd_run_forward(&t->run, &t->ctx, x, 1, st)) return -1;
  const amd_tensor *z = &t->run.vals[t->logits_value];
  int64_t n = 0, c = 0;
  if (amd_tr_logits_shape(z, &n, &c, st)) return -1;
  if (amd_tr_check_labels(labels, n, c, st)) return -1;
  amd_tensor *dz = grad_of(t, t->logits_value, st);
  if (!dz) return -1;
  t->dfresh[t->logits_value] = 0; /* the loss writes all of it */
  double t0 = AMD_PROF_T0;
  if (deferred ? be->stream->xent_defer(z->data, n, c, smoothing, dz->data, st)
               : amd_train_softmax_xent(amd_tr_kernels(t), z->data, labels, n, c, smoothing, loss_scale,
                                        dz->data, NULL, bs, loss, st))
    return -1;
  if (amd_prof_on) amd_prof_part_add(AMD_PROF_LOSS, amd_prof_clock() - t0);

  uint64_t rng_after = t->ctx.rng;
  for (int i = g->n_nodes - 1; i >= 0; i--) {
    if (t->backward_progress && t->backward_progress(t->progress_user, i, st)) return -1;
    if (backward_node(t, i, st)) return -1;
    release_after(t, i);
  }
  t->ctx.rng = rng_after;
  if (t->backward_progress && t->backward_progress(t->progress_user, -1, st)) return -1;
  return 0;
}

int amd_trainer_step_grads(amd_trainer *t, const amd_tensor *x, const int64_t *labels, float smoothing,
                           float loss_scale, double *loss, amd_batch_stats *bs, amd_status *st) {
  return amd_tr_step_grads(t, x, labels, smoothing, loss_scale, 0, loss, bs, st);
}

int amd_trainer_grads_finite(amd_trainer *t, int *ok, amd_status *st) {
  return amd_tr_kernels(t)->all_finite(t->bgrads, t->n_floats, ok, st);
}

int amd_trainer_scale_grads(amd_trainer *t, float f, amd_status *st) {
  return amd_tr_kernels(t)->scale(t->bgrads, t->n_floats, f, st);
}

int amd_trainer_uses_fp16(const amd_trainer *t) {
  for (int i = 0; i < t->g->n_nodes; i++) {
    const amd_node *n = &t->g->nodes[i];
    if ((n->mult && n->mult->mode == AMD_MODE_FP16) || (n->bwd_mult && n->bwd_mult->mode == AMD_MODE_FP16))
      return 1;
  }
  return 0;
}
