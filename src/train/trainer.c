/* Autograd and the training / evaluation steps: see trainer.h.
 *
 * Gradient convention: dvals[v] holds d(loss)/d(value v) for this step. Ops'
 * backward functions ACCUMULATE into it (+=), so every buffer is zeroed once
 * per step before the backward walk; parameter gradients live in t->grads
 * (one block, zeroed with one memset). The walk frees a node's output
 * gradients once the node's backward has used them: every reader of a value
 * comes after its producer, so the gradient is complete and nobody else needs
 * it (at most the gradients of a few layers are alive at a time). */
#include "trainer.h"

#include "../data/dataset.h"
#include "../exec/backend.h"
#include "../report/profile.h"
#include "../ops/q8f.h"
#include "../ops/quant.h"
#include "batches.h"
#include "kernels.h"
#include "loss.h"
#include "optim.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_op(const amd_node *n, amd_op_idx idx) { return n->op->idx == (int)idx; }

/* Appends a new float value to the graph; returns its index or -1. */
static int add_value(amd_graph *g, const char *name, amd_status *st) {
  amd_value *nv = realloc(g->values, (size_t)(g->n_values + 1) * sizeof *nv);
  if (!nv) return amd_fail(st, "out of memory");
  g->values = nv;
  amd_value *v = &g->values[g->n_values];
  memset(v, 0, sizeof *v);
  v->name = strdup(name);
  if (!v->name) return amd_fail(st, "out of memory");
  v->dtype = AMD_FLOAT;
  v->rank = -1;
  v->producer = -1;
  return g->n_values++;
}

/* Gives every BatchNormalization node outputs 1 and 2 (its updated running
 * mean and variance in every opset) and records where they go back. */
static int prepare_batchnorm(amd_trainer *t, amd_status *st) {
  amd_graph *g = t->g;
  int n_bn = 0;
  for (int i = 0; i < g->n_nodes; i++) n_bn += is_op(&g->nodes[i], AMD_OP_IDX_BatchNormalization);
  t->stats = calloc((size_t)n_bn * 2 + 1, sizeof *t->stats);
  if (!t->stats) return amd_fail(st, "out of memory");
  for (int i = 0; i < g->n_nodes; i++) {
    amd_node *n = &g->nodes[i];
    if (!is_op(n, AMD_OP_IDX_BatchNormalization) || n->n_in < 5) continue;
    if (n->n_out < 3) {
      int *out = realloc(n->out, 3 * sizeof *out);
      if (!out) return amd_fail(st, "out of memory");
      for (int o = n->n_out; o < 3; o++) out[o] = -1;
      n->out = out;
      n->n_out = 3;
    }
    for (int o = 1; o <= 2; o++) {
      if (n->out[o] < 0) {
        char name[512];
        snprintf(name, sizeof name, "%s.running_%s", n->name, o == 1 ? "mean" : "var");
        int v = add_value(g, name, st);
        if (v < 0) return -1;
        g->values[v].producer = i;
        n->out[o] = v;
      }
      int dst = n->in[2 + o];
      if (dst >= 0 && g->values[dst].is_initializer && g->values[dst].init.dtype == AMD_FLOAT) {
        t->stats[t->n_stats][0] = n->out[o];
        t->stats[t->n_stats][1] = dst;
        t->n_stats++;
      }
    }
  }
  return 0;
}

/* The value the loss reads: the first graph output, or the input of a final
 * Softmax / LogSoftmax on the class axis. */
static int find_logits(const amd_graph *g) {
  int v = g->outputs[0], p = g->values[v].producer;
  if (p >= 0) {
    const amd_node *n = &g->nodes[p];
    if ((is_op(n, AMD_OP_IDX_Softmax) || is_op(n, AMD_OP_IDX_LogSoftmax)) && n->n_in >= 1 && n->in[0] >= 0)
      return n->in[0];
  }
  return v;
}

/* Eval-mode exports fold BatchNormalization into the convolutions (PyTorch
 * names their weights onnx::Conv_N): a model without BN whose convolutions
 * carry such weights gets a warning in t->warning. */
static void warn_folded_batchnorm(amd_trainer *t) {
  const amd_graph *g = t->g;
  int n_bn = 0, folded = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    n_bn += is_op(n, AMD_OP_IDX_BatchNormalization);
    if (is_op(n, AMD_OP_IDX_Conv) && n->n_in > 1 && n->in[1] >= 0 &&
        strncmp(g->values[n->in[1]].name, "onnx::Conv_", 11) == 0)
      folded++;
  }
  if (n_bn == 0 && folded)
    snprintf(t->warning, sizeof t->warning,
             "this model was exported in eval mode: BatchNormalization was folded into %d Conv nodes, so it "
             "trains without BN (export with training=TrainingMode.TRAINING, do_constant_folding=False to "
             "keep it)",
             folded);
}

/* --freeze: entry e names float initializer v when e is a prefix of its name
 * ("layer1." takes everything under layer1, "fc.weight" that one tensor), or
 * e has a * or ? and is a shell pattern of its whole name ("*.bn1.weight":
 * every bn1's scale; * also matches dots and slashes), or e is the name or
 * the op type of a node that reads it ("Conv": the weights and biases of
 * every Conv). An empty entry names nothing. */
static int freeze_match(const amd_graph *g, int v, const char *e) {
  size_t n = strlen(e);
  if (n == 0) return 0;
  if (strpbrk(e, "*?") ? fnmatch(e, g->values[v].name, 0) == 0 : strncmp(g->values[v].name, e, n) == 0) return 1;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *nd = &g->nodes[i];
    if (strcmp(nd->name, e) != 0 && strcmp(nd->op->name, e) != 0) continue;
    for (int k = 0; k < nd->n_in; k++)
      if (nd->in[k] == v) return 1;
  }
  return 0;
}

/* on_path[v] = 1 for the values whose gradient reaches the loss (a backward sweep from the logits through
 * the nodes with a backward); *blocked names a node without backward that a parameter's gradient would
 * have to cross (a warning), a quantized op there is an error unless the trainer only evaluates. */
static int loss_path(const amd_trainer *t, const amd_trainer_opts *o, unsigned char *on_path, const char **blocked,
                     amd_status *st) {
  const amd_graph *g = t->g;
  /* values that a float initializer flows into through differentiable inputs: a node without backward
   * blocks a parameter only where one of them is its input (not a Constant, nor the Cast of a dropout mask
   * that a random op drew) */
  unsigned char *from_init = calloc((size_t)g->n_values, 1);
  if (!from_init) return amd_fail(st, "out of memory");
  for (int v = 0; v < g->n_values; v++)
    from_init[v] = g->values[v].is_initializer && g->values[v].init.dtype == AMD_FLOAT;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    int dep = 0;
    for (int k = 0; k < n->n_in; k++)
      dep |= n->in[k] >= 0 && from_init[n->in[k]] && !((n->op->nondiff_inputs >> k) & 1);
    for (int k = 0; dep && k < n->n_out; k++)
      if (n->out[k] >= 0) from_init[n->out[k]] = 1;
  }
  on_path[t->logits_value] = 1;
  *blocked = NULL;
  int rc = 0;
  for (int i = g->n_nodes - 1; i >= 0 && rc == 0; i--) {
    const amd_node *n = &g->nodes[i];
    int reaches = 0;
    for (int k = 0; k < n->n_out; k++) reaches |= n->out[k] >= 0 && on_path[n->out[k]];
    if (!reaches) continue;
    if (!n->op->backward && amd_op_is_quantized(n->op) && !(o && o->inference_only)) {
      rc = amd_fail(st,
                    "node '%s' (%s) is a quantized op, which has no backward: quantized models can be run "
                    "(run, eval) but not trained; train the float model and quantize it afterwards "
                    "(quantization-aware training with a straight-through gradient is not implemented)",
                    n->name, n->op->name);
    } else if (!n->op->backward) {
      for (int k = 0; !*blocked && k < n->n_in; k++)
        if (n->in[k] >= 0 && from_init[n->in[k]] && !((n->op->nondiff_inputs >> k) & 1)) *blocked = n->name;
    } else {
      for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && !((n->op->nondiff_inputs >> k) & 1)) on_path[n->in[k]] = 1;
    }
  }
  free(from_init);
  return rc;
}

/* Notes a frozen parameter (--freeze) in t's count and list of names. */
static void note_frozen(amd_trainer *t, const amd_value *val) {
  t->n_frozen++;
  t->frozen_floats += amd_tensor_numel(&val->init);
  size_t len = strlen(t->frozen_names);
  if (len + strlen(val->name) + 8 < sizeof t->frozen_names)
    snprintf(t->frozen_names + len, sizeof t->frozen_names - len, "%s%s", len ? ", " : "", val->name);
  else if (!strstr(t->frozen_names, ", ...") && len + 6 < sizeof t->frozen_names)
    snprintf(t->frozen_names + len, sizeof t->frozen_names - len, ", ...");
}

/* The parameters: the float initializers on the loss path, less those --freeze names (each entry must
 * match one), laid out one after the other (param_value, param_offset, n_params, n_floats). */
static int choose_params(amd_trainer *t, const amd_trainer_opts *o, const unsigned char *on_path,
                         amd_status *st) {
  const amd_graph *g = t->g;
  unsigned char used[AMD_MAX_FREEZE] = {0};
  if (o && o->n_freeze > AMD_MAX_FREEZE) return amd_fail(st, "--freeze: at most %d entries", AMD_MAX_FREEZE);
  int64_t total = 0;
  for (int v = 0; v < g->n_values; v++) {
    const amd_value *val = &g->values[v];
    if (!val->is_initializer || val->init.dtype != AMD_FLOAT || !on_path[v]) continue;
    int skip = 0;
    for (int f = 0; o && f < o->n_freeze; f++)
      if (freeze_match(g, v, o->freeze[f])) skip = 1, used[f] = 1;
    if (skip) {
      note_frozen(t, val);
      continue;
    }
    t->param_value[t->n_params] = v;
    t->param_offset[t->n_params] = total;
    t->n_params++;
    total += amd_tensor_numel(&val->init);
  }
  for (int f = 0; o && f < o->n_freeze; f++)
    if (!used[f])
      return amd_fail(st,
                      "--freeze '%s' matches no trainable parameter (an entry is a prefix of initializer names, "
                      "e.g. 'layer1.', a pattern such as '*.bn1.weight', a node name or an op type such as Conv; "
                      "`amdnn-onnx info` lists nodes, `amdnn-onnx grad` the parameters)",
                      o->freeze[f]);
  if (t->n_params == 0 && !(o && o->inference_only))
    return amd_fail(st, "the model has no trainable parameters (no float initializer reaches the loss%s)",
                    t->n_frozen ? " that --freeze left" : "");
  t->n_floats = total;
  return 0;
}

/* Moves the parameters into one block (the graph owns it from now on) with its gradient block beside. */
static int move_params(amd_trainer *t, amd_status *st) {
  amd_graph *g = t->g;
  const int64_t total = t->n_floats;
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
  free(g->param_block);
  g->param_block = t->params;
  return 0;
}

/* needs_grad: the values on the loss path that depend on a parameter through nodes with a backward (a
 * gradient stops at a node without one). */
static void mark_needs_grad(amd_trainer *t, const unsigned char *on_path) {
  const amd_graph *g = t->g;
  for (int p = 0; p < t->n_params; p++) t->needs_grad[t->param_value[p]] = 1;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    if (!n->op->backward) continue;
    int dep = 0;
    for (int k = 0; k < n->n_in; k++)
      dep |= n->in[k] >= 0 && t->needs_grad[n->in[k]] && !((n->op->nondiff_inputs >> k) & 1);
    for (int k = 0; dep && k < n->n_out; k++)
      if (n->out[k] >= 0) t->needs_grad[n->out[k]] = 1;
  }
  for (int v = 0; v < g->n_values; v++) t->needs_grad[v] &= on_path[v];
}

int amd_trainer_init(amd_trainer *t, amd_graph *g, const amd_trainer_opts *o, amd_status *st) {
  memset(t, 0, sizeof *t);
  t->g = g;
  if (g->n_inputs != 1)
    return amd_fail(st, "training needs a model with one input (this one has %d)", g->n_inputs);
  if (prepare_batchnorm(t, st)) goto fail;
  t->logits_value = find_logits(g);
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
  if (rc == 0) rc = loss_path(t, o, on_path, &blocked, st);
  if (rc == 0) rc = choose_params(t, o, on_path, st);
  if (rc == 0) rc = move_params(t, st);
  if (rc == 0) mark_needs_grad(t, on_path);
  free(on_path);
  if (rc) goto fail;
  if (blocked)
    snprintf(t->warning, sizeof t->warning,
             "node '%s' has no backward: parameters that only reach the loss through it are not trained",
             blocked);
  warn_folded_batchnorm(t);
  if (amd_run_init(&t->run, g, st)) goto fail;
  t->be = &amd_backend_cpu;
  t->bparams = t->params;
  t->bgrads = t->grads;
  t->run.pinned = t->logits_value;
  t->ctx.rng = 0x2545f4914f6cdd1dull;
  return 0;
fail:
  amd_trainer_free(t);
  return -1;
}

/* The training kernels of the trainer's device (amd_trainer_set_backend checks there are). */
static const amd_train_kernels *kernels(const amd_trainer *t) { return amd_train_kernels_for(t->be->device); }

static void free_dval(amd_trainer *t, amd_tensor *d) {
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
      if (!t->g->values[v].init_in_block) free_dval(t, &t->dvals[v]);
  amd_run_free(&t->run);
  free_device_blocks(t);
  amd_trainer_graph_reset(t);
  free(t->dvals);
  free(t->dfresh);
  free(t->needs_grad);
  free(t->param_value);
  free(t->param_offset);
  free(t->grads);
  free(t->stats);
  /* t->params belongs to the graph (g->param_block) */
  memset(t, 0, sizeof *t);
}

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

int amd_trainer_set_backend(amd_trainer *t, const amd_backend *be, amd_status *st) {
  amd_graph *g = t->g;
  if (!amd_train_kernels_for(be->device))
    return amd_fail(st, "no training kernels for the %s backend", be->name);
  for (int v = 0; v < g->n_values; v++)
    if (!g->values[v].init_in_block) free_dval(t, &t->dvals[v]);
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

/* The tensor that holds BN statistic initializer v for the run's backend. */
static amd_tensor *stat_tensor(amd_trainer *t, int v) {
  return t->run.init_owned[v] ? &t->run.inits[v] : &t->g->values[v].init;
}

amd_tensor *amd_trainer_stat(amd_trainer *t, int i) { return stat_tensor(t, t->stats[i][1]); }

int amd_trainer_sync_host(amd_trainer *t, float *opt_state, int64_t n_opt, amd_status *st) {
  const amd_backend *be = t->be;
  if (be->device == AMD_DEVICE_CPU) return 0;
  size_t bytes = (size_t)t->n_floats * sizeof(float);
  if (be->buf->mem_to_host(t->params, t->bparams, bytes, st) ||
      be->buf->mem_to_host(t->grads, t->bgrads, bytes, st))
    return -1;
  for (int i = 0; i < t->n_stats; i++) {
    int v = t->stats[i][1];
    amd_tensor *src = stat_tensor(t, v), *dst = &t->g->values[v].init;
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
    amd_tensor *dst = stat_tensor(t, v), *src = &t->g->values[v].init;
    if (src != dst && be->buf->mem_from_host(dst->data, src->data, amd_tensor_nbytes(src), st)) return -1;
  }
  if (!n_opt) return 0;
  if (device_opt_state(t, n_opt, st)) return -1;
  if (opt_state) return be->buf->mem_from_host(t->bopt, opt_state, (size_t)n_opt * sizeof(float), st);
  return be->buf->mem_zero(t->bopt, (size_t)n_opt * sizeof(float), st);
}

int amd_trainer_optim_step(amd_trainer *t, const amd_optim *o, double lr, int64_t step, float *opt_state,
                           int64_t n_opt, int guarded, amd_status *st) {
  const amd_backend *be = t->be;
  float *state = opt_state;
  if (be->device != AMD_DEVICE_CPU) {
    if (n_opt && (!t->bopt || t->n_bopt != n_opt)) {
      if (device_opt_state(t, n_opt, st)) return -1;
      if (opt_state && be->buf->mem_from_host(t->bopt, opt_state, (size_t)n_opt * sizeof(float), st))
        return -1;
    }
    state = t->bopt;
  }
  amd_optim_update u;
  amd_optim_update_make(o, lr, step, &u);
  return kernels(t)->optim_step(&u, t->bparams, t->bgrads, state, t->n_floats, guarded, st);
}

/* Logits [N, C, 1...] -> N and C. */
static int logits_shape(const amd_tensor *z, int64_t *n, int64_t *c, amd_status *st) {
  if (z->dtype != AMD_FLOAT || z->rank < 2)
    return amd_fail(st, "the model's output must be float [batch, classes]");
  for (int i = 2; i < z->rank; i++)
    if (z->dims[i] != 1)
      return amd_fail(st, "the model's output must be [batch, classes] (trailing dims of 1 allowed)");
  *n = z->dims[0];
  *c = z->dims[1];
  return 0;
}

static int check_labels(const int64_t *labels, int64_t n, int64_t c, amd_status *st) {
  for (int64_t i = 0; i < n; i++)
    if (labels[i] < 0 || labels[i] >= c)
      return amd_fail(st, "label %lld out of range for a model with %lld outputs", (long long)labels[i],
                      (long long)c);
  return 0;
}

/* amd_trainer_step_grads, or (deferred) its work in amd_trainer_step_deferred. */
static int step_grads(amd_trainer *t, const amd_tensor *x, const int64_t *labels, float smoothing,
                      float loss_scale, int deferred, double *loss, amd_batch_stats *bs, amd_status *st) {
  amd_graph *g = t->g;
  const amd_backend *be = t->be;
  if (be->buf->mem_zero(t->bgrads, (size_t)t->n_floats * sizeof(float), st)) return -1;
  for (int v = 0; v < g->n_values; v++)
    if (!g->values[v].init_in_block) free_dval(t, &t->dvals[v]);
  t->ctx.training = 1;
  t->ctx.inference = 0;
  if (amd_run_forward(&t->run, &t->ctx, x, 1, st)) return -1;
  const amd_tensor *z = &t->run.vals[t->logits_value];
  int64_t n = 0, c = 0;
  if (logits_shape(z, &n, &c, st)) return -1;
  if (check_labels(labels, n, c, st)) return -1;
  amd_tensor *dz = grad_of(t, t->logits_value, st);
  if (!dz) return -1;
  t->dfresh[t->logits_value] = 0; /* the loss writes all of it */
  double t0 = AMD_PROF_T0;
  if (deferred ? be->stream->xent_defer(z->data, n, c, smoothing, dz->data, st)
               : amd_train_softmax_xent(kernels(t), z->data, labels, n, c, smoothing, loss_scale, dz->data,
                                        NULL, bs, loss, st))
    return -1;
  if (amd_prof_on) amd_prof_part_add(AMD_PROF_LOSS, amd_prof_clock() - t0);

  uint64_t rng_after = t->ctx.rng;
  const amd_tensor *dout[16];
  amd_tensor *din[64], outs[16];
  const amd_tensor *in[64];
  for (int i = g->n_nodes - 1; i >= 0; i--) {
    const amd_node *n_ = &g->nodes[i];
    if (t->backward_progress && t->backward_progress(t->progress_user, i, st)) return -1;
    if (!n_->op->backward) continue;
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
    if (!any_out) continue;
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
    if (any_in) {
      t->ctx.rng = t->run.node_rng[i];
      double t0 = AMD_PROF_T0;
      if (first_writes(t, n_, in, din, &t->ctx.bwd_overwrite, st)) return -1;
      const int rc = amd_backend_backward_node(be, n_, &t->ctx, in, outs, dout, din, st);
      t->ctx.bwd_overwrite = 0;
      if (rc) return amd_fail_prefix(st, "backward of node '%s' (%s)", n_->name, n_->op->name);
      if (amd_prof_on) amd_prof_op_add(n_->op->name, n_->op->is_gemm, 1, amd_prof_clock() - t0);
    }
    for (int o = 0; o < n_->n_out; o++)
      if (n_->out[o] >= 0 && !g->values[n_->out[o]].init_in_block) free_dval(t, &t->dvals[n_->out[o]]);
  }
  t->ctx.rng = rng_after;
  if (t->backward_progress && t->backward_progress(t->progress_user, -1, st)) return -1;
  return 0;
}

int amd_trainer_step_grads(amd_trainer *t, const amd_tensor *x, const int64_t *labels, float smoothing,
                           float loss_scale, double *loss, amd_batch_stats *bs, amd_status *st) {
  return step_grads(t, x, labels, smoothing, loss_scale, 0, loss, bs, st);
}

int amd_trainer_can_defer(const amd_trainer *t) { return t->be->stream && t->be->stream->step_begin; }

int amd_trainer_guard_reset(amd_trainer *t, amd_status *st) { return t->be->stream->guard_reset(st); }

/* The device work of a deferred step: gradients, their check, the guarded
 * optimizer step, the BN statistics. */
static int deferred_work(amd_trainer *t, const amd_tensor *x, const int64_t *labels, float smoothing,
                         const amd_optim *o, double lr, int64_t step, float *opt_state, int64_t n_opt,
                         amd_status *st) {
  if (step_grads(t, x, labels, smoothing, 1.0f, 1, NULL, NULL, st) ||
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
    if (check_labels(labels, n, t->graph_classes, st) || sm->graph_launch(t->graph, &coeffs, st)) return -1;
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

int amd_trainer_update_stats(amd_trainer *t, amd_status *st) {
  for (int i = 0; i < t->n_stats; i++) {
    const amd_tensor *src = &t->run.vals[t->stats[i][0]];
    amd_tensor *dst = stat_tensor(t, t->stats[i][1]);
    if (!src->data || src->dtype != dst->dtype || amd_tensor_numel(src) != amd_tensor_numel(dst)) continue;
    int rc;
    if (src->device == dst->device)
      rc = src->device == AMD_DEVICE_CPU
               ? (memcpy(dst->data, src->data, amd_tensor_nbytes(dst)), 0)
               : t->be->buf->mem_copy(dst->data, src->data, amd_tensor_nbytes(dst), st);
    else if (dst->device == AMD_DEVICE_CPU)
      rc = t->be->buf->mem_to_host(dst->data, src->data, amd_tensor_nbytes(dst), st);
    else
      rc = t->be->buf->mem_from_host(dst->data, src->data, amd_tensor_nbytes(dst), st);
    if (rc) return -1;
  }
  return 0;
}

/* The inference-mode forward of x; *z: the logits [n, c] in backend memory. */
static int eval_forward(amd_trainer *t, const amd_tensor *x, const amd_tensor **z, int64_t *n, int64_t *c,
                        amd_status *st) {
  amd_ctx ctx = t->ctx;
  ctx.training = 0;
  ctx.inference = 1;
  if (amd_run_forward(&t->run, &ctx, x, 0, st)) return -1;
  *z = &t->run.vals[t->logits_value];
  return logits_shape(*z, n, c, st);
}

static int eval_loss(amd_trainer *t, const float *z, const int64_t *labels, int64_t n, int64_t c,
                     amd_batch_stats *bs, int64_t *pred, amd_status *st) {
  if (check_labels(labels, n, c, st)) return -1;
  double mean, t0 = AMD_PROF_T0;
  if (amd_train_softmax_xent(kernels(t), z, labels, n, c, 0, 1.0f, NULL, pred, bs, &mean, st)) return -1;
  if (amd_prof_on) amd_prof_part_add(AMD_PROF_LOSS, amd_prof_clock() - t0);
  return 0;
}

int amd_trainer_eval(amd_trainer *t, const amd_tensor *x, const int64_t *labels, amd_batch_stats *bs,
                     int64_t *pred, amd_status *st) {
  const amd_tensor *z;
  int64_t n = 0, c = 0;
  if (eval_forward(t, x, &z, &n, &c, st)) return -1;
  return eval_loss(t, z->data, labels, n, c, bs, pred, st);
}

/* amd_trainer_eval of samples ids[0..k) with test-time augmentation: the
 * batch as it is and mirrored (made into b), the logits of the two summed in
 * *sum (backend memory for `batch` samples, allocated by the first call)
 * and halved. */
static int eval_mirrored(amd_trainer *t, amd_batches *b, const int64_t *ids, int64_t k, int64_t batch,
                         int64_t *y, void **sum, amd_batch_stats *bs, int64_t *pred, amd_status *st) {
  static const amd_augment mirror = {.mirror_all = 1};
  const amd_tensor *z;
  int64_t n = 0, c = 0;
  if (amd_batches_make(b, ids, k, NULL, NULL, y, st) || eval_forward(t, &b->x, &z, &n, &c, st)) return -1;
  if (!*sum && t->be->buf->mem_alloc(sum, (size_t)(batch * c) * sizeof(float), st)) return -1;
  float *s = *sum;
  if (t->be->buf->mem_copy(s, z->data, (size_t)(n * c) * sizeof(float), st) ||
      amd_batches_make(b, ids, k, &mirror, NULL, y, st) || eval_forward(t, &b->x, &z, &n, &c, st) ||
      kernels(t)->add(s, z->data, n * c, st) || kernels(t)->scale(s, n * c, 0.5f, st))
    return -1;
  return eval_loss(t, s, y, n, c, bs, pred, st);
}

int amd_trainer_buffers(const amd_trainer *t, int *values, int max) {
  int n = 0;
  for (int i = 0; i < t->n_stats && n < max; i++) values[n++] = t->stats[i][1];
  return n;
}

/* The working memory of an evaluation over batches of up to `batch`. */
typedef struct eval_work {
  amd_batches b;
  int64_t batch, *ids, *y, *pred;
  void *sum; /* t->tta: the summed logits of a batch */
} eval_work;

static int eval_work_open(eval_work *w, amd_trainer *t, const amd_dataset *ds, const amd_data_split *split,
                          int64_t batch, amd_status *st) {
  memset(w, 0, sizeof *w);
  w->batch = batch;
  w->ids = malloc((size_t)batch * sizeof *w->ids);
  w->y = malloc((size_t)batch * sizeof *w->y);
  w->pred = malloc((size_t)batch * sizeof *w->pred);
  if (!w->ids || !w->y || !w->pred) {
    free(w->ids);
    free(w->y);
    free(w->pred);
    memset(w, 0, sizeof *w);
    return amd_fail(st, "out of memory");
  }
  int rc = split ? amd_batches_open(&w->b, t->be, 0, ds, split, batch, "evaluation", st)
                 : amd_batches_open_pieces(&w->b, t->be, ds, batch, "evaluation", st);
  if (rc) {
    free(w->ids);
    free(w->y);
    free(w->pred);
    memset(w, 0, sizeof *w);
  }
  return rc;
}

static void eval_work_close(eval_work *w, amd_trainer *t) {
  if (w->sum) t->be->buf->mem_free(w->sum);
  if (w->ids) amd_batches_close(&w->b);
  free(w->ids);
  free(w->y);
  free(w->pred);
  memset(w, 0, sizeof *w);
}

/* Samples w->ids[0..k) of w->b's split: scored into bs and the confusion matrix. */
static int eval_ids(amd_trainer *t, eval_work *w, int64_t k, amd_batch_stats *bs, int64_t *confusion,
                    int64_t n_classes, amd_status *st) {
  int rc;
  if (t->tta) {
    rc = eval_mirrored(t, &w->b, w->ids, k, w->batch, w->y, &w->sum, bs, w->pred, st);
  } else {
    rc = amd_batches_make(&w->b, w->ids, k, NULL, NULL, w->y, st);
    if (rc == 0) rc = amd_trainer_eval(t, &w->b.x, w->y, bs, w->pred, st);
  }
  for (int64_t i = 0; rc == 0 && confusion && i < k; i++)
    if (w->y[i] < n_classes && w->pred[i] < n_classes) confusion[w->y[i] * n_classes + w->pred[i]]++;
  return rc;
}

int amd_trainer_eval_split(amd_trainer *t, const amd_dataset *ds, const amd_data_split *split,
                           const int64_t *idx, int64_t n, int64_t batch, amd_batch_stats *bs,
                           int64_t *confusion, int64_t n_classes, amd_status *st) {
  eval_work w;
  int rc = eval_work_open(&w, t, ds, split, batch, st);
  for (int64_t start = 0; rc == 0 && start < n; start += batch) {
    int64_t k = n - start < batch ? n - start : batch;
    for (int64_t i = 0; i < k; i++) w.ids[i] = idx ? idx[start + i] : start + i;
    rc = eval_ids(t, &w, k, bs, confusion, n_classes, st);
  }
  eval_work_close(&w, t);
  return rc;
}

int amd_trainer_eval_pieces(amd_trainer *t, const amd_dataset *ds, int64_t batch,
                            int (*next)(void *user, amd_data_split *piece, amd_status *st), void *user,
                            amd_batch_stats *bs, int64_t *confusion, int64_t n_classes, amd_status *st) {
  eval_work w;
  int rc = eval_work_open(&w, t, ds, NULL, batch, st);
  for (;;) {
    amd_data_split piece;
    if (rc || (rc = next(user, &piece, st)) != 0 || piece.n == 0) break;
    if ((rc = amd_batches_load(&w.b, &piece, st)) != 0) break;
    for (int64_t i = 0; i < piece.n; i++) w.ids[i] = i;
    rc = eval_ids(t, &w, piece.n, bs, confusion, n_classes, st);
  }
  eval_work_close(&w, t);
  return rc;
}

int amd_trainer_n_outputs(amd_trainer *t, const amd_dataset *ds, int64_t *n_out, amd_status *st) {
  amd_tensor x = {.dtype = AMD_FLOAT, .rank = 4, .dims = {1, ds->c, ds->h, ds->w}};
  if (amd_tensor_alloc(&x, st)) return -1;
  /* the probe's zero image is no calibration batch of the q8 nodes quantized on the fly: their states are put
   * back after it (the GPU backend uploads a state changed on the host at the node's next call) */
  const amd_graph *g = t->g;
  amd_q8f_state *q8 = malloc(sizeof *q8 * (size_t)(g->n_nodes > 0 ? g->n_nodes : 1));
  if (!q8) {
    amd_tensor_free(&x);
    return amd_fail(st, "out of memory");
  }
  for (int i = 0; i < g->n_nodes; i++)
    if (amd_q8_float_is(&g->nodes[i])) amd_q8f_get_state(&g->nodes[i], &q8[i]);
  amd_ctx ctx = t->ctx;
  ctx.training = 0;
  ctx.inference = 1;
  int rc = amd_run_forward(&t->run, &ctx, &x, 0, st);
  int64_t n = 0, c = 0;
  if (rc == 0) rc = logits_shape(&t->run.vals[t->logits_value], &n, &c, st);
  amd_run_forget_static(&t->run); /* kept for a batch of 1: the real batches keep their own */
  for (int i = 0; i < g->n_nodes; i++)
    if (amd_q8_float_is(&g->nodes[i])) amd_q8f_set_state(&g->nodes[i], &q8[i]);
  free(q8);
  amd_tensor_free(&x);
  *n_out = c;
  return rc;
}

int amd_trainer_grads_finite(amd_trainer *t, int *ok, amd_status *st) {
  return kernels(t)->all_finite(t->bgrads, t->n_floats, ok, st);
}

int amd_trainer_scale_grads(amd_trainer *t, float f, amd_status *st) {
  return kernels(t)->scale(t->bgrads, t->n_floats, f, st);
}

int amd_trainer_uses_fp16(const amd_trainer *t) {
  for (int i = 0; i < t->g->n_nodes; i++) {
    const amd_node *n = &t->g->nodes[i];
    if ((n->mult && n->mult->mode == AMD_MODE_FP16) || (n->bwd_mult && n->bwd_mult->mode == AMD_MODE_FP16))
      return 1;
  }
  return 0;
}
