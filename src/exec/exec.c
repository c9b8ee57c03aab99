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

/* ---- static nodes
 *
 * Exports compute shapes at run time: Shape -> Gather -> Concat -> Reshape,
 * ConstantOfShape, Range, Shape -> Cast -> Sqrt for an attention scale. Those
 * nodes give the same values on every pass whose graph inputs have the same
 * shapes, and most of them run on the host (int64 tensors), so on the GPU
 * each one is a host round trip per step (MaxViT's training export has about
 * 2,500). A node is static when it draws no random numbers and every output
 * is a function of the inputs' shapes alone:
 *   value_static(v): a non-float initializer, a Constant's output, a Shape /
 *     Size of a value whose shape is static, or an output of a node (not
 *     random, at least one input) whose inputs are all value_static;
 *   shape_static(v): a graph input or initializer, a value_static value, or
 *     an output of a node whose inputs all have static shapes and whose
 *     shape-determining inputs (Reshape's shape, Slice's starts, ...) are
 *     value_static; NonZero's shape depends on the data: never.
 * Float initializers are never value_static (training changes them). The
 * outputs of static nodes (Constant's excepted: those are kept regardless,
 * init_owned 3) are kept from the first pass, and used while the graph
 * inputs keep that pass's shapes; a pass with other shapes (an epoch's last,
 * smaller batch) computes them as any node, leaving the kept ones alone
 * (a captured CUDA graph may point at them). */
static int is_random_op(int idx) {
  return idx == AMD_OP_IDX_RandomUniform || idx == AMD_OP_IDX_RandomNormal || idx == AMD_OP_IDX_RandomUniformLike ||
         idx == AMD_OP_IDX_RandomNormalLike || idx == AMD_OP_IDX_Bernoulli || idx == AMD_OP_IDX_Dropout;
}

/* Input k of a node of op idx determines its output's shape by its value. */
static int shape_input(int idx, int k) {
  switch (idx) {
  case AMD_OP_IDX_ConstantOfShape:
  case AMD_OP_IDX_Range: return 1;
  case AMD_OP_IDX_Reshape: case AMD_OP_IDX_Squeeze: case AMD_OP_IDX_Unsqueeze: case AMD_OP_IDX_OneHot:
  case AMD_OP_IDX_TopK: case AMD_OP_IDX_Pad: case AMD_OP_IDX_Slice: case AMD_OP_IDX_Split:
  case AMD_OP_IDX_Expand: case AMD_OP_IDX_Tile: case AMD_OP_IDX_ReduceMean: case AMD_OP_IDX_ReduceSum:
  case AMD_OP_IDX_ReduceMax: case AMD_OP_IDX_ReduceMin: case AMD_OP_IDX_ReduceProd: case AMD_OP_IDX_ReduceL1:
  case AMD_OP_IDX_ReduceL2: case AMD_OP_IDX_ReduceLogSum: case AMD_OP_IDX_ReduceLogSumExp:
  case AMD_OP_IDX_ReduceSumSquare: return k >= 1;
  default: return 0;
  }
}

/* node_static[i] for every node (g->nodes in topological order). */
static int mark_static_nodes(const amd_graph *g, unsigned char *node_static) {
  unsigned char *vstat = calloc((size_t)g->n_values + 1, 1), *sstat = calloc((size_t)g->n_values + 1, 1);
  if (!vstat || !sstat) {
    free(vstat), free(sstat);
    return -1;
  }
  for (int v = 0; v < g->n_values; v++) {
    const amd_value *x = &g->values[v];
    sstat[v] = (unsigned char)(x->is_initializer || x->is_graph_input);
    vstat[v] = (unsigned char)(x->is_initializer && x->init.dtype != AMD_FLOAT);
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    const int idx = n->op->idx;
    int all_v = n->n_in > 0, all_s = 1, shape_args_v = 1;
    for (int k = 0; k < n->n_in; k++) {
      const int v = n->in[k];
      if (v < 0) continue;
      all_v &= vstat[v];
      all_s &= sstat[v];
      if (shape_input(idx, k)) shape_args_v &= vstat[v];
    }
    int vs;
    if (idx == AMD_OP_IDX_Constant) vs = 1;
    else if (idx == AMD_OP_IDX_Shape || idx == AMD_OP_IDX_Size) vs = n->n_in > 0 && n->in[0] >= 0 && sstat[n->in[0]];
    else vs = all_v && !is_random_op(idx);
    const int ss = vs || (all_s && shape_args_v && idx != AMD_OP_IDX_NonZero);
    node_static[i] = (unsigned char)(vs && idx != AMD_OP_IDX_Constant);
    for (int o = 0; o < n->n_out; o++)
      if (n->out[o] >= 0) {
        vstat[n->out[o]] = (unsigned char)vs;
        sstat[n->out[o]] = (unsigned char)ss;
      }
  }
  free(vstat), free(sstat);
  return 0;
}

/* 1 when the graph inputs have the shapes recorded in static_dims. */
static int same_input_shapes(const amd_run *r, const amd_tensor *inputs) {
  for (int i = 0; i < r->g->n_inputs; i++) {
    const int64_t *d = r->static_dims + (size_t)i * (AMD_MAX_RANK + 1);
    if (d[0] != inputs[i].rank) return 0;
    for (int k = 0; k < inputs[i].rank; k++)
      if (d[1 + k] != inputs[i].dims[k]) return 0;
  }
  return 1;
}

static void record_input_shapes(amd_run *r, const amd_tensor *inputs) {
  for (int i = 0; i < r->g->n_inputs; i++) {
    int64_t *d = r->static_dims + (size_t)i * (AMD_MAX_RANK + 1);
    d[0] = inputs[i].rank;
    for (int k = 0; k < inputs[i].rank; k++) d[1 + k] = inputs[i].dims[k];
  }
}

/* ---- Add and Relu fused into their producer
 *
 * In a pass without backward (keep = 0), a node whose output 0 is read by a
 * Relu alone runs that Relu itself, when its op can (fuses_relu: Conv, Add,
 * BatchNormalization): the op applies Relu as it writes its output
 * (ctx->relu_out), that output becomes the Relu's, and the Relu node is
 * skipped. Likewise a Conv (an op
 * with fuses_add) whose output is read by an Add alone, the Add's other
 * operand having the Conv output's shape, does the Add (ctx->add_in), and
 * then the Relu that alone reads the Add's output: ResNet's Conv -> Add ->
 * Relu is one Conv. Each saves passes over an activation (ResNet-50's
 * inference has 49 Relus and 16 such Adds). The bits are those of the nodes
 * fused: the same operations in the same order on the same values.
 *
 * A training pass (keep = 1) fuses the same way where no backward reads the
 * data of the value fused away (bwd_reads: neither its producer's backward
 * nor its reader's; Conv, BatchNormalization and Add do not read their
 * output, Relu takes its gradient from its output), so ResNet's BN -> Relu
 * and Add -> Relu are one pass in training too; that value keeps its shape,
 * without data, for the gradient the backward walk gives it. Passes that
 * keep every value (keep_all) or watch every node (ctx->on_node) fuse
 * nothing; at run time the fusion also needs float data and an unpinned
 * intermediate. */
static int mark_fusion(const amd_graph *g, const unsigned char *node_static, int *relu_into, int *add_into) {
  int *nread = calloc((size_t)g->n_values + 1, sizeof *nread);
  if (!nread) return -1;
  for (int i = 0; i < g->n_nodes; i++) {
    relu_into[i] = add_into[i] = -1;
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (g->nodes[i].in[k] >= 0) nread[g->nodes[i].in[k]]++;
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    const int idx = n->op->idx;
    if (idx != AMD_OP_IDX_Relu && idx != AMD_OP_IDX_Add) continue;
    if (n->n_in != (idx == AMD_OP_IDX_Add ? 2 : 1) || n->n_out != 1 || n->out[0] < 0 || n->in[0] < 0 ||
        (idx == AMD_OP_IDX_Add && (n->in[1] < 0 || n->in[0] == n->in[1])))
      continue;
    int last = -1; /* an Add goes to the later of two candidates: the other operand is ready when it runs */
    for (int k = 0; k < n->n_in; k++) {
      const int v = n->in[k], p = g->values[v].producer;
      if (p < 0 || g->nodes[p].out[0] != v || nread[v] != 1 || g->values[v].is_graph_output ||
          node_static[p] || node_static[i])
        continue;
      if (idx == AMD_OP_IDX_Relu && g->nodes[p].op->fuses_relu) relu_into[p] = i;
      if (idx == AMD_OP_IDX_Add && g->nodes[p].op->fuses_add && p > last) last = p;
    }
    if (last >= 0) add_into[last] = i;
  }
  free(nread);
  return 0;
}

/* Decides what node i does of the nodes fused into it this pass: sets
 * ctx->add_in, add_in_first and relu_out, and *add / *relu to the nodes it
 * does (-1: none). */
static void plan_fusion(const amd_run *r, amd_ctx *ctx, int keep, int i, const amd_tensor *const *in,
                        int *add, int *relu) {
  const amd_graph *g = r->g;
  const amd_node *n = &g->nodes[i];
  *add = *relu = -1;
  if ((keep && r->keep_all) || ctx->shapes_only || ctx->on_node || !in[0] || in[0]->dtype != AMD_FLOAT ||
      n->out[0] == r->pinned)
    return;
  int last = i; /* the node whose output the fused chain ends with so far */
  const int a = r->add_into[i];
  if (a >= 0 && !(keep && r->bwd_reads[n->out[0]])) {
    const amd_node *an = &g->nodes[a];
    const int first = an->in[1] == n->out[0]; /* the other operand comes first */
    const amd_tensor *other = &r->vals[an->in[first ? 0 : 1]];
    amd_tensor y = {0};
    amd_status ist = {0};
    /* natively (a host fallback's op would get a device tensor), and of the Conv's output shape (its infer
     * reads shapes only) */
    if (other->dtype == AMD_FLOAT && other->data && r->be->compute->supports(n, in) &&
        n->op->infer(n, in, &y, &ist) == 0 && amd_same_shape(&y, other)) {
      ctx->add_in = other;
      ctx->add_in_first = first;
      *add = last = a;
    }
  }
  const int k = r->relu_into[last];
  if (k >= 0 && n->op->fuses_relu && g->nodes[last].out[0] != r->pinned &&
      !(keep && r->bwd_reads[g->nodes[last].out[0]])) {
    ctx->relu_out = 1;
    *relu = k;
  }
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
  r->node_static = calloc((size_t)g->n_nodes + 1, 1);
  r->static_dims = calloc((size_t)(g->n_inputs + 1) * (AMD_MAX_RANK + 1), sizeof *r->static_dims);
  r->relu_into = calloc((size_t)g->n_nodes + 1, sizeof *r->relu_into);
  r->add_into = calloc((size_t)g->n_nodes + 1, sizeof *r->add_into);
  r->fused_done = calloc((size_t)g->n_nodes + 1, 1);
  if (!r->vals || !r->owned || !r->readers || !r->bwd_reads || !r->node_rng || !r->inits || !r->init_owned ||
      !r->in_dev || !r->node_static || !r->static_dims || !r->relu_into || !r->add_into || !r->fused_done ||
      mark_static_nodes(g, r->node_static) || mark_fusion(g, r->node_static, r->relu_into, r->add_into)) {
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
 * 4 = a static node's output, each kept by the run from its first pass (see
 * amd_run_forward). */
static void free_inits(amd_run *r, int keep_preset) {
  r->static_filled = 0;
  for (int i = 0; r->inits && i < r->g->n_values; i++) {
    if (r->init_owned[i] == 2 && keep_preset) continue;
    if (r->init_owned[i] == 1) r->be->buf->free(&r->inits[i]);
    if (r->init_owned[i] == 3 || r->init_owned[i] == 4) free_val(r->be, &r->inits[i]);
    r->init_owned[i] = 0;
    memset(&r->inits[i], 0, sizeof r->inits[i]);
  }
}

void amd_run_forget_static(amd_run *r) {
  amd_run_clear(r, NULL); /* the last pass's vals may point at them */
  for (int v = 0; v < r->g->n_values; v++)
    if (r->init_owned[v] == 4) {
      free_val(r->be, &r->inits[v]);
      memset(&r->inits[v], 0, sizeof r->inits[v]);
      r->init_owned[v] = 0;
    }
  r->static_filled = 0;
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
  free(r->node_static);
  free(r->static_dims);
  free(r->relu_into);
  free(r->add_into);
  free(r->fused_done);
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
      if (n->in[k] >= 0 && amd_op_bwd_reads_in(n->op, k)) bwd_reads[n->in[k]] = 1;
    for (int o = 0; o < n->n_out; o++)
      if (n->out[o] >= 0 && amd_op_bwd_reads_out(n->op, o)) bwd_reads[n->out[o]] = 1;
  }
}

/* t: a value that a fused node never made, given like's dtype and shape and no data. */
static void set_shape_only(amd_tensor *t, const amd_tensor *like) {
  *t = *like;
  t->data = NULL;
}

/* Frees the inputs of node n that it was the last reader of (training: those
 * backward does not read; the shape stays). */
static void release_inputs(amd_run *r, const amd_node *n, int keep) {
  for (int k = 0; k < n->n_in; k++) {
    const int v = n->in[k];
    if (v >= 0 && --r->readers[v] == 0 && r->owned[v] && !r->g->values[v].is_graph_output && v != r->pinned &&
        !(keep && (r->keep_all || r->bwd_reads[v]))) {
      free_val(r->be, &r->vals[v]);
      r->owned[v] = 0;
    }
  }
}

void amd_run_release(amd_run *r, int v) {
  if (v < 0 || !r->owned[v] || r->g->values[v].is_graph_output || v == r->pinned || r->keep_all) return;
  free_val(r->be, &r->vals[v]);
  r->owned[v] = 0;
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

  /* static nodes: reuse the kept outputs (same shapes as when kept), or keep this pass's */
  const int use_static = r->static_filled && same_input_shapes(r, inputs);
  const int fill_static = !r->static_filled && !ctx->shapes_only;
  for (int v = 0; fill_static && v < g->n_values; v++) /* left by a pass that failed midway */
    if (r->init_owned[v] == 4) {
      free_val(be, &r->inits[v]);
      r->init_owned[v] = 0;
    }
  const amd_tensor *in[64];
  amd_tensor out[16];
  memset(r->fused_done, 0, (size_t)g->n_nodes);
  for (int i = 0; i < g->n_nodes; i++) {
    const amd_node *n = &g->nodes[i];
    if (r->fused_done[i]) continue; /* an earlier node did it */
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
    if (use_static && r->node_static[i]) {
      for (int o = 0; o < n->n_out; o++)
        if (n->out[o] >= 0) vals[n->out[o]] = r->inits[n->out[o]];
      if (ctx->on_node) {
        for (int o = 0; o < n->n_out; o++) out[o] = n->out[o] >= 0 ? vals[n->out[o]] : (amd_tensor){0};
        ctx->on_node(ctx->user, n, in, out);
      }
      continue;
    }
    int add, relu;
    plan_fusion(r, ctx, keep, i, in, &add, &relu);
    double t0 = AMD_PROF_T0;
    const int fwd_rc = amd_backend_forward_node(be, n, ctx, in, out, ctx->shapes_only, st);
    ctx->add_in = NULL, ctx->add_in_first = 0, ctx->relu_out = 0;
    if (fwd_rc) return amd_fail_prefix(st, "node '%s' (%s)", n->name, n->op->name);
    if (amd_prof_on) amd_prof_op_add(n->op->name, n->op->is_gemm, 0, amd_prof_clock() - t0);
    if (ctx->on_node) ctx->on_node(ctx->user, n, in, out);
    const int out0 = relu >= 0 ? g->nodes[relu].out[0] : add >= 0 ? g->nodes[add].out[0] : n->out[0];
    if (add >= 0) r->fused_done[add] = 1;
    if (relu >= 0) r->fused_done[relu] = 1;
    /* the values fused away: their shape (output 0's) without data, for the backward walk's gradients */
    if (add >= 0) set_shape_only(&vals[n->out[0]], &out[0]);
    if (relu >= 0) set_shape_only(&vals[g->nodes[relu].in[0]], &out[0]);
    for (int o = 0; o < n->n_out; o++) {
      int v = o == 0 ? out0 : n->out[o];
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
    if (fill_static && r->node_static[i])
      for (int o = 0; o < n->n_out; o++) {
        const int v = n->out[o];
        if (v < 0) continue;
        r->inits[v] = vals[v];
        r->init_owned[v] = 4;
        r->owned[v] = 0;
      }
    release_inputs(r, n, keep);
    if (add >= 0) release_inputs(r, &g->nodes[add], keep); /* the fused Add's other operand */
  }
  if (fill_static) {
    record_input_shapes(r, inputs);
    r->static_filled = 1;
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
