/* The CPU forward executor: see exec.h.
 *
 * Runtime tensors live in an array parallel to g->values. Initializers are
 * borrowed (never freed here); caller inputs are borrowed too; every node
 * output is allocated here and freed after its last reader unless it is a
 * graph output, which is handed to the caller. */
#include "exec.h"

#include "backend.h"

#include <stdlib.h>
#include <string.h>

/* Checks a caller input against the declared dtype and shape, binding symbolic
 * dims by name consistently across inputs. */
static int check_input(const amd_graph *g, const amd_value *v, const amd_tensor *t, const char **bound_name,
                       int64_t *bound_dim, int *n_bound, amd_status *st) {
  char got[160], want[160];
  if (!t->data && amd_tensor_numel(t) > 0) return amd_fail(st, "input '%s' has no data", v->name);
  if (v->dtype != AMD_UNDEFINED && t->dtype != v->dtype)
    return amd_fail(st, "input '%s' has dtype %s, the model expects %s", v->name, amd_dtype_name(t->dtype),
                    amd_dtype_name(v->dtype));
  if (v->rank < 0) return 0;
  if (t->rank != v->rank)
    return amd_fail(st, "input '%s' has rank %d (shape %s), the model expects rank %d", v->name, t->rank,
                    amd_shape_str(t, got, sizeof got), v->rank);
  for (int i = 0; i < v->rank; i++) {
    if (v->dims[i] >= 0 && v->dims[i] != t->dims[i]) {
      size_t k = (size_t)snprintf(want, sizeof want, "[");
      for (int d = 0; d < v->rank && k < sizeof want; d++) {
        const char *sep = d ? "," : "";
        if (v->dims[d] >= 0) k += (size_t)snprintf(want + k, sizeof want - k, "%s%lld", sep, (long long)v->dims[d]);
        else k += (size_t)snprintf(want + k, sizeof want - k, "%s%s", sep, v->dim_param[d] ? v->dim_param[d] : "?");
      }
      if (k < sizeof want) snprintf(want + k, sizeof want - k, "]");
      return amd_fail(st, "input '%s' has shape %s, the model expects %s (dim %d)", v->name,
                      amd_shape_str(t, got, sizeof got), want, i);
    }
    if (v->dim_param[i] && v->dim_param[i][0]) {
      int k = 0;
      while (k < *n_bound && strcmp(bound_name[k], v->dim_param[i]) != 0) k++;
      if (k == *n_bound && k < 64) {
        bound_name[k] = v->dim_param[i];
        bound_dim[k] = t->dims[i];
        (*n_bound)++;
      } else if (k < *n_bound && bound_dim[k] != t->dims[i]) {
        return amd_fail(st, "input '%s' dim %d ('%s') is %lld, another input bound '%s' to %lld", v->name, i,
                        v->dim_param[i], (long long)t->dims[i], v->dim_param[i], (long long)bound_dim[k]);
      }
    }
  }
  (void)g;
  return 0;
}

int amd_exec_forward(const amd_graph *g, amd_ctx *ctx, const amd_tensor *inputs, amd_tensor *outputs,
                     amd_status *st) {
  const amd_backend *be = ctx->backend ? ctx->backend : &amd_backend_cpu;
  int nv = g->n_values;
  amd_tensor *vals = calloc((size_t)nv + 1, sizeof *vals);
  int *readers = calloc((size_t)nv + 1, sizeof *readers);
  unsigned char *owned = calloc((size_t)nv + 1, 1);
  int rc = -1;
  if (!vals || !readers || !owned) {
    amd_fail(st, "out of memory");
    goto done;
  }
  const char *bound_name[64];
  int64_t bound_dim[64];
  int n_bound = 0;
  for (int i = 0; i < g->n_inputs; i++) {
    const amd_value *v = &g->values[g->inputs[i]];
    if (check_input(g, v, &inputs[i], bound_name, bound_dim, &n_bound, st)) goto done;
    vals[g->inputs[i]] = inputs[i];
  }
  for (int i = 0; i < nv; i++)
    if (g->values[i].is_initializer) vals[i] = g->values[i].init;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (g->nodes[i].in[k] >= 0) readers[g->nodes[i].in[k]]++;

  const amd_tensor *in[64];
  amd_tensor out[16];
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    if (n->n_in > 64 || n->n_out > 16) {
      amd_fail(st, "node '%s' (%s) has too many inputs or outputs", n->name, n->op->name);
      goto done;
    }
    if (!be->supports(n)) {
      amd_fail(st, "node '%s': op %s is not implemented on the %s backend", n->name, n->op->name, be->name);
      goto done;
    }
    for (int k = 0; k < n->n_in; k++) in[k] = n->in[k] >= 0 ? &vals[n->in[k]] : NULL;
    memset(out, 0, sizeof out);
    if (n->op->infer(n, in, out, st)) {
      amd_fail_prefix(st, "node '%s' (%s)", n->name, n->op->name);
      goto done;
    }
    for (int o = 0; o < n->n_out; o++) {
      if (be->alloc(&out[o], st)) {
        for (int q = 0; q < o; q++) be->free(&out[q]);
        amd_fail_prefix(st, "node '%s' (%s) output %d", n->name, n->op->name, o);
        goto done;
      }
    }
    int run_it = 1;
    if (ctx->shapes_only) {
      run_it = 0;
      for (int o = 0; o < n->n_out; o++)
        if (out[o].dtype != AMD_FLOAT) run_it = 1;
    }
    if (run_it && be->forward(n, ctx, in, out, st)) {
      for (int o = 0; o < n->n_out; o++) be->free(&out[o]);
      amd_fail_prefix(st, "node '%s' (%s)", n->name, n->op->name);
      goto done;
    }
    if (ctx->on_node) ctx->on_node(ctx->user, n, in, out);
    for (int o = 0; o < n->n_out; o++) {
      int v = n->out[o];
      if (v < 0) {
        be->free(&out[o]); /* omitted optional output */
        continue;
      }
      vals[v] = out[o];
      owned[v] = 1;
    }
    /* free intermediates after their last reader */
    for (int k = 0; k < n->n_in; k++) {
      int v = n->in[k];
      if (v >= 0 && --readers[v] == 0 && owned[v] && !g->values[v].is_graph_output) {
        be->free(&vals[v]);
        owned[v] = 0;
      }
    }
  }
  for (int k = 0; k < g->n_outputs; k++) {
    int v = g->outputs[k];
    if (owned[v]) { /* hand the buffer over; a value listed twice is copied the second time */
      outputs[k] = vals[v];
      owned[v] = 0;
    } else if (amd_tensor_copy(&outputs[k], &vals[v], st)) {
      for (int j = 0; j < k; j++) amd_tensor_free(&outputs[j]);
      goto done;
    }
  }
  rc = 0;
done:
  if (vals && owned)
    for (int i = 0; i < nv; i++)
      if (owned[i]) be->free(&vals[i]);
  free(vals);
  free(readers);
  free(owned);
  return rc;
}
