/* Which initializers the trainer trains (see trainer.h, amd_trainer_init):
 * the logits the loss reads, the values on the loss path (a sweep back from
 * the logits through nodes with a backward and their differentiable inputs),
 * the float initializers there less those --freeze names, and the values
 * whose gradient the backward walk computes (those on the path that depend
 * on a parameter). Runs once, at set-up; nothing here touches tensor data. */
#include "trainer_internal.h"

#include "../ops/quant.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int amd_tr_find_logits(const amd_graph *g) {
  int v = g->outputs[0], p = g->values[v].producer;
  if (p >= 0) {
    const amd_node *n = &g->nodes[p];
    if ((amd_tr_is_op(n, AMD_OP_IDX_Softmax) || amd_tr_is_op(n, AMD_OP_IDX_LogSoftmax)) && n->n_in >= 1 &&
        n->in[0] >= 0)
      return n->in[0];
  }
  return v;
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
  if (strpbrk(e, "*?") ? fnmatch(e, g->values[v].name, 0) == 0 : strncmp(g->values[v].name, e, n) == 0)
    return 1;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *nd = &g->nodes[i];
    if (strcmp(nd->name, e) != 0 && strcmp(nd->op->name, e) != 0) continue;
    for (int k = 0; k < nd->n_in; k++)
      if (nd->in[k] == v) return 1;
  }
  return 0;
}

int amd_tr_loss_path(const amd_trainer *t, const amd_trainer_opts *o, unsigned char *on_path,
                     const char **blocked, amd_status *st) {
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

int amd_tr_choose_params(amd_trainer *t, const amd_trainer_opts *o, const unsigned char *on_path,
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
      return amd_fail(
          st,
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

void amd_tr_mark_needs_grad(amd_trainer *t, const unsigned char *on_path) {
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
