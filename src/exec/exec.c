/* The forward executor: see exec.h.
 *
 * Runtime tensors live in an array parallel to g->values. Initializers are
 * borrowed (never freed here); caller inputs are borrowed too; every node
 * output is allocated through the backend. Inference frees each intermediate
 * after its last reader; training (keep = 1) keeps what the backward pass
 * reads and frees the data of the rest after its last reader, keeping the
 * shape (the op descriptors' bwd_unread_in / bwd_unread_out say what backward
 * does not read: a BatchNormalization output that only feeds a Relu, say). */
#include "exec.h"

#include "backend.h"
#include "../report/profile.h"

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
      if (i == 0 && v->rank > 1) /* a batch baked into the export (PyTorch's exporters without dynamic axes) */
        return amd_fail(st,
                        "input '%s' has shape %s, the model expects %s: it was exported with a fixed batch of "
                        "%lld. Run it with --batch %lld (and a data set whose size it divides), or re-export it "
                        "with a dynamic batch: tools/export_torchvision.py does that for torchvision models; "
                        "torch.onnx.export(..., dynamic_axes={'%s': {0: 'batch'}}) with dynamo=False, or "
                        "dynamic_shapes=({0: torch.export.Dim('batch')},) with dynamo=True",
                        v->name, amd_shape_str(t, got, sizeof got), want, (long long)v->dims[0],
                        (long long)v->dims[0], v->name);
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

int amd_run_init(amd_run *r, const amd_graph *g, amd_status *st) {
  memset(r, 0, sizeof *r);
  r->g = g;
  r->be = &amd_backend_cpu;
  r->pinned = -1;
  size_t nv = (size_t)g->n_values + 1;
  r->vals = calloc(nv, sizeof *r->vals);
  r->owned = calloc(nv, 1);
  r->readers = calloc(nv, sizeof *r->readers);
  r->bwd_reads = calloc(nv, 1);
  r->node_rng = calloc((size_t)g->n_nodes + 1, sizeof *r->node_rng);
  r->inits = calloc(nv, sizeof *r->inits);
  r->init_owned = calloc(nv, 1);
  r->in_dev = calloc((size_t)g->n_inputs + 1, sizeof *r->in_dev);
  if (!r->vals || !r->owned || !r->readers || !r->bwd_reads || !r->node_rng || !r->inits || !r->init_owned || !r->in_dev) {
    amd_run_free(r);
    return amd_fail(st, "out of memory");
  }
  return 0;
}

/* Frees a value's tensor wherever it lives. */
static void free_val(const amd_backend *be, amd_tensor *t) {
  if (t->device == AMD_DEVICE_CPU) amd_tensor_free(t);
  else be->buf->free(t);
}

/* init_owned: 0 = use the graph's initializer, 1 = a backend copy the run
 * owns, 2 = set by amd_run_set_init (borrowed), 3 = a Constant node's output,
 * kept by the run from its first pass (see amd_run_forward). */
static void free_inits(amd_run *r, int keep_preset) {
  for (int i = 0; r->inits && i < r->g->n_values; i++) {
    if (r->init_owned[i] == 2 && keep_preset) continue;
    if (r->init_owned[i] == 1) r->be->buf->free(&r->inits[i]);
    if (r->init_owned[i] == 3) free_val(r->be, &r->inits[i]);
    r->init_owned[i] = 0;
    memset(&r->inits[i], 0, sizeof r->inits[i]);
  }
}

void amd_run_set_init(amd_run *r, int v, const amd_tensor *t) {
  if (r->init_owned[v] == 1) r->be->buf->free(&r->inits[v]);
  r->inits[v] = *t;
  r->init_owned[v] = 2;
}

int amd_run_set_backend(amd_run *r, const amd_backend *be, amd_status *st) {
  amd_run_clear(r, NULL);
  free_inits(r, 1);
  r->be = be;
  if (be->device == AMD_DEVICE_CPU) return 0;
  for (int i = 0; i < r->g->n_values; i++) {
    const amd_value *v = &r->g->values[i];
    if (!v->is_initializer || v->init.dtype != AMD_FLOAT || r->init_owned[i]) continue;
    if (amd_backend_upload(be, &v->init, &r->inits[i], st))
      return amd_fail_prefix(st, "initializer '%s' to the %s backend", v->name, be->name);
    r->init_owned[i] = 1;
  }
  return 0;
}

void amd_run_clear(amd_run *r, const amd_ctx *ctx) {
  (void)ctx;
  if (!r->vals) return;
  const amd_backend *be = r->be;
  for (int i = 0; i < r->g->n_values; i++) {
    if (r->owned[i]) {
      if (r->vals[i].device == AMD_DEVICE_CPU) amd_tensor_free(&r->vals[i]);
      else be->buf->free(&r->vals[i]);
    }
    r->owned[i] = 0;
    memset(&r->vals[i], 0, sizeof r->vals[i]);
  }
  for (int i = 0; r->in_dev && i < r->g->n_inputs; i++)
    if (r->in_dev[i].data) {
      be->buf->free(&r->in_dev[i]);
      memset(&r->in_dev[i], 0, sizeof r->in_dev[i]);
    }
}

void amd_run_free(amd_run *r) {
  if (r->vals && r->g) amd_run_clear(r, NULL);
  if (r->inits && r->g) free_inits(r, 0);
  free(r->vals);
  free(r->owned);
  free(r->readers);
  free(r->bwd_reads);
  free(r->node_rng);
  free(r->inits);
  free(r->init_owned);
  free(r->in_dev);
  memset(r, 0, sizeof *r);
}

/* bwd_reads[v] = 1 when some node's backward reads value v's data (or v is a
 * graph output, which the caller reads). */
static void mark_bwd_reads(const amd_graph *g, unsigned char *bwd_reads) {
  for (int i = 0; i < g->n_values; i++) bwd_reads[i] = (unsigned char)g->values[i].is_graph_output;
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    if (!n->op->backward) continue;
    for (int k = 0; k < n->n_in; k++)
      if (n->in[k] >= 0 && !((n->op->bwd_unread_in >> k) & 1)) bwd_reads[n->in[k]] = 1;
    for (int o = 0; o < n->n_out; o++)
      if (n->out[o] >= 0 && !((n->op->bwd_unread_out >> o) & 1)) bwd_reads[n->out[o]] = 1;
  }
}

int amd_run_forward(amd_run *r, amd_ctx *ctx, const amd_tensor *inputs, int keep, amd_status *st) {
  const amd_graph *g = r->g;
  const amd_backend *be = r->be;
  amd_tensor *vals = r->vals;
  amd_run_clear(r, ctx);
  const char *bound_name[64];
  int64_t bound_dim[64];
  int n_bound = 0;
  for (int i = 0; i < g->n_inputs; i++) {
    const amd_value *v = &g->values[g->inputs[i]];
    if (check_input(g, v, &inputs[i], bound_name, bound_dim, &n_bound, st)) return -1;
    vals[g->inputs[i]] = inputs[i];
    if (be->device != AMD_DEVICE_CPU && inputs[i].device == AMD_DEVICE_CPU && inputs[i].dtype == AMD_FLOAT) {
      if (amd_backend_upload(be, &inputs[i], &r->in_dev[i], st))
        return amd_fail_prefix(st, "input '%s' to the %s backend", v->name, be->name);
      vals[g->inputs[i]] = r->in_dev[i];
    }
  }
  for (int i = 0; i < g->n_values; i++) {
    if (g->values[i].is_initializer) vals[i] = r->init_owned[i] ? r->inits[i] : g->values[i].init;
    r->readers[i] = 0;
  }
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (g->nodes[i].in[k] >= 0) r->readers[g->nodes[i].in[k]]++;
  if (keep) mark_bwd_reads(g, r->bwd_reads);

  const amd_tensor *in[64];
  amd_tensor out[16];
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    if (n->n_in > 64 || n->n_out > 16)
      return amd_fail(st, "node '%s' (%s) has too many inputs or outputs", n->name, n->op->name);
    if (!n->op->infer || !n->op->forward)
      return amd_fail(st, "node '%s': op %s is not implemented on the %s backend", n->name, n->op->name,
                      be->name);
    memset(in, 0, sizeof in); /* an op that looks past n_in finds NULL, not the last node's inputs */
    for (int k = 0; k < n->n_in; k++) in[k] = n->in[k] >= 0 ? &vals[n->in[k]] : NULL;
    memset(out, 0, sizeof out);
    r->node_rng[i] = ctx->rng;
    /* A Constant's output is the same on every pass: kept from the first one
     * (on the GPU, uploading a float constant at every step would wait for
     * the stream each time: a copy from pageable host memory does) */
    int cv = n->op->idx == AMD_OP_IDX_Constant && n->n_out == 1 ? n->out[0] : -1;
    if (cv >= 0 && r->init_owned[cv] == 3) {
      vals[cv] = r->inits[cv];
      if (ctx->on_node) ctx->on_node(ctx->user, n, in, &vals[cv]);
      continue;
    }
    double t0 = AMD_PROF_T0;
    if (amd_backend_forward_node(be, n, ctx, in, out, ctx->shapes_only, st))
      return amd_fail_prefix(st, "node '%s' (%s)", n->name, n->op->name);
    if (amd_prof_on) amd_prof_op_add(n->op->name, n->op->is_gemm, 0, amd_prof_clock() - t0);
    if (ctx->on_node) ctx->on_node(ctx->user, n, in, out);
    for (int o = 0; o < n->n_out; o++) {
      int v = n->out[o];
      if (v < 0) {
        free_val(be, &out[o]); /* omitted optional output */
        continue;
      }
      vals[v] = out[o];
      r->owned[v] = 1;
    }
    if (cv >= 0 && !ctx->shapes_only) {
      r->inits[cv] = vals[cv];
      r->init_owned[cv] = 3;
      r->owned[cv] = 0;
    }
    /* free intermediates after their last reader (training: those backward does not read; the shape stays) */
    for (int k = 0; k < n->n_in; k++) {
      int v = n->in[k];
      if (v >= 0 && --r->readers[v] == 0 && r->owned[v] && !g->values[v].is_graph_output && v != r->pinned &&
          !(keep && (r->keep_all || r->bwd_reads[v]))) {
        free_val(be, &vals[v]);
        r->owned[v] = 0;
      }
    }
  }
  return 0;
}

int amd_exec_forward(const amd_graph *g, amd_ctx *ctx, const amd_tensor *inputs, amd_tensor *outputs,
                     amd_status *st) {
  amd_run r;
  if (amd_run_init(&r, g, st)) return -1;
  int rc = 0;
  if (ctx->backend && ctx->backend != &amd_backend_cpu) rc = amd_run_set_backend(&r, ctx->backend, st);
  if (rc == 0) rc = amd_run_forward(&r, ctx, inputs, 0, st);
  for (int k = 0; rc == 0 && k < g->n_outputs; k++) {
    int v = g->outputs[k];
    if (r.owned[v] && r.vals[v].device == AMD_DEVICE_CPU) { /* hand the buffer over; a value listed twice is copied the second time */
      outputs[k] = r.vals[v];
      r.owned[v] = 0;
    } else if (amd_backend_download(r.be, &r.vals[v], &outputs[k], st)) {
      for (int j = 0; j < k; j++) amd_tensor_free(&outputs[j]);
      rc = -1;
    }
  }
  amd_run_free(&r);
  return rc;
}
