/* BatchNormalization in training (see trainer.h): at set-up every BN node
 * gets outputs 1 and 2 (its updated running mean and variance, ONNX momentum
 * convention) and t->stats pairs each with the initializer it goes back to;
 * after a step that was not skipped, amd_trainer_update_stats copies them
 * there (in the backend's copy of the initializer on a device backend).
 * amd_trainer_free takes the outputs and values the set-up added away again
 * (t->bn_added), so that the next trainer, or a run without one, finds the
 * nodes as they were loaded. Also the set-up's warning for a model whose BN
 * an eval-mode export folded. */
#include "trainer_internal.h"

#include "../exec/backend.h"
#include "../onnx/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int amd_tr_prepare_batchnorm(amd_trainer *t, amd_status *st) {
  amd_graph *g = t->g;
  int n_bn = 0;
  for (int i = 0; i < g->n_nodes; i++) n_bn += amd_tr_is_op(&g->nodes[i], AMD_OP_IDX_BatchNormalization);
  t->stats = calloc((size_t)n_bn * 2 + 1, sizeof *t->stats);
  t->bn_added = calloc((size_t)n_bn + 1, sizeof *t->bn_added);
  if (!t->stats || !t->bn_added) return amd_fail(st, "out of memory");
  t->bn_values_from = t->bn_values_to = g->n_values;
  int cap = g->n_values; /* the graph keeps no capacity: the first value added reallocates */
  for (int i = 0; i < g->n_nodes; i++) {
    amd_node *n = &g->nodes[i];
    if (!amd_tr_is_op(n, AMD_OP_IDX_BatchNormalization) || n->n_in < 5) continue;
    /* noted before the node changes, so that a failure below is undone too */
    amd_bn_added *a = &t->bn_added[t->n_bn_added++];
    a->node = i;
    a->n_out = n->n_out;
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
        int v = amd_load_add_value(g, name, &cap, st);
        if (v < 0) return -1;
        g->values[v].dtype = AMD_FLOAT;
        t->bn_values_to = g->n_values;
        g->values[v].producer = i;
        n->out[o] = v;
        a->outs |= 1u << o;
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

void amd_tr_restore_batchnorm(amd_trainer *t) {
  amd_graph *g = t->g;
  for (int k = 0; k < t->n_bn_added; k++) {
    amd_node *n = &g->nodes[t->bn_added[k].node];
    for (int o = 1; o <= 2; o++)
      if ((t->bn_added[k].outs >> o) & 1u) n->out[o] = -1;
    n->n_out = t->bn_added[k].n_out;
  }
  /* the values added last, unless something appended more since (then they stay, read and written by
   * no node) */
  if (t->bn_added && g->n_values == t->bn_values_to) {
    for (int v = t->bn_values_from; v < g->n_values; v++) free(g->values[v].name);
    g->n_values = t->bn_values_from;
  }
  free(t->bn_added);
  t->bn_added = NULL;
  t->n_bn_added = 0;
}

void amd_tr_warn_folded_batchnorm(amd_trainer *t) {
  const amd_graph *g = t->g;
  int n_bn = 0, folded = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    n_bn += amd_tr_is_op(n, AMD_OP_IDX_BatchNormalization);
    if (amd_tr_is_op(n, AMD_OP_IDX_Conv) && n->n_in > 1 && n->in[1] >= 0 &&
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

amd_tensor *amd_tr_stat_tensor(amd_trainer *t, int v) {
  return t->run.init_owned[v] ? &t->run.inits[v] : &t->g->values[v].init;
}

amd_tensor *amd_trainer_stat(amd_trainer *t, int i) { return amd_tr_stat_tensor(t, t->stats[i][1]); }

const amd_tensor *amd_trainer_stat_computed(amd_trainer *t, int i) {
  const amd_tensor *src = &t->run.vals[t->stats[i][0]];
  const amd_tensor *dst = amd_trainer_stat(t, i);
  return !src->data || src->dtype != dst->dtype || amd_tensor_numel(src) != amd_tensor_numel(dst) ? NULL : src;
}

int amd_trainer_update_stats(amd_trainer *t, amd_status *st) {
  for (int i = 0; i < t->n_stats; i++) {
    const amd_tensor *src = amd_trainer_stat_computed(t, i);
    amd_tensor *dst = amd_trainer_stat(t, i);
    if (!src) continue;
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

int amd_trainer_buffers(const amd_trainer *t, int *values, int max) {
  int n = 0;
  for (int i = 0; i < t->n_stats && n < max; i++) values[n++] = t->stats[i][1];
  return n;
}
