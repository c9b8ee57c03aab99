/* The trainer's life and its blocks (see trainer.h): amd_trainer_init (the
 * set-up: the steps of trainer_params.c and trainer_bn.c, then the
 * parameters moved into their block), amd_trainer_free, and the blocks of
 * one layout (parameters and gradients, n_floats floats each, a parameter at
 * its param_offset in both; the optimizer state, one or two more such
 * blocks) on the host and, after amd_trainer_set_backend, in the backend's
 * memory, with the copies between the two and the optimizer step over them.
 *
 * The parameter block belongs to the graph (g->param_block; the parameters'
 * initializers point into it, init_in_block), the gradient block to the
 * trainer. A graph serves one trainer after another (each freed before the
 * next is made): amd_trainer_free leaves the block and the trained values in
 * the graph and takes back the nodes' and values' changes (trainer_bn.c);
 * the next amd_trainer_init gives the old block's initializers their own
 * memory again before it builds the block of its own parameters. */
#include "trainer_internal.h"

#include "../exec/backend.h"
#include "optim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Gives every initializer in the graph's parameter block (an earlier trainer's: the block stays with the
 * graph when its trainer is freed) its own memory again, with the values training gave it, and frees the
 * block. Stopped by a failure, every initializer is still whole, in the block or out of it. */
static int release_param_block(amd_graph *g, amd_status *st) {
  for (int v = 0; v < g->n_values; v++) {
    amd_value *val = &g->values[v];
    if (!val->init_in_block) continue;
    amd_tensor own = val->init;
    own.data = NULL;
    if (amd_tensor_copy(&own, &val->init, st)) return -1;
    val->init = own;
    val->init_in_block = 0;
  }
  free(g->param_block);
  g->param_block = NULL;
  return 0;
}

/* Moves the parameters into one block (the graph owns it from now on) with its gradient block beside. */
static int move_params(amd_trainer *t, amd_status *st) {
  amd_graph *g = t->g;
  const int64_t total = t->n_floats;
  if (release_param_block(g, st)) return -1;
  /* one float at least: a block even without parameters (inference_only) */
  t->params = calloc((size_t)(total ? total : 1), sizeof(float));
  t->grads = calloc((size_t)(total ? total : 1), sizeof(float));
  if (!t->params || !t->grads) return amd_fail(st, "out of memory for %lld parameters", (long long)total);
  for (int p = 0; p < t->n_params; p++) {
    amd_value *val = &g->values[t->param_value[p]];
    float *dst = t->params + t->param_offset[p];
    memcpy(dst, val->init.data, amd_tensor_nbytes(&val->init));
    amd_tensor_free(&val->init);
    val->init.data = dst;
    val->init_in_block = 1;
    t->dvals[t->param_value[p]] = val->init;
    t->dvals[t->param_value[p]].data = t->grads + t->param_offset[p];
  }
  g->param_block = t->params;
  return 0;
}

int amd_trainer_init(amd_trainer *t, amd_graph *g, const amd_trainer_opts *o, amd_status *st) {
  memset(t, 0, sizeof *t);
  t->g = g;
  if (g->n_inputs != 1)
    return amd_fail(st, "training needs a model with one input (this one has %d)", g->n_inputs);
  if (amd_tr_prepare_batchnorm(t, st)) goto fail;
  t->logits_value = amd_tr_find_logits(g);
  const int nv = g->n_values;
  unsigned char *on_path = calloc((size_t)nv, 1);
  t->needs_grad = calloc((size_t)nv, 1);
  t->dvals = calloc((size_t)nv, sizeof *t->dvals);
  t->dfresh = calloc((size_t)nv, 1);
  t->param_value = calloc((size_t)nv, sizeof *t->param_value);
  t->param_offset = calloc((size_t)nv, sizeof *t->param_offset);
  const char *blocked = NULL;
  int rc = !on_path || !t->needs_grad || !t->dvals || !t->dfresh || !t->param_value || !t->param_offset
               ? amd_fail(st, "out of memory")
               : 0;
  if (rc == 0) rc = amd_tr_loss_path(t, o, on_path, &blocked, st);
  if (rc == 0) rc = amd_tr_choose_params(t, o, on_path, st);
  if (rc == 0) rc = move_params(t, st);
  if (rc == 0) amd_tr_mark_needs_grad(t, on_path);
  free(on_path);
  if (rc) goto fail;
  if (blocked)
    snprintf(t->warning, sizeof t->warning,
             "node '%s' has no backward: parameters that only reach the loss through it are not trained",
             blocked);
  amd_tr_warn_folded_batchnorm(t);
  if (amd_run_init(&t->run, g, st)) goto fail;
  t->be = &amd_backend_cpu;
  t->bparams = t->params;
  t->bgrads = t->grads;
  t->run.pinned = t->logits_value;
  t->ctx.rng = 0x2545f4914f6cdd1dull;
  if (amd_tr_plan_backward_frees(t, st)) goto fail;
  return 0;
fail:
  amd_trainer_free(t);
  return -1;
}

const amd_train_kernels *amd_tr_kernels(const amd_trainer *t) { return amd_train_kernels_for(t->be->device); }

void amd_tr_free_dval(amd_trainer *t, amd_tensor *d) {
  if (!d->data) return;
  if (d->device == AMD_DEVICE_CPU)
    amd_tensor_free(d);
  else
    t->be->buf->free(d);
  d->data = NULL;
}

/* The backend blocks of a device backend. */
static void free_device_blocks(amd_trainer *t) {
  if (t->be && t->be->device != AMD_DEVICE_CPU) {
    t->be->buf->mem_free(t->bparams);
    t->be->buf->mem_free(t->bgrads);
    if (t->bopt) t->be->buf->mem_free(t->bopt);
  }
  t->bparams = t->params;
  t->bgrads = t->grads;
  t->bopt = NULL;
  t->n_bopt = 0;
}

void amd_trainer_free(amd_trainer *t) {
  if (!t->g) return;
  if (t->dvals)
    for (int v = 0; v < t->g->n_values; v++)
      if (!t->g->values[v].init_in_block) amd_tr_free_dval(t, &t->dvals[v]);
  amd_run_free(&t->run);
  free_device_blocks(t);
  amd_trainer_graph_reset(t);
  free(t->dvals);
  free(t->dfresh);
  free(t->bwd_last);
  free(t->needs_grad);
  free(t->param_value);
  free(t->param_offset);
  free(t->grads);
  free(t->stats);
  amd_tr_restore_batchnorm(t);
  /* t->params belongs to the graph (g->param_block), with the values training gave the parameters */
  memset(t, 0, sizeof *t);
}

int amd_trainer_set_backend(amd_trainer *t, const amd_backend *be, amd_status *st) {
  amd_graph *g = t->g;
  if (!amd_train_kernels_for(be->device))
    return amd_fail(st, "no training kernels for the %s backend", be->name);
  for (int v = 0; v < g->n_values; v++)
    if (!g->values[v].init_in_block) amd_tr_free_dval(t, &t->dvals[v]);
  amd_run_clear(&t->run, NULL);
  free_device_blocks(t);
  t->be = be;
  t->ctx.backend = be;
  size_t bytes = (size_t)t->n_floats * sizeof(float);
  if (be->device != AMD_DEVICE_CPU) {
    t->bparams = t->bgrads = NULL;
    if (be->buf->mem_alloc((void **)&t->bparams, bytes, st) ||
        be->buf->mem_alloc((void **)&t->bgrads, bytes, st) ||
        be->buf->mem_from_host(t->bparams, t->params, bytes, st)) {
      if (t->bparams) be->buf->mem_free(t->bparams);
      if (t->bgrads) be->buf->mem_free(t->bgrads);
      t->be = &amd_backend_cpu;
      t->ctx.backend = t->be;
      t->bparams = t->params;
      t->bgrads = t->grads;
      return amd_fail_prefix(st, "%lld parameters to the %s backend", (long long)t->n_floats, be->name);
    }
  }
  /* the parameters and their gradients inside the blocks */
  for (int p = 0; p < t->n_params; p++) {
    int v = t->param_value[p];
    amd_tensor pt = g->values[v].init;
    pt.data = t->bparams + t->param_offset[p];
    pt.device = be->device;
    amd_run_set_init(&t->run, v, &pt);
    t->dvals[v] = pt;
    t->dvals[v].data = t->bgrads + t->param_offset[p];
  }
  return amd_run_set_backend(&t->run, be, st);
}

int amd_trainer_sync_host(amd_trainer *t, float *opt_state, int64_t n_opt, amd_status *st) {
  const amd_backend *be = t->be;
  if (be->device == AMD_DEVICE_CPU) return 0;
  size_t bytes = (size_t)t->n_floats * sizeof(float);
  if (be->buf->mem_to_host(t->params, t->bparams, bytes, st) ||
      be->buf->mem_to_host(t->grads, t->bgrads, bytes, st))
    return -1;
  for (int i = 0; i < t->n_stats; i++) {
    int v = t->stats[i][1];
    amd_tensor *src = amd_tr_stat_tensor(t, v), *dst = &t->g->values[v].init;
    if (src != dst && be->buf->mem_to_host(dst->data, src->data, amd_tensor_nbytes(dst), st)) return -1;
  }
  if (opt_state && n_opt && t->bopt &&
      be->buf->mem_to_host(opt_state, t->bopt, (size_t)n_opt * sizeof(float), st))
    return -1;
  return 0;
}

/* The device copy of the optimizer state, n_opt floats (allocated zeroed on first use). */
static int device_opt_state(amd_trainer *t, int64_t n_opt, amd_status *st) {
  if (t->bopt && t->n_bopt == n_opt) return 0;
  if (t->bopt) t->be->buf->mem_free(t->bopt);
  t->bopt = NULL;
  t->n_bopt = 0;
  if (t->be->buf->mem_alloc((void **)&t->bopt, (size_t)n_opt * sizeof(float), st)) return -1;
  t->n_bopt = n_opt;
  return 0;
}

int amd_trainer_sync_device(amd_trainer *t, const float *opt_state, int64_t n_opt, amd_status *st) {
  const amd_backend *be = t->be;
  if (be->device == AMD_DEVICE_CPU) return 0;
  size_t bytes = (size_t)t->n_floats * sizeof(float);
  if (be->buf->mem_from_host(t->bparams, t->params, bytes, st)) return -1;
  for (int i = 0; i < t->n_stats; i++) {
    int v = t->stats[i][1];
    amd_tensor *dst = amd_tr_stat_tensor(t, v), *src = &t->g->values[v].init;
    if (src != dst && be->buf->mem_from_host(dst->data, src->data, amd_tensor_nbytes(src), st)) return -1;
  }
  if (!n_opt) return 0;
  if (device_opt_state(t, n_opt, st)) return -1;
  if (opt_state) return be->buf->mem_from_host(t->bopt, opt_state, (size_t)n_opt * sizeof(float), st);
  return be->buf->mem_zero(t->bopt, (size_t)n_opt * sizeof(float), st);
}

int amd_tr_opt_state(amd_trainer *t, float *opt_state, int64_t n_opt, float **state, amd_status *st) {
  const amd_backend *be = t->be;
  *state = opt_state;
  if (be->device == AMD_DEVICE_CPU) return 0;
  if (n_opt && (!t->bopt || t->n_bopt != n_opt)) {
    if (device_opt_state(t, n_opt, st)) return -1;
    if (opt_state && be->buf->mem_from_host(t->bopt, opt_state, (size_t)n_opt * sizeof(float), st)) return -1;
  }
  *state = t->bopt;
  return 0;
}

int amd_trainer_optim_step(amd_trainer *t, const amd_optim *o, double lr, int64_t step, float *opt_state,
                           int64_t n_opt, int guarded, amd_status *st) {
  float *state;
  if (amd_tr_opt_state(t, opt_state, n_opt, &state, st)) return -1;
  amd_optim_update u;
  amd_optim_update_make(o, lr, step, &u);
  return amd_tr_kernels(t)->optim_step(&u, t->bparams, t->bgrads, state, t->n_floats, guarded, st);
}
