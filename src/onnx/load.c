/* ONNX model -> graph IR: see load.h.
 *
 * Order of work: parse the ModelProto, find the default-domain opset, create a
 * value for every graph input, initializer and node output (names must be
 * unique producers), bind each node to its op descriptor and parse its
 * attributes, check that every node input has a producer, sort the nodes
 * topologically (rejecting cycles), then free the ModelProto unless asked to
 * keep it for writing back. */
#include "load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/attrs.h"
#include "../ops/op.h"
#include "einsum_matmul.h"
#include "node_attrs.h"
#include "opset.h"
#include "rewrite.h"
#include "tensor_proto.h"

/* ONNX protobufs are limited to 2 GiB; larger weights use external data. */
#define AMD_MAX_MODEL_BYTES ((size_t)2 << 30)

int amd_graph_find_value(const amd_graph *g, const char *name) {
  for (int i = 0; i < g->n_values; i++)
    if (strcmp(g->values[i].name, name) == 0) return i;
  return -1;
}

static char *dup_str(const char *s) { return strdup(s ? s : ""); }

/* Adds a value named `name` (must not exist yet); returns its index or -1. */
int amd_load_add_value(amd_graph *g, const char *name, int *cap, amd_status *st) {
  if (g->n_values == *cap) {
    int ncap = *cap ? *cap * 2 : 64;
    amd_value *nv = realloc(g->values, (size_t)ncap * sizeof *nv);
    if (!nv) return amd_fail(st, "out of memory");
    g->values = nv;
    *cap = ncap;
  }
  amd_value *v = &g->values[g->n_values];
  memset(v, 0, sizeof *v);
  v->name = dup_str(name);
  if (!v->name) return amd_fail(st, "out of memory");
  v->rank = -1;
  v->producer = -1;
  return g->n_values++;
}

/* Copies a ValueInfoProto's declared type and shape into v. */
static int read_value_info(const Onnx__ValueInfoProto *vi, amd_value *v, amd_status *st) {
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
    if (tp && tp->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET &&
        tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
      return amd_fail(st, "value '%s' is not a tensor (sequences, maps and optionals are unsupported)",
                      v->name);
    return 0;
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  if (tt->has_elem_type) v->dtype = (amd_dtype)tt->elem_type;
  if (tt->shape) {
    if (tt->shape->n_dim > AMD_MAX_RANK)
      return amd_fail(st, "value '%s' has rank %zu (at most %d supported)", v->name, tt->shape->n_dim,
                      AMD_MAX_RANK);
    /* a value may be described twice (an input also listed in value_info): the last one wins */
    for (int i = 0; i < AMD_MAX_RANK; i++) {
      free(v->dim_param[i]);
      v->dim_param[i] = NULL;
    }
    v->rank = (int)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
      const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
      v->dims[i] = -1;
      if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) v->dims[i] = d->dim_value;
      else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
        v->dim_param[i] = dup_str(d->dim_param);
        if (!v->dim_param[i]) return amd_fail(st, "out of memory");
      }
    }
  }
  return 0;
}

int amd_node_bind(amd_node *n, const Onnx__NodeProto *p, int opset, amd_status *st) {
  const char *domain = p->domain ? p->domain : "";
  const char *op_type = p->op_type ? p->op_type : "";
  if (domain[0] && strcmp(domain, "ai.onnx") != 0)
    return amd_fail(st, "node '%s' uses op '%s' of domain '%s', which amdnn-onnx does not support", n->name,
                    op_type, domain);
  const amd_op *op = amd_op_find(op_type);
  if (!op)
    return amd_fail(st, "node '%s' uses op '%s' (opset %d), which amdnn-onnx does not support", n->name,
                    op_type, opset);
  n->op = op;
  n->opset = opset;
  n->since = amd_opset_bind_version(op, opset, st);
  if (n->since < 0) return amd_fail_prefix(st, "node '%s'", n->name);
  if (!op->parse) return 0;
  amd_attr_list attrs;
  int rc = amd_node_attrs_from_proto(p, &attrs, st);
  if (!rc) rc = op->parse(n, &attrs, st);
  amd_node_attrs_free(&attrs);
  return rc ? amd_fail_prefix(st, "node '%s' (%s)", n->name, op_type) : 0;
}

/* Kahn's algorithm over value producers; rejects cycles. Reorders g->nodes. */
static int sort_nodes(amd_graph *g, amd_status *st) {
  int n = g->n_nodes;
  if (n == 0) return 0;
  int *pending = calloc((size_t)n, sizeof *pending), *order = malloc((size_t)n * sizeof *order);
  int *queue = malloc((size_t)n * sizeof *queue);
  amd_node *sorted = malloc((size_t)n * sizeof *sorted);
  int rc = -1;
  if (!pending || !order || !queue || !sorted) {
    amd_fail(st, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++) {
      int v = g->nodes[i].in[k];
      if (v >= 0 && g->values[v].producer >= 0) pending[i]++;
    }
  int head = 0, tail = 0, count = 0;
  for (int i = 0; i < n; i++)
    if (pending[i] == 0) queue[tail++] = i;
  while (head < tail) {
    int i = queue[head++];
    order[count++] = i;
    for (int o = 0; o < g->nodes[i].n_out; o++) {
      int v = g->nodes[i].out[o];
      if (v < 0) continue;
      /* every reader of v loses one pending input per occurrence */
      for (int j = 0; j < n; j++)
        for (int k = 0; k < g->nodes[j].n_in; k++)
          if (g->nodes[j].in[k] == v && --pending[j] == 0) queue[tail++] = j;
    }
  }
  if (count < n) {
    int stuck = 0;
    while (stuck < n && pending[stuck] == 0) stuck++;
    amd_fail(st, "the graph has a cycle (node '%s' (%s) depends on its own output)", g->nodes[stuck].name,
             g->nodes[stuck].op->name);
    goto done;
  }
  for (int i = 0; i < n; i++) sorted[i] = g->nodes[order[i]];
  memcpy(g->nodes, sorted, (size_t)n * sizeof *sorted);
  for (int i = 0; i < n; i++)
    for (int o = 0; o < g->nodes[i].n_out; o++)
      if (g->nodes[i].out[o] >= 0) g->values[g->nodes[i].out[o]].producer = i;
  rc = 0;
done:
  free(pending);
  free(order);
  free(queue);
  free(sorted);
  return rc;
}

/* PyTorch's training-mode exports name Dropout's mask output even where
 * nothing reads it. The mask is a bool tensor, which lives on the host, so
 * computing it would send every such Dropout to the GPU backend's host
 * fallback; a mask that no node reads and that is no graph output is dropped
 * (as if the model had omitted it). */
static void drop_unread_dropout_masks(amd_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) {
    amd_node *n = &g->nodes[i];
    if (n->op->idx != AMD_OP_IDX_Dropout || n->n_out < 2 || n->out[1] < 0) continue;
    const int mask = n->out[1];
    int read = g->values[mask].is_graph_output;
    for (int j = 0; j < g->n_nodes && !read; j++)
      for (int k = 0; k < g->nodes[j].n_in && !read; k++) read = g->nodes[j].in[k] == mask;
    if (!read) n->out[1] = -1;
  }
}

/* A Dropout whose ratio (input 1, opset >= 12) is a constant scalar, as
 * PyTorch's exports write it (a Constant node), takes the value now: the
 * GPU backend keeps float tensors in device memory, and reading the ratio
 * back there would stop the host at every Dropout of every step. */
static void fold_dropout_ratios(amd_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) {
    amd_node *n = &g->nodes[i];
    if (n->op->idx != AMD_OP_IDX_Dropout || n->since < 12 || n->n_in < 2 || n->in[1] < 0) continue;
    const amd_value *v = &g->values[n->in[1]];
    if (v->is_graph_input) continue; /* the caller may feed another ratio */
    const amd_tensor *t = v->is_initializer ? &v->init
                          : v->producer >= 0 ? amd_constant_tensor(&g->nodes[v->producer])
                                             : NULL;
    if (!t || amd_tensor_numel(t) != 1 || !(t->dtype == AMD_FLOAT || t->dtype == AMD_DOUBLE) ||
        t->device != AMD_DEVICE_CPU)
      continue;
    amd_dropout_attrs *a = n->attrs;
    a->ratio = (float)amd_tensor_get_f64(t, 0);
    a->ratio_const = 1;
  }
}

static int build_graph(const Onnx__ModelProto *mp, const char *base_dir, amd_graph *g, amd_status *st) {
  const Onnx__GraphProto *gp = mp->graph;
  if (!gp) return amd_fail(st, "the model has no graph (is this an ONNX model?)");
  g->ir_version = mp->ir_version;
  snprintf(g->producer, sizeof g->producer, "%s %s", mp->producer_name ? mp->producer_name : "?",
           mp->producer_version ? mp->producer_version : "");
  g->opset = -1;
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const char *d = mp->opset_import[i]->domain ? mp->opset_import[i]->domain : "";
    if (d[0] == 0 || strcmp(d, "ai.onnx") == 0) g->opset = (int)mp->opset_import[i]->version;
  }
  if (g->opset < 0) return amd_fail(st, "the model imports no opset of the default ONNX domain");

  int cap = 0;
  /* initializers */
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *tp = gp->initializer[i];
    const char *name = tp->name ? tp->name : "";
    if (!name[0]) return amd_fail(st, "initializer %zu has no name", i);
    if (amd_graph_find_value(g, name) >= 0) return amd_fail(st, "initializer '%s' is defined twice", name);
    int v = amd_load_add_value(g, name, &cap, st);
    if (v < 0) return -1;
    if (amd_tensor_from_proto(tp, base_dir, &g->values[v].init, st)) return amd_fail_prefix(st, "initializer");
    amd_value *val = &g->values[v];
    val->is_initializer = 1;
    val->dtype = val->init.dtype;
    val->rank = val->init.rank;
    memcpy(val->dims, val->init.dims, sizeof val->dims);
  }
  if (gp->n_sparse_initializer) return amd_fail(st, "sparse initializers are not supported");
  /* graph inputs (those that are not initializers are fed by the caller) */
  g->inputs = calloc(gp->n_input + 1, sizeof *g->inputs);
  if (!g->inputs) return amd_fail(st, "out of memory");
  for (size_t i = 0; i < gp->n_input; i++) {
    const char *name = gp->input[i]->name ? gp->input[i]->name : "";
    int v = amd_graph_find_value(g, name);
    if (v >= 0 && g->values[v].is_initializer) continue; /* IR < 4 lists initializers as inputs */
    if (v >= 0) return amd_fail(st, "graph input '%s' is listed twice", name);
    v = amd_load_add_value(g, name, &cap, st);
    if (v < 0) return -1;
    if (read_value_info(gp->input[i], &g->values[v], st)) return -1;
    g->values[v].is_graph_input = 1;
    g->inputs[g->n_inputs++] = v;
  }
  /* nodes and their outputs */
  g->nodes = calloc(gp->n_node + 1, sizeof *g->nodes);
  if (!g->nodes) return amd_fail(st, "out of memory");
  for (size_t i = 0; i < gp->n_node; i++) {
    const Onnx__NodeProto *p = gp->node[i];
    amd_node *n = &g->nodes[g->n_nodes++];
    char fallback[256];
    snprintf(fallback, sizeof fallback, "%s_%zu", p->op_type ? p->op_type : "node", i);
    n->name = dup_str(p->name && p->name[0] ? p->name : fallback);
    n->in = calloc(p->n_input + 1, sizeof *n->in);
    n->out = calloc(p->n_output + 1, sizeof *n->out);
    if (!n->name || !n->in || !n->out) return amd_fail(st, "out of memory");
    n->n_in = (int)p->n_input;
    n->n_out = (int)p->n_output;
    if (p->n_output == 0) /* every supported op has an output; the executor writes out[0] */
      return amd_fail(st, "node '%s' (%s) has no outputs", n->name, p->op_type ? p->op_type : "");
    if (amd_node_bind(n, p, g->opset, st)) return -1;
    for (size_t o = 0; o < p->n_output; o++) {
      const char *name = p->output[o] ? p->output[o] : "";
      if (!name[0]) {
        n->out[o] = -1; /* omitted optional output */
        continue;
      }
      int v = amd_graph_find_value(g, name);
      if (v >= 0)
        return amd_fail(st, "node '%s' (%s) writes '%s', which is already %s", n->name, n->op->name, name,
                        g->values[v].producer >= 0 ? "written by another node"
                        : g->values[v].is_initializer ? "an initializer"
                                                      : "a graph input");
      v = amd_load_add_value(g, name, &cap, st);
      if (v < 0) return -1;
      g->values[v].producer = (int)i;
      n->out[o] = v;
    }
  }
  /* resolve node inputs now that every producer is known */
  for (int i = 0; i < g->n_nodes; i++) {
    const Onnx__NodeProto *p = gp->node[i];
    amd_node *n = &g->nodes[i];
    for (size_t k = 0; k < p->n_input; k++) {
      const char *name = p->input[k] ? p->input[k] : "";
      if (!name[0]) {
        n->in[k] = -1;
        continue;
      }
      int v = amd_graph_find_value(g, name);
      if (v < 0)
        return amd_fail(st, "node '%s' (%s) reads '%s', which no node, graph input or initializer produces",
                        n->name, n->op->name, name);
      n->in[k] = v;
    }
  }
  /* declared shapes of intermediate values and outputs */
  for (size_t i = 0; i < gp->n_value_info; i++) {
    int v = amd_graph_find_value(g, gp->value_info[i]->name ? gp->value_info[i]->name : "");
    if (v >= 0 && !g->values[v].is_initializer && read_value_info(gp->value_info[i], &g->values[v], st))
      return -1;
  }
  g->outputs = calloc(gp->n_output + 1, sizeof *g->outputs);
  if (!g->outputs) return amd_fail(st, "out of memory");
  for (size_t i = 0; i < gp->n_output; i++) {
    const char *name = gp->output[i]->name ? gp->output[i]->name : "";
    int v = amd_graph_find_value(g, name);
    if (v < 0) return amd_fail(st, "graph output '%s' is produced by no node, input or initializer", name);
    if (!g->values[v].is_initializer && read_value_info(gp->output[i], &g->values[v], st)) return -1;
    g->values[v].is_graph_output = 1;
    g->outputs[g->n_outputs++] = v;
  }
  if (g->n_outputs == 0) return amd_fail(st, "the graph has no outputs");
  if (amd_einsum_to_matmul(g, &cap, st)) return -1;
  drop_unread_dropout_masks(g);
  fold_dropout_ratios(g);
  if (amd_rewrite_graph(g, st)) return -1;
  return sort_nodes(g, st);
}

static Onnx__ModelProto *unpack_model(const uint8_t *data, size_t len, amd_status *st) {
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
  if (!mp) amd_fail(st, "not a valid ONNX model (the protobuf does not parse: truncated or another format)");
  return mp;
}

/* The graph of an unpacked model, which it takes over (kept in g->proto or freed). */
static int load_unpacked(Onnx__ModelProto *mp, const char *base_dir, int keep_proto, amd_graph **out,
                         amd_status *st) {
  amd_graph *g = calloc(1, sizeof *g);
  if (!g) {
    onnx__model_proto__free_unpacked(mp, NULL);
    return amd_fail(st, "out of memory");
  }
  if (build_graph(mp, base_dir, g, st)) {
    onnx__model_proto__free_unpacked(mp, NULL);
    amd_graph_free(g);
    return -1;
  }
  if (keep_proto) g->proto = mp;
  else onnx__model_proto__free_unpacked(mp, NULL);
  *out = g;
  return 0;
}

int amd_graph_load_bytes(const uint8_t *data, size_t len, const char *base_dir, int keep_proto,
                         amd_graph **out, amd_status *st) {
  *out = NULL;
  Onnx__ModelProto *mp = unpack_model(data, len, st);
  return mp ? load_unpacked(mp, base_dir, keep_proto, out, st) : -1;
}

int amd_graph_load(const char *path, int keep_proto, amd_graph **out, amd_status *st) {
  uint8_t *data;
  size_t len;
  *out = NULL;
  if (amd_read_file(path, AMD_MAX_MODEL_BYTES, &data, &len, st)) return -1;
  if (len == 0) {
    free(data);
    return amd_fail(st, "'%s' is empty", path);
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) slash[slash == dir] = 0; /* "/m.onnx" is in "/", not in "" */
  else snprintf(dir, sizeof dir, ".");
  /* the file's bytes go as soon as they are unpacked: the initializers are then converted from the
   * unpacked copy, so a model is never held three times over */
  Onnx__ModelProto *mp = unpack_model(data, len, st);
  free(data);
  if (!mp || load_unpacked(mp, dir, keep_proto, out, st)) return amd_fail_prefix(st, "%s", path);
  (*out)->path = strdup(path);
  return 0;
}

int amd_graph_attach_proto(amd_graph *g, amd_status *st) {
  if (g->proto) return 0;
  if (!g->path) return amd_fail(st, "the model was not loaded from a file: its ModelProto cannot be read again");
  uint8_t *data;
  size_t len;
  if (amd_read_file(g->path, AMD_MAX_MODEL_BYTES, &data, &len, st)) return -1;
  Onnx__ModelProto *mp = unpack_model(data, len, st);
  free(data);
  if (!mp) return amd_fail_prefix(st, "%s", g->path);
  g->proto = mp;
  return 0;
}

void amd_graph_free(amd_graph *g) {
  if (!g) return;
  for (int i = 0; i < g->n_values; i++) {
    amd_value *v = &g->values[i];
    free(v->name);
    for (int k = 0; k < AMD_MAX_RANK; k++) free(v->dim_param[k]);
    if (!v->init_in_block) amd_tensor_free(&v->init);
  }
  free(g->param_block);
  for (int i = 0; i < g->n_nodes; i++) {
    free(g->nodes[i].name);
    free(g->nodes[i].in);
    free(g->nodes[i].out);
    free(g->nodes[i].attrs);
  }
  free(g->values);
  free(g->nodes);
  free(g->inputs);
  free(g->outputs);
  free(g->path);
  if (g->proto) onnx__model_proto__free_unpacked(g->proto, NULL);
  free(g);
}
