/* The loader's graph-shortening passes (rewrite.h). */
#include "rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/attrs.h"
#include "../ops/op.h"

/* Who reads each value: nread[v] counts every read (a node reading v twice
 * counts twice), reader[v] is one of the nodes that read it. */
typedef struct readers {
  int *nread, *reader;
} readers;

static int count_readers(const amd_graph *g, readers *r, amd_status *st) {
  r->nread = calloc((size_t)g->n_values + 1, sizeof *r->nread);
  r->reader = calloc((size_t)g->n_values + 1, sizeof *r->reader);
  if (!r->nread || !r->reader) return amd_fail(st, "out of memory");
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++) {
      const int v = g->nodes[i].in[k];
      if (v < 0) continue;
      r->nread[v]++;
      r->reader[v] = i;
    }
  return 0;
}

/* The node that alone reads v (v no graph output), or -1. */
static int only_reader(const amd_graph *g, const readers *r, int v) {
  if (v < 0 || g->values[v].is_graph_output || r->nread[v] != 1) return -1;
  return r->reader[v];
}

/* 1 when value v is a float scalar (rank 0) constant equal to want, bit for bit. */
static int is_float_constant(const amd_graph *g, int v, float want) {
  if (v < 0 || g->values[v].is_graph_input) return 0;
  const amd_value *x = &g->values[v];
  const amd_tensor *t = x->is_initializer ? &x->init
                        : x->producer >= 0 ? amd_constant_tensor(&g->nodes[x->producer])
                                           : NULL;
  if (!t || t->dtype != AMD_FLOAT || t->rank != 0 || t->device != AMD_DEVICE_CPU || !t->data) return 0;
  return memcmp(t->data, &want, sizeof want) == 0;
}

/* Node i is op `idx` with n_in inputs and one output. */
static int is_node(const amd_graph *g, int i, amd_op_idx idx, int n_in) {
  if (i < 0) return 0;
  const amd_node *n = &g->nodes[i];
  return n->op->idx == (int)idx && n->n_in == n_in && n->n_out == 1 && n->out[0] >= 0;
}

/* For a two-input node: its input other than value v (v read exactly once), or -2. */
static int other_input(const amd_node *n, int v) {
  if (n->in[0] == v && n->in[1] != v) return n->in[1];
  if (n->in[1] == v && n->in[0] != v) return n->in[0];
  return -2;
}

/* ---- GELU: Div(x, sqrt 2) -> Erf -> Add 1 -> a, then (x a) 0.5 or (x 0.5) a */

enum { G_DIV, G_ERF, G_ADD, G_MUL_1, G_MUL_2, G_NODES }; /* G_MUL_2 writes the GELU's output */

/* Whether Erf node e is part of such a chain: its five nodes into chain[],
 * the GELU's input into *x and the order of its last two products into
 * *half_first, else 0. Every intermediate value must be read by the next
 * node alone (and be no graph output). */
static int match_gelu(const amd_graph *g, const readers *r, int e, int chain[G_NODES], int *x,
                      int *half_first) {
  if (!is_node(g, e, AMD_OP_IDX_Erf, 1) || g->nodes[e].in[0] < 0) return 0;
  const int d = g->nodes[e].in[0], div = g->values[d].producer;
  if (!is_node(g, div, AMD_OP_IDX_Div, 2) || g->nodes[div].out[0] != d || only_reader(g, r, d) != e) return 0;
  *x = g->nodes[div].in[0];
  if (*x < 0 || *x == g->nodes[div].in[1] ||
      !is_float_constant(g, g->nodes[div].in[1], (float)1.4142135623730951))
    return 0;
  const int add = only_reader(g, r, g->nodes[e].out[0]);
  if (!is_node(g, add, AMD_OP_IDX_Add, 2) ||
      !is_float_constant(g, other_input(&g->nodes[add], g->nodes[e].out[0]), 1.0f))
    return 0;
  const int a = g->nodes[add].out[0], mul = only_reader(g, r, a); /* the product with erf(..) + 1 */
  if (!is_node(g, mul, AMD_OP_IDX_Mul, 2)) return 0;
  const int other = other_input(&g->nodes[mul], a);
  chain[G_DIV] = div, chain[G_ERF] = e, chain[G_ADD] = add;
  if (other == *x) { /* (x a) 0.5 */
    const int half = only_reader(g, r, g->nodes[mul].out[0]);
    if (!is_node(g, half, AMD_OP_IDX_Mul, 2) ||
        !is_float_constant(g, other_input(&g->nodes[half], g->nodes[mul].out[0]), 0.5f))
      return 0;
    chain[G_MUL_1] = mul, chain[G_MUL_2] = half, *half_first = 0;
    return 1;
  }
  /* (x 0.5) a: other is x 0.5, made for this product alone */
  const int half = other >= 0 ? g->values[other].producer : -1;
  if (!is_node(g, half, AMD_OP_IDX_Mul, 2) || g->nodes[half].out[0] != other ||
      only_reader(g, r, other) != mul || !is_float_constant(g, other_input(&g->nodes[half], *x), 0.5f))
    return 0;
  chain[G_MUL_1] = half, chain[G_MUL_2] = mul, *half_first = 1;
  return 1;
}

/* The fused node's name: the chain's common name prefix up to its last '/'
 * followed by "Gelu" (PyTorch's ".../mlp.1/Div" ... ".../mlp.1/Mul_1" give
 * ".../mlp.1/Gelu", the name its opset-20 export gives the node), else the
 * Erf node's name followed by "/Gelu". */
static char *gelu_name(const amd_graph *g, const int chain[G_NODES]) {
  const char *first = g->nodes[chain[0]].name;
  size_t common = strlen(first);
  for (int k = 1; k < G_NODES; k++) {
    const char *s = g->nodes[chain[k]].name;
    size_t i = 0;
    while (i < common && s[i] == first[i]) i++;
    common = i;
  }
  while (common > 0 && first[common - 1] != '/') common--;
  const char *base = common ? first : g->nodes[chain[G_ERF]].name;
  const size_t keep = common ? common : strlen(base);
  char *name = malloc(keep + 6);
  if (name) snprintf(name, keep + 6, "%.*s%sGelu", (int)keep, base, common ? "" : "/");
  return name;
}

/* Turns the Div node of the chain into Gelu(x) writing the chain's output,
 * and marks the other four dead. */
static int fuse_gelu(amd_graph *g, const int chain[G_NODES], int x, int half_first, unsigned char *dead,
                     amd_status *st) {
  const amd_op *gelu = amd_op_find("Gelu");
  char *name = gelu_name(g, chain);
  if (!name) return amd_fail(st, "out of memory");
  amd_node *n = &g->nodes[chain[G_DIV]];
  const int y = g->nodes[chain[G_MUL_2]].out[0];
  for (int k = 0; k < G_NODES; k++) {
    const int v = g->nodes[chain[k]].out[0];
    if (v != y) g->values[v].producer = -1;
    if (k != G_DIV) dead[chain[k]] = 1;
  }
  free(n->name);
  free(n->attrs);
  n->name = name;
  n->attrs = NULL;
  n->op = gelu;
  /* Gelu exists from opset 20 on; the node is bound to that version whatever
   * the model's opset (the node is the loader's, not the model's) */
  n->since = gelu->since[0];
  n->n_in = 1;
  n->in[0] = x;
  n->out[0] = y;
  g->values[y].producer = chain[G_DIV];
  amd_attr_list none = {.a = NULL, .n = 0, .tensors = NULL}; /* approximate = "none" */
  if (gelu->parse(n, &none, st)) return amd_fail_prefix(st, "node '%s'", n->name);
  ((amd_act_attrs *)n->attrs)->half_first = half_first;
  return 0;
}

/* ---- Dropout with ratio 0, Identity */

static int passes_through(const amd_node *n) {
  if (n->n_in < 1 || n->in[0] < 0 || n->out[0] < 0) return 0;
  if (n->op->idx == AMD_OP_IDX_Identity) return n->n_in == 1 && n->n_out == 1;
  if (n->op->idx != AMD_OP_IDX_Dropout || (n->n_out > 1 && n->out[1] >= 0)) return 0; /* its mask is read */
  const amd_dropout_attrs *a = n->attrs;
  const int ratio_known = n->since < 12 || a->ratio_const; /* else the ratio comes at run time (or is 0.5) */
  return ratio_known && a->ratio == 0;
}

/* Node i's readers read its input instead; node i is marked dead. */
static void bypass(amd_graph *g, int i, unsigned char *dead) {
  const int from = g->nodes[i].out[0], to = g->nodes[i].in[0];
  for (int j = 0; j < g->n_nodes; j++)
    for (int k = 0; k < g->nodes[j].n_in; k++)
      if (g->nodes[j].in[k] == from) g->nodes[j].in[k] = to;
  g->values[from].producer = -1;
  dead[i] = 1;
}

/* Frees the dead nodes and closes the gaps; the producers follow. */
static void remove_dead(amd_graph *g, const unsigned char *dead) {
  int kept = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    amd_node *n = &g->nodes[i];
    if (dead[i]) {
      free(n->name), free(n->in), free(n->out), free(n->attrs);
      continue;
    }
    g->nodes[kept] = *n;
    for (int o = 0; o < n->n_out; o++)
      if (n->out[o] >= 0) g->values[n->out[o]].producer = kept;
    kept++;
  }
  g->n_nodes = kept;
}

int amd_rewrite_graph(amd_graph *g, amd_status *st) {
  readers r = {0};
  unsigned char *dead = calloc((size_t)g->n_nodes + 1, 1);
  int rc = -1;
  if (!dead || count_readers(g, &r, st)) goto done;
  for (int i = 0; i < g->n_nodes; i++) {
    int chain[G_NODES], x, half_first;
    if (match_gelu(g, &r, i, chain, &x, &half_first) && fuse_gelu(g, chain, x, half_first, dead, st))
      goto done;
  }
  for (int i = 0; i < g->n_nodes; i++)
    if (!dead[i] && passes_through(&g->nodes[i]) && !g->values[g->nodes[i].out[0]].is_graph_output)
      bypass(g, i, dead);
  remove_dead(g, dead);
  rc = 0;
done:
  if (!dead) amd_fail(st, "out of memory");
  free(dead);
  free(r.nread);
  free(r.reader);
  return rc;
}
