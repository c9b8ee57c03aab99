/* The loader's Einsum -> MatMul rewrite (einsum_matmul.h).
 *
 * An equation of the batched-matmul family, "<A>,<B>-><Y>" with
 *   - one letter k in A and B and not in Y (the contraction),
 *   - one letter i in A and Y only, one letter j in B and Y only,
 *   - every other letter in A, B and Y (the batch letters),
 *   - no ellipsis, no letter twice in one term,
 * is the MatMul of A' = A transposed to [batch..., i, k] and B' = B
 * transposed to [batch..., k, j], transposed from [batch..., i, j] to Y's
 * order (the batch letters in Y's order throughout). Attention writes its
 * products that way (MaxViT: "bghid,bghjd->bghij", "bghij,bghjd->bghid").
 * The Einsum node becomes the MatMul (its name kept, so --mode-map and
 * `sweep` name it as before); a Transpose node, named after it with
 * "/transpose_a", "/transpose_b" or "/transpose_y", is added only where the
 * permutation is not the identity. Every other equation stays an Einsum.
 *
 * The one difference from Einsum's definition: MatMul broadcasts batch axes
 * of size 1 where Einsum requires equal sizes (a model that relies on the
 * error does not exist in practice). An input declared with a dtype other
 * than float (the ONNX node tests' doubles) keeps the Einsum: MatMul here
 * multiplies floats only. */
#include "einsum_matmul.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/op.h"
#include "opset.h"

/* One term's letters (at most AMD_MAX_RANK, no '.', no repeat); its length or -1. */
static int term_letters(const char *s, size_t len, char *out) {
  if (len > AMD_MAX_RANK) return -1;
  for (size_t i = 0; i < len; i++) {
    const char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return -1;
    if (memchr(out, c, i)) return -1;
    out[i] = c;
  }
  return (int)len;
}

static int find(const char *t, int n, char c) {
  for (int i = 0; i < n; i++)
    if (t[i] == c) return i;
  return -1;
}

/* The plan of one rewrite: the three permutations (perm_x[p] = the axis of
 * X read into position p; is_id: the identity). */
typedef struct mm_plan {
  int rank;
  int perm_a[AMD_MAX_RANK], perm_b[AMD_MAX_RANK], perm_y[AMD_MAX_RANK];
  int id_a, id_b, id_y;
} mm_plan;

static int is_identity(const int *perm, int n) {
  for (int i = 0; i < n; i++)
    if (perm[i] != i) return 0;
  return 1;
}

/* 1 when eq (spaces removed) is of the batched-matmul family, with *p filled. */
static int plan_matmul(const char *eq, mm_plan *p) {
  const char *comma = strchr(eq, ','), *arrow = strstr(eq, "->");
  if (!comma || !arrow || comma > arrow || strchr(comma + 1, ',')) return 0;
  char ta[AMD_MAX_RANK], tb[AMD_MAX_RANK], ty[AMD_MAX_RANK];
  const int na = term_letters(eq, (size_t)(comma - eq), ta);
  const int nb = term_letters(comma + 1, (size_t)(arrow - comma - 1), tb);
  const int ny = term_letters(arrow + 2, strlen(arrow + 2), ty);
  if (na < 2 || nb < 2 || ny < 2 || na != nb || ny != na) return 0;
  char k = 0, i = 0, j = 0;
  for (int x = 0; x < na; x++) {
    const int in_b = find(tb, nb, ta[x]) >= 0, in_y = find(ty, ny, ta[x]) >= 0;
    if (in_b && !in_y) {
      if (k) return 0;
      k = ta[x];
    } else if (!in_b && in_y) {
      if (i) return 0;
      i = ta[x];
    } else if (!in_b && !in_y) {
      return 0; /* summed over A alone */
    }
  }
  for (int x = 0; x < nb; x++) {
    const int in_a = find(ta, na, tb[x]) >= 0, in_y = find(ty, ny, tb[x]) >= 0;
    if (!in_a && in_y) {
      if (j) return 0;
      j = tb[x];
    } else if (!in_a && !in_y) {
      return 0;
    }
  }
  if (!k || !i || !j) return 0;
  for (int x = 0; x < ny; x++) /* every letter of Y comes from an input */
    if (find(ta, na, ty[x]) < 0 && find(tb, nb, ty[x]) < 0) return 0;
  /* the layouts: batch letters in Y's order, then (i, k), (k, j), (i, j) */
  char batch[AMD_MAX_RANK];
  int nbatch = 0;
  for (int x = 0; x < ny; x++)
    if (ty[x] != i && ty[x] != j) batch[nbatch++] = ty[x];
  if (nbatch != na - 2) return 0;
  char la[AMD_MAX_RANK], lb[AMD_MAX_RANK], lm[AMD_MAX_RANK];
  memcpy(la, batch, (size_t)nbatch), memcpy(lb, batch, (size_t)nbatch), memcpy(lm, batch, (size_t)nbatch);
  la[nbatch] = i, la[nbatch + 1] = k;
  lb[nbatch] = k, lb[nbatch + 1] = j;
  lm[nbatch] = i, lm[nbatch + 1] = j;
  p->rank = na;
  for (int x = 0; x < na; x++) {
    p->perm_a[x] = find(ta, na, la[x]);
    p->perm_b[x] = find(tb, nb, lb[x]);
    p->perm_y[x] = find(lm, na, ty[x]);
    if (p->perm_a[x] < 0 || p->perm_b[x] < 0 || p->perm_y[x] < 0) return 0;
  }
  p->id_a = is_identity(p->perm_a, na);
  p->id_b = is_identity(p->perm_b, na);
  p->id_y = is_identity(p->perm_y, na);
  return 1;
}

/* A declared dtype other than float (or unknown) on input v. */
static int not_float(const amd_graph *g, int v) {
  if (v < 0) return 1;
  const amd_value *x = &g->values[v];
  const amd_dtype t = x->is_initializer ? x->init.dtype : x->dtype;
  return t != AMD_UNDEFINED && t != AMD_FLOAT;
}

/* Binds node n (name, in, out set) to op at the graph's opset, with a perm attribute when perm. */
static int bind(amd_graph *g, amd_node *n, const amd_op *op, const int *perm, int rank, amd_status *st) {
  n->op = op;
  n->opset = g->opset;
  n->since = amd_opset_bind_version(op, g->opset, st);
  if (n->since < 0) return amd_fail_prefix(st, "node '%s'", n->name);
  n->attrs = NULL;
  if (!op->parse) return 0;
  int64_t ints[AMD_MAX_RANK];
  for (int x = 0; x < rank; x++) ints[x] = perm[x];
  amd_attr a = {.name = "perm", .ints = ints, .n_ints = (size_t)rank};
  amd_attr_list list = {.a = perm ? &a : NULL, .n = perm ? 1 : 0, .tensors = NULL};
  return op->parse(n, &list, st);
}

/* Appends a Transpose node named "<base><suffix>" reading value `in` and
 * writing value `out`. */
static int add_transpose(amd_graph *g, const char *base, const char *suffix, int in, int out, const int *perm,
                         int rank, amd_status *st) {
  amd_node *n = &g->nodes[g->n_nodes];
  memset(n, 0, sizeof *n);
  const size_t len = strlen(base) + strlen(suffix) + 1;
  n->name = malloc(len);
  n->in = malloc(sizeof(int));
  n->out = malloc(sizeof(int));
  if (!n->name || !n->in || !n->out) {
    free(n->name), free(n->in), free(n->out);
    return amd_fail(st, "out of memory");
  }
  snprintf(n->name, len, "%s%s", base, suffix);
  n->n_in = n->n_out = 1;
  n->in[0] = in;
  n->out[0] = out;
  g->n_nodes++; /* owned by the graph from here on (freed with it) */
  if (bind(g, n, amd_op_find("Transpose"), perm, rank, st)) return -1;
  g->values[out].producer = g->n_nodes - 1;
  return 0;
}

/* A new value "<base><suffix>". */
static int new_value(amd_graph *g, const char *base, const char *suffix, int *cap, amd_status *st) {
  char name[512];
  snprintf(name, sizeof name, "%s%s", base, suffix);
  for (int tries = 0; amd_graph_find_value(g, name) >= 0; tries++) /* a name the model already uses */
    snprintf(name, sizeof name, "%s%s_%d", base, suffix, tries);
  return amd_load_add_value(g, name, cap, st);
}

int amd_einsum_to_matmul(amd_graph *g, int *cap_values, amd_status *st) {
  const amd_op *einsum = amd_op_find("Einsum"), *matmul = amd_op_find("MatMul");
  const int n0 = g->n_nodes;
  for (int idx = 0; idx < n0; idx++) {
    amd_node *n = &g->nodes[idx];
    mm_plan p;
    if (n->op != einsum || n->n_in != 2 || n->n_out != 1 || n->out[0] < 0) continue;
    if (!plan_matmul(amd_einsum_equation(n), &p) || not_float(g, n->in[0]) || not_float(g, n->in[1])) continue;
    /* room for up to three Transpose nodes (g->nodes may move: n is re-read below) */
    amd_node *grown = realloc(g->nodes, sizeof *grown * (size_t)(g->n_nodes + 4));
    if (!grown) return amd_fail(st, "out of memory");
    g->nodes = grown;
    n = &g->nodes[idx];
    char base[256];
    snprintf(base, sizeof base, "%s", n->name);
    int a = n->in[0], b = n->in[1], y = n->out[0];
    if (!p.id_a) {
      const int t = new_value(g, base, "/transpose_a", cap_values, st);
      if (t < 0 || add_transpose(g, base, "/transpose_a", a, t, p.perm_a, p.rank, st)) return -1;
      a = t;
    }
    if (!p.id_b) {
      const int t = new_value(g, base, "/transpose_b", cap_values, st);
      if (t < 0 || add_transpose(g, base, "/transpose_b", b, t, p.perm_b, p.rank, st)) return -1;
      b = t;
    }
    if (!p.id_y) { /* the MatMul writes a new value, the Transpose the Einsum's output */
      const int t = new_value(g, base, "/matmul", cap_values, st);
      if (t < 0 || add_transpose(g, base, "/transpose_y", t, y, p.perm_y, p.rank, st)) return -1;
      y = t;
    }
    n = &g->nodes[idx];
    free(n->attrs);
    n->in[0] = a, n->in[1] = b, n->out[0] = y;
    if (bind(g, n, matmul, NULL, 0, st)) return -1;
    g->values[y].producer = idx;
  }
  return 0;
}
