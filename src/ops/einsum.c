/* Einsum (12): Y = einsum(equation, X0, X1, ...), float or double.
 *
 * The equation: comma-separated subscripts of the inputs, letters (a-z, A-Z)
 * and at most one "..." each, then optionally "->" and the output's
 * subscripts. Without "->" the output is the ellipsis' axes followed by the
 * letters that appear exactly once, in alphabetical order (numpy's rule,
 * upper case before lower case). A letter repeated within one input takes
 * that input's diagonal; a letter missing from the output is summed over.
 * The ellipsis' axes broadcast between the inputs (numpy's rules, aligned
 * from the right); every letter has one size.
 *
 * The computation is the definition: one loop over every combination of
 * the labels' values, y[out] += x0[i0] * x1[i1] * ..., the products and the
 * sum in double. Its cost is the product of all label sizes, as a direct
 * MatMul's is for a batched product. The products are exact: an Einsum is
 * not one of the GEMM nodes whose products go through --mode (see
 * docs/ARCHITECTURE.md), so a model that writes attention as Einsum (MaxViT)
 * runs its attention products exactly, unless the equation is a batched
 * matrix product: the loader turns those into MatMul (src/onnx/einsum_matmul.c),
 * whose products go through --mode. No CUDA kernel: the host fallback.
 *
 * Backward (float, double): the same loop, dXj[ij] += dY[out] * prod over the
 * other inputs; a repeated letter adds into its diagonal. */
#include <stdlib.h>
#include <string.h>

#include "shape_util.h"

#define EIN_MAX_IN 8
#define EIN_ELL 8                  /* ellipsis labels: 52 .. 59 */
#define EIN_LABELS (52 + EIN_ELL)

typedef struct einsum_attrs {
  char eq[256];
} einsum_attrs;

static int einsum_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  einsum_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  char buf[256];
  const char *eq = amd_attr_string(p, "equation", NULL, buf, sizeof buf);
  if (!eq) return amd_fail(st, "Einsum needs an equation attribute");
  size_t k = 0;
  for (const char *c = eq; *c; c++) /* spaces carry no meaning */
    if (*c != ' ') {
      if (k + 1 >= sizeof a->eq) return amd_fail(st, "the equation is too long (at most 255 characters)");
      a->eq[k++] = *c;
    }
  a->eq[k] = 0;
  return 0;
}

static int letter_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + c - 'a';
  return -1;
}

/* The plan of one call: per input and for the output, the label of each axis;
 * each label's size; per input the stride of each label (the sum over its
 * axes with that label: a repeated letter walks the diagonal; 0 where it is
 * absent or broadcast). */
typedef struct ein_plan {
  int n_in, n_ell, out_rank;
  int out_lab[AMD_MAX_RANK];
  int64_t size[EIN_LABELS];
  int used[EIN_LABELS];
  int64_t stride[EIN_MAX_IN + 1][EIN_LABELS]; /* [n_in]: the output's */
} ein_plan;

/* One subscript term (up to a ',' or '-' or the end) of an operand of rank
 * `rank` (-1: the output, whose ellipsis has n_ell axes) into labels;
 * returns the number of axes or -1. */
static int parse_term(const char **s, int rank, int n_ell, int *lab, int *ell_axes, amd_status *st) {
  int k = 0, seen_ell = 0;
  const char *c = *s;
  while (*c && *c != ',' && *c != '-') {
    if (c[0] == '.') {
      if (c[1] != '.' || c[2] != '.') return amd_fail(st, "a lone '.' in the equation (an ellipsis is \"...\")");
      if (seen_ell) return amd_fail(st, "two ellipses in one term of the equation");
      seen_ell = 1;
      c += 3;
      lab[k++] = -2; /* placeholder, expanded below */
      continue;
    }
    int l = letter_label(*c);
    if (l < 0) return amd_fail(st, "character '%c' in the equation (letters, \"...\", ',' and \"->\" only)", *c);
    if (k >= AMD_MAX_RANK + 1) return amd_fail(st, "a term of the equation has too many subscripts");
    lab[k++] = l;
    c++;
  }
  *s = c;
  int letters = k - seen_ell;
  int e = seen_ell ? (rank >= 0 ? rank - letters : n_ell) : 0;
  if (rank >= 0 && (seen_ell ? e < 0 : letters != rank))
    return amd_fail(st, "a term of the equation has %d subscripts for an input of rank %d", letters, rank);
  if (e > EIN_ELL) return amd_fail(st, "an ellipsis of %d axes (at most %d)", e, EIN_ELL);
  if (letters + e > AMD_MAX_RANK) return amd_fail(st, "a term of the equation has more than %d axes", AMD_MAX_RANK);
  if (seen_ell) { /* expand: the ellipsis' axes take labels 52 + (n_ell - e) .. 52 + n_ell - 1 (right-aligned) */
    int out[AMD_MAX_RANK + EIN_ELL], m = 0;
    for (int i = 0; i < k; i++) {
      if (lab[i] != -2) {
        out[m++] = lab[i];
        continue;
      }
      for (int j = 0; j < e; j++) out[m++] = 52 + (rank >= 0 ? EIN_ELL - e : EIN_ELL - n_ell) + j;
    }
    memcpy(lab, out, (size_t)m * sizeof *lab);
    k = m;
  }
  *ell_axes = e;
  return k;
}

static int ein_plan_make(const amd_node *n, const amd_tensor *const *in, ein_plan *p, amd_status *st) {
  const einsum_attrs *a = n->attrs;
  memset(p, 0, sizeof *p);
  p->n_in = n->n_in;
  if (p->n_in < 1 || p->n_in > EIN_MAX_IN) return amd_fail(st, "Einsum takes 1 to %d inputs", EIN_MAX_IN);
  for (int k = 0; k < p->n_in; k++) {
    if (!in[k]) return amd_fail(st, "missing input %d", k);
    if (in[k]->dtype != AMD_FLOAT && in[k]->dtype != AMD_DOUBLE)
      return amd_fail(st, "Einsum supports float and double (input %d is %s)", k, amd_dtype_name(in[k]->dtype));
    if (in[k]->dtype != in[0]->dtype) return amd_fail(st, "the inputs' dtypes differ");
  }
  for (int l = 0; l < EIN_LABELS; l++) p->size[l] = 1;
  int count[EIN_LABELS] = {0};
  const char *c = a->eq;
  int lab[AMD_MAX_RANK + EIN_ELL];
  int in_lab[EIN_MAX_IN][AMD_MAX_RANK]; /* each input's axis labels, for its strides below */
  for (int k = 0; k < p->n_in; k++) {
    if (k > 0) {
      if (*c != ',') return amd_fail(st, "the equation has %d input terms for %d inputs", k, p->n_in);
      c++;
    }
    int e, r = parse_term(&c, in[k]->rank, 0, lab, &e, st);
    if (r < 0) return -1;
    if (e > p->n_ell) p->n_ell = e;
    memcpy(in_lab[k], lab, (size_t)r * sizeof *lab);
    for (int i = 0; i < r; i++) {
      const int l = lab[i];
      const int64_t d = in[k]->dims[i];
      if (l >= 52) { /* ellipsis: broadcast */
        if (p->used[l] && p->size[l] != d && p->size[l] != 1 && d != 1)
          return amd_fail(st, "the ellipsis axes of the inputs do not broadcast (%lld and %lld)",
                          (long long)p->size[l], (long long)d);
        if (!p->used[l] || p->size[l] == 1) p->size[l] = d;
      } else {
        if (p->used[l] && p->size[l] != d)
          return amd_fail(st, "subscript '%c' has sizes %lld and %lld", l < 26 ? 'A' + l : 'a' + l - 26,
                          (long long)p->size[l], (long long)d);
        p->size[l] = d;
        count[l]++; /* every occurrence: "ii" is a trace, not a diagonal, without "->" */
      }
      p->used[l] = 1;
    }
  }
  if (*c == ',') return amd_fail(st, "the equation has more input terms than the %d inputs", p->n_in);
  if (c[0] == '-') {
    if (c[1] != '>') return amd_fail(st, "a '-' in the equation that is not \"->\"");
    c += 2;
    int e, r = parse_term(&c, -1, p->n_ell, lab, &e, st);
    if (r < 0) return -1;
    if (*c) return amd_fail(st, "unexpected '%c' after the output term", *c);
    int seen[EIN_LABELS] = {0};
    for (int i = 0; i < r; i++) {
      if (lab[i] < 52 && !p->used[lab[i]]) return amd_fail(st, "an output subscript appears in no input");
      if (seen[lab[i]]) return amd_fail(st, "an output subscript is repeated");
      seen[lab[i]] = 1;
    }
    p->out_rank = r;
    memcpy(p->out_lab, lab, (size_t)r * sizeof *lab);
  } else { /* implicit: the ellipsis, then the letters used once, sorted */
    int r = 0;
    for (int j = 0; j < p->n_ell; j++) p->out_lab[r++] = 52 + EIN_ELL - p->n_ell + j;
    for (int l = 0; l < 52; l++)
      if (count[l] == 1) {
        if (r >= AMD_MAX_RANK) return amd_fail(st, "the output would have more than %d axes", AMD_MAX_RANK);
        p->out_lab[r++] = l;
      }
    p->out_rank = r;
  }
  /* strides per label (the sizes are final now: the ellipsis has broadcast) */
  for (int k = 0; k < p->n_in; k++) {
    int64_t s = 1;
    for (int i = in[k]->rank - 1; i >= 0; i--) {
      const int l = in_lab[k][i];
      if (in[k]->dims[i] != 1 || p->size[l] == 1) p->stride[k][l] += s;
      s *= in[k]->dims[i];
    }
  }
  int64_t s = 1;
  for (int i = p->out_rank - 1; i >= 0; i--) {
    p->stride[p->n_in][p->out_lab[i]] = s;
    s *= p->size[p->out_lab[i]];
  }
  return 0;
}

static int einsum_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  ein_plan p;
  if (ein_plan_make(n, in, &p, st)) return -1;
  int64_t d[AMD_MAX_RANK];
  for (int i = 0; i < p.out_rank; i++) d[i] = p.size[p.out_lab[i]];
  amd_tensor_set_shape(&out[0], in[0]->dtype, p.out_rank, d);
  return 0;
}

static double ein_get(const amd_tensor *t, int64_t i) {
  return t->dtype == AMD_FLOAT ? (double)((const float *)t->data)[i] : ((const double *)t->data)[i];
}

/* The loop over every combination of the used labels. skip < 0 (forward):
 * y[out] += prod x; skip = j (backward): dXj[ij] += dY[out] * prod over k != j. */
static void ein_loop(const ein_plan *p, const amd_tensor *const *in, int skip, const amd_tensor *dy, double *acc) {
  int labs[EIN_LABELS], nl = 0;
  for (int l = 0; l < EIN_LABELS; l++)
    if (p->used[l] && p->size[l] > 0) labs[nl++] = l;
    else if (p->used[l]) return; /* an empty axis: nothing to add */
  int64_t v[EIN_LABELS] = {0}, off[EIN_MAX_IN + 1] = {0};
  const int dst = skip < 0 ? p->n_in : skip;
  for (;;) {
    double prod = skip < 0 ? 1.0 : ein_get(dy, off[p->n_in]);
    for (int k = 0; k < p->n_in; k++)
      if (k != skip) prod *= ein_get(in[k], off[k]);
    acc[off[dst]] += prod;
    int i = nl - 1;
    for (; i >= 0; i--) { /* odometer, last label fastest */
      const int l = labs[i];
      for (int k = 0; k <= p->n_in; k++) off[k] += p->stride[k][l];
      if (++v[l] < p->size[l]) break;
      for (int k = 0; k <= p->n_in; k++) off[k] -= p->stride[k][l] * p->size[l];
      v[l] = 0;
    }
    if (i < 0) break;
  }
}

static int einsum_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                          amd_status *st) {
  (void)ctx;
  ein_plan p;
  if (ein_plan_make(n, in, &p, st)) return -1;
  const int64_t cnt = amd_tensor_numel(&out[0]);
  double *acc = calloc((size_t)(cnt ? cnt : 1), sizeof *acc);
  if (!acc) return amd_fail(st, "out of memory");
  ein_loop(&p, in, -1, NULL, acc);
  for (int64_t i = 0; i < cnt; i++) amd_tensor_set_f64(&out[0], i, acc[i]);
  free(acc);
  return 0;
}

static int einsum_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, const amd_tensor *out,
                           const amd_tensor *const *dout, amd_tensor *const *din, amd_status *st) {
  (void)ctx, (void)out;
  if (!dout[0]) return 0;
  ein_plan p;
  if (ein_plan_make(n, in, &p, st) || grad_dtype_ok(in[0]->dtype, st)) return -1;
  for (int j = 0; j < p.n_in; j++) {
    if (!din[j]) continue;
    const int64_t cnt = amd_tensor_numel(in[j]);
    double *acc = calloc((size_t)(cnt ? cnt : 1), sizeof *acc);
    if (!acc) return amd_fail(st, "out of memory");
    ein_loop(&p, in, j, dout[0], acc);
    for (int64_t i = 0; i < cnt; i++) amd_tensor_set_f64(din[j], i, amd_tensor_get_f64(din[j], i) + acc[i]);
    free(acc);
  }
  return 0;
}

const char *amd_einsum_equation(const amd_node *n) { return ((const einsum_attrs *)n->attrs)->eq; }

const amd_op amd_op_Einsum = {.name = "Einsum",
                              .idx = AMD_OP_IDX_Einsum,
                              .since = {12},
                              .parse = einsum_parse,
                              .infer = einsum_infer,
                              .forward = einsum_forward,
                              .backward = einsum_backward,
                              .bwd_unread_out = 1u};
